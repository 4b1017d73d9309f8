-- Wide values in group keys and count(DISTINCT): a value wider than a btree
-- index entry (~2.7 kB) does not break the batch.  Views with keys or
-- distinct values of variable-width types index them by a 64-bit hash with
-- an exact recheck.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;

SELECT stream_ext.create_stream('wide_s', 'k text, u text, n int');
-- 1 MB of hex that does not compress below a btree page: value number i
CREATE FUNCTION wide(i int) RETURNS text LANGUAGE sql IMMUTABLE AS
  $$ SELECT string_agg(md5(i::text || ':' || j), '') FROM generate_series(1, 32768) j $$;
SELECT length(wide(1)) AS bytes, pg_column_size(wide(1)) > 100000 AS incompressible;

CREATE VIEW wide_v WITH (continuous) AS
  SELECT k, count(*) AS c, sum(n) AS s, count(DISTINCT u) AS d FROM wide_s GROUP BY k;
-- two keys, one of them fixed-width
CREATE VIEW wide_two WITH (continuous) AS
  SELECT n % 2 AS p, k, count(*) AS c FROM wide_s GROUP BY 1, 2;
-- fixed-width keys, wide distinct values, no other aggregate
CREATE VIEW wide_bucket WITH (continuous) AS
  SELECT n % 3 AS b, count(DISTINCT u) AS d FROM wide_s GROUP BY 1;
-- no keys
CREATE VIEW wide_total WITH (continuous) AS
  SELECT count(*) AS c, count(DISTINCT u) AS d FROM wide_s;

-- the hash column and indexes: a unique one on the hash and one for reads by
-- key (hash on a variable-width first key, else btree on the fixed-width
-- ones before the first variable-width key), a plain one on the side tables'
-- hash; narrow views keep their unique index on the keys
SELECT c.relname, regexp_replace(pg_get_indexdef(i.indexrelid), '^.* USING ', '') AS index,
       i.indisunique
  FROM stream_ext.view_catalog v
  JOIN pg_class c ON c.oid = v.matrel OR c.oid = ANY (v.aux_tables)
  JOIN pg_index i ON i.indrelid = c.oid
 WHERE v.stream = 'wide_s'::regclass ORDER BY 1, 2;

-- the oracle: every view equals its query over the stream
CREATE FUNCTION wide_check() RETURNS TABLE (view text, differing bigint) LANGUAGE sql AS $$
  SELECT 'wide_v', count(*) FROM (
    (SELECT md5(k), c, s, d FROM wide_v
     EXCEPT ALL SELECT md5(k), count(*), sum(n), count(DISTINCT u) FROM wide_s GROUP BY k)
    UNION ALL
    (SELECT md5(k), count(*), sum(n), count(DISTINCT u) FROM wide_s GROUP BY k
     EXCEPT ALL SELECT md5(k), c, s, d FROM wide_v)) x
  UNION ALL
  SELECT 'wide_two', count(*) FROM (
    (SELECT p, md5(k), c FROM wide_two EXCEPT ALL SELECT n % 2, md5(k), count(*) FROM wide_s GROUP BY 1, 2)
    UNION ALL
    (SELECT n % 2, md5(k), count(*) FROM wide_s GROUP BY 1, 2 EXCEPT ALL SELECT p, md5(k), c FROM wide_two)) x
  UNION ALL
  SELECT 'wide_bucket', count(*) FROM (
    (TABLE wide_bucket EXCEPT ALL SELECT n % 3, count(DISTINCT u) FROM wide_s GROUP BY 1)
    UNION ALL
    (SELECT n % 3, count(DISTINCT u) FROM wide_s GROUP BY 1 EXCEPT ALL TABLE wide_bucket)) x
  UNION ALL
  SELECT 'wide_total', count(*) FROM (
    (TABLE wide_total EXCEPT ALL SELECT count(*), count(DISTINCT u) FROM wide_s)
    UNION ALL
    (SELECT count(*), count(DISTINCT u) FROM wide_s EXCEPT ALL TABLE wide_total)) x
$$;

-- batch 1: 1 MB keys and values, short ones, NULLs
INSERT INTO wide_s
SELECT CASE WHEN i % 4 = 0 THEN wide(i % 3) WHEN i % 4 = 1 THEN 'short' || (i % 2) END,
       CASE WHEN i % 5 = 0 THEN NULL WHEN i % 2 = 0 THEN wide(100 + i % 4) ELSE 'u' || (i % 3) END,
       i
  FROM generate_series(1, 24) i;
SELECT * FROM wide_check();
-- batch 2: the same wide keys and values again, and new ones
INSERT INTO wide_s
SELECT CASE WHEN i % 3 = 0 THEN wide(i % 5) ELSE NULL END,
       CASE WHEN i % 2 = 0 THEN wide(100 + i % 6) END,
       i
  FROM generate_series(1, 20) i;
SELECT * FROM wide_check();
-- batch 3: COPY
COPY wide_s (k, u, n) FROM PROGRAM 'printf "short0\tu1\t7\n\\\\N\tu2\t8\n"';
SELECT * FROM wide_check();
SELECT count(*) AS groups, sum(c) AS rows, max(length(k)) AS widest_key FROM wide_v;
SELECT * FROM wide_total;
-- reads by key use the hash index on the first key
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT c FROM wide_v WHERE k = 'short0';
RESET enable_seqscan;
SELECT c, s, d FROM wide_v WHERE k = 'short0';
SELECT c FROM wide_v WHERE k = wide(2);

-- a view created over a stream that already holds wide values: the backfill
CREATE VIEW wide_late WITH (continuous) AS
  SELECT k, count(DISTINCT u) AS d FROM wide_s GROUP BY k;
SELECT count(*) AS differing FROM (
  (SELECT md5(k), d FROM wide_late EXCEPT ALL SELECT md5(k), count(DISTINCT u) FROM wide_s GROUP BY k)
  UNION ALL
  (SELECT md5(k), count(DISTINCT u) FROM wide_s GROUP BY k EXCEPT ALL SELECT md5(k), d FROM wide_late)) x;

-- keys of several types, each hashed by its own type's hash function: a
-- timestamptz key (no cast: the hash does not depend on the time zone), a
-- numeric (variable-width; 1.0 = 1.00 is one group), a domain over text
CREATE DOMAIN wide_url AS text;
SELECT stream_ext.create_stream('typed_s', 'url wide_url, ts timestamptz, x numeric');
CREATE VIEW typed_v WITH (continuous) AS
  SELECT url, date_bin('1 minute', ts, '2000-01-01 00:00+00') AS minute, x, count(*) AS c
    FROM typed_s GROUP BY url, minute, x;
SET TimeZone = 'UTC';
INSERT INTO typed_s VALUES ('/a', '2026-01-01 10:00:10+00', 1.0), (wide(5), '2026-01-01 10:00:20+00', 2);
SET TimeZone = 'Asia/Kolkata';
INSERT INTO typed_s VALUES ('/a', '2026-01-01 10:00:30+00', 1.00), (wide(5), '2026-01-01 10:00:40+00', 2.0);
RESET TimeZone;
SELECT length(url), minute AT TIME ZONE 'UTC' AS minute_utc, x, c FROM typed_v ORDER BY 1;

-- Session windows: fragments are indexed without a size limit as well
CREATE VIEW wide_sessions WITH (continuous, session_gap = '10 minutes', time_column = 'ts') AS
  SELECT url, count(*) AS c FROM typed_s GROUP BY url;
CREATE VIEW wide_sessions2 WITH (continuous, session_gap = '10 minutes', time_column = 'ts') AS
  SELECT x, url, count(*) AS c FROM typed_s GROUP BY x, url;
SELECT c.relname, regexp_replace(pg_get_indexdef(i.indexrelid), '^.* USING ', '') AS index
  FROM pg_class c JOIN pg_index i ON i.indrelid = c.oid
 WHERE c.relname IN ('wide_sessions_mrel', 'wide_sessions2_mrel') ORDER BY 1;
INSERT INTO typed_s VALUES (wide(5), '2026-01-01 10:05:00+00', 3), (wide(6), '2026-01-01 11:00:00+00', 3);
INSERT INTO typed_s VALUES (wide(5), '2026-01-01 10:30:00+00', 3);
SELECT md5(url), session_start AT TIME ZONE 'UTC' AS session_start, c FROM wide_sessions ORDER BY 1, 2;
SELECT x, md5(url), session_start AT TIME ZONE 'UTC' AS session_start, c FROM wide_sessions2 ORDER BY 1, 2, 3;
SELECT stream_ext.compact_sessions('wide_sessions') AS removed;
SELECT md5(url), session_start AT TIME ZONE 'UTC' AS session_start, c FROM wide_sessions ORDER BY 1, 2;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT session_start FROM wide_sessions_mrel WHERE url = '/a';
RESET enable_seqscan;

-- Collisions.  With stream_ext.debug_key_hash_bits = 1 a view's hashes have
-- one bit: most groups and pairs share their hash with others.
SELECT stream_ext.create_stream('coll_s', 'k text, u text');
SELECT stream_ext.create_stream('coll_k_s', 'k text');
SET stream_ext.debug_key_hash_bits = 1;
-- distinct values: the recheck keeps every pair apart, counts stay exact
CREATE VIEW coll_d WITH (continuous) AS SELECT count(DISTINCT u) AS d FROM coll_s;
CREATE VIEW coll_bd WITH (continuous) AS
  SELECT k, count(*) AS c, count(DISTINCT u) AS d FROM coll_s GROUP BY k;
-- group keys: groups with the same hash are kept apart, never merged
CREATE VIEW coll_k WITH (continuous) AS SELECT k, count(*) AS c FROM coll_k_s GROUP BY k;
RESET stream_ext.debug_key_hash_bits;
-- the views keep their one-bit hash
SELECT pg_get_viewdef('coll_k') IS NOT NULL AS ok,
       maintain_sql ~ 'OPERATOR\(pg_catalog\.&\) 1\M' AS one_bit
  FROM stream_ext.view_catalog WHERE view = 'coll_k'::regclass;
-- coll_bd's two keys k2 and k3 have different one-bit hashes (two groups of
-- one batch with the same hash fail the batch: below)
SELECT stream_ext.key_hash('k2'::text, 0) & 1 <> stream_ext.key_hash('k3'::text, 0) & 1 AS apart;
INSERT INTO coll_s SELECT 'k' || (2 + i % 2), 'u' || (i % 7) FROM generate_series(1, 30) i;
INSERT INTO coll_s SELECT 'k' || (2 + i % 2), wide(i % 4) FROM generate_series(1, 10) i;
INSERT INTO coll_s SELECT 'k' || (2 + i % 2), 'u' || (i % 9) FROM generate_series(1, 30) i;
SELECT d, (SELECT count(DISTINCT u) FROM coll_s) AS expected FROM coll_d;
SELECT k, c, d, (SELECT count(DISTINCT u) FROM coll_s s WHERE s.k = v.k) AS expected
  FROM coll_bd v ORDER BY k;
-- five keys, one statement each, into two hash values: the view appends
-- (docs/internals.md, "Append mode"), so every statement succeeds, and no
-- group is merged
CREATE TABLE coll_outcome (k text, result text);
DO $$
DECLARE
  key text;
BEGIN
  FOREACH key IN ARRAY ARRAY['a', 'b', 'c', 'd', 'e', 'a', 'b', 'c', 'd', 'e'] LOOP
    BEGIN
      INSERT INTO coll_k_s VALUES (key);
      INSERT INTO coll_outcome VALUES (key, 'ok');
    EXCEPTION WHEN program_limit_exceeded THEN
      INSERT INTO coll_outcome VALUES (key, SQLERRM);
    END;
  END LOOP;
END $$;
SELECT result, count(*) FROM coll_outcome GROUP BY 1 ORDER BY 1;
SELECT count(*) AS groups, sum(c) AS rows, (SELECT count(*) FROM coll_k_s) AS stream_rows FROM coll_k;
-- compaction folds the groups whose hash no other group has into the
-- materialization (its unique index is on the hash); the others stay in
-- the delta, where reads merge them by their keys
SELECT stream_ext.compact('coll_k') AS folded;
SELECT (SELECT count(*) FROM coll_k_mrel) AS compacted_groups,
       (SELECT count(DISTINCT k) FROM coll_k_delta) AS groups_left_in_delta;
SELECT count(*) AS groups, sum(c) AS rows FROM coll_k;
-- two new groups of one batch with the same hash: both kept
SET stream_ext.debug_key_hash_bits = 1;
SELECT stream_ext.create_stream('coll_p_s', 'k text');
CREATE VIEW coll_pair WITH (continuous) AS SELECT k, count(*) AS c FROM coll_p_s GROUP BY k;
RESET stream_ext.debug_key_hash_bits;
SELECT stream_ext.key_hash('k0'::text, 0) & 1 = stream_ext.key_hash('k1'::text, 0) & 1 AS together;
\set VERBOSITY sqlstate
INSERT INTO coll_p_s VALUES ('k0'), ('k1');
\set VERBOSITY default
INSERT INTO coll_p_s VALUES ('k0');
INSERT INTO coll_p_s VALUES ('k0');
TABLE coll_pair ORDER BY k;
SELECT count(*) AS differing FROM (
  (TABLE coll_k EXCEPT ALL SELECT k, count(*) FROM coll_k_s GROUP BY k)
  UNION ALL
  (SELECT k, count(*) FROM coll_k_s GROUP BY k EXCEPT ALL TABLE coll_k)) x;

DROP TABLE coll_s, coll_k_s, coll_p_s, wide_s, typed_s CASCADE;
DROP DOMAIN wide_url;
DROP TABLE coll_outcome;
DROP FUNCTION wide_check(), wide(int);
