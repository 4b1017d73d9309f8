# shellcheck shell=bash
# test/lib/integration.sh -- helpers for test/integration/*.sh.  Source it:
#
#   source "$STREAM_EXT_ROOT/test/lib/integration.sh"
#   it_db mytest                 # fresh database it_mytest, becomes PGDATABASE
#   q "SELECT 1"                 # run SQL, print unaligned tuples-only result
#   q <<'SQL' ... SQL            # same, SQL on stdin
#   assert_eq 42 "$(q 'SELECT 42')" "the answer"
#   wait_for "SELECT count(*) FROM v" 1000 [timeout_s]   # poll until equal
#
# Integration tests share one cluster (run-tests.sh starts it and exports
# PGHOST PGPORT PGUSER, STREAM_EXT_ROOT, STREAM_EXT_TMP, STREAM_EXT_BROKER);
# each test works in its own database so they don't see each other.
set -euo pipefail

: "${PGPORT:?integration tests need the cluster environment (run them via make test)}"

it_db() {
	local db="it_$1"
	PGDATABASE=postgres PGOPTIONS="-c client_min_messages=warning" psql -X -q -v ON_ERROR_STOP=1 \
		-c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db" >/dev/null
	export PGDATABASE=$db
}

q() {
	if [[ $# -gt 0 ]]; then
		psql -X -q -A -t -v ON_ERROR_STOP=1 -c "$1"
	else
		psql -X -q -A -t -v ON_ERROR_STOP=1
	fi
}

assert_eq() {
	local expected=$1 actual=$2 what=${3:-value}
	if [[ $expected != "$actual" ]]; then
		echo "ASSERTION FAILED: $what: expected '$expected', got '$actual'" >&2
		exit 1
	fi
	echo "ok: $what = $actual"
}

wait_for() {
	local sql=$1 expected=$2 timeout=${3:-60} got='' deadline=$((SECONDS + ${3:-60}))
	while :; do
		got=$(q "$sql" 2>/dev/null || true)
		[[ $got == "$expected" ]] && { echo "ok: ($sql) = $got"; return 0; }
		if [[ $SECONDS -ge $deadline ]]; then
			echo "TIMEOUT after ${timeout}s: ($sql) = '$got', want '$expected'" >&2
			exit 1
		fi
		sleep 0.2
	done
}
