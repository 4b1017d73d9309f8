#!/usr/bin/env bash
# bench/soak.sh -- memory soak: does a backend maintaining continuous views
# keep a flat memory footprint over ~100M events?
#
#   bash bench/soak.sh                 # as root: build, install, throwaway cluster
#   BENCH_SOAK_SECS=120 bash bench/soak.sh       # a short run
#
# One long-lived session COPYs 10,000-row batches into a stream with three
# continuous views (count+sum by key and minute over 1000 keys; exact
# count(DISTINCT) by key; a keyless count/avg/max), one statement per batch,
# until BENCH_SOAK_EVENTS events or BENCH_SOAK_SECS seconds, whichever comes
# first.  The stream is TRUNCATEd every BENCH_SOAK_TRUNCATE batches so the
# disk stays bounded (the views keep their state).  Event time advances, so
# the (key, minute) view keeps gaining groups: the materialization grows,
# the backend must not.
#
# Every BENCH_SOAK_SAMPLE seconds it samples the loading backend's memory
# from /proc/PID/smaps_rollup (Rss, Pss, private = Private_Clean +
# Private_Dirty, Anonymous) and prints a table.  Anonymous is the figure
# that matters: the backend's own heap (memory contexts).  Rss and private
# also count pages of shared buffers the backend touched, which grow until
# it has touched all of shared_buffers and say nothing about leaks.  At the
# end it checks the views against each other and the events committed, and
# reports anonymous-memory growth from the 2nd sample (after warm-up) to the
# last.  The background compactor (housekeeping/compactor.c), which folds
# the views' deltas into their materializations meanwhile, is sampled the
# same way (its pid from pg_stat_activity, backend_type 'stream_ext
# compactor'), with the delta rows still waiting (view_stats.delta_rows,
# summed over the views): its memory must stay flat too, and the waiting
# rows bounded -- it keeps up with 10,000-row batches.  Like every benchmark it
# reports, it does not pass or fail on the figures; it exits non-zero only
# when something broke or a view is wrong.
#
# Environment: BENCH_SOAK_EVENTS=100000000 BENCH_SOAK_SECS=1800
#   BENCH_SOAK_SAMPLE=60 BENCH_SOAK_TRUNCATE=100 BENCH_SKIP_BUILD=1
#   STREAM_EXT_PGROOT (see docs/testing.md)
# Output: the table on stdout and bench/results/soak.md.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export STREAM_EXT_ROOT=$ROOT
# shellcheck source=../test/lib/common.sh
source "$ROOT/test/lib/common.sh"
# shellcheck source=../test/lib/cluster.sh
source "$ROOT/test/lib/cluster.sh"

EVENTS=${BENCH_SOAK_EVENTS:-100000000}
SECS=${BENCH_SOAK_SECS:-1800}
SAMPLE=${BENCH_SOAK_SAMPLE:-60}
TRUNC=${BENCH_SOAK_TRUNCATE:-100}
BATCH=10000

pg_env
OUTDIR=$ROOT/bench/results
mkdir -p "$OUTDIR"
if [[ -z ${BENCH_SKIP_BUILD:-} ]] && is_root; then
	build_install "$OUTDIR/soak-build.log" || die "build failed"
fi

scratch_create
trap cluster_cleanup EXIT
cluster_start
PSQL=("$PG_BINDIR/psql" -X -q -v ON_ERROR_STOP=1)

say() { printf 'bench/soak: %s\n' "$*" >&2; }

"${PSQL[@]}" <<'EOF'
SET client_min_messages = warning;
CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('soak', 'k int, ts timestamptz, v int');
CREATE VIEW soak_w1 WITH (continuous) AS
  SELECT k, date_bin('1 minute', ts, 'epoch') AS minute, count(*) AS n, sum(v) AS s
    FROM soak GROUP BY 1, 2;
CREATE VIEW soak_distinct WITH (continuous) AS
  SELECT k % 100 AS bucket, count(*) AS n, count(DISTINCT v) AS vs FROM soak GROUP BY 1;
CREATE VIEW soak_total WITH (continuous) AS
  SELECT count(*) AS n, avg(v) AS a, max(ts) AS last_ts FROM soak;
EOF

# BENCH_SOAK_FILES batch files, each with its own slice of event time, are
# COPYed in turn: within a cycle event time advances and the (key, minute)
# view keeps gaining groups (~200,000 per cycle with the defaults); later
# cycles update the existing groups.
FILES=${BENCH_SOAK_FILES:-200}
DATA=$STREAM_EXT_TMP/soak-data
mkdir -p "$DATA"
is_root && chown postgres: "$DATA"
say "generating $FILES batch files of $BATCH rows"
"${PSQL[@]}" -c "
DO \$\$
BEGIN
  FOR f IN 0..$FILES - 1 LOOP
    EXECUTE format(\$q\$COPY (SELECT ((hashint4(i + %s) %% 1000) + 1000) %% 1000,
                                    timestamptz '2024-01-01 00:00:00+00' + (i + %s) * interval '6 ms',
                                    (i * 37) %% 1000
                               FROM generate_series(1, %s) i) TO %L\$q\$,
                   f * $BATCH, f * $BATCH, $BATCH, '$DATA/b' || f || '.tsv');
  END LOOP;
END \$\$;"

# The loader: one session, one COPY per batch, TRUNCATE now and then.
loader_script() {
	local b=0
	echo "SET application_name = 'stream_ext_soak';"
	while :; do
		echo "COPY soak (k, ts, v) FROM '$DATA/b$((b % FILES)).tsv';"
		b=$((b + 1))
		if [[ $((b % TRUNC)) -eq 0 ]]; then
			echo "TRUNCATE soak;"
			echo "SELECT 'loaded', $b;"
		fi
	done
}

say "loading until $EVENTS events or $SECS s"
exec 3< <(loader_script | "${PSQL[@]}" -At 2>"$STREAM_EXT_TMP/loader.err")
loader_pid=$!
pid=
for _ in $(seq 1 100); do
	pid=$("${PSQL[@]}" -At -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'stream_ext_soak'")
	[[ -n $pid ]] && break
	sleep 0.1
done
[[ -n $pid ]] || die "loader backend did not show up: $(cat "$STREAM_EXT_TMP/loader.err")"

mem() {   # rss pss private anonymous, in MiB
	awk '/^Rss:/ { r = $2 } /^Pss:/ { p = $2 } /^Private_(Clean|Dirty):/ { q += $2 } /^Anonymous:/ { a = $2 }
	     END { printf "%.1f %.1f %.1f %.1f\n", r / 1024, p / 1024, q / 1024, a / 1024 }' "/proc/$1/smaps_rollup"
}

t0=$SECONDS
loaded=0
samples=()
printf '| elapsed s | events | events/s | rss MiB | pss MiB | private MiB | anonymous MiB | groups (k, minute) | compactor pid | compactor rss MiB | compactor anonymous MiB | delta rows waiting |\n' >"$OUTDIR/soak.md.tmp"
printf '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n' >>"$OUTDIR/soak.md.tmp"
csamples=()
max_delta=0
next=$((SECONDS + SAMPLE))
last_events=0 last_t=$SECONDS
while :; do
	if read -r -t 1 line <&3; then
		[[ $line == loaded\|* ]] && loaded=${line#loaded|}
	fi
	if ! kill -0 "$loader_pid" 2>/dev/null; then
		die "loader exited: $(cat "$STREAM_EXT_TMP/loader.err")"
	fi
	events=$((loaded * BATCH))
	if [[ $SECONDS -ge $next || $events -ge $EVENTS || $((SECONDS - t0)) -ge $SECS ]]; then
		read -r rss pss priv anon < <(mem "$pid")
		# committed events, as maintenance counted them
		events=$("${PSQL[@]}" -At -c "SELECT rows_in FROM stream_ext.view_stats WHERE view = 'soak_total'::regclass")
		groups=$("${PSQL[@]}" -At -c "SELECT count(*) FROM soak_w1_mrel")
		# the compactor: its memory, and the delta rows it has still to fold
		cpid=$("${PSQL[@]}" -At -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'stream_ext compactor' AND datname = current_database()")
		crss=- canon=-
		if [[ -n $cpid ]] && read -r crss _ _ canon < <(mem "$cpid" 2>/dev/null); then
			csamples+=("$canon")
		else
			cpid=${cpid:-none}
		fi
		delta=$("${PSQL[@]}" -At -c "SELECT COALESCE(sum(delta_rows), 0) FROM stream_ext.view_stats")
		[[ $delta -gt $max_delta ]] && max_delta=$delta
		rate=$(( (events - last_events) / (SECONDS - last_t > 0 ? SECONDS - last_t : 1) ))
		printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' $((SECONDS - t0)) "$events" "$rate" \
			"$rss" "$pss" "$priv" "$anon" "$groups" "$cpid" "$crss" "$canon" "$delta" | tee -a "$OUTDIR/soak.md.tmp" >&2
		samples+=("$anon")
		last_events=$events last_t=$SECONDS
		next=$((SECONDS + SAMPLE))
		[[ $events -ge $EVENTS || $((SECONDS - t0)) -ge $SECS ]] && break
	fi
done
kill "$loader_pid" 2>/dev/null || true
exec 3<&-
sleep 1
"${PSQL[@]}" -c "SELECT pg_terminate_backend($pid)" >/dev/null 2>&1 || true

# how long the compactor takes to empty the deltas once the load stops
drain_t0=$SECONDS drained=no
for _ in $(seq 1 120); do
	left=$("${PSQL[@]}" -At -c "SELECT COALESCE(sum(delta_rows), 0) FROM stream_ext.view_stats")
	[[ $left -eq 0 ]] && { drained=yes; break; }
	sleep 0.5
done
drain_secs=$((SECONDS - drain_t0))

# The views must agree with each other and with what was loaded: only
# whole TRUNCATE cycles are counted in $loaded, and the loader may have
# finished some batches after the last report, so compare the views with
# each other and with a lower bound.
read -r n1 n2 n3 < <("${PSQL[@]}" -At -F' ' -c "
  SELECT (SELECT sum(n) FROM soak_w1), (SELECT sum(n) FROM soak_distinct), (SELECT n FROM soak_total)")
say "views: soak_w1 $n1, soak_distinct $n2, soak_total $n3 events (>= $events reported)"
[[ $n1 == "$n2" && $n2 == "$n3" && $n1 -ge $events ]] || die "views disagree: $n1 $n2 $n3 (loaded >= $events)"
[[ $((n1 % BATCH)) -eq 0 ]] || die "a partial batch was counted: $n1"

first=${samples[1]:-${samples[0]}}
lastm=${samples[-1]}
growth=$(awk -v a="$first" -v b="$lastm" 'BEGIN { printf "%.1f", b - a }')
cfirst=${csamples[1]:-${csamples[0]:-}}
clast=${csamples[-1]:-}
{
	echo "# bench/soak.sh"
	echo
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "- machine: $(nproc) cores, $(awk '/^MemTotal:/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)"
	echo "- $n1 events in $((SECONDS - t0)) s, COPY batches of $BATCH rows into a stream with 3 continuous views"
	echo "- loading backend anonymous memory (its own heap: palloc'd memory; private/rss also count the shared buffers it touched): ${first} MiB at the 2nd sample, ${lastm} MiB at the end (growth ${growth} MiB)"
	if [[ -n $clast ]]; then
		echo "- compactor anonymous memory: ${cfirst} MiB at its 2nd sample, ${clast} MiB at the end; most delta rows waiting at a sample: $max_delta; deltas empty ${drain_secs} s after the load stopped (drained: $drained)"
	else
		echo "- no compactor was running (no view has a delta)"
	fi
	echo
	cat "$OUTDIR/soak.md.tmp"
} >"$OUTDIR/soak.md"
rm -f "$OUTDIR/soak.md.tmp"
cat "$OUTDIR/soak.md"
