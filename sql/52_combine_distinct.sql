-- stream_ext.combine() of an exact count(DISTINCT x) column
-- (docs/continuous-views.md#combine): the number of distinct values over
-- the union of the groups a query reads, from the view's side table,
-- checked against the same count(DISTINCT) over the stream's rows those
-- groups cover -- in append mode (before and after compaction) and for
-- upserting views, with NULLs, a rolled-back batch, batches of 1 to 10,000
-- rows, WHERE, GROUP BY, FILTER and joins of the outer query, changelog
-- streams, TTL and tumbling windows; then every other kind of aggregate a
-- view supports, and the privileges.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
CREATE EXTENSION IF NOT EXISTS hll;
CREATE EXTENSION IF NOT EXISTS tdigest;
RESET client_min_messages;
CREATE SCHEMA c52;
SET search_path = c52, public;

SELECT stream_ext.create_stream('c52.ev', 'k int, url text, u int, name text, x float8, n int, ts timestamptz');
-- fixed-width keys and values: appends to a delta
CREATE VIEW am WITH (continuous) AS
  SELECT k, date_bin('1 minute', ts, '2000-01-01') AS minute,
         count(DISTINCT u) AS users, count(DISTINCT n) FILTER (WHERE x > 50) AS big_n,
         count(*) AS hits, count(x) AS with_x, sum(n) AS total, sum(x) AS xsum,
         avg(x) AS mean, avg(n) AS nmean, min(x) AS lo, max(n) AS hi,
         var_samp(x) AS vs, var_pop(n) AS vp, stddev(x) AS sd,
         bool_and(x > 10) AS all_big, bool_or(x > 99) AS any_top,
         hll_add_agg(hll_hash_integer(u)) AS users_hll, tdigest(x, 100) AS digest
    FROM ev GROUP BY k, minute;
-- variable-width key and value: hashed side tables, the view upserts
CREATE VIEW wide WITH (continuous) AS
  SELECT url, date_bin('1 minute', ts, '2000-01-01') AS minute,
         count(DISTINCT name) AS names, count(DISTINCT u) AS users, count(*) AS hits
    FROM ev GROUP BY url, minute;
-- keyless
CREATE VIEW whole WITH (continuous) AS SELECT count(DISTINCT u) AS users FROM ev;
SELECT view, delta IS NOT NULL AS appends FROM stream_ext.view_catalog
 WHERE view IN ('am'::regclass, 'wide'::regclass) ORDER BY 1;

-- batches of 1, 2, 10, 100, 1000 and 10000 rows, NULL keys and values
CREATE FUNCTION add(rows int, seed int) RETURNS void LANGUAGE sql AS $$
  INSERT INTO c52.ev
  SELECT CASE WHEN (g + seed) % 11 = 0 THEN NULL ELSE (g + seed) % 4 END,
         CASE WHEN (g + seed) % 13 = 0 THEN NULL ELSE '/p' || ((g + seed) % 3) END,
         CASE WHEN (g + seed) % 7 = 0 THEN NULL ELSE ((g * 31 + seed) % 500) END,
         CASE WHEN (g + seed) % 9 = 0 THEN NULL ELSE 'user ' || ((g * 17 + seed) % 300) END,
         CASE WHEN (g + seed) % 5 = 0 THEN NULL ELSE ((g * 7 + seed) % 101)::float8 END,
         (g * 3 + seed) % 40,
         timestamptz '2024-01-01 00:00:00+00' + ((g * 37 + seed * 101) % 1800) * interval '1 second'
    FROM generate_series(1, rows) g $$;
SELECT add(1, 1), add(2, 2), add(10, 3), add(100, 4), add(1000, 5), add(10000, 6);
BEGIN;
INSERT INTO ev VALUES (1, '/p1', 99999, 'nobody', 1e9, 99999, '2024-01-01 00:03:00+00');
ROLLBACK;
SELECT add(1, 7);

-- the oracle: combine() over the view's rows of [lo, hi) (per k, and with a
-- FILTER) equals count(DISTINCT) over the stream's rows of the same minutes
CREATE FUNCTION distinct_mismatches(t0 timestamptz, t1 timestamptz) RETURNS bigint LANGUAGE sql AS $$
  SELECT (SELECT count(*) FROM (
            (SELECT stream_ext.combine(users), stream_ext.combine(big_n)
               FROM c52.am WHERE minute >= t0 AND minute < t1)
            EXCEPT ALL
            (SELECT count(DISTINCT u), count(DISTINCT n) FILTER (WHERE x > 50)
               FROM c52.ev WHERE ts >= t0 AND ts < t1)) d)
       + (SELECT count(*) FROM (
            (SELECT k, stream_ext.combine(users) FROM c52.am WHERE minute >= t0 AND minute < t1 GROUP BY k)
            EXCEPT ALL
            (SELECT k, count(DISTINCT u) FROM c52.ev WHERE ts >= t0 AND ts < t1 GROUP BY k)) d)
       + (SELECT count(*) FROM (
            (SELECT url, stream_ext.combine(names), stream_ext.combine(users)
               FROM c52.wide WHERE minute >= t0 AND minute < t1 GROUP BY url)
            EXCEPT ALL
            (SELECT url, count(DISTINCT name), count(DISTINCT u)
               FROM c52.ev WHERE ts >= t0 AND ts < t1 GROUP BY url)) d)
       + (SELECT count(*) FROM (
            (SELECT stream_ext.combine(users) FILTER (WHERE k IS NULL OR k > 1)
               FROM c52.am WHERE minute >= t0 AND minute < t1)
            EXCEPT ALL
            (SELECT count(DISTINCT u) FILTER (WHERE k IS NULL OR k > 1)
               FROM c52.ev WHERE ts >= t0 AND ts < t1)) d) $$;
CREATE FUNCTION all_mismatches() RETURNS bigint LANGUAGE sql AS $$
  SELECT sum(c52.distinct_mismatches(lo, lo + len))::bigint
    FROM (VALUES (timestamptz '2024-01-01 00:00:00+00'), ('2024-01-01 00:07:00+00'),
                 ('2024-01-01 00:29:00+00'), ('2023-12-31 00:00:00+00')) l(lo),
         (VALUES (interval '1 minute'), ('5 minutes'), ('1 hour'), ('2 days')) s(len) $$;

-- before compaction: the groups' new values counted in the delta
SELECT (SELECT count(*) > 0 FROM am_delta) AS delta_has_rows, all_mismatches();
SELECT stream_ext.combine(users) AS hour_users, (SELECT count(DISTINCT u) FROM ev) AS oracle,
       (SELECT sum(users) FROM am) AS sum_of_groups FROM am;
SELECT stream_ext.combine(users) AS keyless FROM whole;
-- after compaction, and after more batches on top of the compacted rows
SELECT stream_ext.compact('am') > 0 AS compacted, (SELECT count(*) FROM am_delta) AS delta_rows;
SELECT all_mismatches();
SELECT add(1, 8), add(500, 9);
SELECT all_mismatches();

-- the outer query: a join with a table, HAVING, a subquery, ORDER BY
CREATE TABLE regions (k int, region text);
INSERT INTO regions VALUES (0, 'north'), (1, 'north'), (2, 'south'), (3, 'south'), (3, 'also south');
SELECT r.region, stream_ext.combine(a.users) AS users, (SELECT count(DISTINCT u) FROM ev e JOIN regions r2 USING (k) WHERE r2.region = r.region) AS oracle
  FROM am a JOIN regions r USING (k) GROUP BY r.region ORDER BY 1;
SELECT k, stream_ext.combine(users) FROM am GROUP BY k HAVING stream_ext.combine(users) < 500 ORDER BY k NULLS FIRST;
SELECT k, count(DISTINCT u) FROM ev GROUP BY k HAVING count(DISTINCT u) < 500 ORDER BY k NULLS FIRST;
SELECT (SELECT stream_ext.combine(users) FROM am WHERE k = o.k) AS users, o.k
  FROM (VALUES (1), (2), (7)) o(k) ORDER BY o.k;
PREPARE since(timestamptz) AS SELECT stream_ext.combine(users) FROM am WHERE minute >= $1;
EXECUTE since('2024-01-01 00:20:00+00');
INSERT INTO ev (k, u, ts) VALUES (1, 100000, '2024-01-01 00:25:00+00');
EXECUTE since('2024-01-01 00:20:00+00');
SELECT count(DISTINCT u) FROM ev WHERE ts >= '2024-01-01 00:20:00+00';

-- every other aggregate of the view: combine() equals the aggregate over the stream
SELECT count(*) = 0 AS other_aggs_equal FROM (
  (SELECT stream_ext.combine(hits), stream_ext.combine(with_x), stream_ext.combine(total),
          stream_ext.combine(xsum), round(stream_ext.combine(mean)::numeric, 8), stream_ext.combine(nmean),
          stream_ext.combine(lo), stream_ext.combine(hi), round(stream_ext.combine(vs)::numeric, 6),
          stream_ext.combine(vp), round(stream_ext.combine(sd)::numeric, 8),
          stream_ext.combine(all_big), stream_ext.combine(any_top),
          hll_cardinality(stream_ext.combine(users_hll))
     FROM am WHERE minute < '2024-01-01 00:15:00+00' GROUP BY k)
  EXCEPT ALL
  (SELECT count(*), count(x), sum(n), sum(x), round(avg(x)::numeric, 8), avg(n), min(x), max(n),
          round(var_samp(x)::numeric, 6), var_pop(n), round(stddev(x)::numeric, 8),
          bool_and(x > 10), bool_or(x > 99),
          hll_cardinality(hll_add_agg(hll_hash_integer(u)))
     FROM ev WHERE ts < '2024-01-01 00:15:00+00' GROUP BY k)) d;
-- a t-digest merges into a digest of the same values (approximate quantiles:
-- the merged digest and one built in a single pass agree closely)
SELECT count(*) AS k_groups, max(abs(c.median - o.median)) < 2 AS medians_close,
       bool_and(c.total = o.total) AS digest_counts_equal
  FROM (SELECT k, tdigest_percentile(d, 0.5) AS median, max(tdigest_count(d)) AS total
          FROM (SELECT k, stream_ext.combine(digest) AS d FROM am GROUP BY k) x GROUP BY k) c
  JOIN (SELECT k, tdigest_percentile(x, 100, 0.5) AS median, count(x) AS total FROM ev GROUP BY k) o
    ON c.k IS NOT DISTINCT FROM o.k;

-- a tumbling window
CREATE VIEW tw WITH (continuous) AS
  SELECT stream_ext.tumble(ts, '10 minutes') AS w, count(DISTINCT u) AS users, count(*) AS n
    FROM ev GROUP BY 1;
SELECT stream_ext.combine(users) = (SELECT count(DISTINCT u) FROM ev WHERE ts >= '2024-01-01 00:10:00+00') AS window_union,
       stream_ext.combine(n) = (SELECT count(*) FROM ev WHERE ts >= '2024-01-01 00:10:00+00') AS window_count
  FROM tw WHERE w >= '2024-01-01 00:10:00+00';

-- TTL: the groups past it are gone from the view, and from combine()
CREATE VIEW recent WITH (continuous, ttl = '1 hour', ttl_column = 'minute') AS
  SELECT date_bin('1 minute', ts, '2000-01-01') AS minute, count(DISTINCT u) AS users FROM ev GROUP BY 1;
INSERT INTO ev (k, u, ts) SELECT 1, g % 50, now() - interval '10 minutes' FROM generate_series(1, 200) g;
INSERT INTO ev (k, u, ts) SELECT 1, g % 80, now() - interval '3 hours' FROM generate_series(1, 200) g;
SELECT stream_ext.combine(users) AS before_ttl FROM recent WHERE minute > now() - interval '1 day';
SELECT count(*) > 0 AS maintained FROM stream_ext.run_maintenance();
SELECT stream_ext.combine(users) AS after_ttl, (SELECT count(DISTINCT u) FROM ev WHERE ts > now() - interval '1 hour') AS oracle
  FROM recent;

-- a changelog stream: a value is in a group while its signed count is > 0
SELECT stream_ext.create_stream('c52.cl', 'k int, u int, v int', changelog => true);
CREATE VIEW clv WITH (continuous) AS
  SELECT k, count(DISTINCT u) AS users, count(*) AS n, sum(v) AS s, avg(v) AS a FROM cl GROUP BY k;
INSERT INTO cl SELECT g % 5, g % 40, g, 1 FROM generate_series(1, 400) g;
INSERT INTO cl SELECT g % 5, g % 40, g, -1 FROM generate_series(1, 400) g WHERE g % 40 < 25 OR g % 5 = 4;
INSERT INTO cl VALUES (1, 1000, 5, 1), (1, 1000, 5, 1), (1, 1000, 5, -1), (2, 1001, 1, 1);
BEGIN;
INSERT INTO cl VALUES (3, 2000, 1, 1);
ROLLBACK;
-- the oracle: the rows added and not retracted, per (k, u)
CREATE VIEW cl_net AS
  SELECT k, u, sum(stream_ext_sign) AS net FROM cl GROUP BY k, u;
SELECT stream_ext.combine(users) AS users, stream_ext.combine(n) AS n FROM clv WHERE k <= 3;
SELECT count(DISTINCT u) FILTER (WHERE net > 0) AS users, sum(net) AS n FROM cl_net WHERE k <= 3;
SELECT k, stream_ext.combine(users) AS users, stream_ext.combine(n) AS n FROM clv GROUP BY k ORDER BY k;
SELECT k, count(DISTINCT u) FILTER (WHERE net > 0) AS users, sum(net) AS n FROM cl_net GROUP BY k HAVING sum(net) > 0 ORDER BY k;
-- its sum and avg are computed from several signed sums: refused
SELECT stream_ext.combine(s) FROM clv;
SELECT stream_ext.combine(a) FROM clv;

-- what combine() of a count(DISTINCT) column refuses
SELECT stream_ext.combine(users), sum(users) FROM am;
SELECT stream_ext.combine(users) FROM (SELECT * FROM am) a;

-- privileges: a reader with SELECT on the view reads combine() but not the
-- side table; a reader without SELECT on the column gets no combine() of it
SELECT count(DISTINCT u) AS oracle FROM ev WHERE ts < now() - interval '1 day';
CREATE ROLE c52_reader;
CREATE ROLE c52_partial;
GRANT USAGE ON SCHEMA c52 TO c52_reader, c52_partial;
GRANT SELECT ON am TO c52_reader;
GRANT SELECT (k, minute, hits) ON am TO c52_partial;
SET ROLE c52_reader;
SELECT stream_ext.combine(users) AS reader_combines FROM am WHERE minute < now() - interval '1 day';
SELECT count(*) FROM am_distinct_count_1_mrel;
RESET ROLE;
SET ROLE c52_partial;
SELECT stream_ext.combine(hits) > 0 AS partial_hits FROM am;
SELECT stream_ext.combine(users) FROM am;
RESET ROLE;
-- a view without GROUP BY: its values (side table and delta) read with the
-- view's permissions too
SELECT add(100, 52);
GRANT SELECT ON whole TO c52_reader;
SET ROLE c52_reader;
SELECT stream_ext.combine(users) = (SELECT users FROM whole) AS keyless_reader FROM whole;
SELECT count(*) FROM whole_delta;
RESET ROLE;
RESET search_path;
DROP SCHEMA c52 CASCADE;
DROP ROLE c52_reader;
DROP ROLE c52_partial;
