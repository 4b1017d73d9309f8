# shellcheck shell=bash
# test/demo/10_clicks.sh -- demo step: a click stream and a per-minute
# continuous view, fed in $DEMO_ROUNDS rounds; the view is printed after each
# round, and at the end it is checked against the same query run as a plain
# batch GROUP BY over a copy of every event.
# Sourced by test/demo.sh (see there for the helpers and variables).

EVENTS_PER_ROUND=${DEMO_EVENTS_PER_ROUND:-2000}
export PGTZ=UTC

demo_say "create the extension, a stream and a continuous view"
demo_sql -q -e <<'SQL'
CREATE EXTENSION IF NOT EXISTS stream_ext;

SELECT stream_ext.create_stream('clicks',
       'url text, user_id int, ts timestamptz, latency_ms float8');

-- CREATE CONTINUOUS VIEW, spelled the way PostgreSQL's grammar allows:
CREATE VIEW clicks_per_minute WITH (continuous) AS
  SELECT url,
         date_bin('1 minute', ts, '2000-01-01') AS minute,
         count(*)                AS hits,
         avg(latency_ms)         AS avg_latency,
         count(DISTINCT user_id) AS users
  FROM clicks
  GROUP BY url, minute;
SQL

# Deterministic fake traffic: round r lands mostly in minute r of the demo
# hour, with every 7th event arriving late, in the minute before.
demo_sql -q <<'SQL'
CREATE TABLE demo_clicks_copy (url text, user_id int, ts timestamptz, latency_ms float8);

CREATE FUNCTION demo_events(r int, n int)
RETURNS TABLE (url text, user_id int, ts timestamptz, latency_ms float8)
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN (i + 13 * r) % 100 < 40 THEN '/'
              WHEN (i + 13 * r) % 100 < 65 THEN '/docs'
              WHEN (i + 13 * r) % 100 < 80 THEN '/pricing'
              WHEN (i + 13 * r) % 100 < 92 THEN '/blog'
              ELSE '/signup' END,
         (i * 37 + r * 101) % 300,
         timestamptz '2024-01-01 12:00:00+00'
           + make_interval(mins => CASE WHEN r > 1 AND i % 7 = 0 THEN r - 2 ELSE r - 1 END,
                           secs => i % 60),
         (5 + (i * 13) % 97 + CASE WHEN i % 11 = 0 THEN 250 ELSE 0 END)::float8
  FROM generate_series(1, n) AS i
$$;
SQL

for ((r = 1; r <= DEMO_ROUNDS; r++)); do
	demo_say "round $r/$DEMO_ROUNDS: INSERT INTO clicks ... $EVENTS_PER_ROUND events"
	demo_sql -q -v r="$r" -v n="$EVENTS_PER_ROUND" <<'SQL'
INSERT INTO clicks (url, user_id, ts, latency_ms) SELECT * FROM demo_events(:r, :n);
INSERT INTO demo_clicks_copy SELECT * FROM demo_events(:r, :n);
SELECT url, minute, hits, round(avg_latency::numeric, 2) AS avg_latency, users
FROM clicks_per_minute
ORDER BY minute, url;
SQL
	if [[ $r -lt $DEMO_ROUNDS ]]; then demo_pause; fi
done

demo_say "progress: stream_ext.view_stats (what maintenance applied, how fresh the view is)"
demo_sql -q <<'SQL'
SELECT view, rows_in, batches, groups, round(mean_maintenance_ms::numeric, 2) AS mean_ms,
       last_maintained_at, freshness
  FROM stream_ext.view_stats WHERE view = 'clicks_per_minute'::regclass;
SQL

demo_say "check: the continuous view equals the batch query over all events"
mismatches=$(demo_sql -qAt <<'SQL'
WITH batch AS (
  SELECT url, date_bin('1 minute', ts, '2000-01-01') AS minute, count(*) AS hits,
         round(avg(latency_ms)::numeric, 6) AS avg_latency, count(DISTINCT user_id) AS users
  FROM demo_clicks_copy GROUP BY 1, 2
), cv AS (
  SELECT url, minute, hits, round(avg_latency::numeric, 6) AS avg_latency, users
  FROM clicks_per_minute
)
SELECT (SELECT count(*) FROM (SELECT * FROM batch EXCEPT ALL SELECT * FROM cv) a)
     + (SELECT count(*) FROM (SELECT * FROM cv EXCEPT ALL SELECT * FROM batch) b);
SQL
)
total=$(demo_sql -qAt -c 'SELECT coalesce(sum(hits), 0) FROM clicks_per_minute')
expected=$((DEMO_ROUNDS * EVENTS_PER_ROUND))
echo "events inserted: $expected, counted by the view: $total, rows differing from batch: $mismatches"
if [[ $mismatches != 0 || $total != "$expected" ]]; then
	echo "demo check FAILED" >&2
	exit 1
fi
echo "demo check ok"
