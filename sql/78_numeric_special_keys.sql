-- numeric group keys and count(DISTINCT) values x and -x, NaN, Infinity
-- and -Infinity: PostgreSQL's extended hash of numeric ignores the sign
-- and gives the three special values the same hash, so
-- stream_ext.key_hash() (src/query/aggsupport.c) mixes the sign in and
-- gives each special value a constant of its own.  Before, a batch or
-- backfill bringing two such values as new groups of a view that upserts
-- failed (21000, "ON CONFLICT DO UPDATE command cannot affect row a second
-- time") and one bringing the second to a stored group failed with 54000
-- (two groups with the same key hash).  The oracle: each view equals its query as plain SQL over the
-- stream.  Found by test/fuzz/view_oracle.py.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
CREATE SCHEMA nsk;
SET search_path = nsk, public;
SET stream_ext.compact_threshold = -1;

SELECT stream_ext.create_stream('ev', 'n numeric, t text, i int');
SELECT stream_ext.set_retention('ev', NULL);
INSERT INTO ev VALUES ('NaN', 'a', 1), ('Infinity', 'b', 2), ('-Infinity', 'c', 3),
                      (1.0, 'd', 4), (1.00, 'e', 5), (NULL, 'f', 6), ('NaN', 'g', 7),
                      (-1.0, 'd', 40), (-0.1, 'e', 41), (0.1, 'e', 42), (0, 'e', 43), ('-0', 'e', 44);

-- the hashes differ (equal values: 1.0 and 1.00 -- still hash alike)
SELECT count(DISTINCT stream_ext.key_hash(x, 0)) AS hashes
  FROM (VALUES ('NaN'::numeric), ('Infinity'), ('-Infinity'), (0), (1.0), (-1.0), (-0.5), (0.5)) v(x);
SELECT stream_ext.key_hash(1.0::numeric, 0) = stream_ext.key_hash(1.00::numeric, 0) AS equal_values_alike,
       stream_ext.key_hash(-1.0::numeric, 0) = stream_ext.key_hash(-1.00::numeric, 0) AS negative_alike,
       stream_ext.key_hash('-0'::numeric, 0) = stream_ext.key_hash(0.00::numeric, 0) AS zero_alike,
       stream_ext.key_hash('NaN'::numeric, 0) = stream_ext.key_hash('NaN'::numeric, 0) AS nan_alike;

-- backfilled from the rows above (an upsert): failed with 21000
CREATE VIEW by_n WITH (continuous) AS
  SELECT n, count(*) AS c, sum(i) AS s FROM ev GROUP BY n;
CREATE VIEW by_round WITH (continuous) AS
  SELECT round(n, 1) AS r, count(*) AS c, min(t) AS first_t FROM ev GROUP BY 1;
-- upserts (a count(DISTINCT) of text): every batch
CREATE VIEW by_n_distinct WITH (continuous) AS
  SELECT n, count(*) AS c, count(DISTINCT t) AS dt FROM ev GROUP BY n;
-- the specials as distinct values of one group, and as a second key
CREATE VIEW distinct_n WITH (continuous) AS
  SELECT i % 2 AS odd, count(DISTINCT n) AS dn FROM ev GROUP BY 1;
CREATE VIEW by_t_n WITH (continuous) AS
  SELECT t, n, count(*) AS c FROM ev GROUP BY t, n;

-- batches bringing each special again, two at once, one at a time
INSERT INTO ev VALUES ('Infinity', 'h', 8), ('-Infinity', 'h', 9);
INSERT INTO ev VALUES ('NaN', 'i', 10);
INSERT INTO ev SELECT (ARRAY['NaN', 'Infinity', '-Infinity', '2'])[1 + g % 4]::numeric, 't' || g % 3, g
  FROM generate_series(1, 100) g;
INSERT INTO ev SELECT (g % 21 - 10) / 4.0, 't' || g % 3, g FROM generate_series(1, 100) g;

CREATE FUNCTION diff(v regclass, q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((TABLE %s EXCEPT ALL %s) UNION ALL (%s EXCEPT ALL TABLE %s)) d',
                 v, q, q, v) INTO n;
  RETURN n;
END $$;
CREATE FUNCTION check_all() RETURNS TABLE (view text, rows bigint, differing bigint) LANGUAGE sql AS $$
  SELECT 'by_n', (SELECT count(*) FROM by_n),
         diff('by_n', 'SELECT n, count(*) AS c, sum(i) AS s FROM ev GROUP BY n')
  UNION ALL
  SELECT 'by_round', (SELECT count(*) FROM by_round),
         diff('by_round', 'SELECT round(n, 1) AS r, count(*) AS c, min(t) AS first_t FROM ev GROUP BY 1')
  UNION ALL
  SELECT 'by_n_distinct', (SELECT count(*) FROM by_n_distinct),
         diff('by_n_distinct', 'SELECT n, count(*) AS c, count(DISTINCT t) AS dt FROM ev GROUP BY n')
  UNION ALL
  SELECT 'distinct_n', (SELECT count(*) FROM distinct_n),
         diff('distinct_n', 'SELECT i % 2 AS odd, count(DISTINCT n) AS dn FROM ev GROUP BY 1')
  UNION ALL
  SELECT 'by_t_n', (SELECT count(*) FROM by_t_n),
         diff('by_t_n', 'SELECT t, n, count(*) AS c FROM ev GROUP BY t, n')
$$;
SELECT * FROM check_all();
SELECT stream_ext.compact(v) > 0 AS compacted
  FROM unnest(ARRAY['by_n', 'by_round', 'distinct_n', 'by_t_n']::regclass[]) v;
INSERT INTO ev VALUES ('NaN', 'j', 11), ('Infinity', 'j', 12), ('-Infinity', 'j', 13), (3, 'j', 14);
SELECT * FROM check_all();
SELECT * FROM by_n WHERE n IS NULL OR n = 'NaN' OR abs(n) = 'Infinity' OR abs(n) IN (0, 0.1, 1) ORDER BY n;
-- reads by key find each special
SELECT * FROM by_n WHERE n = 'NaN';
SELECT * FROM by_n WHERE n = '-Infinity';
SET stream_ext.key_read_scan = off;
SELECT * FROM by_n WHERE n = 'Infinity';
RESET stream_ext.key_read_scan;

DROP SCHEMA nsk CASCADE;
