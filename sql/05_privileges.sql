-- Privileges: users work on what they own or may read; maintenance runs as
-- the view's owner, never as the inserting user or a superuser.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE ROLE se_owner;
CREATE ROLE se_writer;
CREATE ROLE se_other;
CREATE SCHEMA se_app AUTHORIZATION se_owner;
GRANT USAGE ON SCHEMA se_app TO se_writer, se_other;

SET ROLE se_owner;
SELECT stream_ext.create_stream('se_app.events', 'k text, v int');
CREATE VIEW se_app.totals WITH (continuous) AS SELECT k, sum(v) AS s, count(*) AS n FROM se_app.events GROUP BY k;
GRANT INSERT ON se_app.events TO se_writer;
SELECT name, owner FROM stream_ext.continuous_views;
RESET ROLE;

-- the writer may insert into the stream, and views update although the
-- writer has no rights on the materialization
SET ROLE se_writer;
INSERT INTO se_app.events VALUES ('a', 1), ('a', 2), ('b', 5);
SELECT * FROM se_app.totals;
SELECT * FROM se_app.totals_mrel;
RESET ROLE;

-- someone who cannot read the stream cannot build a view over it
SET ROLE se_other;
CREATE VIEW se_other_view WITH (continuous) AS SELECT count(*) FROM se_app.events;
-- nor write the catalog
INSERT INTO stream_ext.stream_catalog VALUES ('se_app.events');
-- nor create a stream where it may not create tables, nor a Kafka source
-- feeding a stream it may not insert into
SELECT stream_ext.create_stream('se_app.mine', 'x int');
SELECT stream_ext.create_kafka_source('se_other_src', 'se_app.events', 'localhost:1', 't');
RESET ROLE;

-- column privileges are honoured too
GRANT SELECT (k) ON se_app.events TO se_other;
GRANT CREATE ON SCHEMA se_app TO se_other;
SET ROLE se_other;
CREATE VIEW se_app.by_k WITH (continuous) AS SELECT k, sum(v) FROM se_app.events GROUP BY k;
CREATE VIEW se_app.by_k WITH (continuous) AS SELECT k, count(*) AS n FROM se_app.events GROUP BY k;
SELECT * FROM se_app.by_k ORDER BY k;
RESET ROLE;
SET ROLE se_writer;
INSERT INTO se_app.events VALUES ('c', 7);
RESET ROLE;
SET ROLE se_other;
SELECT * FROM se_app.by_k ORDER BY k;
RESET ROLE;

SET ROLE se_owner;
SELECT * FROM se_app.totals ORDER BY k;
RESET ROLE;

-- nobody can feed someone else's view from another table: a trigger
-- calling stream_ext.maintain() with that view's materialization is refused
SET ROLE se_other;
CREATE TABLE se_app.fake (k text, v int, arrival_timestamp timestamptz NOT NULL DEFAULT now());
CREATE TRIGGER forge AFTER INSERT ON se_app.fake REFERENCING NEW TABLE AS stream_ext_new
  FOR EACH STATEMENT EXECUTE FUNCTION stream_ext.maintain('se_app.totals_mrel');
INSERT INTO se_app.fake VALUES ('a', 1000);
DROP TABLE se_app.fake;
RESET ROLE;
SET ROLE se_owner;
SELECT * FROM se_app.totals ORDER BY k;
RESET ROLE;

DROP SCHEMA se_app CASCADE;
DROP ROLE se_owner;
DROP ROLE se_writer;
DROP ROLE se_other;
SELECT count(*) AS views FROM stream_ext.continuous_views;

-- Row-level security on a stream.  A continuous view aggregates every row
-- of its stream (maintenance reads the inserted rows, not the stream), so
-- it could not apply policies: a role that row-level security restricts
-- cannot create one, and while such a view exists, RLS that would
-- restrict its owner is refused, and maintenance refuses to run.
CREATE ROLE se_rls_owner;
CREATE ROLE se_rls_reader;
CREATE SCHEMA se_rls AUTHORIZATION se_rls_owner;
GRANT USAGE, CREATE ON SCHEMA se_rls TO se_rls_reader;
SET ROLE se_rls_owner;
SELECT stream_ext.create_stream('se_rls.ev', 'tenant text, v int');
INSERT INTO se_rls.ev VALUES ('a', 1), ('b', 2);
ALTER TABLE se_rls.ev ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_a ON se_rls.ev FOR SELECT TO se_rls_reader USING (tenant = 'a');
CREATE POLICY anyone_inserts ON se_rls.ev FOR INSERT TO se_rls_reader WITH CHECK (true);
GRANT SELECT, INSERT ON se_rls.ev TO se_rls_reader;
-- the owner is not subject to its table's policies (no FORCE): its view
-- shows every row, like an ordinary view it owns
CREATE VIEW se_rls.by_tenant WITH (continuous) AS
  SELECT tenant, sum(v) AS s, count(*) AS n FROM se_rls.ev GROUP BY tenant;
RESET ROLE;
SET ROLE se_rls_reader;
SELECT tenant, v FROM se_rls.ev ORDER BY tenant;
CREATE VIEW se_rls.mine WITH (continuous) AS SELECT tenant, count(*) FROM se_rls.ev GROUP BY tenant;
-- a continuous transform reads every row too
CREATE VIEW se_rls.mine_rows WITH (continuous) AS SELECT tenant, v FROM se_rls.ev;
INSERT INTO se_rls.ev VALUES ('b', 10), ('c', 100);
RESET ROLE;
SELECT * FROM se_rls.by_tenant ORDER BY tenant;
-- FORCE would subject the view's owner to the policies
SET ROLE se_rls_owner;
ALTER TABLE se_rls.ev FORCE ROW LEVEL SECURITY;
RESET ROLE;
-- a view owner who stops owning the stream: maintenance refuses
ALTER TABLE se_rls.ev OWNER TO se_rls_reader;
INSERT INTO se_rls.ev VALUES ('a', 1000);
ALTER TABLE se_rls.ev OWNER TO se_rls_owner;
GRANT SELECT, INSERT ON se_rls.ev TO se_rls_reader;
INSERT INTO se_rls.ev VALUES ('a', 1000);
SELECT * FROM se_rls.by_tenant ORDER BY tenant;
-- a stream without RLS, read by another role's view: enabling RLS is refused
ALTER TABLE se_rls.ev DISABLE ROW LEVEL SECURITY;
SET ROLE se_rls_reader;
CREATE VIEW se_rls.mine WITH (continuous) AS SELECT tenant, count(*) AS n FROM se_rls.ev GROUP BY tenant;
RESET ROLE;
SET ROLE se_rls_owner;
ALTER TABLE se_rls.ev ENABLE ROW LEVEL SECURITY;
DROP VIEW se_rls.mine;
RESET ROLE;
-- ... and so by another role's continuous transform
SET ROLE se_rls_reader;
CREATE VIEW se_rls.mine_rows WITH (continuous) AS SELECT tenant, v FROM se_rls.ev;
RESET ROLE;
SET ROLE se_rls_owner;
ALTER TABLE se_rls.ev ENABLE ROW LEVEL SECURITY;
RESET ROLE;
DROP VIEW se_rls.mine_rows;
SET ROLE se_rls_owner;
ALTER TABLE se_rls.ev ENABLE ROW LEVEL SECURITY;
RESET ROLE;
-- roles with BYPASSRLS are not restricted
ALTER ROLE se_rls_reader BYPASSRLS;
SET ROLE se_rls_reader;
CREATE VIEW se_rls.mine WITH (continuous) AS SELECT tenant, count(*) AS n FROM se_rls.ev GROUP BY tenant;
SELECT * FROM se_rls.mine ORDER BY tenant;
RESET ROLE;
-- ... until they lose it
ALTER ROLE se_rls_reader NOBYPASSRLS;
INSERT INTO se_rls.ev VALUES ('d', 1);
ALTER ROLE se_rls_reader BYPASSRLS;
INSERT INTO se_rls.ev VALUES ('d', 1);
SELECT (SELECT count(*) FROM ((TABLE se_rls.mine EXCEPT ALL SELECT tenant, count(*) FROM se_rls.ev GROUP BY 1)
                              UNION ALL
                              (SELECT tenant, count(*) FROM se_rls.ev GROUP BY 1 EXCEPT ALL TABLE se_rls.mine)) d)
     + (SELECT count(*) FROM ((TABLE se_rls.by_tenant EXCEPT ALL SELECT tenant, sum(v), count(*) FROM se_rls.ev GROUP BY 1)
                              UNION ALL
                              (SELECT tenant, sum(v), count(*) FROM se_rls.ev GROUP BY 1 EXCEPT ALL TABLE se_rls.by_tenant)) d)
  AS differences;
DROP SCHEMA se_rls CASCADE;
DROP ROLE se_rls_owner;
DROP ROLE se_rls_reader;
SELECT count(*) AS views FROM stream_ext.continuous_views;
