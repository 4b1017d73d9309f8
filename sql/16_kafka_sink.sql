-- Kafka sinks without a broker: what the queue trigger puts in
-- stream_ext.sink_queue (payload formats, keys, columns, the inserting
-- session's settings ignored), transactions and savepoints, COPY, status,
-- privileges, option errors, drop.  Delivery to Kafka is tested in
-- test/t/025_kafka_sink.pl.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;

SELECT stream_ext.create_stream('sk', 'i int, n numeric, b boolean, j jsonb, a int[], t timestamptz, d date, iv interval, f float8, s text');
SELECT stream_ext.create_kafka_sink('sk_json', 'sk', 'localhost:9', 'out', 'json', 'i');
SELECT stream_ext.create_kafka_sink('sk_csv', 'sk', 'localhost:9', 'out', 'csv', 's');
SELECT stream_ext.create_kafka_sink('sk_text', 'sk', 'localhost:9', 'out', 'text', NULL, '{"columns": ["s"]}');
SELECT stream_ext.create_kafka_sink('sk_cols', 'sk', 'localhost:9', 'out', 'json', NULL,
                                    '{"columns": ["s", "i", "arrival_timestamp"]}');
SELECT name, stream, topic, format, key_column, options, owner, state FROM stream_ext.kafka_sinks ORDER BY id;
SELECT tgname FROM pg_trigger WHERE tgrelid = 'sk'::regclass AND NOT tgisinternal ORDER BY tgname;

-- the session's display settings do not leak into the payloads
SET TimeZone = 'America/New_York';
SET DateStyle = 'SQL, DMY';
SET IntervalStyle = 'sql_standard';
SET extra_float_digits = 0;
INSERT INTO sk VALUES
  (1, 1.50, true, '{"x": [1, 2]}', '{1,2}', '2026-01-02 03:04:05+00', '2026-01-02', '1 day 2 hours', 0.1, 'plain'),
  (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
  (3, -0, false, '"str"', '{}', 'infinity', '2026-12-31', '-3 mins', 1e100, E'a,b "c"\nd'),
  (4, 2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '');
RESET TimeZone;
RESET DateStyle;
RESET IntervalStyle;
RESET extra_float_digits;

SELECT s.name, q.key, q.payload
  FROM stream_ext.sink_queue q JOIN stream_ext.kafka_sinks s ON s.id = q.sink
 WHERE s.name <> 'sk_cols' ORDER BY s.id, q.seq;
-- the columns of option "columns", in its order (arrival_timestamp when named)
SELECT (SELECT array_agg(k) FROM json_object_keys(q.payload::json) k) AS keys, q.key
  FROM stream_ext.sink_queue q JOIN stream_ext.kafka_sinks s ON s.id = q.sink
 WHERE s.name = 'sk_cols' ORDER BY q.seq;
-- one seq per row, in insert order, per sink
SELECT s.name, count(*), count(DISTINCT q.seq), bool_and(q.enqueued_at IS NOT NULL)
  FROM stream_ext.sink_queue q JOIN stream_ext.kafka_sinks s ON s.id = q.sink
 GROUP BY s.name ORDER BY s.name;

-- only committed rows are queued; COPY too
DELETE FROM stream_ext.sink_queue;
BEGIN;
INSERT INTO sk (i) VALUES (10);
ROLLBACK;
BEGIN;
INSERT INTO sk (i) VALUES (11);
SAVEPOINT a;
INSERT INTO sk (i) VALUES (12);
ROLLBACK TO a;
INSERT INTO sk (i) VALUES (13);
COMMIT;
COPY sk (i, s) FROM STDIN;
14	copied
15	\N
\.
INSERT INTO sk (i) SELECT 1 WHERE false;	-- an empty statement queues nothing
SELECT q.key, q.payload
  FROM stream_ext.sink_queue q JOIN stream_ext.kafka_sinks s ON s.id = q.sink
 WHERE s.name = 'sk_json' ORDER BY q.seq;

-- status of sinks never started: stopped, rows waiting
SELECT sink, stream, state, rows_delivered, batches, errors, last_error, queued_rows,
       oldest_queued_at IS NOT NULL AS has_oldest, delivered_seq, last_delivered_at, pid
  FROM stream_ext.sink_status ORDER BY sink;

-- privileges: SELECT on the stream to create; the owner's sinks only
CREATE ROLE sink_owner LOGIN;
CREATE ROLE sink_other;
GRANT SELECT ON sk TO sink_owner;
SET ROLE sink_owner;
SELECT stream_ext.create_kafka_sink('sk_owned', 'sk', 'localhost:9', 'out');
SELECT name, owner FROM stream_ext.kafka_sinks ORDER BY name;
SELECT count(*) FROM stream_ext.sink_queue;
SELECT sink, state FROM stream_ext.sink_status;
INSERT INTO stream_ext.sink_queue (sink, payload) VALUES (1, 'forged');
RESET ROLE;
INSERT INTO sk (i) VALUES (30);
SET ROLE sink_owner;
SELECT payload FROM stream_ext.sink_queue;
RESET ROLE;
SET ROLE sink_other;
SELECT stream_ext.create_kafka_sink('sk_x', 'sk', 'localhost:9', 'out');
SELECT stream_ext.stop_sink('sk_owned');
SELECT stream_ext.drop_sink('sk_owned');
SELECT stream_ext.start_sink('sk_owned');
RESET ROLE;
-- payloads are computed as the sink's owner, not as the inserting
-- superuser: a cast to json of the owner's type sees current_user
CREATE TYPE sink_mood AS ENUM ('happy');
CREATE FUNCTION sink_mood_json(sink_mood) RETURNS json LANGUAGE sql
    AS $$ SELECT pg_catalog.json_build_object('as', current_user) $$;
CREATE CAST (sink_mood AS json) WITH FUNCTION sink_mood_json(sink_mood);
SELECT stream_ext.create_stream('skm', 'm sink_mood');
GRANT SELECT ON skm TO sink_owner;
SET ROLE sink_owner;
SELECT stream_ext.create_kafka_sink('sk_mood', 'skm', 'localhost:9', 'out');
RESET ROLE;
INSERT INTO skm VALUES ('happy');
SELECT q.payload FROM stream_ext.sink_queue q JOIN stream_ext.kafka_sinks s ON s.id = q.sink
 WHERE s.name = 'sk_mood';
SELECT stream_ext.drop_sink('sk_mood');
DROP TABLE skm;
DROP CAST (sink_mood AS json);
DROP FUNCTION sink_mood_json(sink_mood);
DROP TYPE sink_mood;
-- only the sink's own stream feeds it: another role's trigger calling the
-- queue function on its own table cannot put rows into the sink
SELECT set_config('sink_test.owned_id', id::text, false) IS NOT NULL AS id_known
  FROM stream_ext.kafka_sinks WHERE name = 'sk_owned';
CREATE SCHEMA sink_other_s AUTHORIZATION sink_other;
SET ROLE sink_other;
CREATE TABLE sink_other_s.fake (i int, t text);
GRANT SELECT ON sink_other_s.fake TO sink_owner;
GRANT USAGE ON SCHEMA sink_other_s TO sink_owner;
DO $$ BEGIN
  EXECUTE format('CREATE TRIGGER forge AFTER INSERT ON sink_other_s.fake REFERENCING NEW TABLE AS n'
                 ' FOR EACH STATEMENT EXECUTE FUNCTION stream_ext.sink_enqueue(%s)',
                 current_setting('sink_test.owned_id'));
END $$;
INSERT INTO sink_other_s.fake (i, t) VALUES (666, 'forged');
RESET ROLE;
SELECT count(*) AS forged FROM stream_ext.sink_queue
 WHERE payload LIKE '%666%' AND payload LIKE '%forged%';
DROP SCHEMA sink_other_s CASCADE;
-- a role that cannot log in cannot run a sink worker
ALTER ROLE sink_owner NOLOGIN;
SELECT stream_ext.start_sink('sk_owned');
-- the owner lost SELECT: the insert succeeds, the sink is marked failed
-- and queues nothing more (sql/19_revoke.sql)
REVOKE SELECT ON sk FROM sink_owner;
INSERT INTO sk (i) VALUES (31);
SELECT sink, state, last_error FROM stream_ext.sink_status WHERE sink = 'sk_owned';
SELECT stream_ext.drop_sink('sk_owned');
INSERT INTO sk (i) VALUES (31);
DROP ROLE sink_owner;
DROP ROLE sink_other;

-- errors
SELECT stream_ext.create_kafka_sink('e', 'sk', 'localhost:9', 'out', 'avro');
SELECT stream_ext.create_kafka_sink('e', 'sk', 'localhost:9', 'out', 'text');
SELECT stream_ext.create_kafka_sink('e', 'sk', 'localhost:9', 'out', 'json', 'nope');
SELECT stream_ext.create_kafka_sink('e', 'sk', 'localhost:9', 'out', 'json', NULL, '{"columns": ["i", "nope"]}');
SELECT stream_ext.create_kafka_sink('e', 'sk', 'localhost:9', 'out', 'json', NULL, '{"columns": "i"}');
SELECT stream_ext.create_kafka_sink('e', 'sk', 'localhost:9', 'out', 'json', NULL, '{"columns": []}');
SELECT stream_ext.create_kafka_sink('e', 'sk', 'localhost:9', 'out', 'json', NULL, '{"batch_size": 0}');
SELECT stream_ext.create_kafka_sink('e', 'sk', 'localhost:9', 'out', 'json', NULL, '{"poll_interval_ms": "soon"}');
SELECT stream_ext.create_kafka_sink('e', 'sk', 'localhost:9', 'out', 'json', NULL, '{"bogus": 1}');
SELECT stream_ext.create_kafka_sink('e', 'sk', 'localhost:9', 'out', 'json', NULL, '{"kafka": {"acks": "1"}}');
SELECT stream_ext.create_kafka_sink('e', 'sk', 'localhost:9', 'out', 'json', NULL, '{"linger.ms": "abc"}');
SELECT stream_ext.create_kafka_sink('e', 'sk', 'localhost:9', 'out', 'json', NULL, '[1]');
SELECT stream_ext.create_kafka_sink('e', 'sk', '', 'out');
SELECT stream_ext.create_kafka_sink('e', 'sk', 'localhost:9', '');
SELECT stream_ext.create_kafka_sink('', 'sk', 'localhost:9', 'out');
SELECT stream_ext.create_kafka_sink(NULL, 'sk', 'localhost:9', 'out');
SELECT stream_ext.create_kafka_sink('sk_json', 'sk', 'localhost:9', 'out');
SELECT stream_ext.create_kafka_sink('e', 'stream_ext.streams', 'localhost:9', 'out');
SELECT stream_ext.start_sink('nope');
SELECT stream_ext.drop_sink('nope');
SELECT stream_ext.drop_sink('nope', true);

-- drop: the trigger, the queued rows and the sink go
SELECT stream_ext.drop_sink('sk_json');
SELECT stream_ext.drop_sink('sk_csv');
SELECT stream_ext.drop_sink('sk_text');
SELECT tgname FROM pg_trigger WHERE tgrelid = 'sk'::regclass AND NOT tgisinternal ORDER BY tgname;
SELECT s.name, count(q.seq) FROM stream_ext.kafka_sinks s LEFT JOIN stream_ext.sink_queue q ON q.sink = s.id GROUP BY s.name;
-- a sink outlives its stream; what it queued stays to be delivered
DROP TABLE sk;
SELECT name, state FROM stream_ext.kafka_sinks;
SELECT count(*) FROM stream_ext.sink_queue;
SELECT stream_ext.drop_sink('sk_cols');
SELECT count(*) FROM stream_ext.kafka_sinks;
SELECT count(*) FROM stream_ext.sink_queue;
