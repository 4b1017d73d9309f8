-- Continuous transforms: continuous views without aggregates.  Into an
-- output stream they chain (stream -> transform -> stream -> view); without
-- one their rows go to an append-only table.  notify = 'channel' sends one
-- NOTIFY per maintained batch.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;

SELECT stream_ext.create_stream('tr_clicks', 'url text, country text, user_id int');
SELECT stream_ext.create_stream('tr_clean', 'url text, country text, user_id bigint');
CREATE VIEW tr_clean_t WITH (continuous, output_stream = 'tr_clean') AS
  SELECT url, lower(country) AS country, user_id FROM tr_clicks
   WHERE url IS NOT NULL;
CREATE VIEW tr_per_country WITH (continuous) AS
  SELECT country, count(*) AS n, count(user_id) AS users, sum(user_id) AS s
    FROM tr_clean GROUP BY country;
-- the same filter into a table
CREATE VIEW tr_kept WITH (continuous) AS
  SELECT url, upper(country) AS country FROM tr_clicks WHERE user_id % 3 = 0;

SELECT name, source, output_stream, output_table IS NOT NULL AS has_table, notify
  FROM stream_ext.transforms ORDER BY name::text;

-- a plain table receives every row, for the oracle
CREATE TABLE tr_all (url text, country text, user_id int);
CREATE FUNCTION pg_temp.ins(n int, seed int) RETURNS void LANGUAGE sql AS $$
  INSERT INTO tr_clicks
    SELECT CASE WHEN i % 11 = 0 THEN NULL ELSE 'u' || (i % 5) END,
           CASE WHEN i % 7 = 0 THEN NULL WHEN i % 2 = 0 THEN 'DE' ELSE 'Fr' END,
           CASE WHEN i % 13 = 0 THEN NULL ELSE i + seed END
      FROM generate_series(1, n) i;
  INSERT INTO tr_all
    SELECT CASE WHEN i % 11 = 0 THEN NULL ELSE 'u' || (i % 5) END,
           CASE WHEN i % 7 = 0 THEN NULL WHEN i % 2 = 0 THEN 'DE' ELSE 'Fr' END,
           CASE WHEN i % 13 = 0 THEN NULL ELSE i + seed END
      FROM generate_series(1, n) i;
$$;
SELECT pg_temp.ins(1, 0);
SELECT pg_temp.ins(10000, 100);
BEGIN;
SELECT pg_temp.ins(500, 7);
ROLLBACK;
BEGIN;
SELECT pg_temp.ins(3, 1);
SAVEPOINT a;
SELECT pg_temp.ins(50, 2);
ROLLBACK TO a;
SELECT pg_temp.ins(4, 3);
COMMIT;

-- the chain equals plain SQL over the same rows (both lists empty)
CREATE TEMP TABLE expect AS
  SELECT lower(country) AS country, count(*) AS n, count(user_id) AS users, sum(user_id) AS s
    FROM tr_all WHERE url IS NOT NULL GROUP BY 1;
(SELECT * FROM tr_per_country EXCEPT SELECT * FROM expect)
UNION ALL (SELECT * FROM expect EXCEPT SELECT * FROM tr_per_country);
SELECT (SELECT count(*) FROM tr_clean) AS clean_rows,
       (SELECT count(*) FROM tr_all WHERE url IS NOT NULL) AS expected;
-- the table transform holds exactly the query's rows (a multiset: EXCEPT ALL)
(SELECT * FROM tr_kept EXCEPT ALL
 SELECT url, upper(country) FROM tr_all WHERE user_id % 3 = 0)
UNION ALL
(SELECT url, upper(country) FROM tr_all WHERE user_id % 3 = 0
 EXCEPT ALL SELECT * FROM tr_kept);
SELECT count(*) AS kept FROM tr_kept;
-- a transform with output_stream reads nothing itself
SELECT count(*) FROM tr_clean_t;
SELECT name, rows_in, batches, rows_out FROM stream_ext.transforms ORDER BY name::text;

-- a table transform starts from the rows the stream holds, like a view
CREATE VIEW tr_late WITH (continuous) AS SELECT user_id FROM tr_clicks WHERE user_id < 5;
SELECT * FROM tr_late ORDER BY 1;

-- its table is append-only: only maintenance writes it
SELECT output_table AS late_table FROM stream_ext.transform_catalog
 WHERE transform = 'tr_late'::regclass \gset
DELETE FROM :late_table;
ALTER VIEW tr_late RENAME TO tr_late2;
ALTER VIEW tr_late SET (security_barrier = true);
ALTER VIEW tr_late RENAME COLUMN user_id TO uid;

-- bad input: errors at CREATE time, nothing half-created
CREATE TABLE tr_plain (url text);
SELECT stream_ext.create_stream('tr_strict', 'url text NOT NULL, n int NOT NULL, note text');
SELECT stream_ext.create_stream('tr_ok', 'url text');
SELECT count(*) AS relations_before FROM pg_class \gset
CREATE VIEW tr_bad WITH (continuous, output_stream = 'tr_clean') AS
  SELECT url, country AS land FROM tr_clicks;
CREATE VIEW tr_bad WITH (continuous, output_stream = 'tr_clean') AS
  SELECT url, user_id > 3 AS user_id FROM tr_clicks;
CREATE VIEW tr_bad WITH (continuous, output_stream = 'tr_strict') AS
  SELECT url FROM tr_clicks;
CREATE VIEW tr_bad WITH (continuous, output_stream = 'tr_plain') AS
  SELECT url FROM tr_clicks;
CREATE VIEW tr_bad WITH (continuous, output_stream = 'tr_nowhere') AS
  SELECT url FROM tr_clicks;
CREATE VIEW tr_bad WITH (continuous, output_stream = 'tr_clicks') AS
  SELECT url, country, user_id FROM tr_clicks;
-- tr_clicks -> tr_clean_t -> tr_clean; tr_clean back into tr_clicks is a cycle
CREATE VIEW tr_bad WITH (continuous, output_stream = 'tr_clicks') AS
  SELECT url, country FROM tr_clean;
CREATE VIEW tr_bad WITH (continuous, output_stream = 'tr_clean') AS
  SELECT url, url AS url FROM tr_clicks;
CREATE VIEW tr_bad WITH (continuous, output_stream = 'tr_clean') AS
  SELECT country, count(*) FROM tr_clicks GROUP BY country;
CREATE VIEW tr_bad WITH (continuous) AS
  SELECT url, random() AS r FROM tr_clicks;
CREATE VIEW tr_bad WITH (continuous, notify = '') AS SELECT url FROM tr_clicks;
CREATE VIEW tr_bad WITH (continuous, colour = 'red') AS SELECT url FROM tr_clicks;
SELECT count(*) - :relations_before AS new_relations FROM pg_class;
DROP TABLE tr_plain;

-- the output stream's columns are in use
ALTER TABLE tr_clean DROP COLUMN user_id;
ALTER TABLE tr_clean RENAME COLUMN country TO land;

-- NOTIFY: the option is recorded (test/isolation/specs/transform_notify.spec
-- checks the notifications themselves)
CREATE VIEW tr_n_agg WITH (continuous, notify = 'tr_channel') AS
  SELECT url, count(*) FROM tr_clicks GROUP BY url;
CREATE VIEW tr_n_tr WITH (continuous, notify = true, output_stream = 'tr_ok') AS
  SELECT url FROM tr_clicks WHERE url = 'u1';
SELECT view, notify FROM stream_ext.view_catalog WHERE view = 'tr_n_agg'::regclass;
SELECT name, notify FROM stream_ext.transforms WHERE name = 'tr_n_tr'::regclass;
CREATE VIEW tr_n_off WITH (continuous, notify = off) AS SELECT url FROM tr_clicks;
SELECT name, notify FROM stream_ext.transforms WHERE name = 'tr_n_off'::regclass;
INSERT INTO tr_clicks VALUES ('u1', 'DE', 1), ('u2', 'DE', 2), ('u1', 'FR', 3);
SELECT * FROM tr_n_agg ORDER BY url;
SELECT url, arrival_timestamp IS NOT NULL AS has_arrival FROM tr_ok;

-- privileges: reading the source is not enough, the owner needs INSERT on
-- the output stream; and no one can run a transform from a trigger on
-- another table (it would forge rows into the output stream)
CREATE ROLE tr_user;
GRANT SELECT ON tr_clicks TO tr_user;
GRANT CREATE ON SCHEMA public TO tr_user;
SET ROLE tr_user;
CREATE VIEW tr_user_t WITH (continuous, output_stream = 'tr_ok') AS
  SELECT url FROM tr_clicks;
CREATE TABLE tr_fake (url text);
CREATE TRIGGER forge AFTER INSERT ON tr_fake REFERENCING NEW TABLE AS stream_ext_new
  FOR EACH STATEMENT EXECUTE FUNCTION stream_ext.transform('public.tr_n_tr');
INSERT INTO tr_fake VALUES ('forged');
DROP TABLE tr_fake;
RESET ROLE;
GRANT INSERT ON tr_ok TO tr_user;
SET ROLE tr_user;
CREATE VIEW tr_user_t WITH (continuous, output_stream = 'tr_ok') AS
  SELECT url FROM tr_clicks WHERE url = 'u9';
RESET ROLE;
INSERT INTO tr_clicks VALUES ('u9', 'DE', 1);
SELECT url FROM tr_ok ORDER BY url;
DROP VIEW tr_user_t;
REVOKE ALL ON tr_clicks, tr_ok FROM tr_user;
REVOKE CREATE ON SCHEMA public FROM tr_user;
DROP ROLE tr_user;

-- DROP: a transform goes alone; the output stream needs CASCADE
DROP VIEW tr_n_tr;
DROP TABLE tr_clean;
DROP TABLE tr_clean CASCADE;
SELECT name FROM stream_ext.transforms ORDER BY name::text;
DROP TABLE tr_clicks CASCADE;
SELECT count(*) FROM stream_ext.transform_catalog;
