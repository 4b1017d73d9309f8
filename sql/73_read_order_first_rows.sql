-- ORDER BY <keys> LIMIT n on views that append, with a delta
-- (src/query/read_order.c, plan_first_rows()): the branches of the view's
-- read are planned for the first rows, as the query with the LIMIT is, so
-- the merged delta groups stream in key order -- a GROUP BY over the
-- delta's key index -- instead of the whole delta being sorted before the
-- first group; a range filter reaches both tables of each join
-- (src/query/reads.c).  Results equal the query over the stream's rows:
-- deltas of a few and of many rows, NULL keys, several keys, OFFSET, key
-- filters, prepared statements, stream_ext.ordered_reads off.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
SET stream_ext.compact_threshold = -1;

-- does the plan of q sort a delta (a Sort of more than 100 rows, estimated,
-- whose input reads a delta)?
CREATE FUNCTION r73_delta_sorted(q text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  p json;
  result boolean;
BEGIN
  EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO p;
  WITH RECURSIVE n(node, under_sort) AS (
    SELECT p -> 0 -> 'Plan', false
    UNION ALL
    SELECT c, n.under_sort OR (n.node ->> 'Node Type' = 'Sort' AND (n.node ->> 'Plan Rows')::float8 > 100)
      FROM n, json_array_elements(n.node -> 'Plans') c)
  SELECT coalesce(bool_or(under_sort AND node ->> 'Relation Name' LIKE '%\_delta'), false)
    INTO result FROM n;
  RETURN result;
END $$;

SELECT stream_ext.create_stream('r73', 'k int, c int, v int');
CREATE TABLE r73_log (k int, c int, v int);
CREATE VIEW r73_k WITH (continuous) AS
  SELECT k, count(*) AS n, sum(v) AS s, avg(v) AS a FROM r73 GROUP BY k;
CREATE VIEW r73_kc WITH (continuous) AS
  SELECT k, c, count(*) AS n, sum(v) AS s FROM r73 GROUP BY k, c;
CREATE VIEW r73_k_oracle AS SELECT k, count(*) AS n, sum(v) AS s, avg(v) AS a FROM r73_log GROUP BY k;
CREATE VIEW r73_kc_oracle AS SELECT k, c, count(*) AS n, sum(v) AS s FROM r73_log GROUP BY k, c;

-- rows lo..hi: keys spread over 20,000 groups (step: the spread), a NULL
-- key every 1,000 rows
CREATE FUNCTION r73_feed(lo int, hi int, step int) RETURNS void LANGUAGE sql AS $$
  WITH r AS (SELECT CASE WHEN i % 1000 = 0 THEN NULL ELSE (i * step) % 20000 END AS k,
                    i % 2 AS c, i % 1009 AS v
               FROM generate_series(lo, hi) i),
       a AS (INSERT INTO r73 SELECT * FROM r)
  INSERT INTO r73_log SELECT * FROM r;
$$;

CREATE TABLE r73_reads (id int, q text);
INSERT INTO r73_reads VALUES
  (1, 'SELECT * FROM %s_k ORDER BY k LIMIT 10'),
  (2, 'SELECT * FROM %s_k ORDER BY k LIMIT 10 OFFSET 100'),
  (3, 'SELECT * FROM %s_k WHERE k > 15000 ORDER BY k LIMIT 10'),
  (4, 'SELECT * FROM %s_k WHERE k BETWEEN 5000 AND 6000 ORDER BY k LIMIT 10'),
  (5, 'SELECT * FROM %s_k ORDER BY k NULLS FIRST LIMIT 10'),
  (6, 'SELECT * FROM %s_k ORDER BY k DESC LIMIT 10'),
  (7, 'SELECT * FROM %s_kc ORDER BY k, c LIMIT 10'),
  (8, 'SELECT * FROM %s_kc WHERE k >= 19990 ORDER BY k, c LIMIT 30'),
  (9, 'SELECT k, n FROM %s_k ORDER BY k LIMIT 1000');

-- the reads whose rows differ from their oracle's, in order (none expected)
CREATE FUNCTION r73_check() RETURNS SETOF int LANGUAGE plpgsql AS $$
DECLARE
  r record;
  got text;
  want text;
BEGIN
  FOR r IN SELECT * FROM r73_reads ORDER BY 1 LOOP
    EXECUTE format('SELECT array_agg(x::text) FROM (%s) x', format(r.q, 'r73')) INTO got;
    EXECUTE format('SELECT array_agg(x::text) FROM (%s) x',
                   regexp_replace(format(r.q, 'r73'), '(r73_[a-z]+) ', '\1_oracle ')) INTO want;
    IF got IS DISTINCT FROM want THEN
      RETURN NEXT r.id;
    END IF;
  END LOOP;
END $$;

-- 20,000 groups compacted, then a delta of 3,000 rows over all of them
SELECT r73_feed(1, 40000, 1);
SELECT stream_ext.compact('r73_k') > 0 AS compacted, stream_ext.compact('r73_kc') > 0 AS compacted;
SELECT r73_feed(40001, 43000, 7);
VACUUM ANALYZE r73_k_mrel, r73_k_delta, r73_kc_mrel, r73_kc_delta;
SELECT (SELECT count(*) FROM r73_k_delta) AS delta_rows,
       (SELECT count(*) FROM r73_k_delta WHERE k IS NULL) AS null_key_delta_rows;
SELECT * FROM r73_check();
-- in key order the delta's groups stream from its key index: no sort of
-- the delta (the materialization's groups, as before, in index order too)
SELECT r.id, r73_delta_sorted(format(r.q, 'r73')) AS delta_sorted
  FROM r73_reads r WHERE r.id IN (1, 3, 4, 7, 8) ORDER BY r.id;
-- the plan of the first: the merged delta groups are a GROUP BY over the
-- delta's key index
CREATE FUNCTION r73_plan(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
  line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    RETURN NEXT line;
  END LOOP;
END $$;
SELECT line FROM r73_plan('SELECT * FROM r73_k ORDER BY k LIMIT 10') line
 WHERE line ~ 'Limit|Merge Append|Aggregate|Sort|_delta';

-- a range filter of a read reaches the other table of its joins
-- (src/query/reads.c, derive_key_ranges()): the anti-join's delta and the
-- left join's materialization are read from K on, not from their start --
-- each scan of a view's table, with whether its conditions hold the range
-- indexed: an index or bitmap scan (which of the two the planner picks for
-- the small deltas depends on their statistics, so it is not printed)
CREATE FUNCTION r73_ranged(q text, k text) RETURNS TABLE (rel text, indexed boolean, ranged boolean)
LANGUAGE plpgsql AS $$
DECLARE
  p json;
BEGIN
  EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO p;
  RETURN QUERY
    WITH RECURSIVE n(node) AS (
      SELECT p -> 0 -> 'Plan'
      UNION ALL
      SELECT c FROM n, json_array_elements(n.node -> 'Plans') c)
    SELECT n.node ->> 'Alias',
           n.node ->> 'Node Type' IN ('Index Scan', 'Index Only Scan', 'Bitmap Heap Scan'),
           concat(n.node ->> 'Index Cond', n.node ->> 'Filter', n.node ->> 'Recheck Cond') LIKE '%' || k || '%'
      FROM n WHERE n.node ->> 'Relation Name' IS NOT NULL
     ORDER BY 1, 2;
END $$;
SELECT * FROM r73_ranged('SELECT * FROM r73_k WHERE k > 15000 ORDER BY k LIMIT 10', '15000');
SELECT * FROM r73_ranged('SELECT * FROM r73_kc WHERE k >= 19990 ORDER BY k, c LIMIT 30', '19990');
SELECT * FROM r73_ranged('SELECT * FROM r73_k WHERE k BETWEEN 5000 AND 6000 ORDER BY k LIMIT 10', '6000');

-- prepared, with a generic plan (PostgREST: k=gt.K&order=k&limit=10, the
-- limit written in the statement)
PREPARE r73_p(int) AS SELECT k, n, s FROM r73_k WHERE k > $1 ORDER BY k LIMIT 10;
SET plan_cache_mode = force_generic_plan;
SELECT r73_delta_sorted('EXECUTE r73_p(15000)') AS delta_sorted;
CREATE TEMP TABLE r73_got AS EXECUTE r73_p(15000);
RESET plan_cache_mode;
SELECT array_agg(x::text ORDER BY x.k) = (SELECT array_agg(y::text) FROM (
         SELECT k, n, s FROM r73_k_oracle WHERE k > 15000 ORDER BY k LIMIT 10) y) AS prepared_equal
  FROM r73_got x;

-- a delta of many rows (more than the groups)
SELECT r73_feed(43001, 73000, 13);
ANALYZE r73_k_delta, r73_kc_delta;
SELECT * FROM r73_check();
SELECT r.id, r73_delta_sorted(format(r.q, 'r73')) AS delta_sorted
  FROM r73_reads r WHERE r.id IN (1, 7) ORDER BY r.id;

-- stream_ext.ordered_reads = off: planned as PostgreSQL plans it, the same rows
SET stream_ext.ordered_reads = off;
SELECT * FROM r73_check();
RESET stream_ext.ordered_reads;

-- a delta of a few rows, then none
SELECT stream_ext.compact('r73_k') > 0 AS compacted, stream_ext.compact('r73_kc') > 0 AS compacted;
SELECT r73_feed(73001, 73020, 3);
ANALYZE r73_k_delta, r73_kc_delta;
SELECT * FROM r73_check();
SELECT stream_ext.compact('r73_k') > 0 AS compacted, stream_ext.compact('r73_kc') > 0 AS compacted;
SELECT * FROM r73_check();
