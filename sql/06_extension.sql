-- DROP EXTENSION: refused while streams and views exist, CASCADE takes
-- them all along; CREATE EXTENSION works again afterwards.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
SELECT stream_ext.create_stream('ext_s', 'k text');
CREATE VIEW ext_v WITH (continuous) AS SELECT k, count(*) FROM ext_s GROUP BY k;
INSERT INTO ext_s VALUES ('a');
\set VERBOSITY terse
DROP EXTENSION stream_ext;
\set VERBOSITY default
SET client_min_messages = warning;
DROP EXTENSION stream_ext CASCADE;
RESET client_min_messages;
SELECT count(*) AS leftovers FROM pg_class WHERE relname LIKE 'ext\_%';
CREATE EXTENSION stream_ext;
SELECT count(*) FROM stream_ext.streams;
