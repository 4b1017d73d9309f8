-- Reads by key plan no merge of NULL-key groups (docs/internals.md,
-- "Reading"; src/query/analyze.c cv_merged_source_sql(), src/query/reads.c):
-- the view's third branch merges the groups with a NULL key, and a filter
-- k = K (a constant or a prepared statement's parameter) contradicts k IS
-- NULL, so a read by key plans neither its scans nor its aggregate -- one
-- aggregate, the merge of the delta's rows of the group.  A filter on some
-- of several keys keeps the branch (groups (1, NULL) exist).  Every read
-- equals the query over the stream's rows, NULL keys in the delta and in the
-- materialization, prepared or not.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
SET stream_ext.compact_threshold = -1;
-- the merged read's plan (a read fixing every key is otherwise one node,
-- StreamExtKeyRead: regress 74)
SET stream_ext.key_read_scan = off;

-- the aggregates and the scans of a query's plan: 'Aggregate on t1, t2' per
-- aggregate node, with the tables it reads below it
CREATE FUNCTION r72_aggs(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
  p json;
BEGIN
  EXECUTE 'EXPLAIN (COSTS OFF, FORMAT JSON) ' || q INTO p;
  RETURN QUERY
    WITH RECURSIVE n(id, node, agg) AS (
      SELECT '0', p -> 0 -> 'Plan', NULL::text
      UNION ALL
      SELECT n.id || '.' || o, c,
             CASE WHEN n.node ->> 'Node Type' = 'Aggregate' THEN n.id ELSE n.agg END
        FROM n, json_array_elements(n.node -> 'Plans') WITH ORDINALITY AS e(c, o))
    SELECT 'Aggregate on ' || coalesce((SELECT string_agg(DISTINCT s.node ->> 'Relation Name', ', ')
                                          FROM n s WHERE s.agg = a.id OR s.agg LIKE a.id || '.%'), '(nothing)')
      FROM n a WHERE a.node ->> 'Node Type' = 'Aggregate'
     ORDER BY 1;
END $$;

SELECT stream_ext.create_stream('r72', 'k int, c int, t text, v int');
CREATE TABLE r72_log (k int, c int, t text, v int);
CREATE VIEW r72_k WITH (continuous) AS
  SELECT k, count(*) AS n, sum(v) AS s, avg(v) AS a FROM r72 GROUP BY k;
CREATE VIEW r72_kc WITH (continuous) AS
  SELECT k, c, count(*) AS n, sum(v) AS s FROM r72 GROUP BY k, c;
CREATE VIEW r72_t WITH (continuous) AS
  SELECT t, count(*) AS n, max(v) AS hi FROM r72 GROUP BY t;

CREATE FUNCTION r72_feed(lo int, hi int) RETURNS void LANGUAGE sql AS $$
  WITH r AS (SELECT nullif(i % 50, 7) AS k, nullif(i % 3, 2) AS c,
                    CASE WHEN i % 11 = 0 THEN NULL ELSE 't' || (i % 40) END AS t, i AS v
               FROM generate_series(lo, hi) i),
       a AS (INSERT INTO r72 SELECT * FROM r)
  INSERT INTO r72_log SELECT * FROM r;
$$;

-- NULL-key groups in the materialization and in the delta
SELECT r72_feed(1, 2000);
SELECT stream_ext.compact('r72_k'), stream_ext.compact('r72_kc'), stream_ext.compact('r72_t');
SELECT r72_feed(2001, 2100);
ANALYZE r72_k_mrel, r72_k_delta, r72_kc_mrel, r72_kc_delta, r72_t_mrel, r72_t_delta;

-- the plans: one aggregate (the delta's rows of the group) for a key, the
-- NULL-key merge too for a filter on part of the keys, IS NULL or no filter
SELECT r72_aggs('SELECT * FROM r72_k WHERE k = 3');
SELECT r72_aggs('SELECT * FROM r72_k WHERE k IN (3, 4)');
SELECT r72_aggs('SELECT * FROM r72_k WHERE k > 40');
SELECT r72_aggs('SELECT * FROM r72_kc WHERE k = 3 AND c = 1');
SELECT r72_aggs('SELECT * FROM r72_kc WHERE k = 3');
SELECT r72_aggs('SELECT * FROM r72_t WHERE t = ''t5''');
SELECT r72_aggs('SELECT * FROM r72_k WHERE k IS NULL');
SELECT r72_aggs('SELECT * FROM r72_k');

-- prepared (PostgREST): the generic plan, planned once for any key
SET plan_cache_mode = force_generic_plan;
PREPARE r72_p(int) AS SELECT * FROM r72_k WHERE k = $1;
PREPARE r72_pc(int, int) AS SELECT * FROM r72_kc WHERE k = $1 AND c = $2;
PREPARE r72_pk(int) AS SELECT * FROM r72_kc WHERE k = $1;
SELECT r72_aggs('EXECUTE r72_p(3)');
SELECT r72_aggs('EXECUTE r72_pc(3, 1)');
SELECT r72_aggs('EXECUTE r72_pk(3)');

-- the reads equal the query over the stream's rows
CREATE FUNCTION r72_check() RETURNS TABLE (read text, mismatches bigint) LANGUAGE sql AS $$
  SELECT 'k = K', count(*) FROM (
    (SELECT * FROM r72_k WHERE k = 3 EXCEPT ALL
     SELECT k, count(*), sum(v), avg(v) FROM r72_log WHERE k = 3 GROUP BY k)
    UNION ALL
    (SELECT k, count(*), sum(v), avg(v) FROM r72_log WHERE k = 3 GROUP BY k EXCEPT ALL
     SELECT * FROM r72_k WHERE k = 3)) x
  UNION ALL
  SELECT 'k IS NULL', count(*) FROM (
    (SELECT * FROM r72_k WHERE k IS NULL EXCEPT ALL
     SELECT k, count(*), sum(v), avg(v) FROM r72_log WHERE k IS NULL GROUP BY k)
    UNION ALL
    (SELECT k, count(*), sum(v), avg(v) FROM r72_log WHERE k IS NULL GROUP BY k EXCEPT ALL
     SELECT * FROM r72_k WHERE k IS NULL)) x
  UNION ALL
  SELECT 'all of k', count(*) FROM (
    (SELECT * FROM r72_k EXCEPT ALL
     SELECT k, count(*), sum(v), avg(v) FROM r72_log GROUP BY k)
    UNION ALL
    (SELECT k, count(*), sum(v), avg(v) FROM r72_log GROUP BY k EXCEPT ALL
     SELECT * FROM r72_k)) x
  UNION ALL
  SELECT 'k, c: k = K', count(*) FROM (
    (SELECT * FROM r72_kc WHERE k = 3 EXCEPT ALL
     SELECT k, c, count(*), sum(v) FROM r72_log WHERE k = 3 GROUP BY k, c)
    UNION ALL
    (SELECT k, c, count(*), sum(v) FROM r72_log WHERE k = 3 GROUP BY k, c EXCEPT ALL
     SELECT * FROM r72_kc WHERE k = 3)) x
  UNION ALL
  SELECT 'k, c: k = K AND c = C', count(*) FROM (
    (SELECT * FROM r72_kc WHERE k = 3 AND c = 1 EXCEPT ALL
     SELECT k, c, count(*), sum(v) FROM r72_log WHERE k = 3 AND c = 1 GROUP BY k, c)
    UNION ALL
    (SELECT k, c, count(*), sum(v) FROM r72_log WHERE k = 3 AND c = 1 GROUP BY k, c EXCEPT ALL
     SELECT * FROM r72_kc WHERE k = 3 AND c = 1)) x
  UNION ALL
  SELECT 'k, c: all', count(*) FROM (
    (SELECT * FROM r72_kc EXCEPT ALL SELECT k, c, count(*), sum(v) FROM r72_log GROUP BY k, c)
    UNION ALL
    (SELECT k, c, count(*), sum(v) FROM r72_log GROUP BY k, c EXCEPT ALL SELECT * FROM r72_kc)) x
  UNION ALL
  SELECT 't = T', count(*) FROM (
    (SELECT * FROM r72_t WHERE t = 't5' EXCEPT ALL
     SELECT t, count(*), max(v) FROM r72_log WHERE t = 't5' GROUP BY t)
    UNION ALL
    (SELECT t, count(*), max(v) FROM r72_log WHERE t = 't5' GROUP BY t EXCEPT ALL
     SELECT * FROM r72_t WHERE t = 't5')) x
  UNION ALL
  SELECT 't: all', count(*) FROM (
    (SELECT * FROM r72_t EXCEPT ALL SELECT t, count(*), max(v) FROM r72_log GROUP BY t)
    UNION ALL
    (SELECT t, count(*), max(v) FROM r72_log GROUP BY t EXCEPT ALL SELECT * FROM r72_t)) x;
$$;
-- every key, prepared: the rows of each key equal the stream's
CREATE FUNCTION r72_check_prepared() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  bad bigint := 0;
  n bigint;
BEGIN
  FOR i IN 0..50 LOOP
    EXECUTE format('SELECT count(*) FROM ((SELECT * FROM r72_p_read(%1$s) EXCEPT ALL
                      SELECT k, count(*), sum(v), avg(v) FROM r72_log WHERE k = %1$s GROUP BY k)
                     UNION ALL
                     (SELECT k, count(*), sum(v), avg(v) FROM r72_log WHERE k = %1$s GROUP BY k EXCEPT ALL
                      SELECT * FROM r72_p_read(%1$s))) x', i) INTO n;
    bad := bad + n;
    FOR j IN 0..1 LOOP
      EXECUTE format('SELECT count(*) FROM ((SELECT * FROM r72_pc_read(%1$s, %2$s) EXCEPT ALL
                        SELECT k, c, count(*), sum(v) FROM r72_log WHERE k = %1$s AND c = %2$s GROUP BY k, c)
                       UNION ALL
                       (SELECT k, c, count(*), sum(v) FROM r72_log WHERE k = %1$s AND c = %2$s GROUP BY k, c EXCEPT ALL
                        SELECT * FROM r72_pc_read(%1$s, %2$s))) x', i, j) INTO n;
      bad := bad + n;
    END LOOP;
  END LOOP;
  RETURN bad;
END $$;
-- the prepared statements' rows (EXECUTE cannot be a subquery)
CREATE FUNCTION r72_p_read(key_k int) RETURNS TABLE (k int, n bigint, s bigint, a numeric)
LANGUAGE plpgsql AS $$ BEGIN RETURN QUERY EXECUTE format('EXECUTE r72_p(%s)', key_k); END $$;
CREATE FUNCTION r72_pc_read(key_k int, key_c int) RETURNS TABLE (k int, c int, n bigint, s bigint)
LANGUAGE plpgsql AS $$ BEGIN RETURN QUERY EXECUTE format('EXECUTE r72_pc(%s, %s)', key_k, key_c); END $$;

SELECT * FROM r72_check();
SELECT r72_check_prepared() AS prepared_mismatches;

-- more delta rows, NULL keys only in the delta of a compacted view, a
-- rolled-back batch: the same
SELECT stream_ext.compact('r72_k'), stream_ext.compact('r72_kc'), stream_ext.compact('r72_t');
BEGIN;
INSERT INTO r72 SELECT NULL, NULL, NULL, 5 FROM generate_series(1, 10);
ROLLBACK;
SELECT r72_feed(2101, 2400);
SELECT * FROM r72_check();
SELECT r72_check_prepared() AS prepared_mismatches;
-- an empty delta
SELECT stream_ext.compact('r72_k'), stream_ext.compact('r72_kc'), stream_ext.compact('r72_t');
SELECT * FROM r72_check();
SELECT r72_check_prepared() AS prepared_mismatches;
RESET plan_cache_mode;
DEALLOCATE ALL;

