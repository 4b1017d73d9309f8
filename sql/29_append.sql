-- Append mode (docs/internals.md, "Append mode"): batches append their
-- partial states to the view's delta, the view reads materialization (+)
-- delta merged per group, stream_ext.compact() and the writer's
-- backpressure fold the delta into the materialization.  Every view equals
-- its query over a logged copy of the rows before and after compaction.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
SET client_min_messages = warning;
CREATE SCHEMA ap;
SET search_path = ap, public;
SET stream_ext.compact_threshold = -1;   -- no compaction unless asked

SELECT stream_ext.create_stream('ap.ev', 'k int, g text, v int, ts timestamptz');
CREATE TABLE ev_log (k int, g text, v int, ts timestamptz);

CREATE TABLE shapes (name text PRIMARY KEY, query text NOT NULL);
INSERT INTO shapes VALUES
 ('ap_int', 'SELECT k, count(*) AS n, sum(v) AS s, avg(v) AS a, max(ts) AS last FROM {src} GROUP BY k'),
 ('ap_two', 'SELECT k, g, count(*) AS n, min(v) AS lo FROM {src} GROUP BY k, g'),
 ('ap_text', 'SELECT g, count(*) AS n, sum(v) AS s FROM {src} GROUP BY g'),
 ('ap_total', 'SELECT count(*) AS n, sum(v) AS s, count(DISTINCT k) AS dk FROM {src}'),
 ('ap_tumble', 'SELECT stream_ext.tumble(ts, ''10 minutes'') AS w, k % 3 AS b, count(*) AS n FROM {src} GROUP BY 1, 2'),
 ('ap_distinct', 'SELECT k % 4 AS b, count(*) AS n, count(DISTINCT v) AS dv FROM {src} GROUP BY 1'),
 ('ap_keys_only', 'SELECT k % 5 AS b, g FROM {src} GROUP BY 1, 2'),
 ('ap_having', 'SELECT g, sum(v) AS s FROM {src} GROUP BY g HAVING count(*) > 3'),
 ('ap_hop', 'SELECT w.window_start, count(*) AS n, sum(v) AS s FROM {src}, stream_ext.hop(ts, ''20 minutes'', ''10 minutes'') AS w(window_start) GROUP BY 1'),
 ('ap_text_distinct', 'SELECT k % 3 AS b, count(DISTINCT g) AS dg FROM {src} GROUP BY 1');

DO $$
DECLARE r record;
BEGIN
  FOR r IN SELECT * FROM shapes ORDER BY name LOOP
    EXECUTE format('CREATE VIEW %I WITH (continuous) AS %s', r.name, replace(r.query, '{src}', 'ev'));
  END LOOP;
END $$;

-- which views append: all but the one whose count(DISTINCT) side table is
-- hashed (a text value), which keeps upserting
SELECT c.name, v.delta IS NOT NULL AS appends,
       v.delta IS NULL OR v.delta::text = c.name || '_delta' AS delta_name
  FROM shapes c JOIN stream_ext.view_catalog v ON v.view = c.name::regclass
 ORDER BY 1;

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

-- n deterministic rows with NULL keys and values, in one statement
CREATE FUNCTION feed(n int, seed int) RETURNS void LANGUAGE sql AS $$
  WITH r AS (
    SELECT CASE WHEN i % 11 = 0 THEN NULL ELSE (i * 7 + seed) % 40 END AS k,
           CASE WHEN i % 7 = 0 THEN NULL ELSE 'g' || ((i + seed) % 6) END AS g,
           CASE WHEN i % 13 = 0 THEN NULL ELSE (i * 31 + seed) % 1000 END AS v,
           timestamptz '2024-01-01 00:00:00+00' + ((i * 37 + seed * 101) % 7200) * interval '1 second' AS ts
      FROM generate_series(1, n) i),
  s AS (INSERT INTO ev SELECT * FROM r)
  INSERT INTO ev_log SELECT * FROM r;
$$;

-- the rows of materialization and delta, per appending view
CREATE FUNCTION storage() RETURNS TABLE (shape text, matrel_rows bigint, delta_rows bigint)
LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
  FOR r IN SELECT s.name, v.matrel, v.delta FROM shapes s
             JOIN stream_ext.view_catalog v ON v.view = s.name::regclass
            WHERE v.delta IS NOT NULL ORDER BY 1 LOOP
    shape := r.name;
    EXECUTE format('SELECT count(*) FROM %s', r.matrel) INTO matrel_rows;
    EXECUTE format('SELECT count(*) FROM %s', r.delta) INTO delta_rows;
    RETURN NEXT;
  END LOOP;
END $$;

-- empty: keyless views one row, grouped views none
SELECT * FROM check_all();

-- batches of 1 .. 100,000 rows, all appended: the materializations hold
-- only what the backfill found (keyless views: their one row)
SELECT feed(1, s) FROM generate_series(1, 3) s;
SELECT feed(10, 10);
SELECT feed(1000, 11);
SELECT feed(100000, 12);
SELECT * FROM storage();
SELECT * FROM check_all();

-- a rolled-back batch leaves no delta row
SELECT sum(delta_rows) AS delta_rows_before FROM storage() \gset
BEGIN;
SELECT feed(500, 13);
ROLLBACK;
BEGIN;
SELECT feed(50, 14);
SAVEPOINT a;
SELECT feed(500, 15);
ROLLBACK TO SAVEPOINT a;
COMMIT;
SELECT sum(delta_rows) - :delta_rows_before AS delta_rows_added FROM storage();
SELECT * FROM check_all();

-- view_groups counts each group once, wherever its rows are
SELECT stream_ext.view_groups('ap_two') = (SELECT count(*) FROM ap_two) AS groups_ok;

-- compaction: returns the delta rows it folded, empties the delta, and the
-- views read the same
SELECT name, stream_ext.compact(name::regclass) > 0 AS folded FROM shapes ORDER BY 1;
SELECT name, stream_ext.compact(name::regclass) AS folded_again FROM shapes ORDER BY 1;
SELECT * FROM storage();
SELECT * FROM check_all();
SELECT stream_ext.view_groups('ap_two') = (SELECT count(*) FROM ap_two) AS groups_ok;

-- half in the materialization, half in the delta: groups, NULL keys included
SELECT feed(3000, 16);
SELECT * FROM check_all();
SELECT count(*) AS null_key_groups FROM ap_two WHERE k IS NULL OR g IS NULL;

-- a key-filtered read (the PostgREST pattern) is an index scan of the
-- materialization (in the merged read's plan; by default one node,
-- StreamExtKeyRead: regress 74)
CREATE FUNCTION plan_of(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    RETURN NEXT line;
  END LOOP;
END $$;
SET enable_seqscan = off;
SET stream_ext.key_read_scan = off;
SELECT bool_or(p ~ 'Index Scan using ap_int_mrel_k_idx on ap_int_mrel') AS matrel_index_scan,
       bool_or(p ~ 'Seq Scan on ap_int_mrel') AS matrel_seq_scan
  FROM plan_of('SELECT * FROM ap.ap_int WHERE k = 7') p;
RESET enable_seqscan;
RESET stream_ext.key_read_scan;
SELECT k, n FROM ap_int WHERE k = 7;
SELECT k, count(*) AS n FROM ev_log WHERE k = 7 GROUP BY k;

-- backpressure: over stream_ext.compact_threshold rows, the writer compacts
SET stream_ext.compact_threshold = 100;
SELECT feed(30, 17);       -- ap_int's delta: at most 40 groups, under 100
SELECT delta_rows > 0 AS ap_int_delta_kept FROM storage() WHERE shape = 'ap_int';
SELECT feed(3000, 18) FROM generate_series(1, 4);
-- (without compaction ap_int's delta would hold about 190 rows, ap_two's 700)
SELECT shape, delta_rows <= 100 + 40 AS delta_bounded, matrel_rows > 0 AS compacted FROM storage()
 WHERE shape IN ('ap_int', 'ap_two', 'ap_total') ORDER BY 1;
SELECT * FROM check_all();
SET stream_ext.compact_threshold = -1;

-- who may compact: the view's owner (or a member); a view that upserts
-- folds nothing; other relations are refused
CREATE ROLE ap_stranger;
GRANT USAGE ON SCHEMA ap TO ap_stranger;
SET ROLE ap_stranger;
SELECT stream_ext.compact('ap.ap_int');
RESET ROLE;
REVOKE USAGE ON SCHEMA ap FROM ap_stranger;
DROP ROLE ap_stranger;
SELECT stream_ext.compact('ap_text_distinct') AS upserting_view_folds;
SELECT stream_ext.compact('ev_log');
-- the delta is maintenance's only: no direct writes
INSERT INTO ap_int_delta (k) VALUES (1);
DELETE FROM ap_int_delta;

-- TTL removes expired groups from the delta too
CREATE VIEW ap_ttl WITH (continuous, ttl = '1 day', ttl_column = 'day') AS
  SELECT date_trunc('day', ts) AS day, count(*) AS n FROM ev GROUP BY 1;
SELECT stream_ext.compact('ap_ttl') > 0 AS compacted;
INSERT INTO ev (k, ts) VALUES (1, now() - interval '10 days'), (2, now());
SELECT count(*) AS delta_rows FROM ap_ttl_delta;
SELECT task, removed FROM stream_ext.run_maintenance() WHERE object = 'ap_ttl'::regclass;
SELECT count(*) AS groups_left, count(*) FILTER (WHERE day < now() - interval '1 day') AS expired_left FROM ap_ttl;

-- a distributed read over materialization and delta as two "nodes" equals
-- the view (create_distributed_view() gives each node's delta as a part)
SELECT feed(200, 19);
SELECT stream_ext.distributed_select_sql('ap_two',
         ARRAY['ap.ap_two_mrel'::regclass, 'ap.ap_two_delta'::regclass]) AS q \gset
CREATE VIEW ap_two_parts AS :q;
SELECT count(*) AS differing FROM ((TABLE ap_two EXCEPT ALL TABLE ap_two_parts)
  UNION ALL (TABLE ap_two_parts EXCEPT ALL TABLE ap_two)) d;

-- DROP VIEW takes the delta along
DROP VIEW ap_two_parts;
DROP VIEW ap_int;
SELECT count(*) AS delta_left FROM pg_class WHERE relname = 'ap_int_delta';

DROP SCHEMA ap CASCADE;
