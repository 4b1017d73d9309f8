-- Time windows (docs/windows.md): tumble(), hop() and sliding_window views,
-- each checked against its query run as plain SQL over a logged copy of
-- the rows; out-of-order and NULL timestamps, batches of 1 to 10k rows;
-- expiry of sliding buckets; bad windows refused at CREATE time.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE SCHEMA win;
SET search_path = win, public;
SET TimeZone = 'UTC';

-- ---- the functions -------------------------------------------------------

-- tumble(ts, size): date_bin(size, ts, '1970-01-01')
SELECT stream_ext.tumble(timestamptz '2024-01-01 00:07:30+00', '5 minutes') AS tumble_tz,
       stream_ext.tumble(timestamp '2024-01-01 00:07:30', '5 minutes') AS tumble_ts,
       stream_ext.tumble(timestamptz '1969-12-31 23:58:30+00', '7 minutes') AS before_epoch,
       stream_ext.tumble(timestamptz 'infinity', '1 hour') AS inf,
       stream_ext.tumble(NULL::timestamptz, '1 hour') AS null_ts;
SELECT count(*) AS differ_from_date_bin
  FROM generate_series(timestamptz '1969-12-30', '1970-01-03', '47 minutes 13.5 seconds') ts,
       unnest(ARRAY[interval '1 second', '7 minutes', '90 minutes', '1 day', '3 days 2 hours']) size
 WHERE stream_ext.tumble(ts, size) IS DISTINCT FROM date_bin(size, ts, timestamptz '1970-01-01 00:00:00+00');

-- hop(ts, size, slide): every window start w (a multiple of slide) with w <= ts < w + size
SELECT * FROM stream_ext.hop(timestamptz '2024-01-01 00:07:30+00', '10 minutes', '4 minutes') AS w(window_start);
SELECT * FROM stream_ext.hop(timestamp '2024-01-01 00:07:30', '10 minutes', '10 minutes');
SELECT count(*) AS null_ts_windows FROM stream_ext.hop(NULL::timestamptz, '10 minutes', '2 minutes');
-- brute force over many timestamps and size/slide pairs: both ways, no difference
WITH t AS (SELECT ts FROM generate_series(timestamptz '1969-12-31 22:00+00', '1970-01-01 03:00+00', '7 minutes 11.25 seconds') ts),
     p (size, slide) AS (VALUES (interval '10 minutes', interval '2 minutes'), ('10 minutes', '4 minutes'),
                                ('10 minutes', '10 minutes'), ('1 hour', '25 minutes'), ('1 day', '6 hours')),
     got AS (SELECT ts, size, slide, w FROM t, p, stream_ext.hop(ts, size, slide) w),
     want AS (SELECT ts, size, slide, stream_ext.tumble(ts, slide) - i * slide AS w
                FROM t, p, generate_series(0, 100) i
               WHERE stream_ext.tumble(ts, slide) - i * slide > ts - size)
SELECT (SELECT count(*) FROM (TABLE got EXCEPT ALL TABLE want) a) AS extra,
       (SELECT count(*) FROM (TABLE want EXCEPT ALL TABLE got) b) AS missing,
       (SELECT count(*) FROM got) AS windows;

-- bad arguments
SELECT stream_ext.tumble(now(), '0 seconds');
SELECT stream_ext.tumble(now(), '-5 minutes');
SELECT stream_ext.tumble(now(), '1 month');
SELECT * FROM stream_ext.hop(now(), '5 minutes', '10 minutes');
SELECT * FROM stream_ext.hop(now(), '10 minutes', '0 seconds');

-- ---- tumbling and hopping views: the oracle --------------------------------

SELECT stream_ext.create_stream('win.ev', 'k text, ts timestamptz, lts timestamp, v int, x numeric');
CREATE TABLE ev_log (k text, ts timestamptz, lts timestamp, v int, x numeric);

CREATE TABLE shapes (name text PRIMARY KEY, query text NOT NULL);
INSERT INTO shapes VALUES
 ('tumble_5m', 'SELECT k, stream_ext.tumble(ts, ''5 minutes'') AS window_start, stream_ext.tumble(ts, ''5 minutes'') + interval ''5 minutes'' AS window_end, count(*) AS n, sum(v) AS s, avg(x) AS a, count(DISTINCT v % 7) AS d FROM {src} GROUP BY k, 2'),
 ('hop_10m_2m', 'SELECT w.window_start, k, count(*) AS n, sum(v) AS s, avg(x) AS a, max(ts) AS last_ts FROM {src}, stream_ext.hop(ts, ''10 minutes'', ''2 minutes'') AS w(window_start) GROUP BY 1, 2'),
 ('hop_10m_4m', 'SELECT w.window_start, w.window_start + interval ''10 minutes'' AS window_end, count(*) AS n, min(v) AS lo, stddev(x) AS sd FROM {src}, stream_ext.hop(ts, ''10 minutes'', ''4 minutes'') AS w(window_start) GROUP BY w.window_start'),
 ('hop_equal', 'SELECT w.window_start, k, count(*) AS n, sum(x) AS s FROM {src}, stream_ext.hop(ts, ''5 minutes'', ''5 minutes'') AS w(window_start) GROUP BY 1, 2'),
 ('hop_local', 'SELECT k, w.window_start, count(*) FILTER (WHERE v % 2 = 0) AS even, sum(x) AS sx, bool_or(v > 900) AS big FROM {src}, stream_ext.hop(lts, ''1 hour'', ''15 minutes'') AS w(window_start) WHERE v > 10 GROUP BY k, w.window_start HAVING count(*) > 2'),
 ('hop_day', 'SELECT w.window_start, count(*) AS n, avg(v) AS a FROM {src}, stream_ext.hop(ts, ''1 day'', ''50 minutes'') AS w(window_start) GROUP BY 1'),
 ('hop_join', 'SELECT k, count(*) AS n, sum(v) AS s FROM {src} CROSS JOIN LATERAL stream_ext.hop(ts, ''20 minutes'', ''5 minutes'') AS w(window_start) GROUP BY w.window_start, k');

DO $$
DECLARE r record;
BEGIN
  FOR r IN SELECT * FROM shapes ORDER BY name LOOP
    EXECUTE format('CREATE VIEW %I WITH (continuous) AS %s', r.name, replace(r.query, '{src}', 'ev'));
  END LOOP;
END $$;

CREATE FUNCTION check_all() RETURNS TABLE (shape text, view_rows bigint, differing bigint)
LANGUAGE plpgsql AS $$
DECLARE r record; q text;
BEGIN
  FOR r IN SELECT * FROM shapes ORDER BY name LOOP
    q := replace(r.query, '{src}', 'ev_log');
    shape := r.name;
    EXECUTE format('SELECT count(*) FROM %I', r.name) INTO view_rows;
    EXECUTE format('SELECT count(*) FROM ((TABLE %I EXCEPT ALL (%s)) UNION ALL ((%s) EXCEPT ALL TABLE %I)) d',
                   r.name, q, q, r.name) INTO differing;
    RETURN NEXT;
  END LOOP;
END $$;

-- n rows in one statement, timestamps out of order over three hours, some NULL
CREATE FUNCTION feed(n int, seed int) RETURNS void LANGUAGE sql AS $$
  WITH r AS (
    SELECT CASE WHEN i % 17 = 0 THEN NULL ELSE 'k' || ((i * 7 + seed) % 5) END AS k,
           CASE WHEN i % 13 = 0 THEN NULL
                ELSE timestamptz '2024-01-01 00:00:00+00'
                     + ((i * 7919 + seed * 104729) % 10800) * interval '1 second'
                     + (i % 1000) * interval '1 millisecond' END AS ts,
           CASE WHEN i % 11 = 0 THEN NULL
                ELSE timestamp '2024-01-01 00:00:00' + ((i * 4099 + seed * 31) % 10800) * interval '1 second' END AS lts,
           (i * 31 + seed) % 1000 AS v,
           CASE WHEN i % 19 = 0 THEN NULL ELSE ((i * 17 + seed) % 10000) / 100.0 END AS x
      FROM generate_series(1, n) i),
  s AS (INSERT INTO ev (k, ts, lts, v, x) SELECT * FROM r)
  INSERT INTO ev_log SELECT * FROM r;
$$;

SELECT * FROM check_all();
SELECT feed(1, s) FROM generate_series(1, 5) s;
SELECT * FROM check_all();
SELECT feed(0, 6);
SELECT feed(10, 7);
SELECT feed(137, 8);
-- a row far before and one far after the others
INSERT INTO ev (k, ts, lts, v, x) VALUES ('k1', '2023-12-31 23:59:59.999+00', '2023-12-31 23:59:59', 5, 1), ('k1', '2024-01-02 00:00:00+00', '2024-01-02 00:00:00', 6, 2);
INSERT INTO ev_log (k, ts, lts, v, x) VALUES ('k1', '2023-12-31 23:59:59.999+00', '2023-12-31 23:59:59', 5, 1), ('k1', '2024-01-02 00:00:00+00', '2024-01-02 00:00:00', 6, 2);
SELECT * FROM check_all();
SELECT feed(10000, 9);
BEGIN;
SELECT feed(500, 10);
ROLLBACK;
SELECT * FROM check_all();

-- a hopping view over a stream that already holds rows starts from them
CREATE VIEW hop_late WITH (continuous) AS
  SELECT w.window_start, count(*) AS n FROM ev, stream_ext.hop(ts, '30 minutes', '10 minutes') AS w(window_start) GROUP BY 1;
INSERT INTO shapes VALUES ('hop_late', 'SELECT w.window_start, count(*) AS n FROM {src}, stream_ext.hop(ts, ''30 minutes'', ''10 minutes'') AS w(window_start) GROUP BY 1');
SELECT feed(200, 11);
SELECT * FROM check_all();

-- storage is per pane (gcd of size and slide), not per window (once the
-- batches appended to the deltas are compacted)
SELECT stream_ext.compact('hop_10m_2m') > 0 AS compacted, stream_ext.compact('hop_10m_4m') > 0 AS compacted;
SELECT (SELECT count(*) FROM hop_10m_2m_mrel) AS stored_panes,
       (SELECT count(*) FROM (SELECT DISTINCT stream_ext.tumble(ts, '2 minutes'), k FROM ev_log) p) AS distinct_panes,
       (SELECT count(*) FROM hop_10m_2m) AS windows;
SELECT (SELECT count(*) FROM hop_10m_4m_mrel) AS stored_panes,
       (SELECT count(DISTINCT stream_ext.tumble(ts, '2 minutes')) + 1 FROM ev_log) AS distinct_panes_and_null;

-- a few rows of one view, as the docs show them
SELECT window_start, window_end, n, lo FROM hop_10m_4m
 WHERE window_start BETWEEN '2024-01-01 00:00+00' AND '2024-01-01 00:20+00' ORDER BY 1;

-- \d+ describes the window's columns
SELECT attname, col_description(attrelid, attnum) FROM pg_attribute
 WHERE attrelid = 'hop_10m_4m'::regclass AND attnum > 0 ORDER BY attnum;

-- the catalog records the windows
SELECT name, window_kind, window_size, window_slide, window_step, time_column
  FROM stream_ext.continuous_views WHERE source = 'win.ev'::regclass ORDER BY name::text;

-- ---- sliding windows -------------------------------------------------------

SELECT stream_ext.create_stream('win.sev', 'k text, ts timestamptz, v int');
CREATE TABLE sev_log (k text, ts timestamptz, v int);
CREATE VIEW sl_keyed WITH (continuous, sliding_window = '10 minutes', time_column = ts, step = '5 minutes') AS
  SELECT k, count(*) AS n, sum(v) AS s, avg(v) AS a FROM sev GROUP BY k;
CREATE VIEW sl_keyless WITH (continuous, sliding_window = '10 minutes', time_column = 'ts', step = '4 minutes') AS
  SELECT count(*) AS n, sum(v) AS s, max(v) AS hi FROM sev WHERE v <> 13;
CREATE VIEW sl_arrival WITH (continuous, sliding_window = '1 hour') AS
  SELECT k, count(*) AS n FROM sev GROUP BY k;

-- the example of docs/windows.md
SELECT stream_ext.create_stream('win.pings', 'host text, ts timestamptz');
CREATE VIEW pings_10m WITH (continuous, sliding_window = '10 minutes', time_column = ts, step = '10 seconds') AS
  SELECT host, count(*) AS pings, max(ts) AS last_seen FROM pings GROUP BY host;
CREATE VIEW pings_recent WITH (continuous, sliding_window = '5 minutes') AS
  SELECT count(*) AS pings FROM pings;
INSERT INTO pings VALUES ('a', now() - interval '30 minutes'), ('a', now() - interval '1 minute'),
                         ('b', now() - interval '2 minutes'), ('b', now());
SELECT host, pings FROM pings_10m ORDER BY host;
SELECT * FROM pings_recent;

-- the oracle: rows whose step bucket starts at or after now() - sliding_window
CREATE TABLE sliding_shapes (name text PRIMARY KEY, query text NOT NULL);
INSERT INTO sliding_shapes VALUES
 ('sl_keyed', 'SELECT k, count(*) AS n, sum(v) AS s, avg(v) AS a FROM sev_log WHERE stream_ext.tumble(ts, ''5 minutes'') >= now() - interval ''10 minutes'' GROUP BY k'),
 ('sl_keyless', 'SELECT count(*) AS n, sum(v) AS s, max(v) AS hi FROM sev_log WHERE v <> 13 AND stream_ext.tumble(ts, ''4 minutes'') >= now() - interval ''10 minutes''');
CREATE FUNCTION check_sliding() RETURNS TABLE (shape text, differing bigint)
LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
  FOR r IN SELECT * FROM sliding_shapes ORDER BY name LOOP
    shape := r.name;
    EXECUTE format('SELECT count(*) FROM ((TABLE %I EXCEPT ALL (%s)) UNION ALL ((%s) EXCEPT ALL TABLE %I)) d',
                   r.name, r.query, r.query, r.name) INTO differing;
    RETURN NEXT;
  END LOOP;
END $$;

-- n rows between 20 minutes ago and 1 minute ahead, out of order, some NULL
CREATE FUNCTION feed_sliding(n int, seed int) RETURNS void LANGUAGE sql AS $$
  WITH r AS (
    SELECT 'k' || ((i + seed) % 3) AS k,
           CASE WHEN i % 29 = 0 THEN NULL
                ELSE now() - ((i * 7919 + seed * 101) % 1260 - 60) * interval '1 second' END AS ts,
           (i * 37 + seed) % 100 AS v
      FROM generate_series(1, n) i),
  s AS (INSERT INTO sev (k, ts, v) SELECT * FROM r)
  INSERT INTO sev_log SELECT * FROM r;
$$;

-- nothing in the window yet: the keyless view shows count 0, like the query
SELECT * FROM sl_keyless;
SELECT * FROM check_sliding();
SELECT feed_sliding(1, 1);
SELECT feed_sliding(1, 2);
SELECT feed_sliding(500, 3);
SELECT feed_sliding(5000, 4);
-- both sides read with the same now(): one transaction
BEGIN;
SELECT * FROM check_sliding();
SELECT (SELECT sum(n) FROM sl_arrival) = (SELECT count(*) FROM sev) AS arrival_counts_all;
COMMIT;

-- rows two hours old are folded in but never shown, and expire.  (The
-- first batch of this session expired buckets already; the next expiry by
-- maintenance is due a step, five minutes, later: after this test.)
INSERT INTO sev (k, ts, v) SELECT 'old', now() - interval '2 hours' - i * interval '1 second', i FROM generate_series(1, 100) i;
INSERT INTO sev_log (k, ts, v) SELECT 'old', now() - interval '2 hours' - i * interval '1 second', i FROM generate_series(1, 100) i;
BEGIN;
SELECT * FROM check_sliding();
COMMIT;
-- (buckets are in the materialization and the delta)
CREATE VIEW sl_keyed_buckets AS TABLE sl_keyed_mrel UNION ALL TABLE sl_keyed_delta;
CREATE VIEW sl_keyless_buckets AS TABLE sl_keyless_mrel UNION ALL TABLE sl_keyless_delta;
SELECT count(*) > 0 AS has_expired_buckets FROM sl_keyed_buckets WHERE window_bucket < now() - interval '1 hour';
SELECT count(*) > 0 AS has_null_bucket FROM sl_keyed_buckets WHERE window_bucket IS NULL;
SELECT stream_ext.expire_sliding('sl_keyed') > 0 AS expired_some;
SELECT count(*) AS expired_buckets_left FROM sl_keyed_buckets WHERE window_bucket IS NULL OR window_bucket < now() - interval '15 minutes';
SELECT stream_ext.expire_sliding('sl_keyed') AS expired_again;
BEGIN;
SELECT * FROM check_sliding();
COMMIT;
-- all sliding views the caller owns
INSERT INTO sev (k, ts, v) VALUES ('old', now() - interval '1 day', 1);
INSERT INTO sev_log (k, ts, v) VALUES ('old', now() - interval '1 day', 1);
SELECT stream_ext.expire_sliding() > 0 AS expired_all;
SELECT count(*) AS expired_buckets_left FROM sl_keyless_buckets WHERE window_bucket IS NULL OR window_bucket < now() - interval '14 minutes';

-- maintenance expires buckets itself, at most once per step in a backend:
-- the first batch of a new session does
\c
SET search_path = win, public;
INSERT INTO sev (k, ts, v) VALUES ('old', now() - interval '3 hours', 1);
INSERT INTO sev_log (k, ts, v) VALUES ('old', now() - interval '3 hours', 1);
SELECT count(*) AS expired_buckets_left FROM sl_keyed_buckets WHERE window_bucket IS NULL OR window_bucket < now() - interval '15 minutes';
BEGIN;
SELECT * FROM check_sliding();
COMMIT;

SELECT name, window_kind, window_size, window_slide, window_step, time_column
  FROM stream_ext.continuous_views WHERE source = 'win.sev'::regclass ORDER BY name::text;
SELECT attname, col_description(attrelid, attnum) FROM pg_attribute
 WHERE attrelid = 'sl_keyed'::regclass AND attnum > 0 ORDER BY attnum;

-- only the owner expires a view
CREATE ROLE win_other;
GRANT USAGE ON SCHEMA win TO win_other;
SET ROLE win_other;
SELECT stream_ext.expire_sliding('win.sl_keyed');
SELECT stream_ext.expire_sliding() AS expired_as_other;
-- a sliding view reads its time column: its creator must be allowed to
RESET ROLE;
GRANT CREATE ON SCHEMA win TO win_other;
GRANT SELECT (k, v) ON sev TO win_other;
SET ROLE win_other;
CREATE VIEW other_sl WITH (continuous, sliding_window = '1 hour', time_column = ts) AS SELECT k, count(*) AS n FROM sev GROUP BY k;
CREATE VIEW other_sl WITH (continuous, sliding_window = '1 hour') AS SELECT k, count(*) AS n FROM sev GROUP BY k;
RESET ROLE;
GRANT SELECT (arrival_timestamp) ON sev TO win_other;
SET ROLE win_other;
CREATE VIEW other_sl WITH (continuous, sliding_window = '1 hour') AS SELECT k, count(*) AS n FROM sev GROUP BY k;
SELECT sum(n) = (SELECT count(*) FROM sev WHERE arrival_timestamp >= now() - interval '1 hour') AS other_sl_ok FROM other_sl;
DROP VIEW other_sl;
RESET ROLE;
DROP OWNED BY win_other;
DROP ROLE win_other;
SELECT stream_ext.expire_sliding('win.ev_log');

-- ---- bad windows: clear errors, nothing created ----------------------------

-- each statement fails with its SQLSTATE and a message naming what is wrong
CREATE TABLE bad_windows (n serial PRIMARY KEY, what text NOT NULL, stmt text NOT NULL);
INSERT INTO bad_windows (what, stmt) VALUES
 ('hop size 0', $q$CREATE VIEW bad WITH (continuous) AS SELECT w.window_start, count(*) FROM ev, stream_ext.hop(ts, '0 minutes', '0 minutes') AS w(window_start) GROUP BY 1$q$),
 ('hop size negative', $q$CREATE VIEW bad WITH (continuous) AS SELECT w.window_start, count(*) FROM ev, stream_ext.hop(ts, '-10 minutes', '1 minute') AS w(window_start) GROUP BY 1$q$),
 ('hop slide > size', $q$CREATE VIEW bad WITH (continuous) AS SELECT w.window_start, count(*) FROM ev, stream_ext.hop(ts, '5 minutes', '10 minutes') AS w(window_start) GROUP BY 1$q$),
 ('hop size in months', $q$CREATE VIEW bad WITH (continuous) AS SELECT w.window_start, count(*) FROM ev, stream_ext.hop(ts, '1 month', '1 day') AS w(window_start) GROUP BY 1$q$),
 ('hop size not an interval', $q$CREATE VIEW bad WITH (continuous) AS SELECT w.window_start, count(*) FROM ev, stream_ext.hop(ts, '10 minuts', '1 minute') AS w(window_start) GROUP BY 1$q$),
 ('hop size not constant', $q$CREATE VIEW bad WITH (continuous) AS SELECT w.window_start, count(*) FROM ev, stream_ext.hop(ts, v * interval '1 minute', '1 minute') AS w(window_start) GROUP BY 1$q$),
 ('hop without GROUP BY window', $q$CREATE VIEW bad WITH (continuous) AS SELECT count(*) FROM ev, stream_ext.hop(ts, '10 minutes', '1 minute') AS w(window_start)$q$),
 ('WHERE on window start', $q$CREATE VIEW bad WITH (continuous) AS SELECT w.window_start, count(*) FROM ev, stream_ext.hop(ts, '10 minutes', '1 minute') AS w(window_start) WHERE w.window_start > '2024-01-01' GROUP BY 1$q$),
 ('count(DISTINCT) over hop', $q$CREATE VIEW bad WITH (continuous) AS SELECT w.window_start, count(DISTINCT k) FROM ev, stream_ext.hop(ts, '10 minutes', '1 minute') AS w(window_start) GROUP BY 1$q$),
 ('aggregate of window start', $q$CREATE VIEW bad WITH (continuous) AS SELECT w.window_start, max(w.window_start) FROM ev, stream_ext.hop(ts, '10 minutes', '1 minute') AS w(window_start) GROUP BY 1$q$),
 ('tumble size 0', $q$CREATE VIEW bad WITH (continuous) AS SELECT k, count(*) FROM ev GROUP BY k, stream_ext.tumble(ts, '0 seconds')$q$),
 ('tumble size in months', $q$CREATE VIEW bad WITH (continuous) AS SELECT k, count(*) FROM ev GROUP BY k, stream_ext.tumble(ts, '2 months')$q$),
 ('sliding_window not an interval', $q$CREATE VIEW bad WITH (continuous, sliding_window = 'five minutes') AS SELECT count(*) FROM sev$q$),
 ('sliding_window 0', $q$CREATE VIEW bad WITH (continuous, sliding_window = '0 minutes') AS SELECT count(*) FROM sev$q$),
 ('sliding_window negative', $q$CREATE VIEW bad WITH (continuous, sliding_window = '-5 minutes') AS SELECT count(*) FROM sev$q$),
 ('sliding_window in months', $q$CREATE VIEW bad WITH (continuous, sliding_window = '1 month') AS SELECT count(*) FROM sev$q$),
 ('step > sliding_window', $q$CREATE VIEW bad WITH (continuous, sliding_window = '5 minutes', step = '10 minutes') AS SELECT count(*) FROM sev$q$),
 ('step 0', $q$CREATE VIEW bad WITH (continuous, sliding_window = '5 minutes', step = '0 seconds') AS SELECT count(*) FROM sev$q$),
 ('step not an interval', $q$CREATE VIEW bad WITH (continuous, sliding_window = '5 minutes', step = 'soon') AS SELECT count(*) FROM sev$q$),
 ('time_column unknown', $q$CREATE VIEW bad WITH (continuous, sliding_window = '5 minutes', time_column = 'nope') AS SELECT count(*) FROM sev$q$),
 ('time_column not timestamptz', $q$CREATE VIEW bad WITH (continuous, sliding_window = '5 minutes', time_column = 'k') AS SELECT count(*) FROM sev$q$),
 ('time_column alone', $q$CREATE VIEW bad WITH (continuous, time_column = 'ts') AS SELECT count(*) FROM sev$q$),
 ('step alone', $q$CREATE VIEW bad WITH (continuous, step = '1 minute') AS SELECT count(*) FROM sev$q$),
 ('sliding_window twice', $q$CREATE VIEW bad WITH (continuous, sliding_window = '5 minutes', sliding_window = '6 minutes') AS SELECT count(*) FROM sev$q$),
 ('count(DISTINCT) sliding', $q$CREATE VIEW bad WITH (continuous, sliding_window = '5 minutes') AS SELECT count(DISTINCT k) FROM sev$q$),
 ('sliding_window with hop', $q$CREATE VIEW bad WITH (continuous, sliding_window = '1 hour') AS SELECT w.window_start, count(*) FROM ev, stream_ext.hop(ts, '10 minutes', '1 minute') AS w(window_start) GROUP BY 1$q$),
 ('GROUP BY an expression of window start', $q$CREATE VIEW bad WITH (continuous) AS SELECT w.window_start, count(*) FROM ev, stream_ext.hop(ts, '10 minutes', '1 minute') AS w(window_start) GROUP BY 1, date_trunc('hour', w.window_start)$q$),
 ('session_gap with sliding_window', $q$CREATE VIEW bad WITH (continuous, session_gap = '1 minute', time_column = ts, sliding_window = '1 hour') AS SELECT k, count(*) FROM sev GROUP BY k$q$),
 ('session_gap with hop', $q$CREATE VIEW bad WITH (continuous, session_gap = '1 minute', time_column = ts) AS SELECT k, w.window_start, count(*) FROM ev, stream_ext.hop(ts, '10 minutes', '1 minute') AS w(window_start) GROUP BY 1, 2$q$),
 ('unknown option', $q$CREATE VIEW bad WITH (continuous, windowed = true) AS SELECT count(*) FROM sev$q$);
CREATE FUNCTION try_create(stmt text, OUT code text, OUT message text) LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE stmt;
  code := '00000';
  message := 'created';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS code = RETURNED_SQLSTATE, message = MESSAGE_TEXT;
END $$;
SELECT n, what, (try_create(stmt)).* FROM bad_windows ORDER BY n;
-- the same errors as psql shows them, with detail and hint
CREATE VIEW bad WITH (continuous) AS SELECT w.window_start, count(*) FROM ev, stream_ext.hop(ts, '5 minutes', '10 minutes') AS w(window_start) GROUP BY 1;
CREATE VIEW bad WITH (continuous, sliding_window = 'five minutes') AS SELECT count(*) FROM sev;
CREATE VIEW bad WITH (continuous, sliding_window = '5 minutes', step = '10 minutes') AS SELECT count(*) FROM sev;
CREATE VIEW bad WITH (continuous, sliding_window = '5 minutes', time_column = 'nope') AS SELECT count(*) FROM sev;
SELECT count(*) AS bad_relations FROM pg_class WHERE relname = 'bad' OR relname LIKE 'bad\_mrel%';
SELECT count(*) AS bad_views FROM stream_ext.continuous_views WHERE name::text LIKE '%bad%';

DROP SCHEMA win CASCADE;
SELECT count(*) AS leftover_views FROM stream_ext.continuous_views;
