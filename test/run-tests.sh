#!/usr/bin/env bash
# test/run-tests.sh -- build, install and run every stream_ext test (`make test`).
#
#   deps -> make -> make install -> make -C test/broker -> throwaway cluster ->
#     regress      pg_regress            sql/*.sql vs expected/*.out
#     isolation    pg_isolation_regress  test/isolation/specs/*.spec vs test/isolation/expected/*.out
#     tap          prove -I test/perl    test/t/*.pl (PostgreSQL::Test::Cluster + StreamExtTAP, own clusters)
#     integration  bash                  test/integration/*.sh (exit 0 = pass)
#
# Prints one line per test and ends with exactly one "N passed, N failed" line.
# Exit 0 iff nothing failed and at least one test ran.
#
# Environment:
#   TEST_FILTER=sub     run only tests whose label (kind/name, e.g. regress/basic,
#                       tap/001_restart, integration/kafka_json) contains "sub"
#   TEST_TIMEOUT=secs   per TAP file / integration script / isolation spec
#                       (default 900); the pg_regress run gets 3x that
#   STREAM_EXT_FUZZ_SECONDS=secs  how long tap/050_fuzz_decode fuzzes (default 60)
#   STREAM_EXT_KEEP_CLUSTER=1   leave the cluster running at the end (prints
#                       the env file to source and how to stop it)
# Outputs (diffs, logs) are kept in test/tmp/ until the next run.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export STREAM_EXT_ROOT=$ROOT
# shellcheck source=lib/common.sh
source "$ROOT/test/lib/common.sh"
# shellcheck source=lib/cluster.sh
source "$ROOT/test/lib/cluster.sh"

TEST_FILTER=${TEST_FILTER:-}
TEST_TIMEOUT=${TEST_TIMEOUT:-900}
OUT=$ROOT/test/tmp
start_time=$SECONDS

npass=0
nfail=0
failed=()

pass() { npass=$((npass + 1)); printf 'ok      %s%s\n' "$1" "${2:+  ($2)}"; }
fail() { nfail=$((nfail + 1)); failed+=("$1"); printf 'FAILED  %s%s\n' "$1" "${2:+  ($2)}"; }
selected() { [[ -z $TEST_FILTER || $1 == *"$TEST_FILTER"* ]]; }

summary() {
	local rc=0
	echo
	if [[ $nfail -gt 0 ]]; then
		echo "failed tests:"
		printf '  %s\n' "${failed[@]}"
		rc=1
	fi
	if [[ $((npass + nfail)) -eq 0 ]]; then
		msg "no test ran${TEST_FILTER:+ (TEST_FILTER=$TEST_FILTER)}"
		rc=1
	fi
	msg "outputs in test/tmp/; total time $((SECONDS - start_time)) s"
	echo "$npass passed, $nfail failed"
	exit $rc
}

# Names (basename without extension) of the files matching a glob, in C order,
# filtered by TEST_FILTER applied to "kind/name".
collect() {
	local kind=$1 dir=$2 ext=$3 f n
	[[ -d $dir ]] || return 0
	while IFS= read -r f; do
		n=$(basename "$f" ".$ext")
		selected "$kind/$n" && printf '%s\n' "$n"
	done < <(find "$dir" -maxdepth 1 -type f -name "*.$ext" | LC_ALL=C sort)
	return 0
}

# Status of test NAME in a pg_regress/pg_isolation_regress output file:
# prints ok / failed / missing.  Understands PG<=15 lines
#   "test NAME ... ok 12 ms", "     NAME ... FAILED", "NAME ... failed (ignored)"
# and the TAP style of PG>=16 ("ok 3 - NAME 12 ms", "not ok 3 - NAME").
regress_status() {
	awk -v n="$2" '
		{ for (i = 1; i < NF; i++)
			if ($i == n && $(i + 1) == "...") { s = ($(i + 2) == "ok") ? "ok" : "failed" } }
		$1 == "ok" && ($3 == "-" || $3 == "+") && $4 == n { s = "ok" }
		$1 == "not" && $2 == "ok" && ($4 == "-" || $4 == "+") && $5 == n { s = "failed" }
		END { print (s == "" ? "missing" : s) }' "$1"
}

# Time of test NAME ("12 ms") if the line has one.
regress_time() {
	awk -v n="$2" '{ for (i = 1; i < NF; i++) if ($i == n && $(i + 1) == "...") {
			for (j = i + 3; j < NF; j++) if ($(j + 1) == "ms") t = $j " ms" } }
		END { print t }' "$1"
}

# ---- pg_regress / pg_isolation_regress ---------------------------------------
run_regress_kind() {
	local kind=$1 prog=$2 inputdir=$3 db=$4 limit=$5; shift 5
	local names=("$@") outdir=$OUT/$kind n st rc=0
	mkdir -p "$outdir"
	msg "$kind: ${#names[@]} test(s)"
	timeout --kill-after=30 "$limit" "$prog" \
		--inputdir="$inputdir" --outputdir="$outdir" --bindir="$PG_BINDIR" \
		--host="$PGHOST" --port="$PGPORT" --user="$PGUSER" --dbname="$db" \
		"${names[@]}" >"$outdir/output.txt" 2>&1 || rc=$?
	for n in "${names[@]}"; do
		st=$(regress_status "$outdir/output.txt" "$n")
		case $st in
		ok) pass "$kind/$n" "$(regress_time "$outdir/output.txt" "$n")" ;;
		failed) fail "$kind/$n" "see test/tmp/$kind/regression.diffs" ;;
		*) fail "$kind/$n" "did not run, pg_regress exit $rc" ;;
		esac
	done
	if [[ $rc -ne 0 ]]; then
		[[ $rc -eq 124 || $rc -eq 137 ]] && msg "$kind: timed out after $limit s"
		if [[ -s $outdir/regression.diffs ]]; then
			msg "$kind: regression.diffs (first 300 lines of $(wc -l <"$outdir/regression.diffs")):"
			head -n 300 "$outdir/regression.diffs"
		else
			msg "$kind: $(basename "$prog") exited $rc; its output:"
			tail -n 60 "$outdir/output.txt"
		fi
	fi
}

# ---- TAP ---------------------------------------------------------------------
# TAP tests make their own clusters, so prove runs as the postgres OS user, in
# a postgres-owned copy of the tree (the checkout itself may not be readable
# by postgres, e.g. a clone under a 0700 mktemp dir).
run_tap() {
	local names=("$@") tree=$STREAM_EXT_TMP/tree outdir=$OUT/tap n rc
	mkdir -p "$outdir" "$tree"
	tar -C "$ROOT" --exclude=./.git --exclude=./test/tmp --exclude=./test/postgrest/node_modules \
		--exclude=./test/dashboard/node_modules \
		--exclude='*.o' --exclude='*.bc' \
		-cf - . | tar -C "$tree" -xf -
	is_root && chown -R postgres: "$tree"
	msg "tap: ${#names[@]} test(s)"
	local broker=
	[[ -x $tree/test/broker/stream_ext_broker ]] && broker=$tree/test/broker/stream_ext_broker
	for n in "${names[@]}"; do
		rc=0
		as_postgres env -i -C "$tree/test" \
			PATH="$PG_BINDIR:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
			HOME="$STREAM_EXT_TMP" LANG=C.UTF-8 \
			PERL5LIB="$PG_PERL_DIR:$tree/test/perl" \
			PG_REGRESS="$PG_REGRESS" TESTDIR="$tree/test" \
			PG_CONFIG="$PG_CONFIG" PG_BINDIR="$PG_BINDIR" \
			STREAM_EXT_ROOT="$tree" STREAM_EXT_TMP="$STREAM_EXT_TMP" \
			STREAM_EXT_BROKER="$broker" CI="${CI:-}" \
			STREAM_EXT_CRASH_ITERATIONS="${STREAM_EXT_CRASH_ITERATIONS:-}" \
			STREAM_EXT_CRASH_CHUNK="${STREAM_EXT_CRASH_CHUNK:-}" \
			STREAM_EXT_CRASH_SEED="${STREAM_EXT_CRASH_SEED:-}" \
			STREAM_EXT_COMPACTOR_CRASHES="${STREAM_EXT_COMPACTOR_CRASHES:-}" \
			STREAM_EXT_OUTAGE_SECS="${STREAM_EXT_OUTAGE_SECS:-}" \
			STREAM_EXT_FUZZ_SECONDS="${STREAM_EXT_FUZZ_SECONDS:-}" \
			timeout --kill-after=30 "$TEST_TIMEOUT" prove -I "$tree/test/perl" "t/$n.pl" \
			>"$outdir/$n.out" 2>&1 || rc=$?
		if [[ $rc -eq 0 ]]; then
			# skip_all still passes, but say so
			pass "tap/$n" "$(grep -o -m1 'skipped: .*' "$outdir/$n.out" || true)"
		else
			fail "tap/$n" "$([[ $rc -eq 124 ]] && echo "timed out, ")see test/tmp/tap/"
			cat "$outdir/$n.out"
			if [[ -f $tree/test/tmp_check/log/regress_log_$n ]]; then
				echo "---- tail of regress_log_$n ----"
				tail -n 80 "$tree/test/tmp_check/log/regress_log_$n"
			fi
		fi
	done
	if [[ -d $tree/test/tmp_check/log ]]; then
		cp -r "$tree/test/tmp_check/log" "$outdir/log" 2>/dev/null || true
	fi
}

# ---- integration -------------------------------------------------------------
run_integration() {
	local names=("$@") outdir=$OUT/integration n rc
	mkdir -p "$outdir"
	msg "integration: ${#names[@]} test(s)"
	for n in "${names[@]}"; do
		rc=0
		local t0=$SECONDS
		(cd "$ROOT" && PATH="$PG_BINDIR:$PATH" timeout --kill-after=30 "$TEST_TIMEOUT" \
			bash "$ROOT/test/integration/$n.sh") </dev/null >"$outdir/$n.log" 2>&1 || rc=$?
		if [[ $rc -eq 0 ]]; then
			pass "integration/$n" "$((SECONDS - t0)) s"
		elif [[ $rc -eq 77 ]]; then
			# the test cannot run here (e.g. PostgREST off x86-64 Linux): it
			# passes, like a TAP skip_all, with its reason on the line
			pass "integration/$n" "$(grep -o -m1 'skipped: .*' "$outdir/$n.log" || echo skipped)"
		else
			fail "integration/$n" "$([[ $rc -eq 124 ]] && echo "timed out after $TEST_TIMEOUT s" || echo "exit $rc")"
			echo "---- last 100 lines of test/tmp/integration/$n.log ----"
			tail -n 100 "$outdir/$n.log"
		fi
	done
}

# ---- main ---------------------------------------------------------------------
rm -rf "$OUT"
mkdir -p "$OUT"

bash "$ROOT/test/lib/deps.sh"
pg_env

if ! build_install "$OUT/build.log"; then
	fail build "see test/tmp/build.log"
	summary
fi

mapfile -t regress < <(collect regress "$ROOT/sql" sql)
mapfile -t isolation < <(collect isolation "$ROOT/test/isolation/specs" spec)
mapfile -t tap < <(collect tap "$ROOT/test/t" pl)
mapfile -t integration < <(collect integration "$ROOT/test/integration" sh)

if [[ $((${#regress[@]} + ${#isolation[@]} + ${#tap[@]} + ${#integration[@]})) -eq 0 ]]; then
	summary
fi

scratch_create
if [[ ${STREAM_EXT_KEEP_CLUSTER:-} == 1 ]]; then
	trap 'touch "$STREAM_EXT_TMP/keep"; msg "cluster kept: source $STREAM_EXT_TMP/env.sh; stop: test/lib/cluster.sh stop $STREAM_EXT_TMP"' EXIT
else
	trap cluster_cleanup EXIT
fi
trap 'exit 130' INT
trap 'exit 143' TERM

if [[ $((${#regress[@]} + ${#isolation[@]} + ${#integration[@]})) -gt 0 ]]; then
	# The shared cluster runs no background compactor: pg_regress and
	# isolation tests look into deltas and compact them themselves
	# (stream_ext.compact()), which a compactor would race.  TAP tests
	# 140_compactor_crash and 141_compactor_worker run it in clusters of
	# their own.
	shared_conf=$STREAM_EXT_TMP/shared.conf
	{
		echo "stream_ext.background_compaction = off"
		if [[ -n ${STREAM_EXT_EXTRA_CONF:-} ]]; then cat "$STREAM_EXT_EXTRA_CONF"; fi
	} >"$shared_conf"
	STREAM_EXT_EXTRA_CONF=$shared_conf cluster_start
fi

if [[ ${#regress[@]} -gt 0 ]]; then
	run_regress_kind regress "$PG_REGRESS" "$ROOT" contrib_regression \
		$((TEST_TIMEOUT * 3)) "${regress[@]}"
fi
if [[ ${#isolation[@]} -gt 0 ]]; then
	run_regress_kind isolation "$PG_ISOLATION_REGRESS" "$ROOT/test/isolation" isolation_regression \
		$((TEST_TIMEOUT * ${#isolation[@]})) "${isolation[@]}"
fi
if [[ ${#tap[@]} -gt 0 ]]; then
	run_tap "${tap[@]}"
fi
if [[ ${#integration[@]} -gt 0 ]]; then
	run_integration "${integration[@]}"
fi

summary
