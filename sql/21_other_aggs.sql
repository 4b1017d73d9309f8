-- Aggregates of other extensions (Debian's postgresql-15-tdigest and
-- postgresql-15-hll): their states grow to kB and are TOAST-compressed in the
-- view's table; maintenance and reads must detoast them before the
-- aggregate's support functions see them.  Each view equals its query run as
-- plain SQL over a logged copy of the rows (t-digest within a tolerance:
-- merging digests batch by batch is not the same digest as one built row by
-- row; HLL unions are exact).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
CREATE EXTENSION IF NOT EXISTS tdigest;
CREATE EXTENSION IF NOT EXISTS hll;
RESET client_min_messages;
CREATE SCHEMA other_aggs;
SET search_path = other_aggs, public;

SELECT stream_ext.create_stream('other_aggs.s', 'k int, x float8, u bigint');
CREATE TABLE s_log (k int, x float8, u bigint);

CREATE VIEW td WITH (continuous) AS
  SELECT tdigest_percentile(x, 100, 0.5) AS median,
         tdigest_percentile(x, 100, ARRAY[0.1, 0.9]) AS deciles,
         count(*) AS n FROM s;
CREATE VIEW td_by_k WITH (continuous) AS
  SELECT k, tdigest_percentile(x, 100, 0.5) AS median, tdigest(x, 100) AS digest
  FROM s GROUP BY k;
CREATE VIEW hl WITH (continuous) AS
  SELECT hll_add_agg(hll_hash_bigint(u)) AS sketch,
         hll_cardinality(hll_add_agg(hll_hash_bigint(u))) AS users FROM s;
CREATE VIEW hl_by_k WITH (continuous) AS
  SELECT k, hll_cardinality(hll_add_agg(hll_hash_bigint(u))) AS users FROM s GROUP BY k;

-- 20,000 rows in one batch (states compressed on the first write), then more
-- batches combining into those stored states, then single rows
INSERT INTO s SELECT g % 3, g, g * 7 FROM generate_series(1, 20000) g;
INSERT INTO s_log SELECT g % 3, g, g * 7 FROM generate_series(1, 20000) g;
-- the stored states are compressed (the point of this test), in the delta
-- the batch appended to and in the materialization it is compacted into
SELECT pg_column_compression(state_tdigest_percentile_1) AS td_delta_state FROM td_delta;
SELECT stream_ext.compact('td') AS td_folded, stream_ext.compact('hl') AS hl_folded;
SELECT pg_column_compression(state_tdigest_percentile_1) AS td_state,
       pg_column_size(state_tdigest_percentile_1) < octet_length(state_tdigest_percentile_1) AS td_smaller
FROM td_mrel;
SELECT pg_column_compression(state_hll_add_agg_1) AS hll_state FROM hl_mrel;
INSERT INTO s SELECT g % 3, (g * 37) % 50000, g FROM generate_series(20001, 45000) g;
INSERT INTO s_log SELECT g % 3, (g * 37) % 50000, g FROM generate_series(20001, 45000) g;
INSERT INTO s VALUES (1, 1e6, 1), (2, -1e6, 99999999);
INSERT INTO s_log VALUES (1, 1e6, 1), (2, -1e6, 99999999);

-- t-digest: within 500 (1 % of the 0..50,000 the rows mostly span) of plain SQL
SELECT n = (SELECT count(*) FROM s_log) AS n_ok,
       abs(median - (SELECT tdigest_percentile(x, 100, 0.5) FROM s_log)) < 500 AS median_ok,
       (SELECT bool_and(abs(a - b) < 500)
          FROM unnest(deciles, (SELECT tdigest_percentile(x, 100, ARRAY[0.1, 0.9]) FROM s_log)) AS t(a, b)) AS deciles_ok
FROM td;
SELECT k, abs(v.median - p.median) < 500 AS median_ok,
       tdigest_count(digest) = p.n AS count_ok
FROM td_by_k v JOIN (SELECT k, tdigest_percentile(x, 100, 0.5) AS median, count(*) AS n
                     FROM s_log GROUP BY k) p USING (k)
ORDER BY k;

-- HLL: the union of per-batch sketches is the sketch of all rows
SELECT users = (SELECT hll_cardinality(hll_add_agg(hll_hash_bigint(u))) FROM s_log) AS users_ok,
       sketch = (SELECT hll_add_agg(hll_hash_bigint(u)) FROM s_log) AS sketch_ok
FROM hl;
SELECT k, v.users = p.users AS users_ok
FROM hl_by_k v JOIN (SELECT k, hll_cardinality(hll_add_agg(hll_hash_bigint(u))) AS users
                     FROM s_log GROUP BY k) p USING (k)
ORDER BY k;

-- the stream still takes rows
INSERT INTO s VALUES (0, 5, 5);
SELECT n FROM td;

-- PostgreSQL's MIN/MAX optimization (an index scan with LIMIT 1 instead of
-- an aggregate) must not take over a view's statements: max(x) with an
-- index on x, and min/max of constants as the only aggregates, are created
-- (with backfill from existing rows) and maintained like any other
SELECT stream_ext.create_stream('other_aggs.m', 'x int, t text');
CREATE INDEX ON m (x);
CREATE INDEX ON m (t);
INSERT INTO m SELECT g, 'v' || g FROM generate_series(1, 2000) g;
ANALYZE m;
CREATE VIEW m_max WITH (continuous) AS SELECT max(x) AS hi FROM m;
CREATE VIEW m_minmax WITH (continuous) AS SELECT min(x) AS lo, max(x) AS hi, min(t) AS first_t FROM m;
CREATE VIEW m_const WITH (continuous) AS SELECT max(100) AS c, min('abc'::text) AS s FROM m;
CREATE VIEW m_having WITH (continuous) AS SELECT max(x) AS hi FROM m HAVING max(x) > 0;
SELECT * FROM m_max, m_minmax, m_const, m_having;
INSERT INTO m VALUES (5000, 'a'), (-3, NULL);
INSERT INTO m VALUES (NULL, 'zz');
SELECT (SELECT hi FROM m_max) = (SELECT max(x) FROM m) AS max_ok,
       (SELECT (lo, hi, first_t) FROM m_minmax) = (SELECT (min(x), max(x), min(t)) FROM m) AS minmax_ok,
       (SELECT (c, s) FROM m_const) = (SELECT (max(100), min('abc'::text)) FROM m) AS const_ok,
       (SELECT hi FROM m_having) = 5000 AS having_ok;
