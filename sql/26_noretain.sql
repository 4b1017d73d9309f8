-- Non-retaining streams: create_stream(..., retain => false).  The stream
-- stores no rows (access method stream_ext_discard); its continuous views,
-- transforms and sinks see every row all the same.  Oracle: views over a
-- non-retaining stream equal the same views over a retaining copy fed the
-- same batches, and plain SQL over that copy.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;

-- the example of docs/continuous-views.md
SELECT stream_ext.create_stream('nr_clicks', 'url text, user_id int', retain => false);
CREATE VIEW nr_clicks_per_url WITH (continuous) AS
  SELECT url, count(*) AS hits, count(DISTINCT user_id) AS users
    FROM nr_clicks GROUP BY url;
INSERT INTO nr_clicks VALUES ('/a', 1), ('/a', 2), ('/b', 1), ('/a', 1);
SELECT * FROM nr_clicks_per_url ORDER BY url;
SELECT count(*) FROM nr_clicks;            -- nothing stored
SELECT name, retention, retain FROM stream_ext.streams WHERE name = 'nr_clicks'::regclass;
SELECT a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.oid = 'nr_clicks'::regclass;
-- a view created later starts empty: there is nothing to backfill
CREATE VIEW nr_clicks_total WITH (continuous) AS SELECT count(*) AS n FROM nr_clicks;
SELECT n FROM nr_clicks_total;
INSERT INTO nr_clicks VALUES ('/c', 3);
SELECT n FROM nr_clicks_total;
SELECT * FROM nr_clicks_per_url ORDER BY url;

-- the old two-argument call still works, and keeps rows; NULL is refused
SELECT stream_ext.create_stream('nr_kept', 'v int');
SELECT retain, retention FROM stream_ext.stream_catalog WHERE stream = 'nr_kept'::regclass;
SELECT stream_ext.create_stream('nr_null', 'v int', retain => NULL);
-- streams name their access method: default_table_access_method is not used
SET default_table_access_method = stream_ext_discard;
SELECT stream_ext.create_stream('nr_heap', 'v int');
-- nor by the tables of views and transforms: they keep their rows
CREATE VIEW nr_heap_sum WITH (continuous) AS SELECT v, count(*) AS n FROM nr_heap GROUP BY v;
CREATE VIEW nr_heap_copy WITH (continuous) AS SELECT v FROM nr_heap;
INSERT INTO nr_heap VALUES (1), (1), (2);
RESET default_table_access_method;
SELECT a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.oid = 'nr_heap'::regclass;
SELECT * FROM nr_heap_sum ORDER BY v;
SELECT * FROM nr_heap_copy ORDER BY v;
DROP TABLE nr_kept, nr_heap CASCADE;

-- ---- oracle ------------------------------------------------------------------
SELECT stream_ext.create_stream('nr_ev', 'k int, g text, v int, ts timestamptz', retain => false);
SELECT stream_ext.create_stream('rt_ev', 'k int, g text, v int, ts timestamptz');
CREATE VIEW nr_by_k WITH (continuous) AS
  SELECT k, g, count(*) AS n, count(v) AS nv, sum(v) AS s, avg(v) AS a,
         min(v) AS lo, max(v) AS hi, count(DISTINCT v) AS nd
    FROM nr_ev GROUP BY k, g;
CREATE VIEW rt_by_k WITH (continuous) AS
  SELECT k, g, count(*) AS n, count(v) AS nv, sum(v) AS s, avg(v) AS a,
         min(v) AS lo, max(v) AS hi, count(DISTINCT v) AS nd
    FROM rt_ev GROUP BY k, g;
CREATE VIEW nr_by_min WITH (continuous) AS
  SELECT date_bin('1 minute', ts, '2000-01-01') AS minute, count(*) AS n, sum(v) AS s
    FROM nr_ev WHERE v IS NULL OR v % 3 <> 0 GROUP BY minute;
CREATE VIEW rt_by_min WITH (continuous) AS
  SELECT date_bin('1 minute', ts, '2000-01-01') AS minute, count(*) AS n, sum(v) AS s
    FROM rt_ev WHERE v IS NULL OR v % 3 <> 0 GROUP BY minute;
CREATE VIEW nr_all WITH (continuous) AS SELECT count(*) AS n, sum(v) AS s, max(ts) AS last FROM nr_ev;

-- The same batch into both streams: one INSERT statement (one batch) each.
CREATE FUNCTION nr_rows(lo int, n int) RETURNS TABLE (k int, g text, v int, ts timestamptz)
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN i % 11 = 0 THEN NULL ELSE i % 7 END,
         CASE WHEN i % 13 = 0 THEN NULL ELSE 'g' || (i % 3) END,
         CASE WHEN i % 5 = 0 THEN NULL ELSE (i * 37) % 101 END,
         timestamptz '2024-01-01 00:00:00+00' + i * interval '1 second'
    FROM generate_series(lo, lo + n - 1) i
$$;
CREATE FUNCTION nr_batch(lo int, n int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO nr_ev (k, g, v, ts) SELECT * FROM nr_rows(lo, n);
  INSERT INTO rt_ev (k, g, v, ts) SELECT * FROM nr_rows(lo, n);
END $$;
SELECT nr_batch(1, 1);
SELECT nr_batch(2, 2);
SELECT nr_batch(4, 10);
SELECT nr_batch(14, 100);
SELECT nr_batch(114, 1000);
SELECT nr_batch(1114, 10000);
-- batches of 1..50 rows in one transaction
DO $$ BEGIN FOR n IN 1 .. 50 LOOP PERFORM nr_batch(20000 + n * 100, n); END LOOP; END $$;
-- a rolled-back batch, and a batch rolled back to a savepoint, change nothing
BEGIN;
SELECT nr_batch(30000, 500);
ROLLBACK;
BEGIN;
SELECT nr_batch(31000, 5);
SAVEPOINT sp;
SELECT nr_batch(32000, 700);
ROLLBACK TO SAVEPOINT sp;
COMMIT;
-- COPY (multi-insert), 10,000 rows, NULLs as empty fields
COPY nr_ev (k, g, v, ts) FROM PROGRAM 'awk ''BEGIN { for (i = 1; i <= 10000; i++) printf "%s,%s,%s,2024-01-02 00:00:%02d+00\n", (i % 9 ? i % 9 : ""), "g" i % 4, (i % 6 ? i % 50 : ""), i % 60 }''' (FORMAT csv);
COPY rt_ev (k, g, v, ts) FROM PROGRAM 'awk ''BEGIN { for (i = 1; i <= 10000; i++) printf "%s,%s,%s,2024-01-02 00:00:%02d+00\n", (i % 9 ? i % 9 : ""), "g" i % 4, (i % 6 ? i % 50 : ""), i % 60 }''' (FORMAT csv);

SELECT count(*) AS stored_nr, (SELECT count(*) FROM rt_ev) AS stored_rt FROM nr_ev;
-- view over the non-retaining stream = view over the retaining copy
SELECT count(*) AS differing FROM (
  (TABLE nr_by_k EXCEPT ALL TABLE rt_by_k) UNION ALL (TABLE rt_by_k EXCEPT ALL TABLE nr_by_k)) d;
SELECT count(*) AS differing FROM (
  (TABLE nr_by_min EXCEPT ALL TABLE rt_by_min) UNION ALL (TABLE rt_by_min EXCEPT ALL TABLE nr_by_min)) d;
-- = plain SQL over the retaining copy
SELECT count(*) AS differing FROM (
  (TABLE nr_by_k EXCEPT ALL
   SELECT k, g, count(*), count(v), sum(v), avg(v), min(v), max(v), count(DISTINCT v)
     FROM rt_ev GROUP BY k, g)
  UNION ALL
  (SELECT k, g, count(*), count(v), sum(v), avg(v), min(v), max(v), count(DISTINCT v)
     FROM rt_ev GROUP BY k, g
   EXCEPT ALL TABLE nr_by_k)) d;
SELECT (SELECT n FROM nr_all) = (SELECT count(*) FROM rt_ev) AS n_ok,
       (SELECT s FROM nr_all) = (SELECT sum(v) FROM rt_ev) AS s_ok,
       (SELECT last FROM nr_all) = (SELECT max(ts) FROM rt_ev) AS last_ok;
SELECT count(*) AS groups FROM nr_by_k;

-- ---- transforms and sinks ----------------------------------------------------
-- a transform writing into a non-retaining stream, and a view on that stream
SELECT stream_ext.create_stream('nr_clean', 'k int, v int', retain => false);
CREATE VIEW nr_clean_t WITH (continuous, output_stream = 'nr_clean') AS
  SELECT k, v FROM rt_ev WHERE v IS NOT NULL;
CREATE VIEW nr_clean_sum WITH (continuous) AS
  SELECT k, count(*) AS n, sum(v) AS s FROM nr_clean GROUP BY k;
-- a transform out of a non-retaining stream, into a table
CREATE VIEW nr_big WITH (continuous) AS SELECT k, v FROM nr_ev WHERE v > 95;
SELECT nr_batch(40000, 3000);
SELECT count(*) AS stored FROM nr_clean;
SELECT count(*) AS differing FROM (
  (TABLE nr_clean_sum EXCEPT ALL
   SELECT k, count(*), sum(v) FROM rt_ev WHERE v IS NOT NULL AND ts >= '2024-01-01 00:00:00+00'::timestamptz + 40000 * interval '1 second' AND ts < '2024-01-01 00:00:00+00'::timestamptz + 43000 * interval '1 second' GROUP BY k)
  UNION ALL
  (SELECT k, count(*), sum(v) FROM rt_ev WHERE v IS NOT NULL AND ts >= '2024-01-01 00:00:00+00'::timestamptz + 40000 * interval '1 second' AND ts < '2024-01-01 00:00:00+00'::timestamptz + 43000 * interval '1 second' GROUP BY k
   EXCEPT ALL TABLE nr_clean_sum)) d;
SELECT count(*) AS differing FROM (
  (TABLE nr_big EXCEPT ALL
   SELECT k, v FROM rt_ev WHERE v > 95 AND ts >= '2024-01-01 00:00:00+00'::timestamptz + 40000 * interval '1 second' AND ts < '2024-01-01 00:00:00+00'::timestamptz + 43000 * interval '1 second')
  UNION ALL
  (SELECT k, v FROM rt_ev WHERE v > 95 AND ts >= '2024-01-01 00:00:00+00'::timestamptz + 40000 * interval '1 second' AND ts < '2024-01-01 00:00:00+00'::timestamptz + 43000 * interval '1 second'
   EXCEPT ALL TABLE nr_big)) d;
-- a Kafka sink queues every row of a non-retaining stream
SELECT stream_ext.create_kafka_sink('nr_sink', 'nr_clicks', 'localhost:9', 'out', 'json', 'url',
                                    '{"columns": ["url", "user_id"]}');
INSERT INTO nr_clicks VALUES ('/s', 7), ('/s', 8);
SELECT q.payload FROM stream_ext.sink_queue q JOIN stream_ext.kafka_sinks s ON s.id = q.sink
 WHERE s.name = 'nr_sink' ORDER BY q.payload;
SELECT stream_ext.drop_sink('nr_sink');
-- INSERT ... RETURNING returns the rows, though they are not stored
INSERT INTO nr_clicks VALUES ('/r', 9) RETURNING url, user_id, tableoid::regclass;

-- ---- what reads stored rows --------------------------------------------------
-- no retention: run_maintenance() has nothing to do for it, set_retention refuses
SELECT task, object::text FROM stream_ext.run_maintenance() WHERE object::text LIKE 'nr\_%';
SELECT stream_ext.set_retention('nr_ev', '1 day');
SELECT stream_ext.set_retention('nr_ev', NULL);
SELECT count(*) > 1 AS has_plan FROM stream_ext.explain('nr_by_k');
SELECT rows_in FROM stream_ext.view_stats WHERE view = 'nr_all'::regclass;
SELECT pg_relation_size('nr_ev') AS bytes;
SELECT rows_inserted, rows_stored, bytes FROM stream_ext.stream_stats WHERE stream = 'nr_ev'::regclass;
TRUNCATE nr_ev;
VACUUM nr_ev;
VACUUM FULL nr_ev;
ANALYZE nr_ev;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET force_parallel_mode = on;
SELECT count(*) FROM nr_ev;
RESET force_parallel_mode;
RESET min_parallel_table_scan_size;
RESET parallel_tuple_cost;
RESET parallel_setup_cost;
SELECT * FROM nr_ev TABLESAMPLE SYSTEM (100);
SELECT * FROM nr_ev WHERE ctid = '(0,1)';
SELECT * FROM nr_ev WHERE ctid >= '(0,1)';

-- ---- refused -----------------------------------------------------------------
UPDATE nr_ev SET v = 0;
DELETE FROM nr_ev;
CREATE INDEX ON nr_ev (k);
ALTER TABLE nr_ev SET ACCESS METHOD heap;
-- row-level AFTER triggers would read the row back: refused at insert
CREATE FUNCTION nr_row_trg() RETURNS trigger LANGUAGE plpgsql AS
  $$ BEGIN RAISE NOTICE 'row %', NEW.k; RETURN NEW; END $$;
CREATE TRIGGER nr_after AFTER INSERT ON nr_ev FOR EACH ROW EXECUTE FUNCTION nr_row_trg();
INSERT INTO nr_ev (k) VALUES (1);
COPY nr_ev (k) FROM STDIN;
1
\.
DROP TRIGGER nr_after ON nr_ev;
-- BEFORE ROW triggers see (and may change or skip) each row
CREATE TRIGGER nr_before BEFORE INSERT ON nr_ev FOR EACH ROW EXECUTE FUNCTION nr_row_trg();
INSERT INTO nr_ev (k, v) VALUES (42, 1);
DROP TRIGGER nr_before ON nr_ev;
-- a foreign key is a row-level AFTER trigger too
CREATE TABLE nr_keys (k int PRIMARY KEY);
INSERT INTO nr_keys VALUES (1);
ALTER TABLE nr_ev ADD FOREIGN KEY (k) REFERENCES nr_keys;
INSERT INTO nr_ev (k) VALUES (1);
ALTER TABLE nr_ev DROP CONSTRAINT nr_ev_k_fkey;
INSERT INTO nr_ev (k) VALUES (1);

-- ---- the access method used directly, by any role ---------------------------
CREATE ROLE se_discard_user;
GRANT CREATE ON SCHEMA public TO se_discard_user;
SELECT has_function_privilege('se_discard_user', 'stream_ext.discard_am_handler(internal)', 'EXECUTE') AS may_call_handler;
SET ROLE se_discard_user;
CREATE TABLE nr_own (id int, t text) USING stream_ext_discard;
INSERT INTO nr_own SELECT i, repeat('x', 10000) FROM generate_series(1, 100) i;
SELECT count(*) FROM nr_own;
UPDATE nr_own SET t = 'y';
DELETE FROM nr_own;
INSERT INTO nr_own VALUES (1, 'a') ON CONFLICT DO NOTHING;
ALTER TABLE nr_own ADD PRIMARY KEY (id);
VACUUM FULL nr_own;
ANALYZE nr_own;
TRUNCATE nr_own;
CREATE TABLE nr_own_ctas USING stream_ext_discard AS SELECT i FROM generate_series(1, 10) i;
SELECT count(*) FROM nr_own_ctas;
CREATE TEMP TABLE nr_own_temp (i int) USING stream_ext_discard;
INSERT INTO nr_own_temp VALUES (1);
SELECT count(*) FROM nr_own_temp;
CREATE MATERIALIZED VIEW nr_own_mv USING stream_ext_discard AS SELECT 1 AS one;
REFRESH MATERIALIZED VIEW nr_own_mv;
SELECT count(*) FROM nr_own_mv;
-- the owner may turn it into a heap table (empty) and back
ALTER TABLE nr_own SET ACCESS METHOD heap;
INSERT INTO nr_own VALUES (1, 'kept');
SELECT count(*) FROM nr_own;
ALTER TABLE nr_own SET ACCESS METHOD stream_ext_discard;
SELECT count(*) FROM nr_own;
-- but not another role's table
RESET ROLE;
CREATE TABLE nr_theirs (i int);
INSERT INTO nr_theirs VALUES (1);
SET ROLE se_discard_user;
ALTER TABLE nr_theirs SET ACCESS METHOD stream_ext_discard;
RESET ROLE;
SELECT count(*) FROM nr_theirs;
DROP TABLE nr_theirs, nr_keys;
DROP OWNED BY se_discard_user;
DROP ROLE se_discard_user;

SET client_min_messages = warning;
DROP TABLE nr_clicks, nr_ev, rt_ev, nr_clean CASCADE;
RESET client_min_messages;
DROP FUNCTION nr_batch(int, int);
DROP FUNCTION nr_rows(int, int);
DROP FUNCTION nr_row_trg();
SELECT count(*) AS left_over FROM stream_ext.stream_catalog WHERE stream::text LIKE 'nr\_%';
