-- A view's maintenance statements are parsed and run in the session that
-- inserts (docs/security.md, "Pinned settings"), so that session's
-- settings must not change what they mean.  An inserting role that set
-- standard_conforming_strings = off made the literal 'x\y' of another
-- role's view read "xy" (the view missed its rows), array_nulls = off made
-- '{NULL,a}' hold the string 'NULL', bytea_output = 'escape' changed what
-- bytea::text gives.  They are pinned now, like DateStyle.  Each insert is
-- made by a fresh session, which prepares the statements again.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE ROLE ss95_owner;
CREATE ROLE ss95_app;
CREATE SCHEMA ss95 AUTHORIZATION ss95_owner;
GRANT USAGE ON SCHEMA ss95 TO ss95_app;
SET ROLE ss95_owner;
SELECT stream_ext.create_stream('ss95.ev', 'v text, b bytea');
GRANT INSERT ON ss95.ev TO ss95_app;
CREATE VIEW ss95.lit WITH (continuous) AS
  SELECT count(*) AS n FROM ss95.ev WHERE v = 'x\y';
CREATE VIEW ss95.arr WITH (continuous) AS
  SELECT count(*) AS n FROM ss95.ev WHERE v = ANY ('{NULL,a}'::text[]);
CREATE VIEW ss95.bin WITH (continuous) AS
  SELECT b::text AS t, count(*) AS n FROM ss95.ev WHERE b IS NOT NULL GROUP BY 1;
\c
SET ROLE ss95_app;
SET standard_conforming_strings = off;
SET escape_string_warning = off;
INSERT INTO ss95.ev (v) VALUES (E'x\\y');
\c
SET ROLE ss95_app;
SET array_nulls = off;
INSERT INTO ss95.ev (v) VALUES ('NULL'), ('a');
\c
SET ROLE ss95_app;
SET bytea_output = 'escape';
INSERT INTO ss95.ev (b) VALUES ('\x41'::bytea);
\c
-- each view equals its query
SET ROLE ss95_owner;
SELECT (SELECT n FROM ss95.lit) AS lit, (SELECT count(*) FROM ss95.ev WHERE v = 'x\y') AS lit_query;
SELECT (SELECT n FROM ss95.arr) AS arr, (SELECT count(*) FROM ss95.ev WHERE v = ANY ('{NULL,a}'::text[])) AS arr_query;
SELECT t, n FROM ss95.bin;
SELECT b::text AS t, count(*) AS n FROM ss95.ev WHERE b IS NOT NULL GROUP BY 1;
RESET ROLE;
DROP SCHEMA ss95 CASCADE;
DROP ROLE ss95_owner;
DROP ROLE ss95_app;
