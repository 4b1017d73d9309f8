-- Scale-out without a broker or a second node (the end-to-end test is
-- test/t/090_distributed.pl): partition-share options of Kafka sources,
-- and the combining read of a distributed view, here over the local
-- materialization given twice as the "nodes" (so every count doubles and
-- every avg stays), plus what create_distributed_view refuses.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;

SELECT stream_ext.create_stream('dv', 'k int, g text, v numeric, ts timestamptz');

-- ---- partition shares --------------------------------------------------
SELECT stream_ext.create_kafka_source('dv_p', 'dv', 'localhost:9', 't', 'json',
         '{"partitions": "0-3, 7"}');
SELECT stream_ext.create_kafka_source('dv_a', 'dv', 'localhost:9', 't', 'json',
         '{"partitions": [1, "4-5"], "start_offsets": {"4": 100, "5": 0}}');
SELECT stream_ext.create_kafka_source('dv_n', 'dv', 'localhost:9', 't', 'json',
         '{"node": 1, "nodes": 3, "start_offsets": {"4": 17}}');
SELECT name, options FROM stream_ext.kafka_sources WHERE name LIKE 'dv_%' ORDER BY name;
-- refused, nothing created
SELECT stream_ext.create_kafka_source('bad', 'dv', 'localhost:9', 't', 'json', '{"partitions": "3-1"}');
SELECT stream_ext.create_kafka_source('bad', 'dv', 'localhost:9', 't', 'json', '{"partitions": "1,x"}');
SELECT stream_ext.create_kafka_source('bad', 'dv', 'localhost:9', 't', 'json', '{"partitions": "-1"}');
SELECT stream_ext.create_kafka_source('bad', 'dv', 'localhost:9', 't', 'json', '{"partitions": ""}');
SELECT stream_ext.create_kafka_source('bad', 'dv', 'localhost:9', 't', 'json', '{"partitions": "2147483648"}');
SELECT stream_ext.create_kafka_source('bad', 'dv', 'localhost:9', 't', 'json', '{"partitions": {"a": 1}}');
SELECT stream_ext.create_kafka_source('bad', 'dv', 'localhost:9', 't', 'json', '{"node": 1}');
SELECT stream_ext.create_kafka_source('bad', 'dv', 'localhost:9', 't', 'json', '{"nodes": 2}');
SELECT stream_ext.create_kafka_source('bad', 'dv', 'localhost:9', 't', 'json', '{"node": 2, "nodes": 2}');
SELECT stream_ext.create_kafka_source('bad', 'dv', 'localhost:9', 't', 'json', '{"node": 0, "nodes": 0}');
SELECT stream_ext.create_kafka_source('bad', 'dv', 'localhost:9', 't', 'json', '{"partitions": "0", "node": 0, "nodes": 2}');
SELECT stream_ext.create_kafka_source('bad', 'dv', 'localhost:9', 't', 'json', '{"partitions": "0-1", "start_offsets": {"2": 5}}');
SELECT stream_ext.create_kafka_source('bad', 'dv', 'localhost:9', 't', 'json', '{"node": 0, "nodes": 2, "start_offsets": {"1": 5}}');
SELECT stream_ext.create_kafka_source('bad', 'dv', 'localhost:9', 't', 'json', '{"start_offsets": {"1": -5}}');
SELECT stream_ext.create_kafka_source('bad', 'dv', 'localhost:9', 't', 'json', '{"start_offsets": {"x": 5}}');
SELECT stream_ext.create_kafka_source('bad', 'dv', 'localhost:9', 't', 'json', '{"start_offsets": [5]}');
SELECT count(*) FROM stream_ext.kafka_sources WHERE name = 'bad';
-- the offsets of a source to move: only once it is stopped
SELECT stream_ext.source_offsets('no_such_source');
SELECT stream_ext.start_source('dv_p');
\set VERBOSITY terse
SELECT stream_ext.source_offsets('dv_p');   -- the detail says the state and live workers
\set VERBOSITY default
SELECT stream_ext.stop_source('dv_p');
SELECT stream_ext.source_offsets('dv_a');

-- ---- the combining read --------------------------------------------------
CREATE VIEW dv_by_k WITH (continuous) AS
  SELECT k, g, count(*) AS n, sum(v) AS s, avg(v) AS a, min(v) AS lo,
         max(v) - min(v) AS spread
    FROM dv GROUP BY k, g HAVING count(*) > 1;
CREATE VIEW dv_total WITH (continuous) AS
  SELECT count(*) AS n, avg(v) AS a FROM dv;
INSERT INTO dv SELECT i % 5, 'g' || (i % 2), i, now() FROM generate_series(1, 1000) i;
INSERT INTO dv VALUES (99, 'once', 1, now());
-- "two nodes" holding the same states: counts and sums double, avg, min
-- and the spread stay, HAVING applies to the combined count (the batches
-- the views appended to their deltas compacted into the materializations
-- given as the nodes: create_distributed_view() reads the deltas too)
SELECT stream_ext.compact('dv_by_k') >= 0 AS compacted, stream_ext.compact('dv_total') > 0 AS compacted;
SELECT stream_ext.distributed_select_sql('dv_by_k',
         ARRAY[(SELECT materialization FROM stream_ext.continuous_views WHERE name = 'dv_by_k'::regclass),
               (SELECT materialization FROM stream_ext.continuous_views WHERE name = 'dv_by_k'::regclass)]) AS q \gset
CREATE VIEW dv_twice AS :q;
SELECT d.k, d.g, d.n = 2 * v.n AS n2, d.s = 2 * v.s AS s2, d.a = v.a AS a, d.lo = v.lo AS lo,
       d.spread = v.spread AS spread
  FROM dv_twice d FULL JOIN dv_by_k v USING (k, g) ORDER BY 1, 2;
SELECT k, g, n FROM dv_twice WHERE k = 99;
SELECT stream_ext.distributed_select_sql('dv_total',
         ARRAY[(SELECT materialization FROM stream_ext.continuous_views WHERE name = 'dv_total'::regclass),
               (SELECT materialization FROM stream_ext.continuous_views WHERE name = 'dv_total'::regclass),
               (SELECT materialization FROM stream_ext.continuous_views WHERE name = 'dv_total'::regclass)]) AS q \gset
CREATE VIEW dv_total3 AS :q;
SELECT t3.n = 3 * t.n AS n3, t3.a = t.a AS a FROM dv_total3 t3, dv_total t;

-- ---- refusals ------------------------------------------------------------
CREATE VIEW dv_distinct WITH (continuous) AS SELECT k, count(DISTINCT g) AS d FROM dv GROUP BY k;
CREATE VIEW dv_sliding WITH (continuous, sliding_window = '1 minute', time_column = ts) AS
  SELECT k, count(*) AS n FROM dv GROUP BY k;
CREATE TABLE not_a_view (x int);
SELECT stream_ext.distributed_select_sql('dv_distinct', ARRAY['not_a_view'::regclass]);
SELECT stream_ext.distributed_select_sql('dv_sliding', ARRAY['not_a_view'::regclass]);
SELECT stream_ext.distributed_select_sql('not_a_view', ARRAY['not_a_view'::regclass]);
SELECT stream_ext.distributed_select_sql('dv_by_k', '{}');
SELECT stream_ext.create_distributed_view('x', 'not_a_view', ARRAY['s1']);
SELECT stream_ext.create_distributed_view('x', 'dv_by_k', ARRAY['no_such_server']);
SELECT stream_ext.create_distributed_view('x', 'dv_by_k', '{}');
SELECT stream_ext.create_distributed_view('', 'dv_by_k', ARRAY['s1']);
SELECT count(*) FROM pg_class WHERE relname LIKE 'x%node%' OR relname = 'x';

DROP VIEW dv_twice, dv_total3, dv_by_k, dv_total, dv_distinct, dv_sliding;
DROP TABLE not_a_view;
SELECT stream_ext.drop_source(name) FROM stream_ext.kafka_sources WHERE name LIKE 'dv_%';
DROP TABLE dv;
