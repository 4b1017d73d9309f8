-- First contact: the mistakes and edge cases a new user meets first get
-- clear errors (or just work), and nothing is left half created.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE SCHEMA fc;
SET search_path = fc, public;
CREATE FUNCTION fc.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE q;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- create_stream(): a NULL argument is an error, not a NULL result
SELECT fc.err($$SELECT stream_ext.create_stream(NULL, 'a int')$$);
SELECT fc.err($$SELECT stream_ext.create_stream('fc.n', NULL)$$);
-- arrival_timestamp is stream_ext's
SELECT stream_ext.create_stream('fc.a', 'arrival_timestamp timestamptz, a int');
SELECT fc.err($$SELECT stream_ext.create_stream('fc.a', 'a int, "arrival_timestamp" text')$$);
-- not in the extension's own schema, qualified or through search_path
SELECT stream_ext.create_stream('stream_ext.s', 'a int');
SELECT fc.err($$SELECT stream_ext.create_stream('stream_ext.s', 'a int')$$);
SET search_path = stream_ext, fc;
SELECT fc.err($$SELECT stream_ext.create_stream('s', 'a int')$$);
SET search_path = fc, public;
-- 1,599 columns of its own at most (PostgreSQL's 1,600 less arrival_timestamp)
SELECT stream_ext.create_stream('fc.wide', (SELECT string_agg('c' || g || ' int', ', ') FROM generate_series(1, 1600) g));
SELECT fc.err($$SELECT stream_ext.create_stream('fc.wide', (SELECT string_agg('c' || g || ' int', ', ') FROM generate_series(1, 1600) g))$$);
SELECT stream_ext.create_stream('fc.wide', (SELECT string_agg('c' || g || ' int', ', ') FROM generate_series(1, 1599) g));
SELECT count(*) AS columns FROM pg_attribute WHERE attrelid = 'fc.wide'::regclass AND attnum > 0;
-- an overlong name is truncated with PostgreSQL's NOTICE, quoted or not
SELECT stream_ext.create_stream('fc.abcdefghij_abcdefghij_abcdefghij_abcdefghij_abcdefghij_abcdefghij', 'a int');
SELECT stream_ext.create_stream('fc."Abcdefghij ""abcdefghij"" abcdefghij abcdefghij abcdefghij abcdefghij"', 'a int');
-- exactly 63 bytes: no notice
SELECT stream_ext.create_stream('fc.abcdefghij_abcdefghij_abcdefghij_abcdefghij_abcdefghij_abcdefg', 'a int');
-- nothing else was created
SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname IN ('fc', 'stream_ext') AND c.relkind = 'r'
   AND c.relname NOT IN ('stream_catalog', 'view_catalog', 'kafka_sources', 'kafka_offsets',
                         'dead_letters', 'kafka_sinks', 'sink_queue', 'session_views',
                         'transform_catalog', 'lateness_views', 'watermarks', 'late_rows',
                         'invalid_objects', 'backfills', 'backfill_offsets', 'change_streams', 'stream_joins',
                         'stream_left_joins', 'shared_storage', 'shared_storage_members')
 ORDER BY 1;

-- count(DISTINCT) of an anonymous row, or a row as group key: 0A000
SELECT stream_ext.create_stream('fc.ev', 'k int, x int, note text, spare text, ts timestamptz');
SELECT fc.err('CREATE VIEW bad WITH (continuous) AS SELECT count(DISTINCT (k, x)) FROM ev');
SELECT fc.err('CREATE VIEW bad WITH (continuous) AS SELECT (k, x) AS kx, count(*) FROM ev GROUP BY 1');
-- a composite type made with CREATE TYPE is fine
CREATE TYPE fc.kx AS (k int, x int);
CREATE VIEW kx_distinct WITH (continuous) AS SELECT count(DISTINCT (k, x)::fc.kx) AS n FROM ev;

-- ALTER TABLE on a stream: only the columns views read are protected
CREATE VIEW by_k WITH (continuous) AS SELECT k, sum(x) AS s FROM ev GROUP BY k;
INSERT INTO ev (k, x, note, spare) VALUES (1, 10, 'a', 'b'), (2, 20, 'c', 'd');
ALTER TABLE ev DROP COLUMN x;
SELECT fc.err('ALTER TABLE ev DROP COLUMN x');
SELECT fc.err('ALTER TABLE ev ALTER COLUMN k TYPE bigint');
SELECT fc.err('ALTER TABLE ev RENAME COLUMN k TO key');
-- columns no view reads: all fine
ALTER TABLE ev DROP COLUMN spare;
ALTER TABLE ev ALTER COLUMN note TYPE varchar(20);
ALTER TABLE ev RENAME COLUMN note TO comment;
-- a column read by count(DISTINCT) only is protected too
SELECT fc.err('ALTER TABLE ev DROP COLUMN k');
DROP VIEW kx_distinct;
-- ADD COLUMN appends after arrival_timestamp (docs: name the columns)
ALTER TABLE ev ADD COLUMN extra int;
SELECT attname FROM pg_attribute WHERE attrelid = 'ev'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum;
INSERT INTO ev (k, x, comment, extra) VALUES (1, 5, 'e', 7);
SELECT * FROM by_k ORDER BY k;

-- transforms: the columns they read, and those they write in their output
-- stream, are protected; the others are not
SELECT stream_ext.create_stream('fc.src', 'a int, b int, unused int');
SELECT stream_ext.create_stream('fc.dst', 'a int, free int');
CREATE VIEW tr WITH (continuous, output_stream = 'fc.dst') AS SELECT a FROM src WHERE b > 0;
SELECT fc.err('ALTER TABLE src DROP COLUMN a');
SELECT fc.err('ALTER TABLE src DROP COLUMN b');
SELECT fc.err('ALTER TABLE dst DROP COLUMN a');
ALTER TABLE src DROP COLUMN unused;
ALTER TABLE dst DROP COLUMN free;
INSERT INTO src (a, b) VALUES (1, 1), (2, 0);
SELECT a FROM dst;

-- allowed_lateness: whole late rows are kept, so every column is read
SELECT stream_ext.create_stream('fc.late', 'k int, ts timestamptz, other int');
CREATE VIEW late_v WITH (continuous, allowed_lateness = '1 minute') AS
  SELECT stream_ext.tumble(ts, '1 minute') AS w, count(*) AS n FROM late GROUP BY 1;
SELECT fc.err('ALTER TABLE late DROP COLUMN other');
-- explain() of such a view: its statements take the watermark as $1
SELECT line ~ '^Watermark \(\$1\): none yet' AS watermark_line
  FROM stream_ext.explain('late_v') WITH ORDINALITY AS e(line, i) WHERE i = 2;
INSERT INTO late (k, ts) VALUES (1, '2026-01-01 10:00+00'), (1, '2026-01-01 10:09+00');
SELECT line AS watermark_line
  FROM stream_ext.explain('late_v') WITH ORDINALITY AS e(line, i) WHERE i = 2;
SELECT count(*) > 3 AS has_plan, bool_or(line ~ 'Filter: .*\$1|2026') AS uses_watermark
  FROM stream_ext.explain('late_v') AS e(line);
SELECT * FROM late_v ORDER BY w;
DROP VIEW late_v;

-- an error in maintenance: a short CONTEXT naming the view, not the
-- generated statement; a user's function keeps its own line
SELECT stream_ext.create_stream('fc.dz', 'k int, x int');
CREATE VIEW dz_v WITH (continuous) AS SELECT k, sum(100 / x) AS q FROM dz GROUP BY k;
\set SHOW_CONTEXT always
INSERT INTO dz VALUES (1, 0);
DROP VIEW dz_v;
CREATE FUNCTION fc.inv(int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN RETURN 100 / $1; END $$;
CREATE VIEW dz_f WITH (continuous) AS SELECT k, sum(fc.inv(x)) AS q FROM dz GROUP BY k;
INSERT INTO dz VALUES (1, 0);
DROP VIEW dz_f;
CREATE VIEW dz_t WITH (continuous) AS SELECT k, 100 / x AS q FROM dz;
INSERT INTO dz VALUES (1, 0);
DROP VIEW dz_t;
-- backfill at CREATE VIEW
INSERT INTO dz VALUES (1, 0);
CREATE VIEW dz_b WITH (continuous) AS SELECT k, sum(100 / x) AS q FROM dz GROUP BY k;
\set SHOW_CONTEXT errors

-- a database still at 0.1 (the module is newer): what needs 0.2 says to
-- update the extension
DROP DATABASE IF EXISTS stream_ext_fc_old;
CREATE DATABASE stream_ext_fc_old;
\c stream_ext_fc_old
SET client_min_messages = warning;
CREATE EXTENSION stream_ext VERSION '0.1';
RESET client_min_messages;
SELECT stream_ext.create_stream('s', 'k int, ts timestamptz');
CREATE VIEW t WITH (continuous) AS SELECT k FROM s WHERE k > 0;
CREATE VIEW l WITH (continuous, allowed_lateness = '1 minute') AS
  SELECT date_bin('1 minute', ts, '2000-01-01') AS w, count(*) FROM s GROUP BY 1;
CREATE VIEW w WITH (continuous, session_gap = '1 minute', time_column = 'ts') AS
  SELECT k, count(*) FROM s GROUP BY k;
SELECT relname FROM pg_class WHERE relname IN ('t', 'l', 'w') ORDER BY 1;
-- after the update they work
SET client_min_messages = warning;
ALTER EXTENSION stream_ext UPDATE;
RESET client_min_messages;
CREATE VIEW t WITH (continuous) AS SELECT k FROM s WHERE k > 0;
INSERT INTO s VALUES (1, now()), (0, now());
SELECT * FROM t;
\c contrib_regression
DROP DATABASE stream_ext_fc_old;
