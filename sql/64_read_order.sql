-- ORDER BY ... LIMIT n on views that append (docs/internals.md, "Reading";
-- src/query/read_order.c): the materialization's groups without delta rows
-- are read in the order of an index of the materialization -- its key index,
-- or an index of stream_ext.create_index() on an aggregate -- and merged
-- (Merge Append) with the merged delta groups, instead of the whole
-- materialization being read and sorted.  Results equal the query over the
-- stream's rows with deltas of 0, a few and many rows, NULL keys, wide keys,
-- DESC, NULLS FIRST, several keys, OFFSET, key filters, prepared statements.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
SET stream_ext.compact_threshold = -1;

-- how a query's plan reads the view's materialization:
--   merge_append: the plan has a Merge Append (branches merged in order)
--   mrel_sorted: a Sort of more than 1,000 rows (estimated) above a scan of
--                a materialization -- the materialization (5,000 groups)
--                read whole and sorted
CREATE FUNCTION r64_shape(q text, OUT merge_append boolean, OUT mrel_sorted boolean)
LANGUAGE plpgsql AS $$
DECLARE
  p json;
BEGIN
  EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO p;
  WITH RECURSIVE n(node, under_big_sort) AS (
    SELECT p -> 0 -> 'Plan', false
    UNION ALL
    SELECT c, n.under_big_sort OR (n.node ->> 'Node Type' = 'Sort' AND (n.node ->> 'Plan Rows')::float8 > 1000)
      FROM n, json_array_elements(n.node -> 'Plans') c)
  SELECT coalesce(bool_or(node ->> 'Node Type' = 'Merge Append'), false),
         coalesce(bool_or(under_big_sort AND node ->> 'Relation Name' LIKE '%\_mrel'), false)
    INTO merge_append, mrel_sorted
    FROM n;
END $$;

-- the lines of a query's plan down to the first aggregate (the merge of the
-- delta's groups), which the planner may plan in several ways
CREATE FUNCTION r64_top(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
  line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    EXIT WHEN line ~ 'Aggregate';
    RETURN NEXT line;
  END LOOP;
END $$;

SELECT stream_ext.create_stream('r64', 'k int, c int, t text, v int');
CREATE TABLE r64_log (k int, c int, t text, v int);
CREATE VIEW r64_k WITH (continuous) AS
  SELECT k, count(*) AS n, sum(v) AS s, avg(v) AS a FROM r64 GROUP BY k;
CREATE VIEW r64_kc WITH (continuous) AS
  SELECT k, c, count(*) AS n, sum(v) AS s FROM r64 GROUP BY k, c;
CREATE VIEW r64_t WITH (continuous) AS
  SELECT t, count(*) AS n, max(v) AS hi FROM r64 GROUP BY t;
-- the PostgREST pattern order=s.desc&limit=10: an index on an aggregate
SELECT stream_ext.create_index('r64_k', 's');

-- v: distinct per row, so that the sums of the groups rarely tie
CREATE FUNCTION r64_feed(lo int, hi int, seed int) RETURNS void LANGUAGE sql AS $$
  WITH r AS (SELECT nullif(i % 5000, 7) AS k, CASE WHEN i % 997 = 0 THEN NULL ELSE i % 3 END AS c,
                    CASE WHEN i % 11 = 0 THEN NULL ELSE 't' || (i % 300) END AS t,
                    (i * seed) % 100003 AS v
               FROM generate_series(lo, hi) i),
       a AS (INSERT INTO r64 SELECT * FROM r)
  INSERT INTO r64_log SELECT * FROM r;
$$;

-- the oracle: each view's query over the logged rows
CREATE VIEW r64_k_oracle AS SELECT k, count(*) AS n, sum(v) AS s, avg(v) AS a FROM r64_log GROUP BY k;
CREATE VIEW r64_kc_oracle AS SELECT k, c, count(*) AS n, sum(v) AS s FROM r64_log GROUP BY k, c;
CREATE VIEW r64_t_oracle AS SELECT t, count(*) AS n, max(v) AS hi FROM r64_log GROUP BY t;

-- the ordered reads, each with its oracle: the rows of `q` (over the view)
-- must equal those of `q` over the oracle, in order.  Orders on the
-- aggregate s compare only s in order plus the rows as a set (ties).
CREATE TABLE r64_reads (id int, q text, by_value boolean DEFAULT false);
INSERT INTO r64_reads VALUES
  (1, 'SELECT * FROM %s_k ORDER BY k LIMIT 10'),
  (2, 'SELECT * FROM %s_k ORDER BY k DESC LIMIT 10'),
  (3, 'SELECT * FROM %s_k ORDER BY k NULLS FIRST LIMIT 10'),
  (4, 'SELECT * FROM %s_k ORDER BY k DESC NULLS LAST LIMIT 10'),
  (5, 'SELECT * FROM %s_k ORDER BY k LIMIT 10 OFFSET 995'),
  (6, 'SELECT * FROM %s_k WHERE k BETWEEN 100 AND 2000 ORDER BY k LIMIT 10'),
  (7, 'SELECT * FROM %s_k WHERE k > 4990 ORDER BY k LIMIT 10'),
  (8, 'SELECT * FROM %s_k WHERE k < 20 ORDER BY k DESC LIMIT 10'),
  (9, 'SELECT * FROM %s_k ORDER BY s DESC LIMIT 10', true),
  (10, 'SELECT * FROM %s_k ORDER BY s LIMIT 10 OFFSET 3', true),
  (11, 'SELECT * FROM %s_k WHERE k > 2500 ORDER BY s DESC LIMIT 10', true),
  (12, 'SELECT * FROM %s_kc ORDER BY k, c LIMIT 10'),
  (13, 'SELECT * FROM %s_kc ORDER BY k DESC, c DESC LIMIT 10'),
  (14, 'SELECT * FROM %s_kc WHERE k = 42 ORDER BY c NULLS FIRST LIMIT 10'),
  (15, 'SELECT * FROM %s_kc ORDER BY k, c DESC LIMIT 10'),
  (16, 'SELECT * FROM %s_t ORDER BY t LIMIT 10'),
  (17, 'SELECT * FROM %s_t ORDER BY t DESC LIMIT 10'),
  (18, 'SELECT * FROM %s_t WHERE t > ''t5'' ORDER BY t LIMIT 10'),
  (19, 'SELECT k, n FROM %s_k ORDER BY k LIMIT 0'),
  (20, 'SELECT * FROM %s_k ORDER BY a DESC, k LIMIT 10');

-- the reads whose plans regress 64 shows (r64_shape)
CREATE TABLE r64_plans (id int, q text, many_delta_rows boolean DEFAULT true);
INSERT INTO r64_plans VALUES
  (1, 'SELECT * FROM r64_k ORDER BY k LIMIT 10', true),
  (2, 'SELECT * FROM r64_k ORDER BY k DESC LIMIT 10', false),
  (3, 'SELECT * FROM r64_k ORDER BY s DESC LIMIT 10', false),
  (4, 'SELECT * FROM r64_k WHERE k BETWEEN 100 AND 2000 ORDER BY k LIMIT 10', true),
  (5, 'SELECT * FROM r64_k WHERE k > 4000 ORDER BY k LIMIT 10', true),
  (6, 'SELECT * FROM r64_kc ORDER BY k, c LIMIT 10', true),
  (7, 'SELECT * FROM r64_kc WHERE k = 42 ORDER BY c LIMIT 10', true);

-- the reads whose rows differ from their oracle's (none expected)
CREATE FUNCTION r64_check() RETURNS TABLE (id int, q text) LANGUAGE plpgsql AS $$
DECLARE
  r record;
  got text;
  want text;
BEGIN
  FOR r IN SELECT * FROM r64_reads ORDER BY 1 LOOP
    IF r.by_value THEN
      EXECUTE format('SELECT array_agg(s) || array_agg(x::text ORDER BY x::text) FROM (%s) x',
                     format(r.q, 'r64')) INTO got;
      EXECUTE format('SELECT array_agg(s) || array_agg(x::text ORDER BY x::text) FROM (%s) x',
                     replace(format(r.q, 'r64'), 'r64_k ', 'r64_k_oracle ')) INTO want;
    ELSE
      EXECUTE format('SELECT array_agg(x::text) FROM (%s) x', format(r.q, 'r64')) INTO got;
      EXECUTE format('SELECT array_agg(x::text) FROM (%s) x',
                     regexp_replace(format(r.q, 'r64'), '(r64_[a-z]+) ', '\1_oracle ')) INTO want;
    END IF;
    IF got IS DISTINCT FROM want THEN
      id := r.id;
      q := r.q;
      RETURN NEXT;
    END IF;
  END LOOP;
END $$;

-- delta of 0 rows: everything compacted
SELECT r64_feed(1, 30000, 3);
SELECT stream_ext.compact(v) >= 0 AS compacted FROM unnest(ARRAY['r64_k', 'r64_kc', 'r64_t']) v;
VACUUM ANALYZE r64_k_mrel, r64_k_delta, r64_kc_mrel, r64_kc_delta, r64_t_mrel, r64_t_delta;
SELECT (SELECT count(*) FROM r64_k_delta) AS delta_rows,
       (SELECT count(*) FROM r64_k_mrel) AS groups,
       (SELECT count(*) FROM r64_k_mrel WHERE k IS NULL) AS null_key_groups;
SELECT * FROM r64_check();
-- the plans: the materialization in index order (key index, or the index of
-- create_index() on s, backwards for DESC), merged with the delta's groups;
-- never the materialization sorted
SELECT p.q, s.* FROM r64_plans p, r64_shape(p.q) s ORDER BY p.id;

-- a delta of a few rows (NULL keys in it too)
SELECT r64_feed(1, 40, 7);
SELECT r64_feed(4990, 5010, 7);
ANALYZE r64_k_delta, r64_kc_delta, r64_t_delta;
SELECT (SELECT count(*) FROM r64_k_delta) AS delta_rows,
       (SELECT count(*) FROM r64_k_delta WHERE k IS NULL) AS null_key_delta_rows;
SELECT * FROM r64_check();
SELECT p.q, s.* FROM r64_plans p, r64_shape(p.q) s ORDER BY p.id;
-- stream_ext.ordered_reads = off: the whole first branch sorted, as before
SET stream_ext.ordered_reads = off;
SELECT * FROM r64_shape('SELECT * FROM r64_k ORDER BY k LIMIT 10');
SELECT * FROM r64_check();
RESET stream_ext.ordered_reads;
-- the plan of the first down to the merge of the delta's groups: Limit over
-- Merge Append of the anti-join over the materialization's key index and
-- the merged delta groups
SELECT line FROM r64_top('SELECT * FROM r64_k ORDER BY k LIMIT 10') line;

-- prepared, with a generic plan (PostgREST prepares its statements)
PREPARE r64_p(int, int) AS SELECT k, n, s FROM r64_k WHERE k >= $1 ORDER BY k LIMIT $2;
SET plan_cache_mode = force_generic_plan;
CREATE TEMP TABLE r64_got AS EXECUTE r64_p(4980, 10);
RESET plan_cache_mode;
SELECT array_agg(x::text ORDER BY x.k) = (SELECT array_agg(y::text) FROM (
         SELECT k, n, s FROM r64_k_oracle WHERE k >= 4980 ORDER BY k LIMIT 10) y) AS prepared_equal
  FROM r64_got x;

-- the view read twice in one query (the subquery of each read is not told
-- apart: planned as before) and inside a join: the same rows
SELECT (SELECT array_agg(row(a.k, b.k)::text) FROM
          (SELECT k FROM r64_k ORDER BY k LIMIT 5) a,
          (SELECT k FROM r64_k ORDER BY k DESC LIMIT 5) b) =
       (SELECT array_agg(row(a.k, b.k)::text) FROM
          (SELECT k FROM r64_k_oracle ORDER BY k LIMIT 5) a,
          (SELECT k FROM r64_k_oracle ORDER BY k DESC LIMIT 5) b) AS twice_equal,
       (SELECT array_agg(x::text) FROM
          (SELECT x.k, x.n, y.n AS n1 FROM r64_k x JOIN r64_kc y ON y.k = x.k AND y.c = 1
            ORDER BY x.k LIMIT 10) x) =
       (SELECT array_agg(x::text) FROM
          (SELECT x.k, x.n, y.n AS n1 FROM r64_k_oracle x JOIN r64_kc_oracle y ON y.k = x.k AND y.c = 1
            ORDER BY x.k LIMIT 10) x) AS join_equal;

-- a delta of many rows (every group; more delta rows than groups)
SELECT r64_feed(1, 12000, 11);
ANALYZE r64_k_delta, r64_kc_delta, r64_t_delta;
SELECT (SELECT count(*) FROM r64_k_delta) > 5000 AS many_delta_rows;
SELECT * FROM r64_check();
-- in key order the merged delta groups are joined in that order to the
-- materialization (a GROUP BY over the delta's key index, or over the delta
-- sorted); in descending order or by an aggregate they are merged and
-- sorted first
SELECT p.q, s.* FROM r64_plans p, r64_shape(p.q) s WHERE p.many_delta_rows ORDER BY p.id;

-- everything compacted again
SELECT stream_ext.compact(v) >= 0 AS compacted FROM unnest(ARRAY['r64_k', 'r64_kc', 'r64_t']) v;
SELECT * FROM r64_check();
