#!/usr/bin/env bash
# bench/bench_db.sh -- sourced by the benchmarks that run by hand against the
# cluster of the environment or a throwaway one (postgrest.sh, reads.sh).
#
#   bench_cluster DIR [CONF]   unless PGPORT is set, start a throwaway cluster
#                              (test/lib/cluster.sh; CONF: extra settings
#                              appended to postgresql.conf); sets own_cluster
#   bench_fresh_db DB          drop and create database DB, export PGDATABASE
#   bench_cleanup DIR, bench_traps FN   see below

bench_cluster() {
	local dir=$1 conf=${2:-}
	own_cluster=
	[[ -z ${PGPORT:-} ]] || return 0
	scratch_create
	own_cluster=1
	if [[ -n $conf ]]; then
		printf '%s\n' "$conf" >"$dir/extra.conf"
		chmod 0644 "$dir/extra.conf"
		STREAM_EXT_EXTRA_CONF=$dir/extra.conf cluster_start
	else
		cluster_start
	fi
}

bench_fresh_db() {
	PGDATABASE=postgres PGOPTIONS="-c client_min_messages=warning" psql -X -q -v ON_ERROR_STOP=1 \
		-c "DROP DATABASE IF EXISTS $1 WITH (FORCE)" -c "CREATE DATABASE $1" >/dev/null
	export PGDATABASE=$1
}

# bench_cleanup DIR: remove DIR and the throwaway cluster, if any
bench_cleanup() {
	rm -rf -- "$1"
	[[ -n $own_cluster ]] && cluster_cleanup
	return 0
}

# bench_traps FN: run FN at exit (also after INT and TERM); server binaries first in PATH
bench_traps() {
	trap "$1" EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	export PATH="$PG_BINDIR:$PATH"
}
