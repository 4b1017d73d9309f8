-- Changelog streams (docs/changelog.md): the aggregates beyond count, sum
-- and avg that stay exact under retraction -- count(DISTINCT x) (signed
-- value counts in its side table), bool_and, bool_or, every (signed counts
-- of true and of non-NULL values) and var_pop, var_samp, variance of
-- integers (signed n, sum(x), sum(x*x) in numeric) -- checked
-- against an oracle: a plain table whose every change is captured into the
-- stream by statement triggers (one statement = one batch), the views equal
-- to the same queries over the table.  Then tumbling windows and TTL.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE SCHEMA cla;
SET search_path = cla, public;

SELECT stream_ext.create_stream('cla.ev', 'id int, k int, b bool, s smallint, v int, w bigint, ts timestamptz', changelog => true);
CREATE TABLE src (id int PRIMARY KEY, k int, b bool, s smallint, v int, w bigint, ts timestamptz);
CREATE FUNCTION capture_new() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO cla.ev SELECT id, k, b, s, v, w, ts, 1 FROM new_rows;
  RETURN NULL;
END $$;
CREATE FUNCTION capture_old() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO cla.ev SELECT id, k, b, s, v, w, ts, -1 FROM old_rows;
  RETURN NULL;
END $$;
CREATE FUNCTION capture_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO cla.ev SELECT id, k, b, s, v, w, ts, -1 FROM old_rows
    UNION ALL SELECT id, k, b, s, v, w, ts, 1 FROM new_rows;
  RETURN NULL;
END $$;
CREATE TRIGGER c_ins AFTER INSERT ON src REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION capture_new();
CREATE TRIGGER c_del AFTER DELETE ON src REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION capture_old();
CREATE TRIGGER c_upd AFTER UPDATE ON src REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION capture_update();

-- the stream's column list is (id, k, b, s, v, w, ts, stream_ext_sign)
SELECT string_agg(attname, ', ' ORDER BY attnum) FROM pg_attribute
 WHERE attrelid = 'cla.ev'::regclass AND attnum > 0 AND NOT attisdropped
   AND attname NOT IN ('arrival_timestamp');

-- the views and their oracles: the same text over the table
CREATE FUNCTION make_pair(name text, q text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('CREATE VIEW cla.%I WITH (continuous) AS %s', name, format(q, 'cla.ev'));
  EXECUTE format('CREATE VIEW cla.%I AS %s', 'o_' || name, format(q, 'cla.src'));
END $$;
SELECT make_pair('bools',
  'SELECT k, bool_and(b) AS ba, bool_or(b) AS bo, every(b) AS ev,
          bool_and(b) FILTER (WHERE v > 50) AS ba_big, bool_or(v > 90) AS any_high
     FROM %s GROUP BY k');
SELECT make_pair('vars',
  'SELECT k, var_pop(v) AS vp, var_samp(v) AS vs, variance(v) AS vr,
          var_pop(s) AS vps, var_samp(w) AS vsw, var_pop(w) AS vpw,
          var_samp(v) FILTER (WHERE b) AS vs_b, count(*) AS n
     FROM %s GROUP BY k');
SELECT make_pair('tot',
  'SELECT bool_and(b) AS ba, bool_or(b) AS bo, var_pop(v) AS vp, var_samp(w) AS vsw FROM %s');
SELECT make_pair('having_var',
  'SELECT k %% 4 AS k4, sum(v) AS sv FROM %s GROUP BY 1 HAVING var_samp(v) > 800 AND bool_or(b)');

SELECT make_pair('distincts',
  'SELECT k, count(DISTINCT v) AS dv, count(DISTINCT b) AS db, count(DISTINCT s) FILTER (WHERE b) AS ds_b,
          count(DISTINCT v %% 7) AS dv7, count(*) AS n
     FROM %s GROUP BY k');
SELECT make_pair('tot_distinct',
  'SELECT count(DISTINCT v) AS dv, count(DISTINCT w) AS dw, count(DISTINCT ts) AS dts FROM %s');
CREATE FUNCTION diffs() RETURNS TABLE (view text, differing bigint) LANGUAGE plpgsql AS $$
DECLARE n text;
BEGIN
  FOREACH n IN ARRAY ARRAY['bools', 'vars', 'tot', 'having_var', 'distincts', 'tot_distinct'] LOOP
    view := n;
    EXECUTE format('SELECT count(*) FROM ((TABLE cla.%1$I EXCEPT ALL TABLE cla.%2$I)
                     UNION ALL (TABLE cla.%2$I EXCEPT ALL TABLE cla.%1$I)) d', n, 'o_' || n)
      INTO differing;
    RETURN NEXT;
  END LOOP;
END $$;

-- empty: the keyless view's one row is all NULL, like the query's
SELECT * FROM tot;
SELECT * FROM diffs();

-- one row, then its retraction: NULL again (var_samp of one value is NULL)
INSERT INTO src VALUES (1, 1, true, 3, 7, 70, '2026-01-01');
SELECT * FROM tot;
SELECT k, vp, vs, n FROM vars;
DELETE FROM src;
SELECT * FROM tot;
SELECT count(*) AS groups FROM vars;
SELECT * FROM diffs();

-- a batch of 10000 rows, then updates (of the key, of values, to and from
-- NULL, of the sign of b) and deletes of many rows at once
SELECT setseed(0.49);
INSERT INTO src SELECT i, i % 20,
       CASE WHEN i % 13 = 0 THEN NULL ELSE random() < 0.8 END,
       (random() * 200 - 100)::smallint,
       CASE WHEN i % 9 = 0 THEN NULL ELSE (random() * 100)::int END,
       (random() * 4e15)::bigint - 2e15::bigint,
       '2026-01-01'::timestamptz + (i % 50) * interval '17 minutes'
  FROM generate_series(1, 10000) i;
SELECT * FROM diffs();
UPDATE src SET b = NOT b WHERE id % 10 = 3;
UPDATE src SET k = k + 1 WHERE id % 7 = 0;
UPDATE src SET v = NULL, b = NULL WHERE id % 11 = 0;
UPDATE src SET v = 5, w = NULL WHERE id % 17 = 0;
DELETE FROM src WHERE id % 5 = 1;
SELECT * FROM diffs();
-- (the oracle compares something: groups in each view, digits of a variance)
SELECT (SELECT count(*) FROM bools) AS bools, (SELECT count(*) FROM vars) AS vars,
       (SELECT count(*) FROM having_var) AS having_var, (SELECT sum(dv) FROM distincts) AS dv;
SELECT vp, vs, vps, vsw FROM vars WHERE k = 1;
-- a view created now starts from the stream's rows so far, signs and all
CREATE VIEW late_distincts WITH (continuous) AS
  SELECT k, count(DISTINCT v) AS dv, bool_or(b) AS bo, var_pop(w) AS vpw FROM ev GROUP BY k;
SELECT count(*) AS differing FROM (
  (TABLE late_distincts EXCEPT ALL SELECT k, count(DISTINCT v), bool_or(b), var_pop(w) FROM src GROUP BY k)
  UNION ALL
  (SELECT k, count(DISTINCT v), bool_or(b), var_pop(w) FROM src GROUP BY k EXCEPT ALL TABLE late_distincts)) d;
DROP VIEW late_distincts;
-- a roll-up cannot follow the signed counts of a count(DISTINCT) side table
CREATE VIEW roll WITH (continuous) AS
  SELECT k % 2 AS k2, stream_ext.combine(dv) AS dv FROM distincts GROUP BY 1;
-- a group whose every value is true: bool_and true until a false comes
UPDATE src SET b = true WHERE k = 4;
SELECT k, ba, bo, ev FROM bools WHERE k = 4;
UPDATE src SET b = false WHERE id = (SELECT min(id) FROM src WHERE k = 4);
SELECT k, ba, bo, ev FROM bools WHERE k = 4;
-- ... and its only false deleted: true again
DELETE FROM src WHERE id = (SELECT min(id) FROM src WHERE k = 4);
SELECT k, ba, bo, ev FROM bools WHERE k = 4;
-- all values of a group equal: variance exactly 0
UPDATE src SET v = 42 WHERE k = 5;
SELECT k, vp, vs FROM vars WHERE k = 5;
-- all b of a group NULL: bool_and and bool_or NULL, the group still there
UPDATE src SET b = NULL WHERE k = 6;
SELECT k, ba, bo, ev FROM bools WHERE k = 6;
SELECT * FROM diffs();

-- count(DISTINCT): a value leaves the count when its last row goes, not before
INSERT INTO src VALUES (50001, 30, true, 1, 1000, 1, '2026-01-01'), (50002, 30, true, 1, 1000, 1, '2026-01-01'),
                       (50003, 30, true, 1, 1001, 1, '2026-01-01');
SELECT k, dv, db, n FROM distincts WHERE k = 30;
DELETE FROM src WHERE id = 50001;
SELECT k, dv, db, n FROM distincts WHERE k = 30;
DELETE FROM src WHERE id = 50002;
SELECT k, dv, db, n FROM distincts WHERE k = 30;
-- back again, and in and out within one statement
UPDATE src SET v = 1000 WHERE id = 50003;
SELECT k, dv, db, n FROM distincts WHERE k = 30;
UPDATE src SET v = CASE v WHEN 1000 THEN 1002 END WHERE k = 30;
SELECT k, dv, db, n FROM distincts WHERE k = 30;
-- the side table keeps each value's signed count
SELECT a.attname FROM pg_attribute a JOIN stream_ext.view_catalog c ON a.attrelid = ANY (c.aux_tables)
 WHERE c.view = 'cla.tot_distinct'::regclass AND a.attnum > 0 AND NOT a.attisdropped
 GROUP BY a.attname ORDER BY a.attname;
SELECT * FROM diffs();

-- compaction folds the deltas; nothing changes
SELECT stream_ext.compact('cla.distincts') >= 0 AS compacted;
SELECT stream_ext.compact('cla.bools') >= 0 AS compacted;
SELECT stream_ext.compact('cla.vars') >= 0 AS compacted;
SELECT * FROM diffs();

-- rolled back changes leave no trace, also after a savepoint
BEGIN;
DELETE FROM src WHERE k < 10;
UPDATE src SET v = v * 2, b = NOT b;
ROLLBACK;
BEGIN;
UPDATE src SET v = 0 WHERE k = 1;
SAVEPOINT s;
DELETE FROM src WHERE k = 2;
ROLLBACK TO SAVEPOINT s;
INSERT INTO src VALUES (30001, 2, false, 1, 2, 3, '2026-03-01');
COMMIT;
SELECT * FROM diffs();

-- rows one at a time (batches of one), mixed
DO $$
BEGIN
  FOR i IN 1..200 LOOP
    IF i % 3 = 0 THEN
      DELETE FROM cla.src WHERE id = (SELECT min(id) FROM cla.src WHERE k = i % 20);
    ELSIF i % 3 = 1 THEN
      UPDATE cla.src SET v = v - 1, b = NOT b, w = w + i
       WHERE id = (SELECT max(id) FROM cla.src WHERE k = i % 20);
    ELSE
      INSERT INTO cla.src VALUES (40000 + i, i % 25, i % 2 = 0, i, i * 3, -i, '2026-01-01');
    END IF;
  END LOOP;
END $$;
SELECT * FROM diffs();
SELECT stream_ext.compact('cla.vars') >= 0 AS compacted;
SELECT stream_ext.compact('cla.tot_distinct') >= 0 AS compacted;
SELECT * FROM diffs();
DELETE FROM src;
SELECT * FROM diffs();
SELECT count(*) AS groups FROM bools;

-- the rest is refused at CREATE, naming the aggregate
\set VERBOSITY terse
CREATE VIEW bad WITH (continuous) AS SELECT k, stddev(v) FROM ev GROUP BY k;
CREATE VIEW bad WITH (continuous) AS SELECT k, stddev_pop(v) FROM ev GROUP BY k;
CREATE VIEW bad WITH (continuous) AS SELECT k, var_pop(v::numeric) FROM ev GROUP BY k;
CREATE VIEW bad WITH (continuous) AS SELECT k, var_samp(v::float8) FROM ev GROUP BY k;
CREATE VIEW bad WITH (continuous) AS SELECT k, bit_or(v) FROM ev GROUP BY k;
CREATE VIEW bad WITH (continuous) AS SELECT k, max(v) FROM ev GROUP BY k;
\set VERBOSITY default
CREATE VIEW bad WITH (continuous) AS SELECT k, var_pop(v::numeric) FROM ev GROUP BY k;
SELECT count(*) AS half_created FROM pg_class WHERE relname LIKE 'bad%' AND relnamespace = 'cla'::regnamespace;

-- Tumbling windows: a retraction lands in the window of the retracted
-- row's own time, so an update that moves a row's time moves it between
-- windows; each window equals the query over the table.
SELECT make_pair('win',
  'SELECT stream_ext.tumble(ts, ''1 hour'') AS wnd, k, count(*) AS n, bool_or(b) AS bo, var_pop(v) AS vp
     FROM %s GROUP BY 1, 2');
INSERT INTO src VALUES (1, 1, true, 1, 10, 1, '2026-01-01 10:10'),
                       (2, 1, false, 1, 20, 1, '2026-01-01 10:20'),
                       (3, 1, false, 1, 30, 1, '2026-01-01 11:30');
SELECT wnd, k, n, bo, vp FROM win ORDER BY 1, 2;
-- row 1 really happened at 11:05: it leaves the 10:00 window for 11:00
UPDATE src SET ts = '2026-01-01 11:05' WHERE id = 1;
SELECT wnd, k, n, bo, vp FROM win ORDER BY 1, 2;
-- the last row of the 10:00 window deleted: the window disappears
DELETE FROM src WHERE id = 2;
SELECT wnd, k, n, bo, vp FROM win ORDER BY 1, 2;
SELECT count(*) AS differing FROM ((TABLE win EXCEPT ALL TABLE o_win)
                                   UNION ALL (TABLE o_win EXCEPT ALL TABLE win)) d;
DELETE FROM src;

-- TTL: groups expire by their time as in any view; a retraction of a row
-- of an expired group arrives at a group that starts from zero and stays
-- hidden, and so does a row added to it afterwards (its signed count is 0)
CREATE VIEW daily WITH (continuous, ttl = '1 day', ttl_column = 'd') AS
  SELECT date_trunc('day', ts) AS d, count(*) AS n, bool_and(b) AS ba FROM ev GROUP BY 1;
INSERT INTO src VALUES (1, 1, true, 1, 1, 1, date_trunc('day', now()) - interval '3 days'),
                       (2, 1, true, 1, 1, 1, date_trunc('day', now()) - interval '3 days'),
                       (3, 1, false, 1, 1, 1, date_trunc('day', now()));
SELECT d = date_trunc('day', now()) AS today, n, ba FROM daily ORDER BY d;
SELECT task, removed > 0 AS removed FROM stream_ext.run_maintenance() WHERE object = 'cla.daily'::regclass;
SELECT d = date_trunc('day', now()) AS today, n, ba FROM daily ORDER BY d;
DELETE FROM src WHERE id = 1;
SELECT d = date_trunc('day', now()) AS today, n, ba FROM daily ORDER BY d;
INSERT INTO src VALUES (4, 1, true, 1, 1, 1, date_trunc('day', now()) - interval '3 days');
SELECT d = date_trunc('day', now()) AS today, n, ba FROM daily ORDER BY d;
-- (reads do not filter by the TTL: a row of another old day shows until
-- the next expiry)
INSERT INTO src VALUES (5, 1, true, 1, 1, 1, date_trunc('day', now()) - interval '2 days');
SELECT d = date_trunc('day', now()) AS today, n, ba FROM daily ORDER BY d;
-- a retraction within the TTL is exact
DELETE FROM src WHERE id = 3;
SELECT count(*) AS groups FROM daily;

DROP SCHEMA cla CASCADE;
