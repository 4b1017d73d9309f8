-- Changelog streams (docs/changelog.md): rows with stream_ext_sign = -1
-- retract rows added before, and continuous views stay equal to their query
-- over what is left.  The oracle: a plain table whose every change is
-- captured into the stream by statement triggers (inserts +new, deletes
-- -old, updates -old +new), so a statement of n rows is one batch of the
-- stream; the views must equal the same query over the table.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE SCHEMA cl;
SET search_path = cl, public;

SELECT stream_ext.create_stream('cl.orders', 'id int, k int, v int, n numeric, ts timestamptz', changelog => true);
\d cl.orders

-- the sign: +1 by default, -1 retracts, nothing else
INSERT INTO orders (id, k, v) VALUES (0, 0, 0);
\set VERBOSITY terse
INSERT INTO orders (id, k, v, stream_ext_sign) VALUES (0, 0, 0, 2);
\set VERBOSITY default
-- the name is reserved in other streams
SELECT stream_ext.create_stream('cl.bad', 'x int, stream_ext_sign smallint');
SELECT stream_ext.create_stream('cl.bad', 'x int', changelog => NULL);
TRUNCATE orders;

-- the oracle table and its capture
CREATE TABLE src (id int PRIMARY KEY, k int, v int, n numeric, ts timestamptz);
CREATE FUNCTION capture_new() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO cl.orders (id, k, v, n, ts, stream_ext_sign) SELECT id, k, v, n, ts, 1 FROM new_rows;
  RETURN NULL;
END $$;
CREATE FUNCTION capture_old() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO cl.orders (id, k, v, n, ts, stream_ext_sign) SELECT id, k, v, n, ts, -1 FROM old_rows;
  RETURN NULL;
END $$;
CREATE FUNCTION capture_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO cl.orders (id, k, v, n, ts, stream_ext_sign)
    SELECT id, k, v, n, ts, -1 FROM old_rows
    UNION ALL SELECT id, k, v, n, ts, 1 FROM new_rows;
  RETURN NULL;
END $$;
CREATE TRIGGER c_ins AFTER INSERT ON src REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION capture_new();
CREATE TRIGGER c_del AFTER DELETE ON src REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION capture_old();
CREATE TRIGGER c_upd AFTER UPDATE ON src REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION capture_update();

-- the views, and the same queries over the table
CREATE VIEW by_k WITH (continuous) AS
  SELECT k, count(*) AS rows, count(v) AS nv, sum(v) AS sv, avg(v) AS av,
         sum(n) AS sn, avg(n) AS an, sum(v) FILTER (WHERE v > 50) AS big,
         count(*) FILTER (WHERE n IS NULL) AS nulls
    FROM orders GROUP BY k;
CREATE VIEW by_k_having WITH (continuous) AS
  SELECT k % 3 AS k3, sum(v) AS sv FROM orders GROUP BY 1 HAVING count(*) > 40;
CREATE VIEW total WITH (continuous) AS
  SELECT count(*) AS rows, sum(v) AS sv, avg(n) AS an, sum(v::int8) AS sv8 FROM orders;
CREATE VIEW hourly WITH (continuous) AS
  SELECT date_trunc('hour', ts) AS h, count(*) AS rows, sum(v) AS sv FROM orders GROUP BY 1;
CREATE VIEW keys_only WITH (continuous) AS SELECT k FROM orders GROUP BY k;

CREATE VIEW o_by_k AS
  SELECT k, count(*) AS rows, count(v) AS nv, sum(v) AS sv, avg(v) AS av,
         sum(n) AS sn, avg(n) AS an, sum(v) FILTER (WHERE v > 50) AS big,
         count(*) FILTER (WHERE n IS NULL) AS nulls
    FROM src GROUP BY k;
CREATE VIEW o_by_k_having AS
  SELECT k % 3 AS k3, sum(v) AS sv FROM src GROUP BY 1 HAVING count(*) > 40;
CREATE VIEW o_total AS
  SELECT count(*) AS rows, sum(v) AS sv, avg(n) AS an, sum(v::int8) AS sv8 FROM src;
CREATE VIEW o_hourly AS
  SELECT date_trunc('hour', ts) AS h, count(*) AS rows, sum(v) AS sv FROM src GROUP BY 1;
CREATE VIEW o_keys_only AS SELECT k FROM src GROUP BY k;

-- 0 everywhere: each view equals its oracle (both directions of EXCEPT)
CREATE FUNCTION diffs() RETURNS TABLE (view text, differing bigint) LANGUAGE sql AS $$
  SELECT 'by_k', count(*) FROM ((TABLE cl.by_k EXCEPT ALL TABLE cl.o_by_k)
                                UNION ALL (TABLE cl.o_by_k EXCEPT ALL TABLE cl.by_k)) d
  UNION ALL
  SELECT 'by_k_having', count(*) FROM ((TABLE cl.by_k_having EXCEPT ALL TABLE cl.o_by_k_having)
                                UNION ALL (TABLE cl.o_by_k_having EXCEPT ALL TABLE cl.by_k_having)) d
  UNION ALL
  SELECT 'total', count(*) FROM ((TABLE cl.total EXCEPT ALL TABLE cl.o_total)
                                UNION ALL (TABLE cl.o_total EXCEPT ALL TABLE cl.total)) d
  UNION ALL
  SELECT 'hourly', count(*) FROM ((TABLE cl.hourly EXCEPT ALL TABLE cl.o_hourly)
                                UNION ALL (TABLE cl.o_hourly EXCEPT ALL TABLE cl.hourly)) d
  UNION ALL
  SELECT 'keys_only', count(*) FROM ((TABLE cl.keys_only EXCEPT ALL TABLE cl.o_keys_only)
                                UNION ALL (TABLE cl.o_keys_only EXCEPT ALL TABLE cl.keys_only)) d
$$;

-- empty: the keyless view has its one row (0, NULL, ...), like the query
SELECT * FROM total;
SELECT * FROM diffs();

-- batches of 1 .. 10000 rows: inserts, updates (of the key, of values, to
-- and from NULL), deletes
SELECT setseed(0.41);
INSERT INTO src SELECT i, i % 20, (random() * 100)::int,
       CASE WHEN i % 9 = 0 THEN NULL ELSE round((random() * 1000)::numeric, 2) END,
       '2026-01-01'::timestamptz + (i % 50) * interval '17 minutes'
  FROM generate_series(1, 10000) i;
SELECT * FROM diffs();
INSERT INTO src VALUES (10001, 7, NULL, NULL, '2026-01-01 03:00');
UPDATE src SET v = v + 1 WHERE id % 10 = 3;
UPDATE src SET k = k + 1, ts = ts + interval '1 hour' WHERE id % 7 = 0;
UPDATE src SET v = NULL WHERE id % 11 = 0;
UPDATE src SET n = NULL, v = 5 WHERE id = 5;
UPDATE src SET v = 9 WHERE id = 11;
DELETE FROM src WHERE id % 5 = 1;
DELETE FROM src WHERE id = 10001;
SELECT * FROM diffs();

-- a group all of whose rows are deleted disappears; one that comes back
-- starts from zero
DELETE FROM src WHERE k = 3;
SELECT count(*) AS k3_rows FROM by_k WHERE k = 3;
SELECT count(*) AS k3_keys FROM keys_only WHERE k = 3;
INSERT INTO src VALUES (20001, 3, 1, 1.5, '2026-02-01');
SELECT k, rows, nv, sv, av, sn, an FROM by_k WHERE k = 3;
-- all values of a group's sum retracted: NULL, not 0
UPDATE src SET v = NULL WHERE k = 3;
SELECT k, rows, nv, sv, av FROM by_k WHERE k = 3;
SELECT * FROM diffs();

-- compaction folds the deltas; nothing changes
SELECT stream_ext.compact('cl.by_k') >= 0 AS compacted;
SELECT stream_ext.compact('cl.total') >= 0 AS compacted;
SELECT * FROM diffs();

-- rolled back changes leave no trace, also after a savepoint
BEGIN;
DELETE FROM src WHERE k < 10;
UPDATE src SET v = v * 2;
ROLLBACK;
BEGIN;
UPDATE src SET v = 0 WHERE k = 1;
SAVEPOINT s;
DELETE FROM src WHERE k = 2;
ROLLBACK TO SAVEPOINT s;
INSERT INTO src VALUES (30001, 2, 2, 2, '2026-03-01');
COMMIT;
SELECT * FROM diffs();

-- rows one at a time, then everything deleted
DO $$
BEGIN
  FOR i IN 1..200 LOOP
    IF i % 3 = 0 THEN
      DELETE FROM cl.src WHERE id = (SELECT min(id) FROM cl.src WHERE k = i % 20);
    ELSIF i % 3 = 1 THEN
      UPDATE cl.src SET v = v - 1, n = n + 1 WHERE id = (SELECT max(id) FROM cl.src WHERE k = i % 20);
    ELSE
      INSERT INTO cl.src VALUES (40000 + i, i % 25, i, i / 7.0, '2026-01-01'::timestamptz + i * interval '1 minute');
    END IF;
  END LOOP;
END $$;
SELECT * FROM diffs();
SELECT stream_ext.compact('cl.by_k') >= 0 AS compacted;
DELETE FROM src;
SELECT * FROM diffs();
SELECT * FROM total;
SELECT count(*) AS groups FROM by_k;

-- plain INSERT without Kafka: a -1 row retracts
INSERT INTO orders (id, k, v, n) VALUES (1, 100, 10, 1), (2, 100, 20, 2);
INSERT INTO orders (id, k, v, n, stream_ext_sign) VALUES (1, 100, 10, 1, -1);
SELECT k, rows, sv, av FROM by_k WHERE k = 100;

-- aggregates that cannot be retracted are refused at CREATE, by name
CREATE VIEW bad WITH (continuous) AS SELECT k, max(v) FROM orders GROUP BY k;
CREATE VIEW bad WITH (continuous) AS SELECT k, min(ts) FROM orders GROUP BY k;
CREATE VIEW bad WITH (continuous) AS SELECT k, sum(DISTINCT v) FROM orders GROUP BY k;
CREATE VIEW bad WITH (continuous) AS SELECT k, string_agg(v::text, ',') FROM orders GROUP BY k;
CREATE VIEW bad WITH (continuous) AS SELECT k, stddev(v) FROM orders GROUP BY k;
DO $$
BEGIN
  CREATE VIEW cl.bad WITH (continuous) AS SELECT k, max(v) FROM cl.orders GROUP BY k;
EXCEPTION WHEN feature_not_supported THEN
  RAISE NOTICE 'feature_not_supported (%): %', SQLSTATE, SQLERRM;
END $$;
SELECT count(*) AS half_created FROM pg_class WHERE relname LIKE 'bad%' AND relnamespace = 'cl'::regnamespace;

-- what is kept: count(*) and the group count share one state, sum(v)
-- keeps its signed sum and its count of non-NULL values
SELECT a.attname, format_type(a.atttypid, a.atttypmod)
  FROM pg_attribute a JOIN stream_ext.view_catalog c ON a.attrelid = c.matrel
 WHERE c.view = 'cl.hourly'::regclass AND a.attnum > 0 AND NOT a.attisdropped
 ORDER BY a.attnum;

-- the recorded definition is the user's query
SELECT definition FROM stream_ext.view_catalog WHERE view = 'cl.total'::regclass;

DROP SCHEMA cl CASCADE;
