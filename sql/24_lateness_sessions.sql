-- Late data and emit-on-close for session windows (docs/windows.md, "Late
-- data").  A row is late iff its event time is at or before the watermark
-- left by the batches before; a session closes when the watermark reaches
-- its last event + session_gap.  The oracle simulates the watermark
-- independently: the view equals the plain gaps-and-islands query over the
-- rows on time, late_rows holds exactly the others, and the output stream
-- holds every closed session once, equal to the plain query's row for it.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
SET TimeZone = 'UTC';

SELECT stream_ext.create_stream('sl_ev', 'k int, ts timestamptz, v int');
SELECT stream_ext.create_stream('sl_out', 'k int, n bigint, s bigint, session_start timestamptz, session_end timestamptz');
CREATE TABLE sl_copy (k int, ts timestamptz, v int, late bool);
CREATE TABLE sl_wm (wm timestamptz);   -- the oracle's max event time
INSERT INTO sl_wm VALUES (NULL);

-- rows already in the stream are on time: their closed sessions are emitted at CREATE
INSERT INTO sl_ev VALUES (9, '2026-01-01 00:00+00', 1), (9, '2026-01-01 00:30+00', 1);
INSERT INTO sl_copy VALUES (9, '2026-01-01 00:00+00', 1, false), (9, '2026-01-01 00:30+00', 1, false);
UPDATE sl_wm SET wm = '2026-01-01 00:30+00';

CREATE VIEW sl_view WITH (continuous, session_gap = '5 minutes', time_column = 'ts',
                          allowed_lateness = '2 minutes', emit = 'on_close', output_stream = 'sl_out') AS
  SELECT k, count(*) AS n, sum(v) AS s FROM sl_ev GROUP BY k;
SELECT k, n, s, session_start, session_end FROM sl_out ORDER BY k, session_start;

CREATE TYPE sl_row AS (k int, ts timestamptz, v int);
CREATE FUNCTION sl_batch(rows_ sl_row[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  w timestamptz := (SELECT wm - interval '2 minutes' FROM sl_wm);
BEGIN
  INSERT INTO sl_ev (k, ts, v) SELECT r.k, r.ts, r.v FROM unnest(rows_) r;
  INSERT INTO sl_copy SELECT r.k, r.ts, r.v, coalesce(r.ts <= w, false) FROM unnest(rows_) r;
  UPDATE sl_wm SET wm = GREATEST(wm, (SELECT max(r.ts) FROM unnest(rows_) r));
END $$;

CREATE FUNCTION sl_check() RETURNS TABLE (what text, differing bigint) LANGUAGE sql AS $$
  WITH o AS (SELECT k, count(*) AS n, sum(v) AS s, min(ts) AS session_start, max(ts) AS session_end
               FROM (SELECT *, sum(brk) OVER (PARTITION BY k ORDER BY ts) AS session
                       FROM (SELECT *, CASE WHEN ts - lag(ts) OVER (PARTITION BY k ORDER BY ts)
                                                 <= interval '5 minutes' THEN 0 ELSE 1 END AS brk
                               FROM sl_copy WHERE NOT late AND ts IS NOT NULL) a) b
              GROUP BY k, session),
       lr AS (SELECT ("row"->>'k')::int AS k, ("row"->>'ts')::timestamptz AS ts, ("row"->>'v')::int AS v
                FROM stream_ext.late_rows WHERE view = 'sl_view'::regclass AND reason = 'behind watermark'),
       closed AS (SELECT o.* FROM o, sl_wm
                   WHERE o.session_end + interval '5 minutes' <= sl_wm.wm - interval '2 minutes'),
       emitted AS (SELECT k, n, s, session_start, session_end FROM sl_out)
  SELECT 'view', (SELECT count(*) FROM ((TABLE o EXCEPT ALL TABLE sl_view)
                                        UNION ALL (TABLE sl_view EXCEPT ALL TABLE o)) d)
  UNION ALL
  SELECT 'late_rows', (SELECT count(*) FROM ((SELECT k, ts, v FROM sl_copy WHERE late EXCEPT ALL TABLE lr)
                                             UNION ALL (TABLE lr EXCEPT ALL SELECT k, ts, v FROM sl_copy WHERE late)) d)
  UNION ALL
  SELECT 'emitted', (SELECT count(*) FROM ((TABLE closed EXCEPT ALL TABLE emitted)
                                           UNION ALL (TABLE emitted EXCEPT ALL TABLE closed)) d)
  UNION ALL
  SELECT 'watermark', (SELECT count(*) FROM stream_ext.lateness l, sl_wm
                        WHERE l.view = 'sl_view'::regclass AND l.max_event_time IS DISTINCT FROM sl_wm.wm)
$$;
SELECT * FROM sl_check();

-- a small story: two sessions of key 1, closed; a late row that would
-- bridge them is late, not a merge of closed sessions
SELECT sl_batch(ARRAY[(1, '2026-01-01 01:00+00', 1), (1, '2026-01-01 01:08+00', 2)]::sl_row[]);
SELECT sl_batch(ARRAY[(1, '2026-01-01 01:20+00', 3)]::sl_row[]);       -- watermark 01:18
SELECT k, n, s, session_start, session_end FROM sl_out WHERE k = 1 ORDER BY session_start;
SELECT sl_batch(ARRAY[(1, '2026-01-01 01:04+00', 10),    -- would bridge 01:00 and 01:08: late
                      (1, '2026-01-01 01:18+00', 20),    -- at the watermark: late
                      (1, '2026-01-01 01:19+00', 30),    -- joins the open session of 01:20
                      (2, NULL, 40)]::sl_row[]);          -- no event time: in no session
SELECT k, n, s, session_start, session_end FROM sl_view WHERE k = 1 ORDER BY session_start;
SELECT event_time, watermark, reason, "row"->>'v' AS v FROM stream_ext.late_rows
 WHERE view = 'sl_view'::regclass ORDER BY event_time;
SELECT * FROM sl_check();

-- a rolled-back batch moves, emits and records nothing
BEGIN;
INSERT INTO sl_ev VALUES (1, '2026-01-01 09:00+00', 100), (1, '2026-01-01 00:00+00', 100);
ROLLBACK;
SELECT * FROM sl_check();

-- 300 batches of 1-40 rows, disorder up to 4 minutes; each pair of the 6
-- keys is active for 15 batches (7.5 minutes) in turn, so sessions close
DO $$
BEGIN
  FOR b IN 1..300 LOOP
    PERFORM sl_batch((SELECT array_agg((((b / 15) % 3) * 2 + (hashint4(b * 100 + i) % 2 + 2) % 2,
                      CASE WHEN (b + i) % 67 = 0 THEN NULL
                           ELSE timestamptz '2026-01-01 02:00+00' + b * interval '30 seconds'
                                - ((hashint4(-b * 100 - i) % 240 + 240) % 240) * interval '1 second' END,
                      (b * 7 + i) % 13)::sl_row)
      FROM generate_series(1, 1 + (hashint4(b) % 40 + 40) % 40) i));
  END LOOP;
END $$;
SELECT count(*) FILTER (WHERE late) > 0 AS some_late, count(*) FILTER (WHERE NOT late) > 0 AS some_on_time,
       (SELECT count(*) FROM sl_out) > 10 AS sessions_emitted
  FROM sl_copy;
SELECT * FROM sl_check();

-- one batch of 10,000 rows
SELECT sl_batch((SELECT array_agg((i % 5, timestamptz '2026-01-01 06:00+00'
                                          - (i % 3000) * interval '1 second' * (1 + i % 3), i % 17)::sl_row)
                   FROM generate_series(1, 10000) i));
SELECT * FROM sl_check();

-- an idle stream's clock closes the remaining sessions
SELECT stream_ext.advance_watermark('sl_view', '2026-01-01 08:00+00') AS watermark;
UPDATE sl_wm SET wm = '2026-01-01 08:00+00';
SELECT * FROM sl_check();
SELECT count(*) = (SELECT count(*) FROM sl_view) AS every_session_emitted FROM sl_out;

-- compaction changes nothing that was emitted or is shown
SELECT stream_ext.compact_sessions('sl_view') > 0 AS compacted;
SELECT * FROM sl_check();

-- bad input
SELECT stream_ext.create_stream('sl_local', 'k int, ts timestamp');
CREATE VIEW sl_bad WITH (continuous, session_gap = '5 minutes', time_column = 'ts', allowed_lateness = '1 minute') AS
  SELECT k, count(*) FROM sl_local GROUP BY k;
SELECT stream_ext.create_stream('sl_out2', 'k int, n bigint');
CREATE VIEW sl_bad WITH (continuous, session_gap = '5 minutes', time_column = 'ts',
                         emit = 'on_close', output_stream = 'sl_out2') AS
  SELECT k, count(*) AS n FROM sl_ev GROUP BY k;
SELECT count(*) AS leftovers FROM pg_class WHERE relname LIKE 'sl_bad%';

DROP TABLE sl_ev, sl_out, sl_out2, sl_local CASCADE;
SELECT count(*) AS lateness_left FROM stream_ext.lateness_views;
DROP FUNCTION sl_batch(sl_row[]);
DROP FUNCTION sl_check();
DROP TYPE sl_row;
DROP TABLE sl_copy, sl_wm;
