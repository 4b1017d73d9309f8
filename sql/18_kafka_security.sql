-- Kafka security without a broker: who may set which librdkafka property
-- (an allow-list; files need pg_read_server_files, programs and libraries
-- pg_execute_server_program, the rest a superuser), the syntax of the
-- brokers argument, stream_ext.allowed_brokers, and dead letters going
-- with their source.  The checks a worker repeats as the owner are in
-- test/t/026_kafka_property_recheck.pl.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
DROP ROLE IF EXISTS regress_ks_user;
DROP ROLE IF EXISTS regress_ks_files;
DROP ROLE IF EXISTS regress_ks_prog;
DROP ROLE IF EXISTS regress_ks_other;
RESET client_min_messages;

SELECT stream_ext.create_stream('ks', 'n int');
CREATE ROLE regress_ks_user LOGIN;
CREATE ROLE regress_ks_files LOGIN IN ROLE pg_read_server_files;
CREATE ROLE regress_ks_prog LOGIN IN ROLE pg_execute_server_program;
CREATE ROLE regress_ks_other LOGIN;
GRANT INSERT, SELECT ON ks TO regress_ks_user, regress_ks_files, regress_ks_prog, regress_ks_other;

-- sqlstate of a statement, and its message
CREATE FUNCTION ks_try(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE q;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- a role without special rights: tuning, SASL PLAIN/SCRAM, TLS with inline
-- material are fine; commands, libraries, files, engines, OAuth, GSSAPI,
-- unknown properties are not (42501, naming the property and the role)
SET ROLE regress_ks_user;
SELECT stream_ext.create_kafka_source('ks_ok', 'ks', 'kafka1:9092', 't', 'json',
  '{"kafka": {"security.protocol": "sasl_ssl", "sasl.mechanism": "SCRAM-SHA-256",
              "sasl.username": "u", "sasl.password": "p", "fetch.wait.max.ms": 10,
              "ssl.ca.pem": "not checked before use", "enable.ssl.certificate.verification": false},
    "queued.min.messages": 1000}');
SELECT stream_ext.create_kafka_source('ks_x', 'ks', 'kafka1:9092', 't', 'json',
  '{"kafka": {"sasl.kerberos.kinit.cmd": "touch /tmp/pwned"}}');
SELECT stream_ext.create_kafka_source('ks_x', 'ks', 'kafka1:9092', 't', 'json',
  '{"plugin.library.paths": "/tmp/evil.so"}');
SELECT stream_ext.create_kafka_source('ks_x', 'ks', 'kafka1:9092', 't', 'json',
  '{"ssl.key.location": "/etc/ssl/private/server.key"}');
SELECT p, ks_try(format($q$SELECT stream_ext.create_kafka_source('ks_x', 'ks', 'kafka1:9092', 't', 'json', %L); SELECT stream_ext.drop_source('ks_x')$q$,
                        jsonb_build_object('kafka', jsonb_build_object(p, v))))
  FROM (VALUES ('ssl.ca.location', '/etc/passwd'), ('ssl.certificate.location', '/x'),
               ('ssl.crl.location', '/x'), ('ssl.keystore.location', '/x'),
               ('sasl.kerberos.keytab', '/x'), ('ssl.engine.location', '/x.so'),
               ('ssl.engine.id', 'x'), ('ssl.providers', 'legacy'),
               ('sasl.oauthbearer.token.endpoint.url', 'http://169.254.169.254/'),
               ('sasl.oauthbearer.config', 'principal=x'),
               ('enable.sasl.oauthbearer.unsecure.jwt', 'true'),
               ('sasl.mechanism', 'GSSAPI'), ('sasl.mechanisms', 'OAUTHBEARER'),
               ('debug', 'all'), ('log_level', '7'), ('no.such.property', 'x'),
               ('sasl.mechanism', 'scram-sha-512')) AS t(p, v);
-- the sink functions share the check
SELECT stream_ext.create_kafka_sink('ks_sink', 'ks', 'kafka1:9092', 't', 'json', NULL,
  '{"kafka": {"plugin.library.paths": "/tmp/evil.so"}}');
SELECT ks_try($q$SELECT stream_ext.create_kafka_sink('ks_sink', 'ks', 'kafka1:9092', 't', 'json', NULL, '{"linger.ms": 10}')$q$);
RESET ROLE;

-- members of pg_read_server_files may name files, not programs
SET ROLE regress_ks_files;
SELECT ks_try($q$SELECT stream_ext.create_kafka_source('ks_files', 'ks', 'kafka1:9092', 't', 'json',
  '{"ssl.ca.location": "/etc/ssl/certs", "sasl.kerberos.keytab": "/x"}')$q$);
SELECT ks_try($q$SELECT stream_ext.create_kafka_source('ks_x', 'ks', 'kafka1:9092', 't', 'json',
  '{"sasl.kerberos.kinit.cmd": "true"}')$q$);
RESET ROLE;
-- members of pg_execute_server_program may name programs (and GSSAPI), not files
SET ROLE regress_ks_prog;
SELECT ks_try($q$SELECT stream_ext.create_kafka_source('ks_prog', 'ks', 'kafka1:9092', 't', 'json',
  '{"sasl.kerberos.kinit.cmd": "true", "sasl.mechanisms": "GSSAPI", "ssl.engine.location": "/x.so"}')$q$);
SELECT ks_try($q$SELECT stream_ext.create_kafka_source('ks_x', 'ks', 'kafka1:9092', 't', 'json',
  '{"ssl.ca.location": "/etc/ssl/certs"}')$q$);
-- past the privilege check, librdkafka itself refuses a library it cannot load
SELECT ks_try($q$SELECT stream_ext.create_kafka_source('ks_x', 'ks', 'kafka1:9092', 't', 'json',
  '{"plugin.library.paths": "/nonexistent/stream_ext_no_such_plugin"}')$q$) ~ '^22023: invalid librdkafka property "plugin.library.paths"' AS refused_by_librdkafka;
RESET ROLE;
-- superusers may set anything librdkafka accepts
SELECT stream_ext.create_kafka_source('ks_super', 'ks', 'kafka1:9092', 't', 'json',
  '{"kafka": {"sasl.kerberos.kinit.cmd": "true", "ssl.key.location": "/x", "debug": "broker",
              "sasl.oauthbearer.config": "principal=x"}}');
-- the brokers come from the brokers argument only, for everybody
SELECT stream_ext.create_kafka_source('ks_x', 'ks', 'kafka1:9092', 't', 'json',
  '{"bootstrap.servers": "elsewhere:9092"}');
SELECT stream_ext.create_kafka_sink('ks_x', 'ks', 'kafka1:9092', 't', 'json', NULL,
  '{"kafka": {"metadata.broker.list": "elsewhere:9092"}}');
SELECT name, owner FROM stream_ext.kafka_sources ORDER BY name;

-- the brokers argument: a comma-separated list of [protocol://]host[:port]
SELECT b, ks_try(format($q$SELECT stream_ext.create_kafka_source('ks_b', 'ks', %L, 't')$q$, b)) AS result
  FROM (VALUES ('not a broker list'), ('kafka1:9092,'), (','), ('kafka1:'), ('kafka1:0'),
               ('kafka1:65536'), ('kafka1:9092:1'), ('kafka1;kafka2'), ('ka fka:1'),
               ('[::1'), ('[]:1'), ('kafka1./'), ('   ')) AS t(b);
SELECT b, ks_try(format($q$SELECT stream_ext.create_kafka_source('ks_b', 'ks', %L, 't'); SELECT stream_ext.drop_source('ks_b')$q$, b)) AS result
  FROM (VALUES ('kafka1'), ('kafka1:9092, kafka2:9093'), ('SASL_SSL://kafka1:9093'),
               ('[::1]:9092'), ('10.0.0.1:9092'), ('my_host.example.com')) AS t(b);
SELECT stream_ext.create_kafka_sink('ks_b', 'ks', 'not a broker list', 't');

-- stream_ext.allowed_brokers: superusers only, for non-superusers' sources
SET ROLE regress_ks_user;
SET stream_ext.allowed_brokers = '';
RESET ROLE;
SET stream_ext.allowed_brokers = 'kafka1:not-a-port';
SET stream_ext.allowed_brokers = 'kafka1:9092, *.example.com, 10.0.0.1';
SHOW stream_ext.allowed_brokers;
SET ROLE regress_ks_user;
SELECT b, ks_try(format($q$SELECT stream_ext.create_kafka_source('ks_b', 'ks', %L, 't'); SELECT stream_ext.drop_source('ks_b')$q$, b)) AS result
  FROM (VALUES ('kafka1:9092'), ('KAFKA1'), ('kafka1:9093'), ('b.example.com:1'),
               ('example.com:9092'), ('kafka1:9092,evil:9092'), ('10.0.0.1:19092'),
               ('SASL_SSL://kafka1:9092'), ('evil.example.org:9092')) AS t(b);
SELECT stream_ext.create_kafka_sink('ks_b', 'ks', 'evil:9092', 't');
RESET ROLE;
-- superusers connect anywhere
SELECT ks_try($q$SELECT stream_ext.create_kafka_source('ks_b', 'ks', 'evil:9092', 't'); SELECT stream_ext.drop_source('ks_b')$q$);
RESET stream_ext.allowed_brokers;

-- dead letters go with their source: a source created later under the
-- same name by another role sees none of them
SET ROLE regress_ks_user;
SELECT stream_ext.create_kafka_source('ks_dl', 'ks', 'kafka1:9092', 't');
RESET ROLE;
INSERT INTO stream_ext.dead_letters (source, partition, "offset", payload, error)
VALUES ('ks_dl', 0, 7, 'secret of regress_ks_user', 'bad message');
SET ROLE regress_ks_user;
SELECT source, "offset", convert_from(payload, 'UTF8') FROM stream_ext.dead_letters;
SELECT stream_ext.drop_source('ks_dl');
RESET ROLE;
SELECT count(*) AS left_behind FROM stream_ext.dead_letters WHERE source = 'ks_dl';
SET ROLE regress_ks_other;
SELECT stream_ext.create_kafka_source('ks_dl', 'ks', 'kafka1:9092', 't');
SELECT count(*) AS inherited FROM stream_ext.dead_letters;
DELETE FROM stream_ext.dead_letters;
SELECT stream_ext.drop_source('ks_dl');
RESET ROLE;
-- dead letters of a source that does not exist are refused
INSERT INTO stream_ext.dead_letters (source, partition, "offset", error) VALUES ('ks_none', 0, 0, 'x');

-- clean up
SELECT stream_ext.drop_source(name) FROM stream_ext.kafka_sources WHERE name LIKE 'ks\_%' ORDER BY name;
SELECT stream_ext.drop_sink(name) FROM stream_ext.kafka_sinks WHERE name LIKE 'ks\_%' ORDER BY name;
DROP FUNCTION ks_try(text);
DROP TABLE ks;
DROP ROLE regress_ks_user;
DROP ROLE regress_ks_files;
DROP ROLE regress_ks_prog;
DROP ROLE regress_ks_other;
