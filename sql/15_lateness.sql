-- Late data: WITH (continuous, allowed_lateness) on tumbling windows.  The
-- oracle simulates the watermark independently (plpgsql, below): each
-- batch's rows are late iff their window ended at or before the watermark
-- left by the batches before it; the view equals the plain query over the
-- rows that were not late, and stream_ext.late_rows holds exactly the rest.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;

SELECT stream_ext.create_stream('late_ev', 'k int, ts timestamptz, v int');
CREATE TABLE late_copy (batch int, k int, ts timestamptz, v int, late bool);
CREATE TABLE late_wm (wm timestamptz);   -- the oracle's max event time
INSERT INTO late_wm VALUES (NULL);

-- one batch: into the stream, and classified by the oracle
CREATE FUNCTION late_batch(b int, rows_ late_copy[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  w timestamptz := (SELECT wm - interval '2 minutes' FROM late_wm);
BEGIN
  INSERT INTO late_ev (k, ts, v) SELECT r.k, r.ts, r.v FROM unnest(rows_) r;
  INSERT INTO late_copy
    SELECT b, r.k, r.ts, r.v,
           coalesce(w IS NOT NULL AND stream_ext.tumble(r.ts, '5 minutes') + '5 minutes' <= w, false)
      FROM unnest(rows_) r;
  UPDATE late_wm SET wm = GREATEST(wm, (SELECT max(r.ts) FROM unnest(rows_) r));
END $$;

CREATE VIEW late_5min WITH (continuous, allowed_lateness = '2 minutes') AS
  SELECT k, stream_ext.tumble(ts, '5 minutes') AS win, count(*) AS n, sum(v) AS s,
         count(DISTINCT v) AS vs
    FROM late_ev GROUP BY 1, 2;

CREATE FUNCTION late_check() RETURNS TABLE (what text, differing bigint) LANGUAGE sql AS $$
  WITH ontime AS (SELECT k, ts, v FROM late_copy WHERE NOT late),
       o AS (SELECT k, stream_ext.tumble(ts, '5 minutes') AS win, count(*) AS n, sum(v) AS s,
                    count(DISTINCT v) AS vs FROM ontime GROUP BY 1, 2),
       lr AS (SELECT ("row"->>'k')::int AS k, ("row"->>'ts')::timestamptz AS ts, ("row"->>'v')::int AS v
                FROM stream_ext.late_rows WHERE view = 'late_5min'::regclass)
  SELECT 'view', (SELECT count(*) FROM ((TABLE o EXCEPT ALL TABLE late_5min)
                                        UNION ALL (TABLE late_5min EXCEPT ALL TABLE o)) d)
  UNION ALL
  SELECT 'late_rows', (SELECT count(*) FROM ((SELECT k, ts, v FROM late_copy WHERE late EXCEPT ALL TABLE lr)
                                             UNION ALL (TABLE lr EXCEPT ALL SELECT k, ts, v FROM late_copy WHERE late)) d)
  UNION ALL
  SELECT 'watermark', (SELECT count(*) FROM stream_ext.lateness l, late_wm
                        WHERE l.view = 'late_5min'::regclass AND l.max_event_time IS DISTINCT FROM late_wm.wm)
$$;

-- a small story: on time, a window closes, a late row, a NULL time
SELECT late_batch(1, ARRAY[(0, 1, '2026-01-01 00:01+00', 1, NULL),
                          (0, 1, '2026-01-01 00:06+00', 2, NULL)]::late_copy[]);
SELECT late_batch(2, ARRAY[(0, 1, '2026-01-01 00:12+00', 3, NULL)]::late_copy[]);   -- watermark 00:10
SELECT late_batch(3, ARRAY[(0, 1, '2026-01-01 00:04+00', 4, NULL),     -- window 00:00-00:05 closed: late
                          (0, 1, '2026-01-01 00:09+00', 5, NULL),     -- 00:05-00:10 closed too (end <= 00:10)
                          (0, 1, '2026-01-01 00:10+00', 6, NULL),     -- 00:10-00:15 open
                          (0, 2, NULL, 7, NULL)]::late_copy[]);        -- no event time: applied
SELECT * FROM late_5min ORDER BY k, win;
SELECT event_time, watermark, reason, "row" - 'arrival_timestamp' AS "row"
  FROM stream_ext.late_rows ORDER BY event_time;
SELECT view, allowed_lateness, max_event_time, watermark, late_rows FROM stream_ext.lateness;
SELECT * FROM late_check();

-- a rolled-back batch neither moves the watermark nor leaves late rows
BEGIN;
INSERT INTO late_ev VALUES (1, '2026-01-01 03:00+00', 100), (1, '2026-01-01 00:00+00', 100);
ROLLBACK;
SELECT max_event_time, late_rows FROM stream_ext.lateness;
SELECT * FROM late_check();

-- 300 batches of 1-40 rows, times drifting forward with disorder up to 9 minutes
DO $$
DECLARE
  rows_ late_copy[];
BEGIN
  FOR b IN 1..300 LOOP
    SELECT array_agg((0, (hashint4(b * 100 + i) % 5 + 5) % 5,
                      CASE WHEN (b + i) % 53 = 0 THEN NULL
                           ELSE timestamptz '2026-01-01 01:00+00' + b * interval '20 seconds'
                                - ((hashint4(-b * 100 - i) % 540 + 540) % 540) * interval '1 second' END,
                      (b * 7 + i) % 13, NULL)::late_copy)
      INTO rows_ FROM generate_series(1, 1 + (hashint4(b) % 40 + 40) % 40) i;
    PERFORM late_batch(b + 3, rows_);
  END LOOP;
END $$;
SELECT count(*) FILTER (WHERE late) > 0 AS some_late, count(*) FILTER (WHERE NOT late) > 0 AS some_on_time
  FROM late_copy;
SELECT * FROM late_check();

-- one batch of 10,000 rows
SELECT late_batch(1000, (SELECT array_agg((0, i % 7, timestamptz '2026-01-01 02:30+00'
                                              - (i % 1200) * interval '1 second', i % 17, NULL)::late_copy)
                           FROM generate_series(1, 10000) i));
SELECT * FROM late_check();

-- late rows belong to the view's owner
CREATE ROLE late_other;
SET ROLE late_other;
SELECT count(*) AS visible_late_rows FROM stream_ext.late_rows;
RESET ROLE;
DROP ROLE late_other;

-- a view's own expressions (its WHERE clause, its event time) run as the
-- view's owner, at CREATE and in every batch, also when they decide which
-- rows are late -- never as the extension's owner
CREATE ROLE late_owner;
GRANT CREATE ON SCHEMA public TO late_owner;
SET ROLE late_owner;
SELECT stream_ext.create_stream('late_own_ev', 'k int, ts timestamptz');
CREATE FUNCTION late_probe(int) RETURNS bool LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF current_user <> 'late_owner' THEN
    RAISE EXCEPTION 'late_probe ran as %', current_user;
  END IF;
  RETURN true;
END $$;
INSERT INTO late_own_ev VALUES (1, '2026-01-01 01:00+00');
CREATE VIEW late_own WITH (continuous, allowed_lateness = '1 minute') AS
  SELECT k, stream_ext.tumble(ts, '5 minutes') AS win, count(*) AS n
    FROM late_own_ev WHERE late_probe(k) GROUP BY 1, 2;
INSERT INTO late_own_ev VALUES (1, '2026-01-01 02:00+00'), (2, '2026-01-01 00:00+00');
SELECT k, win, n FROM late_own ORDER BY 1, 2;
SELECT "row"->>'k' AS k, event_time, reason FROM stream_ext.late_rows WHERE view = 'late_own'::regclass;
DROP VIEW late_own;
DROP TABLE late_own_ev;
DROP FUNCTION late_probe(int);
RESET ROLE;
REVOKE CREATE ON SCHEMA public FROM late_owner;
DROP ROLE late_owner;

-- bad input: clear errors, nothing created
CREATE VIEW late_bad WITH (continuous, allowed_lateness = '1 minute') AS
  SELECT k, count(*) FROM late_ev GROUP BY k;
CREATE VIEW late_bad WITH (continuous, allowed_lateness = '1 minute') AS
  SELECT k, date_bin('1 minute', ts, 'epoch'), count(*) FROM late_ev GROUP BY 1, 2;
CREATE VIEW late_bad WITH (continuous, allowed_lateness = '-1 minute') AS
  SELECT k, stream_ext.tumble(ts, '1 minute'), count(*) FROM late_ev GROUP BY 1, 2;
CREATE VIEW late_bad WITH (continuous, allowed_lateness = '1 month') AS
  SELECT k, stream_ext.tumble(ts, '1 minute'), count(*) FROM late_ev GROUP BY 1, 2;
CREATE VIEW late_bad WITH (continuous, allowed_lateness = 'later') AS
  SELECT k, stream_ext.tumble(ts, '1 minute'), count(*) FROM late_ev GROUP BY 1, 2;
SELECT count(*) AS leftovers FROM pg_class WHERE relname LIKE 'late_bad%';

-- allowed_lateness = 0: the watermark is the newest event time itself
CREATE VIEW late_zero WITH (continuous, allowed_lateness = '0') AS
  SELECT stream_ext.tumble(ts, '1 hour') AS hour, count(*) AS n FROM late_ev GROUP BY 1;
INSERT INTO late_ev VALUES (1, '2026-01-01 05:00+00', 1);
INSERT INTO late_ev VALUES (1, '2026-01-01 04:59+00', 1), (1, '2026-01-01 05:59+00', 1);
SELECT * FROM late_zero WHERE hour >= '2026-01-01 04:00+00' ORDER BY hour;
SELECT count(*) AS late FROM stream_ext.late_rows WHERE view = 'late_zero'::regclass;

-- dropping a view forgets its watermark and late rows
DROP VIEW late_5min;
SELECT view FROM stream_ext.lateness ORDER BY view::text;
SELECT count(*) AS late_rows_left FROM stream_ext.late_rows WHERE view::text = 'late_5min';
DROP TABLE late_ev CASCADE;
SELECT count(*) AS all_gone FROM stream_ext.lateness;
DROP FUNCTION late_batch(int, late_copy[]);
DROP FUNCTION late_check();
DROP TABLE late_copy, late_wm;

-- emit = 'on_close': each window's final row, once, into an output stream
SELECT stream_ext.create_stream('emit_ev', 'k int, ts timestamptz, v int');
SELECT stream_ext.create_stream('emit_out', 'k int, win timestamptz, n bigint, s bigint, note text');
INSERT INTO emit_ev VALUES (9, '2026-02-01 00:00+00', 1), (9, '2026-02-01 00:20+00', 1);  -- before the view
CREATE VIEW emit_5min WITH (continuous, emit = 'on_close', output_stream = 'emit_out',
                            allowed_lateness = '1 minute') AS
  SELECT k, stream_ext.tumble(ts, '5 minutes') AS win, count(*) AS n, sum(v) AS s
    FROM emit_ev GROUP BY 1, 2 HAVING sum(v) > 0;
-- chained: a continuous view over the final rows
CREATE VIEW emit_totals WITH (continuous) AS
  SELECT k, count(*) AS windows, sum(n) AS rows FROM emit_out GROUP BY k;
-- the window the backfilled rows closed is emitted at creation
SELECT k, win, n, s FROM emit_out ORDER BY win, k;
INSERT INTO emit_ev VALUES (1, '2026-02-01 00:21+00', 1), (2, '2026-02-01 00:22+00', -5);
INSERT INTO emit_ev VALUES (1, '2026-02-01 00:26:30+00', 1), (1, '2026-02-01 00:24+00', 10);
BEGIN;   -- rolled back: emits nothing, closes nothing
INSERT INTO emit_ev VALUES (1, '2026-02-01 03:00+00', 1);
ROLLBACK;
SELECT k, win, n, s FROM emit_out ORDER BY win, k;
INSERT INTO emit_ev VALUES (1, '2026-02-01 00:23+00', 100);   -- its window has closed: late
SELECT stream_ext.advance_watermark('emit_5min', '2026-02-01 00:40+00');  -- an idle stream's clock
SELECT k, win, n, s FROM emit_out ORDER BY win, k;
-- every closed window exactly once, equal to its final result; open ones not yet
SELECT count(*) AS differing FROM (
  (SELECT k, win, n, s FROM emit_out
   EXCEPT ALL SELECT k, win, n, s FROM emit_5min, stream_ext.lateness l
               WHERE l.view = 'emit_5min'::regclass AND win + interval '5 minutes' <= l.watermark)
  UNION ALL
  (SELECT k, win, n, s FROM emit_5min, stream_ext.lateness l
    WHERE l.view = 'emit_5min'::regclass AND win + interval '5 minutes' <= l.watermark
   EXCEPT ALL SELECT k, win, n, s FROM emit_out)) d;
SELECT * FROM emit_totals ORDER BY k;
SELECT count(*) AS late FROM stream_ext.late_rows WHERE view = 'emit_5min'::regclass;
SELECT stream_ext.advance_watermark('emit_5min', '2026-01-01');   -- never moves back

-- bad input
CREATE VIEW emit_bad WITH (continuous, emit = 'on_close') AS
  SELECT k, stream_ext.tumble(ts, '5 minutes') AS win, count(*) FROM emit_ev GROUP BY 1, 2;
CREATE VIEW emit_bad WITH (continuous, emit = 'sometimes', output_stream = 'emit_out') AS
  SELECT k, stream_ext.tumble(ts, '5 minutes') AS win, count(*) FROM emit_ev GROUP BY 1, 2;
CREATE VIEW emit_bad WITH (continuous, emit = 'on_close', output_stream = 'late_copy_nope') AS
  SELECT k, stream_ext.tumble(ts, '5 minutes') AS win, count(*) AS n FROM emit_ev GROUP BY 1, 2;
CREATE VIEW emit_bad WITH (continuous, emit = 'on_close', output_stream = 'emit_ev') AS
  SELECT k, stream_ext.tumble(ts, '5 minutes') AS win, count(*) AS n FROM emit_ev GROUP BY 1, 2;
CREATE VIEW emit_bad WITH (continuous, emit = 'on_close', output_stream = 'emit_out') AS
  SELECT k, stream_ext.tumble(ts, '5 minutes') AS win, count(*) AS total FROM emit_ev GROUP BY 1, 2;
CREATE VIEW emit_bad WITH (continuous, emit = 'on_close', output_stream = 'emit_out') AS
  SELECT k::text AS k, stream_ext.tumble(ts, '5 minutes') AS win FROM emit_ev GROUP BY 1, 2;
CREATE VIEW emit_bad WITH (continuous, emit = 'on_close', output_stream = 'emit_out') AS
  SELECT k, count(*) AS n FROM emit_ev GROUP BY stream_ext.tumble(ts, '5 minutes'), k;
CREATE VIEW emit_bad WITH (continuous, emit = 'on_close', output_stream = 'emit_out') AS
  SELECT k, count(*) AS n FROM emit_ev GROUP BY k;
SELECT stream_ext.create_stream('emit_strict', 'k int NOT NULL, win timestamptz, must text NOT NULL');
CREATE VIEW emit_bad WITH (continuous, emit = 'on_close', output_stream = 'emit_strict') AS
  SELECT k, stream_ext.tumble(ts, '5 minutes') AS win FROM emit_ev GROUP BY 1, 2;
SELECT stream_ext.advance_watermark('emit_totals', now());
SELECT count(*) AS leftovers FROM pg_class WHERE relname LIKE 'emit_bad%';
DROP TABLE emit_ev, emit_out, emit_strict CASCADE;
