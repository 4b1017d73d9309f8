#!/usr/bin/env bash
# bench/joins.sh -- a join of two streams within a time window (docs/joins.md)
# against raw COPY of both streams.
#
#   two streams ja (k, v, ts) and jb (k, w, ts), BENCH_JOIN_KEYS (1,000) keys,
#   event time advancing BENCH_JOIN_RATE (200) rows per second of event time
#   on each stream, loaded interleaved: a BENCH_JOIN_BATCH-row (10,000)
#   server-side COPY into ja, then one into jb, ... BENCH_JOIN_ROWS (100,000)
#   rows per stream.
#     raw    the two bare streams
#     join   plus  SELECT a.k, count(*), sum(a.v * b.w) FROM ja a JOIN jb b
#                  ON a.k = b.k AND b.ts BETWEEN a.ts - 5 min AND a.ts + 5 min
#                  GROUP BY a.k
#     join_idx  the same with an index on (k, ts) of each stream
#     left   the LEFT JOIN (docs/joins.md, "LEFT JOIN of two streams"):
#                  SELECT a.k, count(*), count(b.w), sum(a.v * b.w) FROM ja a
#                  LEFT JOIN jb b ON <the same> GROUP BY a.k
#            checked against the query of docs/joins.md (no pair is
#            refused: each stream's rows come in time order)
#   BENCH_JOIN_VARIANTS (default "join join_idx left") picks the views measured.
#   Each measurement starts from fresh streams, times the whole load in one
#   session with clock_timestamp(), and (join*) checks the view against the
#   plain query, whose own time (the join and aggregate run once over all
#   rows) is reported too.  BENCH_JOIN_REPS (2) repetitions, interleaved; the medians
#   and their ratio are printed (markdown, also to BENCH_RESULTS_DIR/joins.md).
#
# Runs inside bench/run.sh's environment (PGHOST, PGPORT, ..., STREAM_EXT_TMP),
# or alone: then it makes its own throwaway cluster like bench/run.sh
# (STREAM_EXT_PGROOT honoured; stream_ext must be installed there).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -z ${PGPORT:-} || -z ${STREAM_EXT_TMP:-} ]]; then
	export STREAM_EXT_ROOT=$ROOT
	# shellcheck source=../test/lib/common.sh
	source "$ROOT/test/lib/common.sh"
	# shellcheck source=../test/lib/cluster.sh
	source "$ROOT/test/lib/cluster.sh"
	pg_env
	scratch_create
	trap cluster_cleanup EXIT
	cluster_start
fi

ROWS=${BENCH_JOIN_ROWS:-100000}
BATCH=${BENCH_JOIN_BATCH:-10000}
KEYS=${BENCH_JOIN_KEYS:-1000}
RATE=${BENCH_JOIN_RATE:-200}
REPS=${BENCH_JOIN_REPS:-2}
VARIANTS=${BENCH_JOIN_VARIANTS:-join join_idx left}
DATA=${BENCH_DATA_DIR:-$STREAM_EXT_TMP/bench-data}/joins
RESULTS=${BENCH_RESULTS_DIR:-$STREAM_EXT_TMP}
PSQL=(psql -X -q -v ON_ERROR_STOP=1)
mkdir -p "$DATA" "$RESULTS"
[[ $(id -u) -eq 0 ]] && chown postgres: "$DATA"

"${PSQL[@]}" -c "CREATE EXTENSION IF NOT EXISTS stream_ext"
# the input: one CSV file per batch and stream
nb=$((ROWS / BATCH))
"${PSQL[@]}" <<EOF
SET TimeZone = 'UTC';
DO \$g\$ BEGIN
  FOR j IN 0 .. $((nb - 1)) LOOP
    EXECUTE format('COPY (SELECT (i::bigint * 7919) %% $KEYS, i %% 100,
                           timestamptz ''2024-01-01'' + (i / $RATE.0) * interval ''1 second''
                      FROM generate_series(%s, %s) i) TO %L (FORMAT csv)',
                   j * $BATCH + 1, (j + 1) * $BATCH, format('$DATA/a%s.csv', j));
    EXECUTE format('COPY (SELECT (i::bigint * 104729) %% $KEYS, i %% 7,
                           timestamptz ''2024-01-01'' + (i / $RATE.0 + 30) * interval ''1 second''
                      FROM generate_series(%s, %s) i) TO %L (FORMAT csv)',
                   j * $BATCH + 1, (j + 1) * $BATCH, format('$DATA/b%s.csv', j));
  END LOOP;
END \$g\$;
EOF

# measure raw|join -> seconds
measure() {
	local w=$1 script=$DATA/run.sql
	{
		echo "SET client_min_messages = warning;"
		echo "DROP TABLE IF EXISTS ja, jb CASCADE;"
		echo "SELECT stream_ext.create_stream('ja', 'k int, v int, ts timestamptz') \\g /dev/null"
		echo "SELECT stream_ext.create_stream('jb', 'k int, w int, ts timestamptz') \\g /dev/null"
		if [[ $w == join_idx ]]; then
			echo "CREATE INDEX ON ja (k, ts);"
			echo "CREATE INDEX ON jb (k, ts);"
		fi
		if [[ $w == left ]]; then
			cat <<-'EOF'
				CREATE VIEW jv WITH (continuous) AS
				  SELECT a.k, count(*) AS n, count(b.w) AS m, sum(a.v * b.w) AS s
				    FROM ja a LEFT JOIN jb b
				      ON a.k = b.k AND b.ts BETWEEN a.ts - interval '5 minutes' AND a.ts + interval '5 minutes'
				   GROUP BY a.k;
			EOF
		fi
		if [[ $w == join* ]]; then
			cat <<-'EOF'
				CREATE VIEW jv WITH (continuous) AS
				  SELECT a.k, count(*) AS n, sum(a.v * b.w) AS s
				    FROM ja a JOIN jb b
				      ON a.k = b.k AND b.ts BETWEEN a.ts - interval '5 minutes' AND a.ts + interval '5 minutes'
				   GROUP BY a.k;
			EOF
		fi
		echo "CHECKPOINT;"
		echo "SELECT clock_timestamp() AS t0 \\gset"
		for ((j = 0; j < nb; j++)); do
			echo "COPY ja (k, v, ts) FROM '$DATA/a$j.csv' (FORMAT csv);"
			echo "COPY jb (k, w, ts) FROM '$DATA/b$j.csv' (FORMAT csv);"
		done
		echo "SELECT extract(epoch FROM clock_timestamp() - :'t0') AS secs \\gset"
		if [[ $w == join* ]]; then
			cat <<-'EOF'
				SELECT clock_timestamp() AS q0 \gset
				SELECT a.k, count(*), sum(a.v * b.w) FROM ja a JOIN jb b
				    ON a.k = b.k AND b.ts BETWEEN a.ts - interval '5 minutes' AND a.ts + interval '5 minutes'
				 GROUP BY a.k \g /dev/null
				SELECT extract(epoch FROM clock_timestamp() - :'q0') AS qsecs,
				       (SELECT sum(n) FROM jv) AS pairs \gset
				\echo :secs :qsecs :pairs
				SELECT count(*) AS wrong FROM (
				  (TABLE jv EXCEPT ALL
				   SELECT a.k, count(*), sum(a.v * b.w) FROM ja a JOIN jb b
				       ON a.k = b.k AND b.ts BETWEEN a.ts - interval '5 minutes' AND a.ts + interval '5 minutes'
				    GROUP BY a.k)
				  UNION ALL
				  (SELECT a.k, count(*), sum(a.v * b.w) FROM ja a JOIN jb b
				       ON a.k = b.k AND b.ts BETWEEN a.ts - interval '5 minutes' AND a.ts + interval '5 minutes'
				    GROUP BY a.k
				   EXCEPT ALL TABLE jv)) d \gset
				\if :wrong
				\echo 'bench/joins.sh: the view differs from its query' >&2
				SELECT 1/0;
				\endif
			EOF
		elif [[ $w == left ]]; then
			cat <<-'EOF'
				SELECT clock_timestamp() AS q0 \gset
				SELECT a.k, count(*), count(b.w), sum(a.v * b.w) FROM ja a LEFT JOIN jb b
				    ON a.k = b.k AND b.ts BETWEEN a.ts - interval '5 minutes' AND a.ts + interval '5 minutes'
				 GROUP BY a.k \g /dev/null
				SELECT extract(epoch FROM clock_timestamp() - :'q0') AS qsecs,
				       (SELECT sum(n) FROM jv) AS pairs \gset
				\echo :secs :qsecs :pairs
				SELECT count(*) + (SELECT late_pairs FROM stream_ext.stream_left_joins) AS wrong FROM (
				  (TABLE jv EXCEPT ALL
				   SELECT a.k, count(*), count(b.w), sum(a.v * b.w) FROM ja a LEFT JOIN jb b
				       ON a.k = b.k AND b.ts BETWEEN a.ts - interval '5 minutes' AND a.ts + interval '5 minutes'
				    WHERE b.ts IS NOT NULL OR a.ts IS NULL
				       OR a.ts + interval '5 minutes' < (SELECT max_time - allowed_lateness FROM stream_ext.stream_left_joins)
				    GROUP BY a.k)
				  UNION ALL
				  (SELECT a.k, count(*), count(b.w), sum(a.v * b.w) FROM ja a LEFT JOIN jb b
				       ON a.k = b.k AND b.ts BETWEEN a.ts - interval '5 minutes' AND a.ts + interval '5 minutes'
				    WHERE b.ts IS NOT NULL OR a.ts IS NULL
				       OR a.ts + interval '5 minutes' < (SELECT max_time - allowed_lateness FROM stream_ext.stream_left_joins)
				    GROUP BY a.k
				   EXCEPT ALL TABLE jv)) d \gset
				\if :wrong
				\echo 'bench/joins.sh: the LEFT JOIN view differs from the query of docs/joins.md' >&2
				SELECT 1/0;
				\endif
			EOF
		else
			echo "\\echo :secs"
		fi
		echo "DROP TABLE ja, jb CASCADE;"
	} >"$script"
	"${PSQL[@]}" -t -A -f "$script"
}

median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

raw=()
join=()
idx=()
left=()
query=()
lquery=()
for ((r = 1; r <= REPS; r++)); do
	raw+=("$(measure raw)")
	line="bench/joins.sh: rep $r: raw ${raw[-1]} s"
	if [[ " $VARIANTS " == *" join "* ]]; then
		read -r s q pairs <<<"$(measure join)"
		join+=("$s")
		query+=("$q")
		line+=", join $s s, plain query $q s ($pairs pairs)"
	fi
	if [[ " $VARIANTS " == *" join_idx "* ]]; then
		read -r s q pairs <<<"$(measure join_idx)"
		idx+=("$s")
		line+=", join_idx $s s"
	fi
	if [[ " $VARIANTS " == *" left "* ]]; then
		read -r s q lrows <<<"$(measure left)"
		left+=("$s")
		lquery+=("$q")
		line+=", left $s s, plain LEFT query $q s ($lrows rows)"
	fi
	echo "$line" >&2
done
med() { if (($# == 0)); then echo 0; else printf '%s\n' "$@" | median; fi; }
mraw=$(med "${raw[@]}")
mjoin=$(med "${join[@]}")
midx=$(med "${idx[@]}")
mleft=$(med "${left[@]}")
mquery=$(med "${query[@]}")
mlquery=$(med "${lquery[@]}")
{
	echo "| load ($((2 * ROWS)) rows, $BATCH-row COPYs alternating between the streams, $KEYS keys, 5-minute window) | median s | rows/s | ratio to raw |"
	echo "| --- | ---: | ---: | ---: |"
	awk -v r="$mraw" -v j="$mjoin" -v i="$midx" -v l="$mleft" -v n=$((2 * ROWS)) 'BEGIN {
		printf "| raw COPY into both streams | %.2f | %.0f | 1.00 |\n", r, n / r;
		if (j > 0) printf "| with the join view | %.2f | %.0f | %.2f |\n", j, n / j, r / j;
		if (i > 0) printf "| with the join view, index on (k, ts) of both streams | %.2f | %.0f | %.2f |\n", i, n / i, r / i;
		if (l > 0) printf "| with the LEFT JOIN view | %.2f | %.0f | %.2f |\n", l, n / l, r / l }'
	echo
	[[ -n ${query[*]} ]] && echo "The join and aggregate as one plain query over all rows at the end: $mquery s (median)."
	[[ -n ${lquery[*]} ]] && echo "The LEFT JOIN and aggregate as one plain query over all rows at the end: $mlquery s (median)."
	echo "$REPS repetitions, interleaved; load average $(cut -d' ' -f1-3 /proc/loadavg) at the end."
} | tee "$RESULTS/joins.md"
