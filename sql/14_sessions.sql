-- Session windows: WITH (continuous, session_gap, time_column).  The oracle
-- is the gaps-and-islands query over the same committed rows.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;

SELECT stream_ext.create_stream('sess_ev', 'uid int, ts timestamptz, x int');
CREATE TABLE sess_copy (uid int, ts timestamptz, x int);   -- the committed rows

-- rows that exist before the views: backfilled
INSERT INTO sess_ev VALUES (1, '2026-01-01 00:00+00', 1), (1, '2026-01-01 00:05+00', 2);
INSERT INTO sess_copy VALUES (1, '2026-01-01 00:00+00', 1), (1, '2026-01-01 00:05+00', 2);

CREATE VIEW sess_user WITH (continuous, session_gap = '10 minutes', time_column = 'ts') AS
  SELECT uid, count(*) AS n, sum(x) AS s, avg(x) AS a, min(x) AS lo, max(x) AS hi
    FROM sess_ev GROUP BY uid;
-- a filter, an expression over aggregates, HAVING
CREATE VIEW sess_big WITH (continuous, session_gap = '3 minutes', time_column = 'ts') AS
  SELECT uid % 3 AS grp, sum(x) / count(*) AS mean_x, count(*) AS n
    FROM sess_ev WHERE x > 0 GROUP BY uid % 3 HAVING count(*) > 1;

CREATE FUNCTION sess_diff() RETURNS TABLE (view text, differing bigint) LANGUAGE sql AS $$
  WITH o1 AS (
    SELECT uid, count(*) AS n, sum(x) AS s, avg(x) AS a, min(x) AS lo, max(x) AS hi,
           min(ts) AS session_start, max(ts) AS session_end
      FROM (SELECT *, sum(brk) OVER (PARTITION BY uid ORDER BY ts ROWS UNBOUNDED PRECEDING) AS isl
              FROM (SELECT *, CASE WHEN ts - lag(ts) OVER (PARTITION BY uid ORDER BY ts) <= '10 minutes'
                                   THEN 0 ELSE 1 END AS brk
                      FROM sess_copy WHERE ts IS NOT NULL) a) b
     GROUP BY uid, isl),
  o2 AS (
    SELECT grp, sum(x) / count(*) AS mean_x, count(*) AS n, min(ts) AS session_start, max(ts) AS session_end
      FROM (SELECT *, sum(brk) OVER (PARTITION BY grp ORDER BY ts ROWS UNBOUNDED PRECEDING) AS isl
              FROM (SELECT *, uid % 3 AS grp,
                           CASE WHEN ts - lag(ts) OVER (PARTITION BY uid % 3 ORDER BY ts) <= '3 minutes'
                                THEN 0 ELSE 1 END AS brk
                      FROM sess_copy WHERE ts IS NOT NULL AND x > 0) a) b
     GROUP BY grp, isl HAVING count(*) > 1)
  SELECT 'sess_user', (SELECT count(*) FROM ((TABLE o1 EXCEPT ALL TABLE sess_user)
                                             UNION ALL (TABLE sess_user EXCEPT ALL TABLE o1)) d)
  UNION ALL
  SELECT 'sess_big', (SELECT count(*) FROM ((TABLE o2 EXCEPT ALL TABLE sess_big)
                                            UNION ALL (TABLE sess_big EXCEPT ALL TABLE o2)) d)
$$;

SELECT * FROM sess_user ORDER BY uid, session_start;
SELECT * FROM sess_diff();

-- a row that extends the session, one that starts a new one
INSERT INTO sess_ev VALUES (1, '2026-01-01 00:14+00', 3), (1, '2026-01-01 00:40+00', 4);
INSERT INTO sess_copy VALUES (1, '2026-01-01 00:14+00', 3), (1, '2026-01-01 00:40+00', 4);
SELECT * FROM sess_user ORDER BY uid, session_start;
-- a late row bridging the two sessions merges them
INSERT INTO sess_ev VALUES (1, '2026-01-01 00:27+00', 5);
INSERT INTO sess_copy VALUES (1, '2026-01-01 00:27+00', 5);
SELECT * FROM sess_user ORDER BY uid, session_start;
SELECT * FROM sess_diff();

-- 2000 single-row batches in shuffled time order, NULL keys and NULL times
DO $$
BEGIN
  FOR i IN 1..2000 LOOP
    INSERT INTO sess_ev VALUES (CASE WHEN i % 97 = 0 THEN NULL ELSE i % 17 END,
                                CASE WHEN i % 101 = 0 THEN NULL
                                     ELSE '2026-01-02 00:00+00'::timestamptz
                                          + ((hashint4(i) % 5000 + 5000) % 5000) * interval '1 minute' END,
                                (i * 7) % 23 - 3);
  END LOOP;
END $$;
INSERT INTO sess_copy SELECT CASE WHEN i % 97 = 0 THEN NULL ELSE i % 17 END,
                             CASE WHEN i % 101 = 0 THEN NULL
                                  ELSE '2026-01-02 00:00+00'::timestamptz
                                       + ((hashint4(i) % 5000 + 5000) % 5000) * interval '1 minute' END,
                             (i * 7) % 23 - 3
                        FROM generate_series(1, 2000) i;
SELECT * FROM sess_diff();

-- compaction rewrites fragments as sessions; the view does not change
SELECT count(*) > (SELECT count(*) FROM sess_user) AS fragmented FROM sess_user_mrel;
CREATE TABLE sess_before AS SELECT * FROM sess_user;
SELECT stream_ext.compact_sessions('sess_user') > 0 AS compacted;
SELECT count(*) = (SELECT count(*) FROM sess_user) AS one_row_per_session FROM sess_user_mrel;
SELECT count(*) AS changed FROM ((TABLE sess_before EXCEPT ALL TABLE sess_user)
                                 UNION ALL (TABLE sess_user EXCEPT ALL TABLE sess_before)) d;
SELECT stream_ext.compact_sessions('sess_user') AS nothing_left;

-- one batch of 10,000 rows, out of order, bridging the sessions above
INSERT INTO sess_ev SELECT i % 17, '2026-01-02 00:00+00'::timestamptz
                                   + ((hashint4(-i) % 6000 + 6000) % 6000) * interval '1 minute', i % 11
                      FROM generate_series(1, 10000) i;
INSERT INTO sess_copy SELECT i % 17, '2026-01-02 00:00+00'::timestamptz
                                     + ((hashint4(-i) % 6000 + 6000) % 6000) * interval '1 minute', i % 11
                        FROM generate_series(1, 10000) i;
SELECT * FROM sess_diff();

-- run_maintenance() compacts session windows too
SELECT object, removed > 0 AS compacted FROM stream_ext.run_maintenance()
 WHERE task = 'session_compaction' ORDER BY object::text;
SELECT * FROM sess_diff();

-- rolled back work leaves no trace
BEGIN;
INSERT INTO sess_ev VALUES (5, '2026-01-03 00:00+00', 100);
ROLLBACK;
BEGIN;
INSERT INTO sess_ev VALUES (6, '2026-01-03 00:00+00', 1);
SAVEPOINT a;
INSERT INTO sess_ev VALUES (6, '2026-01-03 00:01+00', 1000);
ROLLBACK TO a;
COMMIT;
INSERT INTO sess_copy VALUES (6, '2026-01-03 00:00+00', 1);
SELECT * FROM sess_diff();
SELECT stream_ext.compact_sessions('sess_big') >= 0 AS compacted_big;
SELECT * FROM sess_diff();

-- reads by group use the materialization's index
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM sess_user WHERE uid = 3;
RESET enable_seqscan;

-- catalog and \d+
SELECT view, time_column, session_gap FROM stream_ext.session_views ORDER BY view::text;
SELECT a.attname, col_description(a.attrelid, a.attnum)
  FROM pg_attribute a WHERE a.attrelid = 'sess_user'::regclass AND a.attnum > 0 ORDER BY a.attnum;

-- bad input: clear errors, nothing created
CREATE VIEW sess_bad WITH (continuous, session_gap = '10 minutes') AS
  SELECT uid, count(*) FROM sess_ev GROUP BY uid;
CREATE VIEW sess_bad WITH (continuous, session_gap = '10 minutes', time_column = 'nope') AS
  SELECT uid, count(*) FROM sess_ev GROUP BY uid;
CREATE VIEW sess_bad WITH (continuous, session_gap = '10 minutes', time_column = 'x') AS
  SELECT uid, count(*) FROM sess_ev GROUP BY uid;
CREATE VIEW sess_bad WITH (continuous, session_gap = '0 minutes', time_column = 'ts') AS
  SELECT uid, count(*) FROM sess_ev GROUP BY uid;
CREATE VIEW sess_bad WITH (continuous, session_gap = '-5 minutes', time_column = 'ts') AS
  SELECT uid, count(*) FROM sess_ev GROUP BY uid;
CREATE VIEW sess_bad WITH (continuous, session_gap = '1 month', time_column = 'ts') AS
  SELECT uid, count(*) FROM sess_ev GROUP BY uid;
CREATE VIEW sess_bad WITH (continuous, session_gap = 'soon', time_column = 'ts') AS
  SELECT uid, count(*) FROM sess_ev GROUP BY uid;
CREATE VIEW sess_bad WITH (continuous, session_gap = '10 minutes', time_column = 'ts') AS
  SELECT count(*) FROM sess_ev;
CREATE VIEW sess_bad WITH (continuous, session_gap = '10 minutes', time_column = 'ts') AS
  SELECT uid, count(DISTINCT x) FROM sess_ev GROUP BY uid;
CREATE VIEW sess_bad WITH (continuous, session_gap = '10 minutes', time_column = 'ts') AS
  SELECT uid, count(*) AS session_end FROM sess_ev GROUP BY uid;
CREATE VIEW sess_bad WITH (continuous, session_gap = '10 minutes', time_column = 'ts', colour = 'red') AS
  SELECT uid, count(*) FROM sess_ev GROUP BY uid;
SELECT count(*) AS leftovers FROM pg_class WHERE relname LIKE 'sess_bad%';
SELECT stream_ext.compact_sessions('sess_before');
CREATE ROLE sess_other;
SET ROLE sess_other;
SELECT stream_ext.compact_sessions('sess_user');
RESET ROLE;
DROP ROLE sess_other;

-- DROP VIEW forgets the session parameters
DROP VIEW sess_big;
SELECT view FROM stream_ext.session_views ORDER BY view::text;
DROP TABLE sess_ev CASCADE;
SELECT count(*) AS session_views_left FROM stream_ext.session_views;
DROP TABLE sess_copy, sess_before;
DROP FUNCTION sess_diff();
