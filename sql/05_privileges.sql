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

DROP SCHEMA se_app CASCADE;
DROP ROLE se_owner;
DROP ROLE se_writer;
DROP ROLE se_other;
SELECT count(*) AS views FROM stream_ext.continuous_views;
