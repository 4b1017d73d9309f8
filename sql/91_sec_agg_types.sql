-- stream_ext.combine(), stream_ext.finalize() and the aggregate
-- stream_ext.merge_states() run an aggregate's support functions on the
-- states they are given (docs/security.md, "Functions anyone may call").
-- Anyone may call them, with any aggregate and any types: a state or
-- result of another type than the aggregate's was handed over as it was
-- (an int8 followed as a pointer by max(text)'s combine function: the
-- server crashed), and the aggregate's EXECUTE privilege was not checked.
-- Now the state must be of the aggregate's transition type (bytea for an
-- internal one), the result of its result type (42804 otherwise), and the
-- caller needs EXECUTE on the aggregate (42501).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE ROLE at91_attacker;
CREATE ROLE at91_owner;
CREATE SCHEMA at91 AUTHORIZATION at91_owner;
GRANT USAGE ON SCHEMA at91 TO at91_attacker;
SET ROLE at91_owner;
-- an aggregate its owner keeps to itself
CREATE AGGREGATE at91.mysum(int4) (SFUNC = int4pl, STYPE = int4, COMBINEFUNC = int4pl);
REVOKE EXECUTE ON FUNCTION at91.mysum(int4) FROM PUBLIC;
SELECT stream_ext.combine(1, 2, 'at91.mysum(int4)'::regprocedure) AS own;
SET ROLE at91_attacker;
-- states of another type than the aggregate's
SELECT stream_ext.finalize(12345::int8, 'max(text)'::regprocedure, NULL::text);
SELECT stream_ext.combine(12345::int8, 54321::int8, 'max(text)'::regprocedure);
SELECT stream_ext.merge_states(x, 'max(text)'::regprocedure) FROM (VALUES (1::int8), (2::int8)) v(x);
SELECT stream_ext.combine('abc'::text, 'def'::text, 'sum(int4)'::regprocedure);
SELECT stream_ext.combine('\x00'::bytea, '\x00'::bytea, 'sum(int4)'::regprocedure);
SELECT stream_ext.finalize(1::int4, 'sum(int8)'::regprocedure, NULL::numeric);
-- a result of another type than the aggregate's
SELECT stream_ext.finalize(12345::int8, 'max(int8)'::regprocedure, NULL::text);
SELECT stream_ext.finalize('{2,3,4,5,6,7}'::float8[], 'corr(float8,float8)'::regprocedure, NULL::text);
-- polymorphic aggregates: as the parser would resolve them
SELECT stream_ext.finalize(1::int4, 'max(anyarray)'::regprocedure, NULL::int4);
SELECT stream_ext.finalize('{1}'::int4[], 'max(anyarray)'::regprocedure, NULL::text[]);
-- an aggregate the caller may not execute
SELECT stream_ext.combine(1, 2, 'at91.mysum(int4)'::regprocedure);
SELECT stream_ext.finalize(1, 'at91.mysum(int4)'::regprocedure, NULL::int4);
-- what is right still works
SELECT stream_ext.combine(1::int8, 2::int8, 'sum(int4)'::regprocedure) AS sum3;
SELECT stream_ext.combine('{1,2}'::int4[], '{1,3}'::int4[], 'max(anyarray)'::regprocedure) AS maxarr;
SELECT stream_ext.finalize('{1,3}'::int4[], 'max(anyarray)'::regprocedure, NULL::int4[]) AS maxarr;
SELECT stream_ext.finalize(stream_ext.merge_states(x, 'sum(int4)'::regprocedure),
                           'sum(int4)'::regprocedure, NULL::int8) AS sum6
  FROM (VALUES (1::int8), (2::int8), (3::int8)) v(x);
-- and a view's own states, of every kind, through combine()
SET ROLE at91_owner;
SELECT stream_ext.create_stream('at91.ev', 'k int, v int, w numeric, t text');
CREATE VIEW at91.cv WITH (continuous) AS
  SELECT k, count(*) AS n, sum(v) AS s, avg(v) AS a, sum(w) AS sw, max(t) AS mt,
         stddev(w) AS sd, at91.mysum(v) AS ms
    FROM at91.ev GROUP BY k;
INSERT INTO at91.ev SELECT i % 2, i, i / 3.0, 't' || i FROM generate_series(1, 10) i;
INSERT INTO at91.ev SELECT i % 2, i, i / 3.0, 't' || i FROM generate_series(11, 20) i;
SELECT stream_ext.compact('at91.cv');
SELECT * FROM at91.cv ORDER BY k;
SELECT stream_ext.combine(n) AS n, stream_ext.combine(s) AS s, stream_ext.combine(a) AS a,
       stream_ext.combine(sw) AS sw, stream_ext.combine(mt) AS mt,
       round(stream_ext.combine(sd), 6) AS sd, stream_ext.combine(ms) AS ms
  FROM at91.cv;
RESET ROLE;
DROP SCHEMA at91 CASCADE;
DROP ROLE at91_attacker;
DROP ROLE at91_owner;
