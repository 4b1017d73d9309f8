-- Triggers and rules on the tables stream_ext keeps for a continuous view
-- (docs/security.md, "Errors in other roles' views"): the view's owner owns
-- its materialization, delta, side tables and change stream, and
-- PostgreSQL would let it put a trigger or a rule there -- which every
-- insert into the stream would then run, the stream owner's too.  They are
-- refused (42501) unless the function is stream_ext's own; a superuser may.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE ROLE it66_owner;
CREATE ROLE it66_other;
CREATE SCHEMA it66 AUTHORIZATION it66_owner;
GRANT USAGE, CREATE ON SCHEMA it66 TO it66_other;
SET ROLE it66_owner;
SELECT stream_ext.create_stream('it66.ev', 'k int, v int, w text');
GRANT SELECT ON it66.ev TO it66_other;
SET ROLE it66_other;
-- an upserting view with a side table and a change stream, an appending one
CREATE VIEW it66.ov WITH (continuous, changes = true) AS
  SELECT k, count(*) AS n, count(DISTINCT w) AS d FROM it66.ev GROUP BY k;
CREATE VIEW it66.av WITH (continuous) AS
  SELECT k, count(*) AS n, sum(v) AS s FROM it66.ev GROUP BY k;
CREATE FUNCTION it66.boom() RETURNS trigger LANGUAGE plpgsql
  AS $$BEGIN RAISE EXCEPTION 'boom from %', TG_TABLE_NAME; END$$;
CREATE TABLE it66.mine (x int);
-- every table of the two views: each CREATE TRIGGER and CREATE RULE refused
CREATE TEMP TABLE it66_parts AS
  SELECT matrel AS rel FROM stream_ext.view_catalog WHERE view IN ('it66.ov'::regclass, 'it66.av'::regclass)
  UNION ALL SELECT delta FROM stream_ext.view_catalog WHERE view = 'it66.av'::regclass
  UNION ALL SELECT unnest(aux_tables) FROM stream_ext.view_catalog WHERE view = 'it66.ov'::regclass
  UNION ALL SELECT stream FROM stream_ext.change_streams WHERE view = 'it66.ov'::regclass;
SELECT rel FROM it66_parts ORDER BY rel::text;
DO $$
DECLARE
  r regclass;
BEGIN
  FOR r IN SELECT rel FROM it66_parts ORDER BY rel::text LOOP
    BEGIN
      EXECUTE format('CREATE TRIGGER t66 AFTER INSERT ON %s FOR EACH STATEMENT EXECUTE FUNCTION it66.boom()', r);
      RAISE NOTICE 'trigger on %: created', r;
    EXCEPTION WHEN insufficient_privilege THEN
      RAISE NOTICE 'trigger on %: %', r, SQLERRM;
    END;
    BEGIN
      EXECUTE format('CREATE CONSTRAINT TRIGGER c66 AFTER INSERT ON %s FOR EACH ROW EXECUTE FUNCTION it66.boom()', r);
      RAISE NOTICE 'constraint trigger on %: created', r;
    EXCEPTION WHEN insufficient_privilege THEN
      RAISE NOTICE 'constraint trigger on %: refused', r;
    END;
    BEGIN
      EXECUTE format('CREATE RULE r66 AS ON INSERT TO %s DO ALSO INSERT INTO it66.mine VALUES (1)', r);
      RAISE NOTICE 'rule on %: created', r;
    EXCEPTION WHEN insufficient_privilege THEN
      RAISE NOTICE 'rule on %: %', r, SQLERRM;
    END;
  END LOOP;
END
$$;
-- the error in full, once
CREATE TRIGGER t66 BEFORE INSERT ON it66.av_mrel FOR EACH ROW EXECUTE FUNCTION it66.boom();
-- stream_ext's own trigger functions are what pg_restore recreates: allowed
-- (this one only refuses writes, which maintenance does not make)
CREATE TRIGGER own66 BEFORE UPDATE ON it66.ov_changes
  FOR EACH STATEMENT EXECUTE FUNCTION stream_ext.reject_stream_modification();
DROP TRIGGER own66 ON it66.ov_changes;
-- a table of the role's own is not stream_ext's business
CREATE TRIGGER t66 AFTER INSERT ON it66.mine FOR EACH STATEMENT EXECUTE FUNCTION it66.boom();
DROP TRIGGER t66 ON it66.mine;
-- so the stream's owner inserts, and both views follow
SET ROLE it66_owner;
INSERT INTO it66.ev VALUES (1, 10, 'a'), (1, 20, 'b'), (2, 5, 'a');
SET ROLE it66_other;
SELECT * FROM it66.ov ORDER BY k;
SELECT * FROM it66.av ORDER BY k;
SELECT count(*) AS changes FROM it66.ov_changes;
-- a superuser may (and must know what it does)
RESET ROLE;
CREATE TRIGGER su66 AFTER INSERT ON it66.av_mrel FOR EACH STATEMENT EXECUTE FUNCTION it66.boom();
DROP TRIGGER su66 ON it66.av_mrel;
-- the refusal is by table, not by name: a stream of the same role is its own
SET ROLE it66_owner;
CREATE FUNCTION it66.note() RETURNS trigger LANGUAGE plpgsql
  AS $$BEGIN RETURN NULL; END$$;
CREATE TRIGGER n66 AFTER INSERT ON it66.ev FOR EACH STATEMENT EXECUTE FUNCTION it66.note();
DROP TRIGGER n66 ON it66.ev;
RESET ROLE;
DROP TABLE it66_parts;
DROP SCHEMA it66 CASCADE;
DROP ROLE it66_owner;
DROP ROLE it66_other;
