-- The lock guard without subtransaction ids (docs/security.md, "Cost"):
-- another role's units of a batch run in a subtransaction, but the views
-- aggregated without the executor (stream_ext.fast_batches) only compute
-- there -- locks, privileges, the batch's states, the delta rows checked --
-- and their delta rows are written after it is released, in the inserting
-- transaction.  A subtransaction that wrote nothing takes no id, so a
-- transaction of many single-row INSERTs into a stream whose views belong
-- to another role (an application role inserts, an analytics role owns
-- the views) does not overflow PostgreSQL's cache of 64 subtransaction ids:
-- every delta row it writes has the top-level transaction's xmin.  The
-- views equal their queries over the stream; a unit that errors is still
-- marked invalid and its batch rolled back while the others' rows are
-- written once; rows that could fail to write (a wide row, a unique index
-- the owner put on the delta) are written in the subtransaction as before.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE ROLE sx75_app;
CREATE ROLE sx75_an;
CREATE SCHEMA sx75 AUTHORIZATION sx75_app;
GRANT USAGE, CREATE ON SCHEMA sx75 TO sx75_an;
SET ROLE sx75_app;
SELECT stream_ext.create_stream('sx75.ev', 'k int, v int, t text');
GRANT SELECT ON sx75.ev TO sx75_an;
-- the stream owner's own view: no guard
CREATE VIEW sx75.own WITH (continuous) AS SELECT k, count(*) AS n FROM sx75.ev GROUP BY k;
SET ROLE sx75_an;
-- a view of its own, two sharing one storage (one statement, one delta),
-- and one without GROUP BY: all four aggregated without the executor
CREATE VIEW sx75.a WITH (continuous) AS
  SELECT k, count(*) AS n, sum(v) AS s FROM sx75.ev GROUP BY k;
CREATE VIEW sx75.b1 WITH (continuous) AS
  SELECT v % 3 AS r, count(*) AS n FROM sx75.ev GROUP BY 1;
CREATE VIEW sx75.b2 WITH (continuous) AS
  SELECT v % 3 AS r, max(k) AS hi, min(v) AS lo FROM sx75.ev GROUP BY 1;
CREATE VIEW sx75.all_rows WITH (continuous) AS
  SELECT count(*) AS n, max(v) AS hi FROM sx75.ev;
SET ROLE sx75_app;
INSERT INTO sx75.ev VALUES (0, 0, 'x');
SELECT count(DISTINCT delta) AS deltas FROM stream_ext.view_catalog
 WHERE view IN ('sx75.a'::regclass, 'sx75.b1'::regclass, 'sx75.b2'::regclass, 'sx75.all_rows'::regclass);
SELECT stream_ext.fast_batches_run() AS fast0 \gset

-- 100 single-row INSERTs in one transaction
BEGIN;
SELECT pg_current_xact_id()::text::bigint AS x0 \gset
\set ECHO none
SELECT format('INSERT INTO sx75.ev VALUES (%s, %s, %L)', i % 7, i, 't' || i)
  FROM generate_series(1, 100) i \gexec
\set ECHO all
-- every delta row of the transaction was written by the top-level
-- transaction (under the guard's subtransaction, each statement's would
-- have its own subtransaction's xid)
RESET ROLE;
SELECT 'a' AS delta, count(*) AS rows, count(DISTINCT xmin::text) AS xmins,
       bool_and(xmin = xid(pg_current_xact_id())) AS all_top_level
  FROM sx75.a_delta WHERE xmin::text::bigint >= :x0 % 4294967296
UNION ALL
SELECT 'b1, b2', count(*), count(DISTINCT xmin::text), bool_and(xmin = xid(pg_current_xact_id()))
  FROM sx75.b1_delta WHERE xmin::text::bigint >= :x0 % 4294967296
UNION ALL
SELECT 'all_rows', count(*), count(DISTINCT xmin::text), bool_and(xmin = xid(pg_current_xact_id()))
  FROM sx75.all_rows_delta WHERE xmin::text::bigint >= :x0 % 4294967296;
COMMIT;
SET ROLE sx75_app;
-- the xids consumed: the transaction's own, none for subtransactions
SELECT pg_current_xact_id()::text::bigint - :x0 - 1 AS subxids;
-- the 100 batches of each unit ran without the executor (5 units less the
-- owner's: 4, two of which are one statement: 3, and the owner's 1)
SELECT stream_ext.fast_batches_run() - :fast0 AS fast_batches;

-- each view equals its query over the stream
SET ROLE sx75_an;
SELECT (SELECT count(*) FROM ((TABLE sx75.a EXCEPT ALL SELECT k, count(*), sum(v) FROM sx75.ev GROUP BY k)
          UNION ALL (SELECT k, count(*), sum(v) FROM sx75.ev GROUP BY k EXCEPT ALL TABLE sx75.a)) d) AS a_differs,
       (SELECT count(*) FROM ((TABLE sx75.b1 EXCEPT ALL SELECT v % 3, count(*) FROM sx75.ev GROUP BY 1)
          UNION ALL (SELECT v % 3, count(*) FROM sx75.ev GROUP BY 1 EXCEPT ALL TABLE sx75.b1)) d) AS b1_differs,
       (SELECT count(*) FROM ((TABLE sx75.b2 EXCEPT ALL SELECT v % 3, max(k), min(v) FROM sx75.ev GROUP BY 1)
          UNION ALL (SELECT v % 3, max(k), min(v) FROM sx75.ev GROUP BY 1 EXCEPT ALL TABLE sx75.b2)) d) AS b2_differs,
       (SELECT count(*) FROM ((TABLE sx75.all_rows EXCEPT ALL SELECT count(*), max(v) FROM sx75.ev)
          UNION ALL (SELECT count(*), max(v) FROM sx75.ev EXCEPT ALL TABLE sx75.all_rows)) d) AS all_differs;
SELECT sum(n) AS rows_in_a FROM sx75.a;
SET ROLE sx75_app;
SELECT sum(n) AS rows_in_own FROM sx75.own;

-- a unit that errors in the middle of such a transaction: the view of
-- its own is marked invalid, the batch runs again without it, and the
-- other units' rows are written once (those of the rolled-back try were
-- never written)
SET ROLE sx75_an;
CREATE FUNCTION sx75.picky(int) RETURNS int LANGUAGE plpgsql IMMUTABLE
  AS $$BEGIN IF $1 = 150 THEN RAISE EXCEPTION 'picky %', $1; END IF; RETURN $1; END$$;
CREATE VIEW sx75.p WITH (continuous) AS
  SELECT k, sum(sx75.picky(v)) AS s FROM sx75.ev WHERE v > 0 GROUP BY k;
SET ROLE sx75_app;
BEGIN;
SELECT pg_current_xact_id()::text::bigint AS x1 \gset
\set ECHO none
SELECT format('INSERT INTO sx75.ev VALUES (%s, %s, %L)', i % 7, i, 't' || i)
  FROM generate_series(101, 200) i \gexec
\set ECHO all
RESET ROLE;
SELECT count(*) AS a_rows_of_xact, count(DISTINCT xmin::text) AS xmins,
       bool_and(xmin = xid(pg_current_xact_id())) AS all_top_level
  FROM sx75.a_delta WHERE xmin::text::bigint >= :x1 % 4294967296;
COMMIT;
SET ROLE sx75_an;
SELECT object, kind FROM stream_ext.invalid_objects WHERE object::text LIKE 'sx75.%';
SELECT (SELECT count(*) FROM ((TABLE sx75.a EXCEPT ALL SELECT k, count(*), sum(v) FROM sx75.ev GROUP BY k)
          UNION ALL (SELECT k, count(*), sum(v) FROM sx75.ev GROUP BY k EXCEPT ALL TABLE sx75.a)) d) AS a_differs,
       (SELECT count(*) FROM ((TABLE sx75.b2 EXCEPT ALL SELECT v % 3, max(k), min(v) FROM sx75.ev GROUP BY 1)
          UNION ALL (SELECT v % 3, max(k), min(v) FROM sx75.ev GROUP BY 1 EXCEPT ALL TABLE sx75.b2)) d) AS b2_differs;
SELECT sum(n) AS rows_in_a FROM sx75.a;
SET ROLE sx75_app;

-- a wide delta row (a long min(t)) would need TOAST: that batch writes in
-- the subtransaction, as before (its own xid), and is still counted once
SET ROLE sx75_an;
CREATE VIEW sx75.w WITH (continuous) AS
  SELECT v % 2 AS odd, min(t) AS lo, count(*) AS n FROM sx75.ev GROUP BY 1;
SET ROLE sx75_app;
BEGIN;
SELECT pg_current_xact_id()::text::bigint AS x2 \gset
INSERT INTO sx75.ev VALUES (1, 1000, repeat('w', 3000));
INSERT INTO sx75.ev VALUES (2, 1001, 'short');
RESET ROLE;
SELECT odd, length(d::text) > 3000 AS wide, xmin = xid(pg_current_xact_id()) AS top_level
  FROM sx75.w_delta d WHERE xmin::text::bigint >= :x2 % 4294967296 ORDER BY odd;
COMMIT;
SET ROLE sx75_an;
SELECT (SELECT count(*) FROM ((TABLE sx75.w EXCEPT ALL SELECT v % 2, min(t), count(*) FROM sx75.ev GROUP BY 1)
          UNION ALL (SELECT v % 2, min(t), count(*) FROM sx75.ev GROUP BY 1 EXCEPT ALL TABLE sx75.w)) d) AS w_differs;

-- a unique index the view's owner put on its delta can fail the write:
-- the batch writes in the subtransaction, and a duplicate marks the view
-- invalid while the insert goes on, as before
CREATE VIEW sx75.u WITH (continuous) AS
  SELECT v % 5 AS r, count(*) AS n FROM sx75.ev WHERE v > 100 GROUP BY 1;
CREATE UNIQUE INDEX sx75_u_unique ON sx75.u_delta (r);
SET ROLE sx75_app;
BEGIN;
SELECT pg_current_xact_id()::text::bigint AS x3 \gset
INSERT INTO sx75.ev VALUES (3, 1003, 'one');
RESET ROLE;
SELECT r, xmin = xid(pg_current_xact_id()) AS top_level
  FROM sx75.u_delta WHERE xmin::text::bigint >= :x3 % 4294967296;
SET ROLE sx75_app;
INSERT INTO sx75.ev VALUES (3, 1008, 'dup');
COMMIT;
SELECT count(*) AS rows FROM sx75.ev;
SET ROLE sx75_an;
SELECT object, kind FROM stream_ext.invalid_objects WHERE object::text LIKE 'sx75.%' ORDER BY object::text;
SET ROLE sx75_app;
SELECT sum(n) AS rows_in_own FROM sx75.own;

RESET ROLE;
DELETE FROM stream_ext.invalid_objects WHERE object::text LIKE 'sx75.%';
DROP SCHEMA sx75 CASCADE;
DROP ROLE sx75_app;
DROP ROLE sx75_an;
