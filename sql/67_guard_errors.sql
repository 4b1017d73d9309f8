-- Errors in another role's continuous view (docs/security.md, "Errors in
-- other roles' views"): the owner of a view over someone else's stream
-- may put a function that raises in its expressions.  The lock guard runs
-- that view's part of each batch in a subtransaction; an error there marks
-- the view invalid (a WARNING, a row in stream_ext.invalid_objects, reads
-- refused) and the insert goes on with the other views.  A view of the
-- stream's own owner that raises still fails the insert: its batches are
-- never skipped.  Cancels and statement_timeout still end the insert.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE ROLE ge67_owner;
CREATE ROLE ge67_other;
CREATE SCHEMA ge67 AUTHORIZATION ge67_owner;
GRANT USAGE, CREATE ON SCHEMA ge67 TO ge67_other;
SET ROLE ge67_owner;
SELECT stream_ext.create_stream('ge67.ev', 'k int, v int');
GRANT SELECT ON ge67.ev TO ge67_other;
CREATE FUNCTION ge67.own_check(int) RETURNS int LANGUAGE plpgsql IMMUTABLE
  AS $$BEGIN IF $1 = 99 THEN RAISE EXCEPTION 'owner: no 99'; END IF; RETURN $1; END$$;
CREATE VIEW ge67.mine WITH (continuous) AS
  SELECT k, count(*) AS n, sum(ge67.own_check(v)) AS s FROM ge67.ev GROUP BY k;
SET ROLE ge67_other;
CREATE FUNCTION ge67.unlucky(int) RETURNS int LANGUAGE plpgsql IMMUTABLE
  AS $$BEGIN IF $1 = 13 THEN RAISE EXCEPTION 'unlucky %', $1 USING ERRCODE = 'P0013'; END IF; RETURN $1; END$$;
CREATE FUNCTION ge67.slow(int) RETURNS int LANGUAGE plpgsql IMMUTABLE
  AS $$BEGIN IF $1 = 7 THEN PERFORM pg_sleep(5); END IF; RETURN $1; END$$;
CREATE FUNCTION ge67.picky(int) RETURNS int LANGUAGE plpgsql IMMUTABLE
  AS $$BEGIN IF $1 = 14 THEN RAISE EXCEPTION 'picky %', $1; END IF; RETURN $1; END$$;
-- an appending view and an upserting one (a side table) of the same keys
-- share one aggregation of the batch: one unit, marked invalid together
CREATE VIEW ge67.bad WITH (continuous) AS
  SELECT k, sum(ge67.unlucky(v)) AS s FROM ge67.ev GROUP BY k;
CREATE VIEW ge67.bad_up WITH (continuous) AS
  SELECT k, count(DISTINCT v::text) AS d FROM ge67.ev GROUP BY k;
-- two sharing a WHERE that raises
CREATE VIEW ge67.g1 WITH (continuous) AS
  SELECT v % 2 AS p, count(*) AS n FROM ge67.ev WHERE ge67.unlucky(v) > 0 GROUP BY 1;
CREATE VIEW ge67.g2 WITH (continuous) AS
  SELECT v % 2 AS p, max(k) AS hi FROM ge67.ev WHERE ge67.unlucky(v) > 0 GROUP BY 1;
-- a view of its own that does not raise, and one that sleeps
CREATE VIEW ge67.fine WITH (continuous) AS
  SELECT v, count(*) AS n FROM ge67.ev GROUP BY v;
CREATE VIEW ge67.sleepy WITH (continuous) AS
  SELECT k, sum(ge67.slow(v)) AS s FROM ge67.ev WHERE v <> 13 GROUP BY k;
SET ROLE ge67_owner;
INSERT INTO ge67.ev VALUES (1, 1), (2, 2);
-- a rolled-back insert marks nothing
BEGIN;
INSERT INTO ge67.ev VALUES (1, 13);
ROLLBACK;
SELECT count(*) AS invalid FROM stream_ext.invalid_objects WHERE object::text LIKE 'ge67.%';
-- the stream's owner inserts a 13: ge67_other's raising views are marked
-- invalid, the insert goes on, the other views get the rows
INSERT INTO ge67.ev VALUES (1, 13), (3, 3);
SELECT count(*) AS rows FROM ge67.ev;
SELECT * FROM ge67.mine ORDER BY k;
-- (the reasons are for who may read the views: docs/security.md)
SET ROLE ge67_other;
SELECT object, kind, reason FROM stream_ext.invalid_objects
 WHERE object::text LIKE 'ge67.%' ORDER BY object::text;
SELECT * FROM ge67.fine ORDER BY v;
SELECT * FROM ge67.bad;
SELECT * FROM ge67.bad_up;
SELECT * FROM ge67.g2;
SET ROLE ge67_owner;
-- later batches skip them without running them
INSERT INTO ge67.ev VALUES (4, 13);
SELECT * FROM ge67.mine ORDER BY k;
-- the owner's own view raising fails the insert (exactness)
INSERT INTO ge67.ev VALUES (5, 99);
SELECT count(*) AS rows FROM ge67.ev;
-- a statement_timeout (or cancel) in another role's view ends the insert,
-- as it would without the guard: it is the inserting session's
SET statement_timeout = '300ms';
INSERT INTO ge67.ev VALUES (6, 7);
RESET statement_timeout;
SELECT count(*) AS rows FROM ge67.ev;
SELECT count(*) AS invalid FROM stream_ext.invalid_objects WHERE object = 'ge67.sleepy'::regclass;
-- with the guard off (stream_ext.maintenance_lock_timeout = 0, for trusted
-- roles) another role's error fails the insert too
RESET ROLE;
SET stream_ext.maintenance_lock_timeout = 0;
SET ROLE ge67_other;
CREATE VIEW ge67.bad2 WITH (continuous) AS
  SELECT k, sum(ge67.picky(v)) AS s FROM ge67.ev GROUP BY k;
SET ROLE ge67_owner;
INSERT INTO ge67.ev VALUES (8, 14);
RESET ROLE;
RESET stream_ext.maintenance_lock_timeout;
SET ROLE ge67_owner;
INSERT INTO ge67.ev VALUES (8, 14);
SET ROLE ge67_other;
SELECT object FROM stream_ext.invalid_objects WHERE object = 'ge67.bad2'::regclass;
-- dropping an invalid view forgets it
SET ROLE ge67_other;
DROP VIEW ge67.bad, ge67.bad_up, ge67.g1, ge67.g2, ge67.bad2;
SELECT count(*) AS invalid FROM stream_ext.invalid_objects WHERE object::text LIKE 'ge67.%';
-- Subtransaction ids (docs/security.md, "Cost"): the guarded part of a
-- batch runs in one subtransaction for all of another role's units, so a
-- statement takes at most one subtransaction id however many of them it
-- feeds (a transaction with more than 64 overflows PostgreSQL's cache of
-- them) -- and none when they are aggregated without the executor
-- (stream_ext.fast_batches): those write their delta rows after the
-- subtransaction (sql/75_guard_no_subxid.sql).  Four units of ge67_other
-- (different keys) and one of the owner, first with the executor for all:
-- counted as the xids the statement consumed besides its own top-level one.
SET ROLE ge67_owner;
SELECT stream_ext.create_stream('ge67.sx', 'a int, b int, c int');
GRANT SELECT ON ge67.sx TO ge67_other;
CREATE VIEW ge67.sx_own WITH (continuous) AS SELECT a, count(*) AS n FROM ge67.sx GROUP BY a;
SET ROLE ge67_other;
CREATE VIEW ge67.sx1 WITH (continuous) AS SELECT a, count(*) AS n FROM ge67.sx GROUP BY a;
CREATE VIEW ge67.sx2 WITH (continuous) AS SELECT b, count(*) AS n FROM ge67.sx GROUP BY b;
CREATE VIEW ge67.sx3 WITH (continuous) AS SELECT c, count(*) AS n FROM ge67.sx GROUP BY c;
CREATE VIEW ge67.sx4 WITH (continuous) AS SELECT a, b, sum(c) AS s FROM ge67.sx GROUP BY a, b;
-- one picky view among them (its user function: always the executor):
-- marked invalid, the others run again, still in one subtransaction
CREATE VIEW ge67.sx5 WITH (continuous) AS SELECT a, sum(ge67.picky(c)) AS s FROM ge67.sx WHERE b > 0 GROUP BY a;
SET ROLE ge67_owner;
INSERT INTO ge67.sx VALUES (1, 1, 1);
SET stream_ext.fast_batches = off;
SELECT pg_current_xact_id()::text::bigint AS x0 \gset
INSERT INTO ge67.sx VALUES (1, 2, 3), (2, 2, 3);
SELECT pg_current_xact_id()::text::bigint - :x0 - 2 AS subxids;
-- with the executor-free path, only sx5's statement writes in it: one
RESET stream_ext.fast_batches;
SELECT pg_current_xact_id()::text::bigint AS x0 \gset
INSERT INTO ge67.sx VALUES (1, 2, 3);
SELECT pg_current_xact_id()::text::bigint - :x0 - 2 AS subxids;
-- sx5 fails on c = 14: that subtransaction is rolled back, the other
-- units run again in a second one and their work is kept
SET stream_ext.fast_batches = off;
SELECT pg_current_xact_id()::text::bigint AS x0 \gset
INSERT INTO ge67.sx VALUES (3, 1, 14);
SELECT pg_current_xact_id()::text::bigint - :x0 - 2 AS subxids;
-- sx5 invalid, the others write nothing in the subtransaction: none
RESET stream_ext.fast_batches;
SELECT pg_current_xact_id()::text::bigint AS x0 \gset
INSERT INTO ge67.sx VALUES (4, 2, 3);
SELECT pg_current_xact_id()::text::bigint - :x0 - 2 AS subxids;
SET ROLE ge67_other;
SELECT object FROM stream_ext.invalid_objects WHERE object::text LIKE 'ge67.sx%';
SELECT (SELECT sum(n) FROM ge67.sx1) AS n1, (SELECT sum(n) FROM ge67.sx2) AS n2,
       (SELECT sum(n) FROM ge67.sx3) AS n3, (SELECT sum(s) FROM ge67.sx4) AS s4;
SET ROLE ge67_owner;
SELECT sum(n) AS own FROM ge67.sx_own;
RESET ROLE;
DROP SCHEMA ge67 CASCADE;
DROP ROLE ge67_owner;
DROP ROLE ge67_other;
