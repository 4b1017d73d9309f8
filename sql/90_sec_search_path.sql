-- The search_path of what stream_ext runs on someone else's behalf
-- (docs/security.md, "Pinned settings").  A role with no privilege but
-- TEMP may create types in pg_temp, and a schema that search_path does not
-- list is searched for types and relations *first*: a domain
-- pg_temp.oid (or text, regclass, ...) whose CHECK calls the role's own
-- function would capture every "::oid" of a statement stream_ext runs in
-- that session -- its catalog writes as the extension's owner (a
-- superuser), a victim's view, change stream and sink as their owner.  And
-- an operator of the role's schema, first in its search_path, would capture
-- an unqualified "=" of a catalog statement.  Nothing of the attacker's may
-- run: every such statement is run with search_path 'pg_catalog, pg_temp'.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE ROLE sp90_attacker;
CREATE ROLE sp90_victim;
CREATE SCHEMA sp90 AUTHORIZATION sp90_victim;
CREATE SCHEMA sp90_att AUTHORIZATION sp90_attacker;
SET ROLE sp90_victim;
SELECT stream_ext.create_stream('sp90.ev', 'k int, v text');
CREATE VIEW sp90.cv WITH (continuous, changes = true) AS
  SELECT k, count(*) AS n, max(v) AS mx FROM sp90.ev GROUP BY k;
SELECT stream_ext.create_kafka_sink('sp90_sink', 'sp90.ev', 'localhost:9', 'sp90', 'json', 'k');
GRANT USAGE ON SCHEMA sp90 TO sp90_attacker;
GRANT INSERT ON sp90.ev TO sp90_attacker;
SET ROLE sp90_attacker;
-- says who ran it, and makes its role a superuser when it can
CREATE FUNCTION pg_temp.sp90_evil(x anyelement) RETURNS bool LANGUAGE plpgsql AS $$
BEGIN
  RAISE NOTICE 'captured: runs as %', current_user;
  IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
    EXECUTE 'ALTER ROLE sp90_attacker SUPERUSER';
  END IF;
  RETURN true;
END $$;
CREATE DOMAIN pg_temp.oid AS pg_catalog.oid CHECK (pg_temp.sp90_evil(VALUE));
CREATE DOMAIN pg_temp.text AS pg_catalog.text CHECK (pg_temp.sp90_evil(VALUE));
CREATE DOMAIN pg_temp.int4 AS pg_catalog.int4 CHECK (pg_temp.sp90_evil(VALUE));
CREATE DOMAIN pg_temp.int8 AS pg_catalog.int8 CHECK (pg_temp.sp90_evil(VALUE));
CREATE DOMAIN pg_temp.regclass AS pg_catalog.regclass CHECK (pg_temp.sp90_evil(VALUE));
CREATE DOMAIN pg_temp.regrole AS pg_catalog.regrole CHECK (pg_temp.sp90_evil(VALUE));
CREATE DOMAIN pg_temp.jsonb AS pg_catalog.jsonb CHECK (pg_temp.sp90_evil(VALUE));
CREATE DOMAIN pg_temp.timestamptz AS pg_catalog.timestamptz CHECK (pg_temp.sp90_evil(VALUE));
-- 1. a row into the victim's stream: its view, change stream and sink run
-- as the victim, in this session
INSERT INTO sp90.ev VALUES (1, 'a'), (2, 'b');
-- 2. a Kafka source of the attacker's own stream: its catalog row is
-- written as the extension's owner
SELECT stream_ext.create_stream('sp90_att.mine', 'k int');
SELECT stream_ext.create_kafka_source('sp90_src', 'sp90_att.mine', 'localhost:9', 't');
-- 3. an "=" of the attacker's for (regclass, oid), its schema first in its
-- search_path: catalog statements compare regclass columns with oids
CREATE FUNCTION sp90_att.eq(a pg_catalog.regclass, b pg_catalog.oid) RETURNS bool
  LANGUAGE plpgsql AS $$
BEGIN
  RAISE NOTICE 'operator captured: runs as %', current_user;
  IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
    EXECUTE 'ALTER ROLE sp90_attacker SUPERUSER';
  END IF;
  RETURN a OPERATOR(pg_catalog.=) b;
END $$;
CREATE OPERATOR sp90_att.= (LEFTARG = pg_catalog.regclass, RIGHTARG = pg_catalog.oid,
                            FUNCTION = sp90_att.eq);
SET search_path = sp90_att, pg_catalog;
CREATE VIEW sp90_att.mv WITH (continuous) AS SELECT k, count(*) AS n FROM sp90_att.mine GROUP BY k;
INSERT INTO sp90_att.mine VALUES (1);
SELECT stream_ext.drop_source('sp90_src');
DROP VIEW sp90_att.mv;
RESET search_path;
-- what the statements did, as they should have
SET ROLE sp90_victim;
SELECT k, n, mx FROM sp90.cv ORDER BY k;
SELECT count(*) AS queued FROM stream_ext.sink_queue;
SELECT count(*) AS changes FROM sp90.cv_changes;
RESET ROLE;
DISCARD TEMP;
-- and the attacker is none the stronger
SELECT rolsuper FROM pg_roles WHERE rolname = 'sp90_attacker';
SELECT stream_ext.drop_sink('sp90_sink');
DROP SCHEMA sp90 CASCADE;
DROP SCHEMA sp90_att CASCADE;
DROP ROLE sp90_attacker;
DROP ROLE sp90_victim;
