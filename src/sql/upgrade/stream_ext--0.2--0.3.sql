-- stream_ext upgrade 0.2 -> 0.3.  Every object added or changed in src/sql/ since
-- 0.2 must be added or changed here too: sql/12_upgrade.sql checks that an
-- updated installation has exactly the objects of a fresh one.
\echo Use "ALTER EXTENSION stream_ext UPDATE TO '0.3'" to load this file. \quit

-- ---- create_kafka_source() and start_source() return the source's name ----
-- (they returned void; CREATE OR REPLACE cannot change a return type)
DROP FUNCTION stream_ext.create_kafka_source(text, regclass, text, text, text, jsonb);
CREATE FUNCTION stream_ext.create_kafka_source(
    name text, stream regclass, brokers text, topic text,
    format text DEFAULT 'json', options jsonb DEFAULT '{}')
RETURNS text
AS 'MODULE_PATHNAME', 'stream_ext_create_kafka_source'
LANGUAGE C VOLATILE;

DROP FUNCTION stream_ext.start_source(text);
CREATE FUNCTION stream_ext.start_source(name text)
RETURNS text
AS 'MODULE_PATHNAME', 'stream_ext_start_source'
LANGUAGE C VOLATILE STRICT;
