-- Avro sources without a broker or registry: the options of formats "avro"
-- and "avro-confluent" are validated at create_kafka_source (22023 naming
-- what is wrong, nothing created), the registry URL is held to http/https
-- without credentials, stream_ext.allowed_registries bounds non-superusers,
-- and the registry password is visible only to the source's owner.
-- Decoding itself is tested against the embedded broker in
-- test/t/110_kafka_avro.pl.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
DROP ROLE IF EXISTS regress_av_user;
DROP ROLE IF EXISTS regress_av_other;
RESET client_min_messages;

SELECT stream_ext.create_stream('av', 'id bigint, name text, country text, amount numeric(10,2), at timestamptz');
CREATE ROLE regress_av_user LOGIN;
CREATE ROLE regress_av_other LOGIN;
GRANT INSERT, SELECT ON av TO regress_av_user, regress_av_other;

-- sqlstate of a statement, and its message
CREATE FUNCTION av_try(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE q;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- the writer schema of the examples (docs/kafka.md)
CREATE TABLE av_schema (s jsonb);
INSERT INTO av_schema VALUES ('{
  "type": "record", "name": "Click", "fields": [
    {"name": "id", "type": "long"},
    {"name": "user", "type": {"type": "record", "name": "User", "fields": [
        {"name": "name", "type": "string"},
        {"name": "country", "type": ["null", "string"], "default": null}]}},
    {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}');

-- format avro: valid, with the schema as an object or as a string
SELECT stream_ext.create_kafka_source('av_plain', 'av', 'kafka1:9092', 'clicks', 'avro',
  jsonb_build_object('schema', s, 'paths', '{"name": "user.name", "country": "user.country"}'::jsonb))
  FROM av_schema;
SELECT stream_ext.create_kafka_source('av_plain2', 'av', 'kafka1:9092', 'clicks', 'avro',
  jsonb_build_object('schema', s::text, 'columns', '["id", "amount"]'::jsonb))
  FROM av_schema;
SELECT name, format FROM stream_ext.kafka_sources WHERE name LIKE 'av\_%' ORDER BY name;

-- bad options: each one refused, nothing created
SELECT q, av_try(q) FROM (VALUES
  -- no schema; a schema for the other format; registry options for plain avro
  ($$SELECT stream_ext.create_kafka_source('av_x', 'av', 'k:9092', 't', 'avro')$$),
  ($$SELECT stream_ext.create_kafka_source('av_x', 'av', 'k:9092', 't', 'avro-confluent', '{"schema": {"type": "record", "name": "R", "fields": []}}')$$),
  ($$SELECT stream_ext.create_kafka_source('av_x', 'av', 'k:9092', 't', 'avro-confluent')$$),
  ($$SELECT stream_ext.create_kafka_source('av_x', 'av', 'k:9092', 't', 'avro', '{"schema": {"type": "record", "name": "R", "fields": [{"name": "id", "type": "long"}]}, "columns": ["id"], "schema_registry": "http://r:8081"}')$$),
  -- avro options for another format
  ($$SELECT stream_ext.create_kafka_source('av_x', 'av', 'k:9092', 't', 'json', '{"schema": {"type": "record", "name": "R", "fields": []}}')$$),
  ($$SELECT stream_ext.create_kafka_source('av_x', 'av', 'k:9092', 't', 'csv', '{"schema_registry": "http://r:8081"}')$$),
  -- schemas avro-c refuses, that are not records, that contain themselves
  ($$SELECT stream_ext.create_kafka_source('av_x', 'av', 'k:9092', 't', 'avro', '{"schema": {"type": "record", "name": "R", "fields": [{"name": "id", "type": "nosuchtype"}]}}')$$),
  ($$SELECT stream_ext.create_kafka_source('av_x', 'av', 'k:9092', 't', 'avro', '{"schema": "long"}')$$),
  ($$SELECT stream_ext.create_kafka_source('av_x', 'av', 'k:9092', 't', 'avro', '{"schema": "{not json"}')$$),
  ($$SELECT stream_ext.create_kafka_source('av_x', 'av', 'k:9092', 't', 'avro', '{"schema": 42}')$$),
  ($$SELECT stream_ext.create_kafka_source('av_x', 'av', 'k:9092', 't', 'avro', '{"columns": ["id"], "schema": {"type": "record", "name": "R", "fields": [{"name": "id", "type": "long"}, {"name": "me", "type": "R"}]}}')$$),
  -- a column the writer schema lacks (plain avro: a configuration error)
  ($$SELECT stream_ext.create_kafka_source('av_x', 'av', 'k:9092', 't', 'avro', '{"schema": {"type": "record", "name": "R", "fields": [{"name": "id", "type": "long"}]}}')$$),
  ($$SELECT stream_ext.create_kafka_source('av_x', 'av', 'k:9092', 't', 'avro', '{"columns": ["id"], "paths": {"id": "a.b"}, "schema": {"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]}}')$$),
  -- a reader schema without the column's field; one incompatible with the writer
  ($$SELECT stream_ext.create_kafka_source('av_x', 'av', 'k:9092', 't', 'avro-confluent', '{"schema_registry": "http://r:8081", "columns": ["id", "name"], "reader_schema": {"type": "record", "name": "R", "fields": [{"name": "id", "type": "long"}]}}')$$),
  ($$SELECT stream_ext.create_kafka_source('av_x', 'av', 'k:9092', 't', 'avro', '{"columns": ["id"], "schema": {"type": "record", "name": "R", "fields": [{"name": "id", "type": "string"}]}, "reader_schema": {"type": "record", "name": "R", "fields": [{"name": "id", "type": "long"}]}}')$$),
  ($$SELECT stream_ext.create_kafka_source('av_x', 'av', 'k:9092', 't', 'avro', '{"columns": ["id"], "schema": {"type": "record", "name": "R", "fields": [{"name": "x", "type": "long"}]}, "reader_schema": {"type": "record", "name": "R", "fields": [{"name": "id", "type": "long"}]}}')$$),
  ($$SELECT stream_ext.create_kafka_source('av_x', 'av', 'k:9092', 't', 'avro', '{"columns": ["id"], "schema": {"type": "record", "name": "R", "fields": [{"name": "id", "type": "long"}]}, "reader_schema": {"type": "record", "name": "S", "fields": [{"name": "id", "type": "long"}]}}')$$),
  -- registry URLs: only http and https, no credentials, query or fragment
  ($$SELECT stream_ext.create_kafka_source('av_x', 'av', 'k:9092', 't', 'avro-confluent', '{"schema_registry": "file:///etc/passwd"}')$$),
  ($$SELECT stream_ext.create_kafka_source('av_x', 'av', 'k:9092', 't', 'avro-confluent', '{"schema_registry": "gopher://r:70/"}')$$),
  ($$SELECT stream_ext.create_kafka_source('av_x', 'av', 'k:9092', 't', 'avro-confluent', '{"schema_registry": "r:8081"}')$$),
  ($$SELECT stream_ext.create_kafka_source('av_x', 'av', 'k:9092', 't', 'avro-confluent', '{"schema_registry": "http://"}')$$),
  ($$SELECT stream_ext.create_kafka_source('av_x', 'av', 'k:9092', 't', 'avro-confluent', '{"schema_registry": "http://u:hunter2@r:8081"}')$$),
  ($$SELECT stream_ext.create_kafka_source('av_x', 'av', 'k:9092', 't', 'avro-confluent', '{"schema_registry": "http://r:8081/?x=1"}')$$),
  ($$SELECT stream_ext.create_kafka_source('av_x', 'av', 'k:9092', 't', 'avro-confluent', '{"schema_registry": "http://r:8081", "registry_timeout_ms": 10}')$$),
  ($$SELECT stream_ext.create_kafka_source('av_x', 'av', 'k:9092', 't', 'avro-confluent', '{"schema_registry": "http://r:8081", "registry_password": 12}')$$)
) AS t(q);
SELECT count(*) AS created FROM stream_ext.kafka_sources WHERE name = 'av_x';

-- avro-confluent with credentials, created by a non-superuser
SET ROLE regress_av_user;
SELECT stream_ext.create_kafka_source('av_conf', 'av', 'kafka1:9092', 'clicks', 'avro-confluent',
  '{"schema_registry": "https://registry.example.com:8081/api", "registry_user": "u",
    "registry_password": "hunter2", "columns": ["id", "name"]}');
-- its owner sees its options; another role sees no row at all
SELECT name, options->>'registry_password' AS password FROM stream_ext.kafka_sources WHERE name = 'av_conf';
SET ROLE regress_av_other;
SELECT count(*) FROM stream_ext.kafka_sources WHERE name = 'av_conf';
SELECT count(*) FROM stream_ext.source_status WHERE source = 'av_conf';
RESET ROLE;

-- stream_ext.allowed_registries: superusers only; patterns like allowed_brokers
SET ROLE regress_av_user;
SET stream_ext.allowed_registries = '';
RESET ROLE;
SET stream_ext.allowed_registries = 'r:not-a-port';
SET stream_ext.allowed_registries = '*.example.com, 10.0.0.1:8081, [::1]';
SET ROLE regress_av_user;
SELECT u, av_try(format($q$SELECT stream_ext.create_kafka_source('av_x', 'av', 'k:9092', 't', 'avro-confluent', %L); SELECT stream_ext.drop_source('av_x')$q$,
                        jsonb_build_object('schema_registry', u)))
  FROM (VALUES ('https://registry.example.com'), ('http://registry.example.com:8081'),
               ('http://10.0.0.1:8081'), ('http://10.0.0.1'), ('http://[::1]:8081/'),
               ('http://example.com'), ('http://169.254.169.254/latest/meta-data'),
               ('http://localhost:8081')) AS t(u);
RESET ROLE;
-- superusers are not bound by it
SELECT stream_ext.create_kafka_source('av_su', 'av', 'k:9092', 't', 'avro-confluent',
  '{"schema_registry": "http://localhost:8081", "columns": ["id"]}');
RESET stream_ext.allowed_registries;

-- clean up
SELECT stream_ext.drop_source(name) FROM stream_ext.kafka_sources WHERE name LIKE 'av\_%' ORDER BY name;
DROP FUNCTION av_try(text);
DROP TABLE av, av_schema;
DROP ROLE regress_av_user;
DROP ROLE regress_av_other;
