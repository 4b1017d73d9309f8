#!/usr/bin/env bash
# bench/callgrind_reads.sh -- instructions per prepared read by key of a
# view that appends, by callgrind (docs/benchmarks.md, "Reads by key: one
# custom scan node").
#
#   STREAM_EXT_PGROOT=/tmp/pg-mybranch bash bench/callgrind_reads.sh
#
# bench/reads.sh's view v (k, count, sum, avg, max over CG_READ_GROUPS
# groups, default 100,000, compacted; CG_READ_DELTA rows appended after,
# default 0) and v_base, 0.2's view (the materialization alone).  Each case
# runs a single-user backend (postgres --single) under callgrind twice:
# PREPARE p(int) AS SELECT * FROM <view> WHERE k = $1 (its generic plan:
# plan_cache_mode = force_generic_plan), a plpgsql loop of 10 EXECUTEs
# (EXECUTE format('EXECUTE p(%s)', k), as bench/reads.sh times them), then a
# loop of 10 or of CG_READ_N + 10 (default 500); the difference divided by
# CG_READ_N is one read.  Cases (CG_READ_CASES, default "base off on"):
#   base  v_base
#   off   v with stream_ext.key_read_scan = off (the merged read's plan)
#   on    v with stream_ext.key_read_scan = on (the StreamExtKeyRead node)
# CG_READ_MODE=unprepared reads without a prepared statement instead: the
# loops run EXECUTE format('SELECT * FROM <view> WHERE k = %s', k), a
# dynamic query string that plpgsql parses, rewrites and plans at every
# EXECUTE (what psql's statements and PostgREST without prepared statements
# cost); plan_cache_mode is then left alone.  CG_READ_COND (unprepared only,
# default 'k = %1$s') is the condition read, %1$s the key: e.g.
# 'k >= %1$s AND k < %1$s + 10', a range the node does not take.
# Prints instructions per read and the ratio to the first case.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export STREAM_EXT_ROOT=$ROOT
# shellcheck source=../test/lib/common.sh
source "$ROOT/test/lib/common.sh"
pg_env

# shellcheck source=callgrind_lib.sh
source "$ROOT/bench/callgrind_lib.sh"

CASES=${CG_READ_CASES:-base off on}
NGROUPS=${CG_READ_GROUPS:-100000}
NDELTA=${CG_READ_DELTA:-0}
N=${CG_READ_N:-500}
MODE=${CG_READ_MODE:-prepared}
COND=${CG_READ_COND:-k = %1\$s}
case $MODE in prepared | unprepared) ;; *) die "CG_READ_MODE: prepared or unprepared" ;; esac
cg_scratch cgr

msg "callgrind reads: scratch $SCRATCH"
cg_initdb

{
	echo "CREATE EXTENSION stream_ext"
	echo "SELECT stream_ext.create_stream('ev', 'k int, x float8, ts timestamptz')"
	echo "SET stream_ext.share_storage = off"
	echo "CREATE VIEW v WITH (continuous) AS SELECT k, count(*) AS n, sum(x) AS s, avg(x) AS a, max(ts) AS last FROM ev GROUP BY k"
	echo "INSERT INTO ev SELECT i, i * 0.5, '2026-01-01'::timestamptz + i * interval '1 s' FROM generate_series(1, $NGROUPS) AS i"
	echo "SELECT stream_ext.compact('v')"
	echo "CREATE VIEW v_base AS SELECT m.k, m.state_count_1 AS n, m.state_sum_2 AS s, stream_ext.finalize(m.state_avg_3, 'avg(double precision)'::regprocedure, NULL::double precision) AS a, m.state_max_4 AS last FROM v_mrel m"
	# compaction emptied the delta: vacuumed, as bench/reads.sh does
	echo "VACUUM ANALYZE v_mrel, v_delta"
	if ((NDELTA > 0)); then
		echo "INSERT INTO ev SELECT 1 + (i * 7919) % $NGROUPS, 1, '2026-06-01' FROM generate_series(1, $NDELTA) AS i"
		echo "ANALYZE v_delta"
	fi
} | single "$SCRATCH/base" >"$SCRATCH/setup.log" 2>&1
grep -q ERROR "$SCRATCH/setup.log" && { cat "$SCRATCH/setup.log" >&2; die "set-up failed"; }

loop() {	# loop COUNT VIEW: one plpgsql loop of COUNT reads
	local stmt="EXECUTE p(%s)"
	[[ $MODE == prepared ]] || stmt="SELECT * FROM $2 WHERE $COND"
	echo "DO \$\$ BEGIN FOR i IN 1..$1 LOOP EXECUTE format('$stmt', 1 + (i * 7919) % $NGROUPS); END LOOP; END \$\$"
}

# statements CASE COUNT
statements() {
	local view=v scan=on
	case $1 in
	base) view=v_base ;; off) scan=off ;; on) ;;
	*) die "unknown case $1 (base, off, on)" ;;
	esac
	echo "SET stream_ext.key_read_scan = $scan"
	if [[ $MODE == prepared ]]; then
		echo "SET plan_cache_mode = force_generic_plan"
		echo "PREPARE p(int) AS SELECT * FROM $view WHERE k = \$1"
	fi
	loop 10 "$view"
	loop "$2" "$view"
}

run() {	# run LABEL CASE COUNT -> $SCRATCH/cg.LABEL
	local label=$1
	rm -rf "$SCRATCH/data"
	cp -a "$SCRATCH/base" "$SCRATCH/data"
	statements "$2" "$3" >"$SCRATCH/in.$label"
	as_postgres valgrind --tool=callgrind --callgrind-out-file="$SCRATCH/cg.$label" \
		"$PG_BINDIR/postgres" --single -D "$SCRATCH/data" postgres \
		<"$SCRATCH/in.$label" >"$SCRATCH/out.$label" 2>&1
	if grep -q ERROR "$SCRATCH/out.$label"; then
		grep ERROR "$SCRATCH/out.$label" | head -3 >&2
		die "case $label failed"
	fi
}

total() { sed -n 's/^\(summary\|totals\): *//p' "$1" | head -1; }

first=
printf '%-6s %14s %10s\n' case "instr/read" ratio
for c in $CASES; do
	run "$c.small" "$c" 10
	run "$c.big" "$c" $((N + 10))
	per=$((($(total "$SCRATCH/cg.$c.big") - $(total "$SCRATCH/cg.$c.small")) / N))
	[[ -n $first ]] || first=$per
	printf '%-6s %14s %10s\n' "$c" "$per" "$(awk -v a="$per" -v b="$first" 'BEGIN {printf "%.2f", a / b}')"
done
