-- Streams: creation, what they accept, what they refuse.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

SELECT stream_ext.create_stream('clicks', 'url text, user_id int NOT NULL, ts timestamptz DEFAULT now(), CHECK_ok int CHECK (check_ok >= 0)');
\d clicks
SELECT name, schema, stream_name, views FROM stream_ext.streams;

-- INSERT, multi-row INSERT, INSERT ... SELECT and COPY feed it
INSERT INTO clicks (url, user_id) VALUES ('a', 1);
INSERT INTO clicks (url, user_id) VALUES ('b', 2), ('c', 3);
INSERT INTO clicks (url, user_id) SELECT 'd', i FROM generate_series(1, 3) i;
COPY clicks (url, user_id) FROM stdin;
e	10
\.
SELECT url, user_id, arrival_timestamp IS NOT NULL AS arrived FROM clicks ORDER BY user_id, url;

-- append-only
UPDATE clicks SET url = 'x';
DELETE FROM clicks WHERE user_id = 1;
SELECT pg_temp.err('UPDATE clicks SET url = ''x'' WHERE false');
-- TRUNCATE discards raw rows
TRUNCATE clicks;
SELECT count(*) FROM clicks;

-- bad definitions, and nothing is left behind
SELECT pg_temp.err($$SELECT stream_ext.create_stream('s1', 'a int); DROP TABLE clicks; --')$$);
SELECT pg_temp.err($$SELECT stream_ext.create_stream('s1', 'a int PRIMARY KEY')$$);
SELECT pg_temp.err($$SELECT stream_ext.create_stream('s1', 'a int, UNIQUE (a)')$$);
SELECT pg_temp.err($$SELECT stream_ext.create_stream('s1', 'a int REFERENCES clicks')$$);
SELECT pg_temp.err($$SELECT stream_ext.create_stream('s1', 'a int) INHERITS (clicks')$$);
SELECT pg_temp.err($$SELECT stream_ext.create_stream('s1', '')$$);
SELECT pg_temp.err($$SELECT stream_ext.create_stream('s1', 'a nosuchtype')$$);
SELECT pg_temp.err($$SELECT stream_ext.create_stream('clicks', 'a int')$$);
SELECT pg_temp.err($$SELECT stream_ext.create_stream('s1', 'a int, arrival_timestamp int')$$);
SELECT to_regclass('s1') IS NULL AS no_s1, (SELECT count(*) FROM stream_ext.streams) AS streams;

-- quoted, mixed-case and schema-qualified names
CREATE SCHEMA "My Schema";
SELECT stream_ext.create_stream('"My Schema"."Odd ""Name"""', '"Col A" text, b int');
INSERT INTO "My Schema"."Odd ""Name""" ("Col A", b) VALUES ('x', 1);
SELECT "Col A", b FROM "My Schema"."Odd ""Name""";
SELECT name FROM stream_ext.streams ORDER BY 1;
DROP SCHEMA "My Schema" CASCADE;
DROP TABLE clicks;
SELECT count(*) AS streams_left FROM stream_ext.streams;
