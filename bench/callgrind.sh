#!/usr/bin/env bash
# bench/callgrind.sh -- instructions per statement of a writer, by callgrind.
#
# Wall-clock ratios of small statements are noisy on a shared machine;
# instruction counts are not.  This runs one backend in single-user mode
# (postgres --single: no client, no compactor, nothing else in the
# process) under valgrind --tool=callgrind, twice per case: a warm-up
# (three statements, so that the plans are made) plus 10 statements, and
# the same plus N more.  The difference divided by N is what one statement
# costs, warm-up and start-up excluded.
#
#   STREAM_EXT_PGROOT=/tmp/pg-mybranch bash bench/callgrind.sh
#
# Streams and views are bench/core.sh's: raw (no view), w1 (W1's view),
# w4 (W4's ten views), and w1other: W1's view owned by another role than
# the stream (cg_other), so that the lock guard's subtransaction runs
# (docs/security.md, "Locks held by other roles"); the input is single-row INSERTs (ins, CG_N_INS of
# them, default 1000), 100-row COPYs (c100, CG_N_C100, default 150) or
# 10,000-row COPYs (c10000, CG_N_C10000, default 5) of core.sh's rows.
# The module installed in $(pg_config --pkglibdir) is measured (make
# install first).  stream_ext.compact_threshold = -1: writers never fold
# their deltas inline, so every statement does the same work.
#
# Environment (all optional):
#   CG_CASES="raw:ins w1:ins w4:ins raw:c100 w1:c100 w4:c100"  stream:input
#   CG_SESSION_SQL   statements run first in each session, one a line
#                    ("SET DateStyle = 'ISO, YMD'": the settings of the
#                    inserting session change what pinning costs)
#   CG_TOP=0         also list the N functions whose inclusive
#                    instructions per statement grew most over the first
#                    case (needs callgrind_annotate)
#   CG_KEEP=1        keep the scratch directory (the callgrind.out files)
# Prints one line per case: instructions per statement, and the ratio of
# the first case's to it (raw / view, as bench/core.sh reports times).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export STREAM_EXT_ROOT=$ROOT
# shellcheck source=../test/lib/common.sh
source "$ROOT/test/lib/common.sh"
pg_env

# shellcheck source=callgrind_lib.sh
source "$ROOT/bench/callgrind_lib.sh"

CASES=${CG_CASES:-raw:ins w1:ins w4:ins raw:c100 w1:c100 w4:c100}
declare -A N=([ins]=${CG_N_INS:-1000} [c100]=${CG_N_C100:-150} [c10000]=${CG_N_C10000:-5})
TOP=${CG_TOP:-0}
cg_scratch cg

msg "callgrind: scratch $SCRATCH"
cg_initdb

# bench/core.sh's views: W1, and W4's ten aggregate mixes
SPECS=("count sum" "count avg" "min max" "sum max" "count sum avg" "min avg"
	"countv max" "sum min" "count min max" "count sum avg min max")
agg_list() {
	local a sel=()
	for a in ${SPECS[$(($1 - 1))]}; do
		case $a in
		count) sel+=("count(*) AS n") ;; sum) sel+=("sum(v) AS s") ;;
		avg) sel+=("avg(v) AS a") ;; min) sel+=("min(v) AS lo") ;;
		max) sel+=("max(v) AS hi") ;; countv) sel+=("count(v) AS nv") ;;
		esac
	done
	local IFS=,
	echo "${sel[*]}"
}
KEYS="k, date_bin('1 minute', ts, '2000-01-01') AS minute"
{
	echo "CREATE EXTENSION stream_ext"
	echo "CREATE FUNCTION public.rows(lo int, hi int) RETURNS TABLE (k int, ts timestamptz, v int) LANGUAGE sql IMMUTABLE AS \$\$ SELECT ((hashint4(i) % 1000) + 1000) % 1000, timestamptz '2024-01-01 00:00:00+00' + i * interval '4 ms' + (hashint4(-i) % 2000) * interval '1 ms', (i * 37) % 100 FROM generate_series(lo, hi) i \$\$"
	for s in raw w1 w4 w1other; do
		echo "SELECT stream_ext.create_stream('public.$s', 'k int, ts timestamptz, v int')"
	done
	echo "CREATE VIEW public.cv_w1 WITH (continuous) AS SELECT $KEYS, $(agg_list 1) FROM public.w1 GROUP BY k, minute"
	echo "CREATE ROLE cg_other"
	echo "GRANT CREATE ON SCHEMA public TO cg_other"
	echo "GRANT SELECT ON public.w1other TO cg_other"
	echo "SET ROLE cg_other"
	echo "CREATE VIEW public.cv_w1other WITH (continuous) AS SELECT $KEYS, $(agg_list 1) FROM public.w1other GROUP BY k, minute"
	echo "RESET ROLE"
	for i in $(seq 1 10); do
		echo "CREATE VIEW public.cv_w4_$i WITH (continuous) AS SELECT $KEYS, $(agg_list "$i") FROM public.w4 GROUP BY k, minute"
	done
	echo "COPY (SELECT * FROM public.rows(1, 100)) TO '$SCRATCH/b100.csv' (FORMAT csv)"
	echo "COPY (SELECT * FROM public.rows(1, 10000)) TO '$SCRATCH/b10000.csv' (FORMAT csv)"
} | single "$SCRATCH/base" >"$SCRATCH/setup.log" 2>&1
grep -q ERROR "$SCRATCH/setup.log" && { cat "$SCRATCH/setup.log" >&2; die "set-up failed"; }

# statements STREAM INPUT COUNT: the warm-up, then COUNT statements
statements() {
	local s=$1 kind=$2 cnt=$3 i
	[[ -n ${CG_SESSION_SQL:-} ]] && printf '%s\n' "$CG_SESSION_SQL"
	echo "INSERT INTO public.$s (k, ts, v) VALUES (-1, '1999-01-01 00:00:00+00', 0)"
	echo "INSERT INTO public.$s (k, ts, v) VALUES (-1, '1999-01-01 00:00:00+00', 0)"
	echo "COPY public.$s (k, ts, v) FROM '$SCRATCH/b100.csv' (FORMAT csv)"
	for ((i = 0; i < cnt; i++)); do
		case $kind in
		ins) echo "INSERT INTO public.$s (k, ts, v) VALUES ($((i % 1000)), '2024-01-01 00:00:$((i % 60)).$((i % 1000))+00', $((i % 100)))" ;;
		c100) echo "COPY public.$s (k, ts, v) FROM '$SCRATCH/b100.csv' (FORMAT csv)" ;;
		c10000) echo "COPY public.$s (k, ts, v) FROM '$SCRATCH/b10000.csv' (FORMAT csv)" ;;
		*) die "unknown input $kind (ins, c100, c10000)" ;;
		esac
	done
}

# run LABEL STREAM INPUT COUNT -> $SCRATCH/cg.LABEL (callgrind output)
run() {
	local label=$1
	rm -rf "$SCRATCH/data"
	cp -a "$SCRATCH/base" "$SCRATCH/data"
	statements "$2" "$3" "$4" >"$SCRATCH/in.$label"
	as_postgres valgrind --tool=callgrind --callgrind-out-file="$SCRATCH/cg.$label" \
		"$PG_BINDIR/postgres" --single -D "$SCRATCH/data" postgres \
		<"$SCRATCH/in.$label" >"$SCRATCH/out.$label" 2>&1
	if grep -q ERROR "$SCRATCH/out.$label"; then
		grep ERROR "$SCRATCH/out.$label" | head -3 >&2
		die "case $label failed"
	fi
}

total() { sed -n 's/^\(summary\|totals\): *//p' "$1" | head -1; }

# inclusive instructions per function (callgrind_annotate), "file:name
# count"; a function listed twice (once per path its file is known by,
# or for code inlined from a header) counts once, the larger
functions() {
	callgrind_annotate --inclusive=yes --threshold=100 --show-percs=no --auto=no "$1" |
		sed -n 's/^ *\([0-9][0-9,]*\)  *\([^ ].*\)$/\1 \2/p' |
		sed 's/,//g; s/ \[[^]]*\]$//' | grep -v ' PROGRAM TOTALS' |
		awk '{f = $2; for (i = 3; i <= NF; i++) f = f "_" $i; sub(/^.*\//, "", f);
		      if ($1 > n[f]) n[f] = $1} END {for (f in n) print f, n[f]}'
}

first=
first_label=
printf '%-12s %14s %10s\n' case "instr/stmt" ratio
for c in $CASES; do
	s=${c%%:*} kind=${c#*:} n=${N[${c#*:}]:-}
	[[ -n $n ]] || die "unknown input in $c (ins, c100, c10000)"
	run "$s.$kind.small" "$s" "$kind" 10
	run "$s.$kind.big" "$s" "$kind" $((n + 10))
	per=$((($(total "$SCRATCH/cg.$s.$kind.big") - $(total "$SCRATCH/cg.$s.$kind.small")) / n))
	[[ -n $first ]] || { first=$per; first_label=$s.$kind; }
	printf '%-12s %14s %10s\n' "$s.$kind" "$per" "$(awk -v a="$first" -v b="$per" 'BEGIN {printf "%.3f", a / b}')"
	if ((TOP > 0)) && [[ $s.$kind != "$first_label" ]]; then
		# growth per statement over the first case, by function
		join <(functions "$SCRATCH/cg.$first_label.big" | sort) <(functions "$SCRATCH/cg.$first_label.small" | sort) -a1 -e0 -o 0,1.2,2.2 >"$SCRATCH/f0"
		join <(functions "$SCRATCH/cg.$s.$kind.big" | sort) <(functions "$SCRATCH/cg.$s.$kind.small" | sort) -a1 -e0 -o 0,1.2,2.2 >"$SCRATCH/f1"
		n0=${N[${first_label#*.}]}
		join -a2 -e0 -o 0,1.2,1.3,2.2,2.3 "$SCRATCH/f0" "$SCRATCH/f1" |
			awk -v n0="$n0" -v n1="$n" '{d = ($4 - $5) / n1 - ($2 - $3) / n0; if (d > 0) printf "    %10.0f  %s\n", d, $1}' |
			sort -rn | head -n "$TOP"
	fi
done
