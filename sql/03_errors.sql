-- Queries a continuous view cannot maintain fail at CREATE time with
-- feature_not_supported (or wrong_object_type) naming the construct, and
-- leave nothing behind.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
SELECT stream_ext.create_stream('s', 'k text, x int, ts timestamptz, j json');
CREATE TABLE plain_table (k text, x int);
SELECT count(*) AS relations_before FROM pg_class \gset

SELECT q, pg_temp.err('CREATE VIEW bad WITH (continuous) AS ' || q) FROM (VALUES
  ('SELECT k, array_agg(x) FROM s GROUP BY k'),
  ('SELECT k, string_agg(k, '','') FROM s GROUP BY k'),
  ('SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM s'),
  ('SELECT k, sum(DISTINCT x) FROM s GROUP BY k'),
  ('SELECT k, count(x ORDER BY x) FROM s GROUP BY k'),
  ('SELECT k, count(*) FROM s GROUP BY k ORDER BY k'),
  ('SELECT k, count(*) FROM s GROUP BY k LIMIT 5'),
  ('SELECT k, count(*) OVER () FROM s'),
  ('SELECT k, count(*) FROM s WHERE x IN (SELECT 1) GROUP BY k'),
  ('SELECT count(*) FROM s GROUP BY random() > 0.5'),
  ('SELECT k, count(*) FROM s WHERE random() < 0.5 GROUP BY k'),
  ('SELECT k, count(*) FROM s GROUP BY ROLLUP (k)'),
  ('SELECT DISTINCT k, count(*) FROM s GROUP BY k'),
  ('SELECT k, x FROM plain_table'),
  ('SELECT k, count(*) FROM plain_table GROUP BY k'),
  ('SELECT s.k, count(*) FROM s FULL JOIN plain_table p ON p.k = s.k GROUP BY s.k'),
  ('WITH w AS (SELECT * FROM s) SELECT count(*) FROM w'),
  ('SELECT count(*) FROM s UNION ALL SELECT count(*) FROM s'),
  ('SELECT j, count(*) FROM s GROUP BY j'),
  ('SELECT k, count(*), generate_series(1, 2) FROM s GROUP BY k'),
  ('SELECT count(*) FROM (SELECT * FROM s) sub')
) AS t(q);

-- errors point at the offending clause
CREATE VIEW bad WITH (continuous) AS SELECT k, array_agg(x) FROM s GROUP BY k;
CREATE VIEW bad WITH (continuous) AS SELECT k, count(*) FROM s WHERE random() < 0.5 GROUP BY k;

-- options
CREATE VIEW bad WITH (continuous, nonsense = 1) AS SELECT count(*) FROM s;
CREATE OR REPLACE VIEW plain_table WITH (continuous) AS SELECT count(*) FROM s;
CREATE TEMP VIEW bad WITH (continuous) AS SELECT count(*) FROM s;
CREATE VIEW bad (a, b) WITH (continuous) AS SELECT count(*) FROM s;
CREATE VIEW s WITH (continuous) AS SELECT count(*) FROM s;

-- stream_ext.partial() is internal
SELECT stream_ext.partial(count(*), NULL::int8) FROM s;

-- nothing was left half-created
SELECT count(*) - :relations_before AS new_relations FROM pg_class;
SELECT count(*) AS views FROM stream_ext.continuous_views;
DROP TABLE s, plain_table;
