#!/usr/bin/env bash
# bench/rebuild.sh -- what CREATE OR REPLACE of a continuous view costs,
# replaced in its transaction (stream_ext.replace_in_place = on) or built
# beside the view and swapped in (the default; docs/continuous-views.md,
# "Changing a view's query"), in one run.
#
# By hand, against any cluster where stream_ext is preloaded (superuser):
#     source /tmp/stream_ext.XXXXXX/env.sh      # from test/lib/cluster.sh start
#     bash bench/rebuild.sh
#
# BENCH_REBUILD_ROWS rows {url, user_id, latency} (50 urls, 5000 users) in a
# stream with a view (count by url).  Then for each mode the view is
# replaced by count/avg/count(DISTINCT user_id) by url, and a one-row INSERT
# is sent 0.2 s after CREATE OR REPLACE starts:
#   in_place  rows/s = rows / the CREATE OR REPLACE statement
#   beside    rows/s = rows_done / (finished_at - started_at) of the
#             rebuild's row (backfill and swap), from backfill_progress
#   insert    how long the one-row INSERT took (in place it waits for the
#             whole backfill; beside it does not)
# Every result is checked against the query over the stream.  Prints a
# markdown table (also to BENCH_RESULTS_DIR/rebuild.md) and the machine's
# load average: the runs are single, on whatever else the machine does.
set -euo pipefail

: "${STREAM_EXT_TMP:?STREAM_EXT_TMP must name a temp dir (source the cluster env.sh)}"
ROWS=${BENCH_REBUILD_ROWS:-1000000}
DB=bench_rebuild
PG_BINDIR=${PG_BINDIR:-$(pg_config --bindir)}
PSQL=("$PG_BINDIR/psql" -X -q -v ON_ERROR_STOP=1)
OUT=${BENCH_RESULTS_DIR:-$STREAM_EXT_TMP/bench-results}
mkdir -p "$OUT"
q() { "${PSQL[@]}" -d "$DB" -A -t -c "$1"; }
now() { date +%s.%N; }

"${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
q "SET client_min_messages = warning; CREATE EXTENSION stream_ext" >/dev/null
q "SELECT stream_ext.create_stream('ev', 'url text, user_id int, latency float8')" >/dev/null
q "CREATE VIEW v WITH (continuous) AS SELECT url, count(*) AS n FROM ev GROUP BY url" >/dev/null
q "INSERT INTO ev SELECT '/p' || (i % 50), i % 5000, (i % 997) / 10.0 FROM generate_series(1, $ROWS) i" >/dev/null

NEWQ="SELECT url, count(*) AS n, avg(latency) AS a, count(DISTINCT user_id) AS u FROM ev GROUP BY url"
check() {
	q "SELECT count(*) FROM ((SELECT url, n, round(a::numeric, 6), u FROM v
	     EXCEPT ALL SELECT url, count(*), round(avg(latency)::numeric, 6), count(DISTINCT user_id) FROM ev GROUP BY url)
	   UNION ALL (SELECT url, count(*), round(avg(latency)::numeric, 6), count(DISTINCT user_id) FROM ev GROUP BY url
	     EXCEPT ALL SELECT url, n, round(a::numeric, 6), u FROM v)) d"
}
# a one-row INSERT 0.2 s after the replacement starts: its duration in ms
probe() {
	sleep 0.2
	local t0 t1
	t0=$(now)
	q "INSERT INTO ev VALUES ('/probe', 1, 1)" >/dev/null
	t1=$(now)
	echo "scale=1; ($t1 - $t0) * 1000 / 1" | bc
}

# in place: in the replacing transaction
probe >"$STREAM_EXT_TMP/rebuild-probe" &
t0=$(now)
q "SET stream_ext.replace_in_place = on; $(printf 'CREATE OR REPLACE VIEW v WITH (continuous) AS %s' "$NEWQ")" >/dev/null
t1=$(now)
wait
in_place_ms=$(cat "$STREAM_EXT_TMP/rebuild-probe")
in_place_rate=$(echo "$ROWS / ($t1 - $t0)" | bc)
[[ $(check) == 0 ]] || { echo "in place: the view differs from its query" >&2; exit 1; }

# beside: back to the old query first (in place), then built beside
q "SET stream_ext.replace_in_place = on; CREATE OR REPLACE VIEW v WITH (continuous) AS SELECT url, count(*) AS n FROM ev GROUP BY url" >/dev/null
probe >"$STREAM_EXT_TMP/rebuild-probe" &
q "CREATE OR REPLACE VIEW v WITH (continuous) AS $NEWQ" >/dev/null
state=$(q "SELECT stream_ext.wait_backfill('v', '30 minutes')")
wait
beside_ms=$(cat "$STREAM_EXT_TMP/rebuild-probe")
[[ $state == done ]] || { echo "beside: the rebuild ended $state" >&2; exit 1; }
beside_rate=$(q "SELECT round(rows_done / extract(epoch FROM finished_at - started_at)) FROM stream_ext.backfill_progress WHERE kind = 'rebuild'")
[[ $(check) == 0 ]] || { echo "beside: the view differs from its query" >&2; exit 1; }

load=$(cut -d' ' -f1-3 /proc/loadavg)
{
	echo "CREATE OR REPLACE of a view over $ROWS rows (count/avg/count(DISTINCT) by url), load average $load:"
	echo
	echo "| mode | rows/s | a one-row INSERT during it |"
	echo "| --- | ---: | ---: |"
	echo "| in place (replace_in_place = on) | $in_place_rate | $in_place_ms ms |"
	echo "| beside, swapped in (default) | $beside_rate | $beside_ms ms |"
} | tee "$OUT/rebuild.md"
"${PSQL[@]}" -d postgres -c "DROP DATABASE $DB" >/dev/null
