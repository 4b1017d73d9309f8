-- Shared storage: continuous views of one stream with the same owner, FROM,
-- WHERE and GROUP BY keep their states in one materialization and one
-- delta (ddl/shared_storage.c).  Each member equals its query as plain SQL
-- (the W4 mix of aggregates over int and numeric, NULL values and keys)
-- for batches of 1 to 20,000 rows, rolled-back batches and savepoints,
-- before and after compaction; a member added later shows only its own
-- groups; dropping a member or invalidating one leaves the others exact.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;

CREATE ROLE ss_owner;
CREATE SCHEMA ss;
GRANT USAGE, CREATE ON SCHEMA ss TO ss_owner;
SELECT stream_ext.create_stream('ss.ev', 'k int, ts timestamptz, v int, w numeric');
GRANT SELECT (k, ts, v, w) ON ss.ev TO ss_owner;
-- every row committed to the stream, with its order: the oracle's input
CREATE TABLE ss.all_rows (id bigserial, k int, ts timestamptz, v int, w numeric);
GRANT SELECT ON ss.all_rows TO ss_owner;

-- one batch of n rows (one INSERT), the same rows into the oracle's table
CREATE FUNCTION ss.load(n int, seed int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  CREATE TEMP TABLE batch ON COMMIT DROP AS
    SELECT CASE WHEN i % 97 = 0 THEN NULL ELSE (i * 7 + seed) % 13 END AS k,
           timestamptz '2024-01-01 00:00:00+00' + ((i + seed) % 600) * interval '1 s' AS ts,
           CASE WHEN i % 11 = 0 THEN NULL ELSE (i * 31 + seed) % 1000 - 300 END AS v,
           CASE WHEN i % 7 = 0 THEN NULL ELSE ((i * 17 + seed) % 500) / 8.0 END AS w
      FROM generate_series(1, n) i;
  INSERT INTO ss.ev (k, ts, v, w) SELECT k, ts, v, w FROM batch;
  INSERT INTO ss.all_rows (k, ts, v, w) SELECT k, ts, v, w FROM batch;
  DROP TABLE batch;
END $$;

-- the W4 mix: each view a different set of aggregates, all by (k, minute)
SET ROLE ss_owner;
CREATE VIEW ss.v1 WITH (continuous) AS
  SELECT k, date_bin('1 minute', ts, '2000-01-01') AS minute, count(*) AS n, sum(v) AS s
    FROM ss.ev GROUP BY k, minute;
CREATE VIEW ss.v2 WITH (continuous) AS
  SELECT k, date_bin('1 minute', ts, '2000-01-01') AS m, count(*) AS n, avg(v) AS a
    FROM ss.ev GROUP BY 1, 2;
CREATE VIEW ss.v3 WITH (continuous) AS
  SELECT date_bin('1 minute', ts, '2000-01-01') AS minute, k, min(v) AS lo, max(w) AS hw
    FROM ss.ev GROUP BY k, minute;
CREATE VIEW ss.v4 WITH (continuous) AS
  SELECT k, date_bin('1 minute', ts, '2000-01-01') AS minute, sum(w) AS sw, avg(w) AS aw,
         count(v) AS nv, max(v) AS hi
    FROM ss.ev GROUP BY k, minute;
RESET ROLE;

-- each view against its query over the rows committed (0 = equal)
CREATE TABLE ss.oracle (view regclass PRIMARY KEY, query text NOT NULL);
INSERT INTO ss.oracle VALUES
  ('ss.v1', 'SELECT k, date_bin(''1 minute'', ts, ''2000-01-01'') AS minute, count(*) AS n, sum(v) AS s FROM ss.all_rows GROUP BY 1, 2'),
  ('ss.v2', 'SELECT k, date_bin(''1 minute'', ts, ''2000-01-01'') AS m, count(*) AS n, avg(v) AS a FROM ss.all_rows GROUP BY 1, 2'),
  ('ss.v3', 'SELECT date_bin(''1 minute'', ts, ''2000-01-01'') AS minute, k, min(v) AS lo, max(w) AS hw FROM ss.all_rows GROUP BY k, 1'),
  ('ss.v4', 'SELECT k, date_bin(''1 minute'', ts, ''2000-01-01'') AS minute, sum(w) AS sw, avg(w) AS aw, count(v) AS nv, max(v) AS hi FROM ss.all_rows GROUP BY 1, 2');
CREATE FUNCTION ss.check() RETURNS TABLE (view regclass, differing bigint)
LANGUAGE plpgsql AS $$
DECLARE
  o record;
BEGIN
  FOR o IN SELECT * FROM ss.oracle ORDER BY 1 LOOP
    view := o.view;
    EXECUTE format('SELECT count(*) FROM ((TABLE %s EXCEPT ALL %s) UNION ALL (%s EXCEPT ALL TABLE %s)) d',
                   o.view, o.query, o.query, o.view) INTO differing;
    RETURN NEXT;
  END LOOP;
END $$;

-- one storage: one materialization, one delta for the four views, each
-- view its own columns (the first member's unprefixed) and presence state
SELECT count(*) AS storages FROM stream_ext.shared_storage WHERE stream = 'ss.ev'::regclass;
SELECT m.view, m.prefix, m.matrel = s.matrel AS same_matrel
  FROM stream_ext.shared_storage_members m JOIN stream_ext.shared_storage s USING (matrel)
 WHERE s.stream = 'ss.ev'::regclass ORDER BY 2;
SELECT count(DISTINCT matrel) AS matrels, count(DISTINCT delta) AS deltas,
       count(*) FILTER (WHERE compact_sql IS NOT NULL) AS compactions
  FROM stream_ext.view_catalog WHERE stream = 'ss.ev'::regclass;
SELECT attname FROM pg_attribute
 WHERE attrelid = (SELECT matrel FROM stream_ext.shared_storage WHERE stream = 'ss.ev'::regclass)
   AND attnum > 0 ORDER BY attnum;
-- the writer: one statement, one INSERT of one row per group for all
SELECT count(*) FILTER (WHERE line LIKE '%Insert on%') AS inserts,
       count(*) FILTER (WHERE line LIKE '%CTE%') AS ctes
  FROM stream_ext.explain('ss.v3') AS line;

-- batches of 1 to 20,000 rows, NULL keys and values
SELECT ss.load(1, 1);
SELECT * FROM ss.check();
SELECT ss.load(7, 2);
SELECT ss.load(100, 3);
SELECT ss.load(1000, 4);
SELECT ss.load(20000, 5);
SELECT * FROM ss.check();
-- one row per group for all four views
SELECT (SELECT count(*) FROM ss.v1_delta) =
       (SELECT count(DISTINCT (k, date_bin('1 minute', ts, '2000-01-01'), b))
          FROM (SELECT *, CASE WHEN id = 1 THEN 1 WHEN id <= 8 THEN 2 WHEN id <= 108 THEN 3
                               WHEN id <= 1108 THEN 4 ELSE 5 END AS b FROM ss.all_rows) r)
       AS one_row_per_group_and_batch;

-- rolled back, and savepoints
BEGIN;
SELECT ss.load(500, 6);
ROLLBACK;
BEGIN;
SELECT ss.load(50, 7);
SAVEPOINT a;
SELECT ss.load(300, 8);
ROLLBACK TO a;
SELECT ss.load(30, 9);
COMMIT;
SELECT * FROM ss.check();

-- compaction: once for the storage, whichever member is named
SELECT stream_ext.compact('ss.v3') > 0 AS folded;
SELECT count(*) AS delta_rows FROM ss.v1_delta;
SELECT stream_ext.compact('ss.v1') AS nothing_left;
SELECT * FROM ss.check();
SELECT ss.load(2000, 10);
SELECT * FROM ss.check();

-- a member added later, after retention removed the oldest rows: it
-- backfills from the rows the stream holds and shows only its own groups
-- (not those of the older members' states, k = 98 and 99)
INSERT INTO ss.ev (k, ts, v, w, arrival_timestamp)
  VALUES (99, '2023-01-01', 1, 1, now() - interval '1 year'),
         (98, '2023-01-01', 2, 2, now() - interval '1 year');
INSERT INTO ss.all_rows (k, ts, v, w) VALUES (99, '2023-01-01', 1, 1), (98, '2023-01-01', 2, 2);
SELECT stream_ext.set_retention('ss.ev', '1 day');
SELECT task, removed FROM stream_ext.run_maintenance() WHERE object = 'ss.ev'::regclass;
SET ROLE ss_owner;
CREATE VIEW ss.v5 WITH (continuous) AS
  SELECT k, date_bin('1 minute', ts, '2000-01-01') AS minute, count(*) AS n, min(v) AS lo, max(v) AS hi
    FROM ss.ev GROUP BY k, minute;
RESET ROLE;
INSERT INTO ss.oracle VALUES
  ('ss.v5', 'SELECT k, date_bin(''1 minute'', ts, ''2000-01-01'') AS minute, count(*) AS n, min(v) AS lo, max(v) AS hi FROM ss.ev GROUP BY 1, 2');
SELECT count(*) AS old_groups_in_v1 FROM ss.v1 WHERE k IN (98, 99);
SELECT count(*) AS old_groups_in_v5 FROM ss.v5 WHERE k IN (98, 99);
SELECT view, prefix FROM stream_ext.shared_storage_members
 WHERE view::text LIKE 'ss.%' ORDER BY 2;
SELECT * FROM ss.check();

-- a member without backfill: only the batches after it
SELECT max(id) AS mark FROM ss.all_rows \gset
SET ROLE ss_owner;
CREATE VIEW ss.v6 WITH (continuous, backfill = 'none') AS
  SELECT k, date_bin('1 minute', ts, '2000-01-01') AS minute, sum(v) AS s, min(v) AS lo
    FROM ss.ev GROUP BY k, minute;
RESET ROLE;
INSERT INTO ss.oracle VALUES
  ('ss.v6', format('SELECT k, date_bin(''1 minute'', ts, ''2000-01-01'') AS minute, sum(v) AS s, min(v) AS lo FROM ss.all_rows WHERE id > %s GROUP BY 1, 2', :mark));
SELECT count(*) AS v6_groups FROM ss.v6;
SELECT ss.load(300, 11);
SELECT ss.load(1, 12);
SELECT * FROM ss.check();
SELECT stream_ext.compact('ss.v6') > 0 AS folded;
SELECT * FROM ss.check();
SELECT stream_ext.view_groups('ss.v6') = (SELECT count(*) FROM ss.v6) AS v6_groups_counted,
       stream_ext.view_groups('ss.v1') = (SELECT count(*) FROM ss.v1) AS v1_groups_counted;

-- a member whose owner lost a privilege is invalidated alone: v3 and v4
-- read w, the others go on
REVOKE SELECT (w) ON ss.ev FROM ss_owner;
GRANT SELECT (k, ts, v) ON ss.ev TO ss_owner;
SELECT ss.load(200, 13);
SELECT object, kind FROM stream_ext.invalid_objects WHERE object::text LIKE 'ss.%' ORDER BY 1;
SELECT count(*) FROM ss.v3;
DELETE FROM ss.oracle WHERE view IN ('ss.v3'::regclass, 'ss.v4'::regclass);
SELECT ss.load(100, 14);
SELECT * FROM ss.check();
SELECT stream_ext.compact('ss.v2') > 0 AS folded;
SELECT * FROM ss.check();

-- DROP of the first member (the one recording the storage's compaction):
-- its columns stay, the compaction moves to the oldest member left
DELETE FROM ss.oracle WHERE view = 'ss.v1'::regclass;
DROP VIEW ss.v1;
SELECT view FROM stream_ext.view_catalog
 WHERE stream = 'ss.ev'::regclass AND compact_sql IS NOT NULL;
SELECT count(*) AS v1_columns_left FROM pg_attribute
 WHERE attrelid = 'ss.v1_mrel'::regclass AND attname IN ('state_count_1', 'state_sum_2');
SELECT ss.load(500, 15);
SELECT * FROM ss.check();
SELECT stream_ext.compact('ss.v5') > 0 AS folded;
SELECT * FROM ss.check();

-- stream_ext.share_storage = off: a view of its own tables
SET ROLE ss_owner;
SET stream_ext.share_storage = off;
CREATE VIEW ss.v7 WITH (continuous) AS
  SELECT k, date_bin('1 minute', ts, '2000-01-01') AS minute, count(*) AS n
    FROM ss.ev GROUP BY k, minute;
RESET stream_ext.share_storage;
RESET ROLE;
SELECT matrel, delta FROM stream_ext.view_catalog WHERE view = 'ss.v7'::regclass;
SELECT count(*) AS v7_members FROM stream_ext.shared_storage_members WHERE view = 'ss.v7'::regclass;

-- a view made with another delta index (hash, off) keeps the delta it asked
-- for: it neither joins a storage nor is joined by a view made later
SET ROLE ss_owner;
SET stream_ext.delta_key_index = hash;
CREATE VIEW ss.v8 WITH (continuous) AS
  SELECT k, date_bin('1 minute', ts, '2000-01-01') AS minute, max(v) AS mx
    FROM ss.ev GROUP BY k, minute;
SET stream_ext.delta_key_index = off;
CREATE VIEW ss.v9 WITH (continuous) AS
  SELECT k, date_bin('1 minute', ts, '2000-01-01') AS minute, min(v) AS mn
    FROM ss.ev GROUP BY k, minute;
RESET stream_ext.delta_key_index;
RESET ROLE;
SELECT view, matrel, delta FROM stream_ext.view_catalog
 WHERE view IN ('ss.v8'::regclass, 'ss.v9'::regclass) ORDER BY 1;
SELECT count(*) AS v8_v9_members FROM stream_ext.shared_storage_members
 WHERE view IN ('ss.v8'::regclass, 'ss.v9'::regclass);
SELECT i.relname, am.amname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
  JOIN pg_am am ON am.oid = i.relam
 WHERE x.indrelid IN ('ss.v8_delta'::regclass, 'ss.v9_delta'::regclass) ORDER BY 1;
DROP VIEW ss.v8, ss.v9;

-- the last member takes the tables along
DROP VIEW ss.v2, ss.v3, ss.v4, ss.v5;
SELECT count(*) AS storages FROM stream_ext.shared_storage WHERE stream = 'ss.ev'::regclass;
DROP VIEW ss.v6;
SELECT count(*) AS storages FROM stream_ext.shared_storage WHERE stream = 'ss.ev'::regclass;
SELECT count(*) AS members FROM stream_ext.shared_storage_members WHERE view::text LIKE 'ss.%';
SELECT to_regclass('ss.v1_mrel') AS matrel, to_regclass('ss.v1_delta') AS delta;

DROP SCHEMA ss CASCADE;
DROP ROLE ss_owner;
