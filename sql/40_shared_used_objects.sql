-- The objects a member of a shared storage uses (docs/continuous-views.md,
-- "Lifecycle and DDL"): views of one stream with the same GROUP BY share one
-- materialization, but a function, or a joined table's column, only one of
-- them uses belongs to that view.  DROP ... CASCADE takes that view along
-- and no other, and once the view is dropped or replaced without it, the
-- function can be dropped.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE SCHEMA su40;
SET search_path = su40, public;
CREATE FUNCTION twice(int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT $1 * 2';
CREATE FUNCTION thrice(int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT $1 * 3';
CREATE FUNCTION plus1(int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT $1 + 1';
SELECT stream_ext.create_stream('su40.ev', 'k int, v int');

-- the first view has tables of its own until the second joins them
CREATE VIEW a WITH (continuous) AS SELECT k, sum(twice(v)) AS s2 FROM ev GROUP BY k;
CREATE VIEW b WITH (continuous) AS SELECT k, count(*) AS n FROM ev GROUP BY k;
CREATE VIEW c WITH (continuous) AS SELECT k, sum(thrice(v)) AS s3 FROM ev GROUP BY k;
CREATE VIEW d WITH (continuous) AS SELECT k, max(plus1(v)) AS m FROM ev GROUP BY k;
SELECT view, matrel = (SELECT matrel FROM stream_ext.view_catalog WHERE view = 'su40.a'::regclass) AS shared
  FROM stream_ext.view_catalog WHERE view::regclass::oid IN
       (SELECT oid FROM pg_class WHERE relnamespace = 'su40'::regnamespace) ORDER BY 1;
INSERT INTO ev SELECT i % 3, i FROM generate_series(1, 30) i;

-- each function is held by the view that uses it, not by the storage
\set VERBOSITY terse
DROP FUNCTION twice(int);
DROP FUNCTION thrice(int);
\set VERBOSITY default
SELECT pg_describe_object(classid, objid, objsubid) AS depender,
       pg_describe_object(refclassid, refobjid, refobjsubid) AS uses
  FROM pg_depend
 WHERE refclassid = 'pg_proc'::regclass
   AND refobjid IN ('su40.twice(int)'::regprocedure, 'su40.thrice(int)'::regprocedure,
                    'su40.plus1(int)'::regprocedure)
 ORDER BY 2, 1;

-- CASCADE takes the view that uses it, and only that one
SET client_min_messages = notice;
DROP FUNCTION twice(int) CASCADE;
RESET client_min_messages;
SELECT view FROM stream_ext.view_catalog WHERE view::regclass::oid IN
       (SELECT oid FROM pg_class WHERE relnamespace = 'su40'::regnamespace) ORDER BY 1;
INSERT INTO ev VALUES (1, 100), (5, 5);
SELECT * FROM b ORDER BY k;
SELECT * FROM c ORDER BY k;
SELECT k, count(*) AS n FROM ev GROUP BY k ORDER BY k;

-- a member dropped: what only it used is free
DROP VIEW c;
DROP FUNCTION thrice(int);

-- a member replaced without the function: free once the rebuild beside it
-- is swapped in, and the view keeps working
CREATE OR REPLACE VIEW d WITH (continuous) AS SELECT k, max(v) AS m FROM ev GROUP BY k;
SELECT stream_ext.wait_backfill('d');
DROP FUNCTION plus1(int);
INSERT INTO ev VALUES (2, 1000);
SELECT (SELECT array_agg(row(k, m) ORDER BY k) FROM d) =
       (SELECT array_agg(row(k, m) ORDER BY k) FROM (SELECT k, max(v) AS m FROM ev GROUP BY k) q) AS d_exact;
SELECT (SELECT array_agg(row(k, n) ORDER BY k) FROM b) =
       (SELECT array_agg(row(k, n) ORDER BY k) FROM (SELECT k, count(*) AS n FROM ev GROUP BY k) q) AS b_exact;

-- the same for the columns of a joined table: all members join the table,
-- each reads its own columns
CREATE TABLE dim (k int PRIMARY KEY, x int, y int);
INSERT INTO dim SELECT i, i, 10 * i FROM generate_series(0, 9) i;
CREATE VIEW jx WITH (continuous) AS
    SELECT e.k, sum(t.x) AS sx FROM ev e JOIN dim t ON t.k = e.k GROUP BY e.k;
CREATE VIEW jy WITH (continuous) AS
    SELECT e.k, sum(t.y) AS sy FROM ev e JOIN dim t ON t.k = e.k GROUP BY e.k;
SELECT (SELECT matrel FROM stream_ext.view_catalog WHERE view = 'su40.jx'::regclass) =
       (SELECT matrel FROM stream_ext.view_catalog WHERE view = 'su40.jy'::regclass) AS shared;
\set VERBOSITY terse
ALTER TABLE dim DROP COLUMN y;
ALTER TABLE dim DROP COLUMN x;
ALTER TABLE dim RENAME COLUMN y TO yy;
\set VERBOSITY default
SET client_min_messages = notice;
ALTER TABLE dim DROP COLUMN y CASCADE;
RESET client_min_messages;
INSERT INTO ev VALUES (3, 1), (4, 1);
SELECT (SELECT array_agg(row(k, sx) ORDER BY k) FROM jx) =
       (SELECT array_agg(row(k, sx) ORDER BY k)
          FROM (SELECT e.k, sum(t.x) AS sx FROM ev e JOIN dim t ON t.k = e.k GROUP BY e.k) q) AS jx_exact;
SET client_min_messages = notice;
DROP TABLE dim CASCADE;
RESET client_min_messages;

RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA su40 CASCADE;
RESET client_min_messages;
