-- stream_ext.combine() over no view rows (none read, or none passing its
-- FILTER) equals the aggregate over no stream rows: count() is 0, not NULL
-- (src/query/combine.c, initial_state_if_null(): merge_states() of no rows
-- is NULL, which finalize() returned as is; the aggregate starts from its
-- initial value).  Aggregates without one (sum, min, bit_or, ...) stay
-- NULL, and so do those whose final function makes NULL of it (avg).
-- Found by test/fuzz/view_oracle.py (seed 2014).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
CREATE SCHEMA cnr;
SET search_path = cnr, public;

SELECT stream_ext.create_stream('s', 'i int, t text, f float8');
SELECT stream_ext.set_retention('s', NULL);
CREATE VIEW v WITH (continuous) AS
  SELECT i AS k, count(*) AS n, count(t) AS nt, sum(i) AS total, avg(i) AS mean,
         count(DISTINCT i) AS d, bit_or(i) AS b, avg(f) AS af,
         count(*) FILTER (WHERE i > 0) AS npos, stddev(f) AS sd
    FROM s GROUP BY i;
CREATE VIEW keyless WITH (continuous) AS
  SELECT count(*) AS n, sum(i) AS total FROM s WHERE i > 100;

-- the same reads of the view and of the stream, rows as text
CREATE FUNCTION both_ways(view_where text, stream_where text)
RETURNS TABLE (source text, n text, nt text, total text, mean text, d text, b text, af text, npos text, sd text)
LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY EXECUTE format(
    'SELECT ''view'', stream_ext.combine(n)::text, stream_ext.combine(nt)::text, stream_ext.combine(total)::text,
            stream_ext.combine(mean)::text, stream_ext.combine(d)::text, stream_ext.combine(b)::text,
            stream_ext.combine(af)::text, stream_ext.combine(npos)::text, stream_ext.combine(sd)::text
       FROM v WHERE %s', view_where);
  RETURN QUERY EXECUTE format(
    'SELECT ''stream'', count(*)::text, count(t)::text, sum(i)::text, avg(i)::text, count(DISTINCT i)::text,
            bit_or(i)::text, avg(f)::text, (count(*) FILTER (WHERE i > 0))::text, stddev(f)::text
       FROM s WHERE %s', stream_where);
END $$;

-- an empty view
SELECT * FROM both_ways('true', 'true');
INSERT INTO s VALUES (1, 'a', 1.5), (-1, NULL, NULL), (2, 'b', 2.5);
SELECT * FROM both_ways('true', 'true');
-- no row read
SELECT * FROM both_ways('k = 5', 'i = 5');
-- a group whose FILTER matched nothing: its stored state is 0 already
SELECT * FROM both_ways('k = -1', 'i = -1');
-- the call's own FILTER matching no row
SELECT stream_ext.combine(n) FILTER (WHERE k > 7) AS n, stream_ext.combine(npos) FILTER (WHERE k > 7) AS npos,
       stream_ext.combine(total) FILTER (WHERE k > 7) AS total
  FROM v;
-- grouped: groups without rows do not exist, as in SQL
SELECT k > 0 AS pos, stream_ext.combine(n) AS n FROM v WHERE k <> 2 GROUP BY 1 ORDER BY 1;
-- a keyless view (one row, always): its row is read
SELECT stream_ext.combine(n) AS n, stream_ext.combine(total) AS total FROM keyless;
SELECT stream_ext.combine(n) AS n, stream_ext.combine(total) AS total FROM keyless WHERE false;
-- prepared, generic plan
SET plan_cache_mode = force_generic_plan;
PREPARE c(int) AS SELECT stream_ext.combine(n) AS n, stream_ext.combine(nt) AS nt FROM v WHERE k = $1;
EXECUTE c(5);
EXECUTE c(1);
DEALLOCATE c;
RESET plan_cache_mode;

DROP SCHEMA cnr CASCADE;
