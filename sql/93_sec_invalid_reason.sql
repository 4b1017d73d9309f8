-- Why a view or transform is invalid (docs/security.md, "What REVOKE
-- does" and "Errors in other roles' views") is often an error's message,
-- and that may quote the row that broke it: a value of a stream its
-- reader may not read.  stream_ext.invalid_objects was readable by every
-- role, and view_stats.invalid_reason and transforms.invalid_reason showed
-- it to everyone.  Now a row of invalid_objects is for those who may read
-- the object (row-level security), and the two views show the reason only
-- to them.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE ROLE ir93_owner;
CREATE ROLE ir93_analyst;
CREATE ROLE ir93_nobody;
CREATE ROLE ir93_reader;
CREATE SCHEMA ir93 AUTHORIZATION ir93_owner;
CREATE SCHEMA ir93_a AUTHORIZATION ir93_analyst;
SET ROLE ir93_owner;
SELECT stream_ext.create_stream('ir93.ev', 'k int, ssn text');
GRANT USAGE ON SCHEMA ir93 TO ir93_analyst;
GRANT SELECT ON ir93.ev TO ir93_analyst;
SET ROLE ir93_analyst;
-- views that a row of the stream can break
CREATE VIEW ir93_a.v WITH (continuous) AS
  SELECT k, count(*) AS n FROM ir93.ev WHERE ssn::int > 0 GROUP BY k;
CREATE VIEW ir93_a.t WITH (continuous) AS
  SELECT k, ssn::int AS n FROM ir93.ev;
GRANT USAGE ON SCHEMA ir93_a TO ir93_reader;
GRANT SELECT ON ir93_a.v, ir93_a.t TO ir93_reader;
SET ROLE ir93_owner;
SET client_min_messages = error;
INSERT INTO ir93.ev VALUES (1, '123-45-6789');
RESET client_min_messages;
-- the owner of the views sees why, and so does a reader of them
SET ROLE ir93_analyst;
SELECT object, kind, reason FROM stream_ext.invalid_objects ORDER BY object::text;
SET ROLE ir93_reader;
SELECT object, reason FROM stream_ext.invalid_objects ORDER BY object::text;
SELECT view, valid, invalid_reason FROM stream_ext.view_stats WHERE view::text LIKE 'ir93%';
SELECT name, valid, invalid_reason FROM stream_ext.transforms WHERE name::text LIKE 'ir93%';
-- a role that may read neither the views nor the stream learns nothing
SET ROLE ir93_nobody;
SELECT object, reason FROM stream_ext.invalid_objects;
SELECT view, valid, invalid_reason FROM stream_ext.view_stats WHERE view::text LIKE 'ir93%';
SELECT name, valid, invalid_reason FROM stream_ext.transforms WHERE name::text LIKE 'ir93%';
-- reading the view is still refused with the reason, for those who may
SET ROLE ir93_reader;
SELECT * FROM ir93_a.v;
RESET ROLE;
DROP SCHEMA ir93_a CASCADE;
DROP SCHEMA ir93 CASCADE;
SELECT count(*) AS left_over FROM stream_ext.invalid_objects WHERE object::text LIKE 'ir93%';
DROP ROLE ir93_owner;
DROP ROLE ir93_analyst;
DROP ROLE ir93_nobody;
DROP ROLE ir93_reader;
