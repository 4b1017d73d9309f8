-- Reads in key order (src/query/read_order.c, add_sorted_cheapest()): a
-- branch of the view's read whose cheapest path is an aggregation yielding
-- few rows (here the merged delta groups over an empty delta) gets a sort
-- of that path that costs no more than it, fuzzily.  add_path() took the
-- sort as dominating its own input and freed the input, so the sort's
-- subpath was freed memory: planning "WHERE k1 = 3 ORDER BY k2 DESC LIMIT
-- 3" then failed with "stack depth limit exceeded" (a plan that recursed
-- into itself).  Such a sort now replaces its input in the path list.  The
-- oracle: the same reads of the plain query over the stream, and with
-- stream_ext.ordered_reads off.  Found by test/fuzz/view_oracle.py (seed 49).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
CREATE SCHEMA ros;
SET search_path = ros, public;
SET stream_ext.compact_threshold = -1;

SELECT stream_ext.create_stream('s', 'i int, ts timestamptz');
SELECT stream_ext.set_retention('s', NULL);
CREATE VIEW v WITH (continuous) AS
  SELECT i % 7 AS k1, date_trunc('hour', ts) AS k2, sum(i) AS total, count(DISTINCT i) AS d
    FROM s GROUP BY 1, 2;
INSERT INTO s SELECT g, timestamptz '2024-01-01 00:00+00' + g * interval '1 minute'
  FROM generate_series(1, 10000) g;
SELECT stream_ext.compact('v');
-- the statistics the planner needs to cost that branch as it does
ANALYZE v_mrel;
ANALYZE v_delta;
ANALYZE v_distinct_count_2_mrel;

SELECT * FROM v WHERE k1 = 3 ORDER BY k2 DESC LIMIT 3;
SELECT * FROM v WHERE k1 = 0 ORDER BY k2 DESC LIMIT 1;
SELECT * FROM v ORDER BY k1 DESC, k2 DESC LIMIT 2;

CREATE FUNCTION differing(q_view text, q_plain text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE a text; b text;
BEGIN
  EXECUTE format('SELECT array_agg(x ORDER BY o)::text FROM (SELECT x, row_number() OVER () AS o FROM (%s) x) y', q_view) INTO a;
  EXECUTE format('SELECT array_agg(x ORDER BY o)::text FROM (SELECT x, row_number() OVER () AS o FROM (%s) x) y', q_plain) INTO b;
  RETURN CASE WHEN a IS NOT DISTINCT FROM b THEN 0 ELSE 1 END;
END $$;
SELECT sum(differing(format('SELECT * FROM v WHERE k1 = %s ORDER BY k2 %s LIMIT %s', k, dir, lim),
                     format('SELECT * FROM (SELECT i %% 7 AS k1, date_trunc(''hour'', ts) AS k2, sum(i) AS total, count(DISTINCT i) AS d FROM s GROUP BY 1, 2) p WHERE k1 = %s ORDER BY k2 %s LIMIT %s', k, dir, lim))) AS differing_reads
  FROM generate_series(0, 6) k, (VALUES (1), (3), (50)) l(lim), (VALUES ('ASC'), ('DESC')) d(dir);
SET stream_ext.ordered_reads = off;
SELECT * FROM v WHERE k1 = 3 ORDER BY k2 DESC LIMIT 3;
RESET stream_ext.ordered_reads;

DROP SCHEMA ros CASCADE;
