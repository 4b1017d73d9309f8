-- Late data and emit-on-close for hopping windows (docs/windows.md, "Late
-- data").  The oracle simulates the watermark independently (plpgsql,
-- below): each (row, window) pair is on time iff the window ends after the
-- watermark left by the batches before; the view equals the plain hop()
-- query over the pairs on time, late_rows holds exactly the rows with a
-- pair late ('window closed' when all are, 'some windows closed' when
-- some), and the output stream holds every closed window once, equal to
-- the plain query over its on-time pairs.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
SET TimeZone = 'UTC';

SELECT stream_ext.create_stream('hl_ev', 'k int, ts timestamptz, v int');
SELECT stream_ext.create_stream('hl_out', 'k int, window_start timestamptz, n bigint, s bigint, lo int');
CREATE SEQUENCE hl_id;
-- the oracle: every (row, window) pair, on time or not
CREATE TABLE hl_pairs (id bigint, k int, ts timestamptz, v int, window_start timestamptz, on_time bool);
CREATE TABLE hl_wm (wm timestamptz);   -- the oracle's max event time
INSERT INTO hl_wm VALUES (NULL);

-- windows of 10 minutes every 4 (panes of 2 minutes), 3 minutes of lateness
CREATE VIEW hl_view WITH (continuous, allowed_lateness = '3 minutes',
                          emit = 'on_close', output_stream = 'hl_out') AS
  SELECT k, w.window_start, count(*) AS n, sum(v) AS s, min(v) AS lo
    FROM hl_ev, stream_ext.hop(ts, '10 minutes', '4 minutes') AS w(window_start)
   GROUP BY k, w.window_start;
-- the same windows without allowed_lateness: every row applied
CREATE VIEW hl_all WITH (continuous) AS
  SELECT k, w.window_start, count(*) AS n
    FROM hl_ev, stream_ext.hop(ts, '10 minutes', '4 minutes') AS w(window_start)
   GROUP BY k, w.window_start;

-- one batch: into the stream, and classified by the oracle (windows
-- enumerated from their definition, not with hop())
CREATE TYPE hl_row AS (k int, ts timestamptz, v int);
CREATE FUNCTION hl_batch(rows_ hl_row[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  w timestamptz := (SELECT wm - interval '3 minutes' FROM hl_wm);
BEGIN
  INSERT INTO hl_ev (k, ts, v) SELECT r.k, r.ts, r.v FROM unnest(rows_) r;
  INSERT INTO hl_pairs
    SELECT r.id, r.k, r.ts, r.v, h.ws, w IS NULL OR h.ws + interval '10 minutes' > w
      FROM (SELECT nextval('hl_id') AS id, * FROM unnest(rows_)) r
      LEFT JOIN LATERAL (SELECT timestamptz 'epoch' + e * interval '240 seconds' AS ws
                           FROM generate_series(floor((extract(epoch FROM r.ts) - 600) / 240)::bigint + 1,
                                                floor(extract(epoch FROM r.ts) / 240)::bigint) e) h ON true;
  UPDATE hl_wm SET wm = GREATEST(wm, (SELECT max(r.ts) FROM unnest(rows_) r));
END $$;

CREATE FUNCTION hl_check() RETURNS TABLE (what text, differing bigint) LANGUAGE sql AS $$
  WITH o AS (SELECT k, window_start, count(*) AS n, sum(v) AS s, min(v) AS lo
               FROM hl_pairs WHERE on_time AND window_start IS NOT NULL GROUP BY 1, 2),
       late AS (SELECT k, ts, v, CASE WHEN bool_or(on_time) THEN 'some windows closed'
                                      ELSE 'window closed' END AS reason
                  FROM hl_pairs WHERE window_start IS NOT NULL GROUP BY id, k, ts, v
                 HAVING NOT bool_and(on_time)),
       lr AS (SELECT ("row"->>'k')::int AS k, ("row"->>'ts')::timestamptz AS ts,
                     ("row"->>'v')::int AS v, reason
                FROM stream_ext.late_rows WHERE view = 'hl_view'::regclass),
       closed AS (SELECT o.* FROM o, hl_wm WHERE o.window_start + interval '10 minutes'
                                                 <= hl_wm.wm - interval '3 minutes'),
       emitted AS (SELECT k, window_start, n, s, lo FROM hl_out)
  SELECT 'view', (SELECT count(*) FROM ((TABLE o EXCEPT ALL TABLE hl_view)
                                        UNION ALL (TABLE hl_view EXCEPT ALL TABLE o)) d)
  UNION ALL
  SELECT 'late_rows', (SELECT count(*) FROM ((TABLE late EXCEPT ALL TABLE lr)
                                             UNION ALL (TABLE lr EXCEPT ALL TABLE late)) d)
  UNION ALL
  SELECT 'emitted', (SELECT count(*) FROM ((TABLE closed EXCEPT ALL TABLE emitted)
                                           UNION ALL (TABLE emitted EXCEPT ALL TABLE closed)) d)
  UNION ALL
  SELECT 'watermark', (SELECT count(*) FROM stream_ext.lateness l, hl_wm
                        WHERE l.view = 'hl_view'::regclass AND l.max_event_time IS DISTINCT FROM hl_wm.wm)
  UNION ALL
  -- the view without allowed_lateness applies every row to every window
  SELECT 'all rows', (SELECT count(*) FROM (
      (SELECT k, window_start, count(*) FROM hl_pairs WHERE window_start IS NOT NULL GROUP BY 1, 2
       EXCEPT ALL TABLE hl_all)
      UNION ALL (TABLE hl_all EXCEPT ALL
                 SELECT k, window_start, count(*) FROM hl_pairs WHERE window_start IS NOT NULL GROUP BY 1, 2)) d)
$$;

-- a small story.  Windows start every 4 minutes and last 10: a row at 00:09
-- is in the windows of 00:00, 00:04 and 00:08.
SELECT hl_batch(ARRAY[(1, '2026-01-01 00:01+00', 1), (1, '2026-01-01 00:09+00', 2)]::hl_row[]);
SELECT hl_batch(ARRAY[(1, '2026-01-01 00:15+00', 3)]::hl_row[]);   -- watermark 00:12
-- 00:09 again: window 00:00-00:10 closed, 00:04-00:14 and 00:08-00:18 open
SELECT hl_batch(ARRAY[(1, '2026-01-01 00:09+00', 10),
                      (1, '2026-01-01 00:03+00', 20),   -- windows 23:56, 00:00: all closed
                      (2, NULL, 30)]::hl_row[]);         -- no event time: in no window
SELECT k, window_start, n, s, lo FROM hl_view ORDER BY k, window_start;
SELECT event_time, watermark, reason, "row"->>'v' AS v FROM stream_ext.late_rows
 WHERE view = 'hl_view'::regclass ORDER BY event_time;
-- each window closed so far, once, with its final row
SELECT k, window_start, n, s, lo FROM hl_out ORDER BY window_start, k;
SELECT * FROM hl_check();

-- a rolled-back batch moves, emits and records nothing
BEGIN;
INSERT INTO hl_ev VALUES (1, '2026-01-01 05:00+00', 100), (1, '2026-01-01 00:00+00', 100);
ROLLBACK;
SELECT * FROM hl_check();

-- 300 batches of 1-40 rows, times drifting forward with disorder up to 9 minutes
DO $$
BEGIN
  FOR b IN 1..300 LOOP
    PERFORM hl_batch((SELECT array_agg(((hashint4(b * 100 + i) % 4 + 4) % 4,
                      CASE WHEN (b + i) % 61 = 0 THEN NULL
                           ELSE timestamptz '2026-01-01 01:00+00' + b * interval '20 seconds'
                                - ((hashint4(-b * 100 - i) % 540 + 540) % 540) * interval '1 second' END,
                      (b * 7 + i) % 13)::hl_row)
      FROM generate_series(1, 1 + (hashint4(b) % 40 + 40) % 40) i));
  END LOOP;
END $$;
SELECT count(*) FILTER (WHERE NOT on_time) > 0 AS some_late_pairs,
       count(DISTINCT id) FILTER (WHERE on_time AND id IN (SELECT id FROM hl_pairs WHERE NOT on_time)) > 0
         AS some_rows_partly_late
  FROM hl_pairs;
SELECT * FROM hl_check();

-- one batch of 10,000 rows, 20 minutes of disorder
SELECT hl_batch((SELECT array_agg((i % 7, timestamptz '2026-01-01 03:00+00'
                                          - (i % 1200) * interval '1 second', i % 17)::hl_row)
                   FROM generate_series(1, 10000) i));
SELECT * FROM hl_check();

-- an idle stream's clock closes the remaining windows
SELECT stream_ext.advance_watermark('hl_view', '2026-01-01 04:00+00') AS watermark;
UPDATE hl_wm SET wm = '2026-01-01 04:00+00';
SELECT * FROM hl_check();
SELECT count(*) = (SELECT count(*) FROM hl_view) AS every_window_emitted FROM hl_out;

-- the materialization: one row per (key, pane) for on-time rows, plus one
-- per (key, pane, first open window) for rows that missed some windows
-- (once the batches appended to the delta are compacted)
SELECT stream_ext.compact('hl_view') > 0 AS compacted;
SELECT count(*) FILTER (WHERE window_open_from = '-infinity') > 0 AS on_time_panes,
       count(*) FILTER (WHERE window_open_from > '-infinity') > 0 AS partly_late_panes
  FROM hl_view_mrel;

-- stream_ext.hop_open_from(pane, size, slide, watermark)
SELECT stream_ext.hop_open_from('2026-01-01 00:08+00', '10 minutes', '4 minutes', '2026-01-01 00:12+00') AS from_00_04,
       stream_ext.hop_open_from('2026-01-01 00:08+00', '10 minutes', '4 minutes', '2026-01-01 00:06+00') AS all_open,
       stream_ext.hop_open_from('2026-01-01 00:08+00', '10 minutes', '4 minutes', NULL) AS no_watermark;

-- Sliding windows: allowed_lateness only.  A row is late once its step
-- bucket + sliding_window <= watermark: no reader whose now() has reached
-- the watermark would show it.  Times an hour ahead of now(), so that the
-- view shows every bucket it holds: a late row folded in would show.
SELECT stream_ext.create_stream('sw_ev', 'k int, ts timestamptz, v int');
CREATE TABLE sw_copy (k int, ts timestamptz, v int, late bool);
CREATE TABLE sw_wm (wm timestamptz, anchor timestamptz);
INSERT INTO sw_wm VALUES (NULL, date_trunc('minute', now()) + interval '1 hour');
CREATE VIEW sw_view WITH (continuous, sliding_window = '10 minutes', step = '1 minute', time_column = ts,
                          allowed_lateness = '2 minutes') AS
  SELECT k, count(*) AS n, sum(v) AS s FROM sw_ev GROUP BY k;
CREATE FUNCTION sw_batch(rows_ hl_row[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  w timestamptz := (SELECT wm - interval '2 minutes' FROM sw_wm);
BEGIN
  INSERT INTO sw_ev (k, ts, v) SELECT r.k, r.ts, r.v FROM unnest(rows_) r;
  INSERT INTO sw_copy SELECT r.k, r.ts, r.v,
         coalesce(stream_ext.tumble(r.ts, '1 minute') + interval '10 minutes' <= w, false)
    FROM unnest(rows_) r;
  UPDATE sw_wm SET wm = GREATEST(wm, (SELECT max(r.ts) FROM unnest(rows_) r));
END $$;
CREATE FUNCTION sw_check() RETURNS TABLE (what text, differing bigint) LANGUAGE sql AS $$
  WITH o AS (SELECT k, count(*) AS n, sum(v) AS s FROM sw_copy
              WHERE NOT late AND stream_ext.tumble(ts, '1 minute') >= now() - interval '10 minutes'
              GROUP BY k),
       lr AS (SELECT ("row"->>'k')::int AS k, ("row"->>'ts')::timestamptz AS ts, ("row"->>'v')::int AS v
                FROM stream_ext.late_rows WHERE view = 'sw_view'::regclass AND reason = 'window closed')
  SELECT 'view', (SELECT count(*) FROM ((TABLE o EXCEPT ALL TABLE sw_view)
                                        UNION ALL (TABLE sw_view EXCEPT ALL TABLE o)) d)
  UNION ALL
  SELECT 'late_rows', (SELECT count(*) FROM ((SELECT k, ts, v FROM sw_copy WHERE late EXCEPT ALL TABLE lr)
                                             UNION ALL (TABLE lr EXCEPT ALL SELECT k, ts, v FROM sw_copy WHERE late)) d)
$$;
DO $$
DECLARE
  a timestamptz := (SELECT anchor FROM sw_wm);
BEGIN
  FOR b IN 1..100 LOOP
    PERFORM sw_batch((SELECT array_agg(((hashint4(b * 100 + i) % 3 + 3) % 3,
                      CASE WHEN (b + i) % 41 = 0 THEN NULL
                           ELSE a + b * interval '20 seconds'
                                - ((hashint4(-b * 100 - i) % 900 + 900) % 900) * interval '1 second' END,
                      (b * 7 + i) % 13)::hl_row)
      FROM generate_series(1, 1 + (hashint4(b) % 30 + 30) % 30) i));
  END LOOP;
END $$;
SELECT count(*) FILTER (WHERE late) > 0 AS some_late, count(*) FILTER (WHERE NOT late) > 0 AS some_on_time
  FROM sw_copy;
SELECT * FROM sw_check();
-- emit = 'on_close' has no window to close in a sliding view
CREATE VIEW sw_bad WITH (continuous, sliding_window = '10 minutes', time_column = ts,
                         emit = 'on_close', output_stream = 'hl_out') AS
  SELECT k, count(*) AS n FROM sw_ev GROUP BY k;
DROP TABLE sw_ev CASCADE;
DROP FUNCTION sw_batch(hl_row[]);
DROP FUNCTION sw_check();
DROP TABLE sw_copy, sw_wm;

-- bad input: hop() over timestamp without time zone
SELECT stream_ext.create_stream('hl_local', 'k int, ts timestamp');
CREATE VIEW hl_bad WITH (continuous, allowed_lateness = '1 minute') AS
  SELECT w.window_start, count(*) FROM hl_local, stream_ext.hop(ts, '10 minutes', '5 minutes') AS w(window_start)
   GROUP BY 1;
SELECT count(*) AS leftovers FROM pg_class WHERE relname LIKE 'hl_bad%';

DROP TABLE hl_ev, hl_out, hl_local CASCADE;
SELECT count(*) AS lateness_left FROM stream_ext.lateness_views;
DROP FUNCTION hl_batch(hl_row[]);
DROP FUNCTION hl_check();
DROP TYPE hl_row;
DROP TABLE hl_pairs, hl_wm;
DROP SEQUENCE hl_id;
