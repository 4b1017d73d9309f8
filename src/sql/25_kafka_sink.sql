-- stream_ext install script, Kafka sink part (see docs/kafka.md, "Sinks"):
-- sink catalog, the delivery queue, SQL functions, status view.

-- One row per Kafka sink.  Written only by the functions below and by the
-- sink's worker (as the extension owner); readable by each sink's owner
-- through row-level security.
CREATE TABLE stream_ext.kafka_sinks (
    id                serial PRIMARY KEY,
    name              text NOT NULL UNIQUE,
    stream            regclass NOT NULL,
    brokers           text NOT NULL,
    topic             text NOT NULL,
    format            text NOT NULL DEFAULT 'json',
    key_column        text,
    options           jsonb NOT NULL DEFAULT '{}',
    owner             regrole NOT NULL,
    state             text NOT NULL DEFAULT 'stopped'
                      CHECK (state IN ('stopped', 'running', 'failed')),
    last_error        text,
    delivered_seq     bigint NOT NULL DEFAULT 0,
    rows_delivered    bigint NOT NULL DEFAULT 0,
    batches           bigint NOT NULL DEFAULT 0,
    last_delivered_at timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);

-- Rows appended to a sink's stream and not yet acknowledged by Kafka, in
-- the order they are to be produced (seq).  Filled by the stream's
-- stream_ext_sink_<id> trigger in the inserting transaction; a row leaves
-- the queue in the transaction that records its acknowledgement.
CREATE TABLE stream_ext.sink_queue (
    sink        int NOT NULL,
    seq         bigserial,
    key         text,
    payload     text,
    enqueued_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (sink, seq)
) WITH (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 10000,
        autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 10000);

SELECT pg_catalog.pg_extension_config_dump('stream_ext.kafka_sinks', '');
SELECT pg_catalog.pg_extension_config_dump('stream_ext.kafka_sinks_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('stream_ext.sink_queue', '');
SELECT pg_catalog.pg_extension_config_dump('stream_ext.sink_queue_seq_seq', '');

ALTER TABLE stream_ext.kafka_sinks ENABLE ROW LEVEL SECURITY;
ALTER TABLE stream_ext.sink_queue ENABLE ROW LEVEL SECURITY;

CREATE POLICY kafka_sinks_owner ON stream_ext.kafka_sinks
    USING (pg_catalog.pg_has_role(owner, 'USAGE'));
CREATE POLICY sink_queue_owner ON stream_ext.sink_queue
    USING (EXISTS (SELECT 1 FROM stream_ext.kafka_sinks s
                   WHERE s.id = sink_queue.sink));

GRANT SELECT ON stream_ext.kafka_sinks TO PUBLIC;
GRANT SELECT ON stream_ext.sink_queue TO PUBLIC;

CREATE FUNCTION stream_ext.create_kafka_sink(
    name text, stream regclass, brokers text, topic text,
    format text DEFAULT 'json', key_column text DEFAULT NULL,
    options jsonb DEFAULT '{}')
RETURNS void
AS 'MODULE_PATHNAME', 'stream_ext_create_kafka_sink'
LANGUAGE C VOLATILE;

CREATE FUNCTION stream_ext.start_sink(name text)
RETURNS void
AS 'MODULE_PATHNAME', 'stream_ext_start_sink'
LANGUAGE C VOLATILE STRICT;

CREATE FUNCTION stream_ext.stop_sink(name text)
RETURNS void
AS 'MODULE_PATHNAME', 'stream_ext_stop_sink'
LANGUAGE C VOLATILE STRICT;

CREATE FUNCTION stream_ext.drop_sink(name text, if_exists boolean DEFAULT false)
RETURNS void
AS 'MODULE_PATHNAME', 'stream_ext_drop_sink'
LANGUAGE C VOLATILE;

-- statement-level AFTER INSERT trigger of a sink's stream (one per sink)
CREATE FUNCTION stream_ext.sink_enqueue() RETURNS trigger
AS 'MODULE_PATHNAME', 'stream_ext_sink_enqueue'
LANGUAGE C;

-- Live counters of this database's sink workers (shared memory); a role
-- sees only the workers of sinks whose owner it has the privileges of.
CREATE FUNCTION stream_ext.kafka_sink_worker_stats(
    OUT sink_id int, OUT pid int, OUT state text,
    OUT rows bigint, OUT batches bigint, OUT errors bigint,
    OUT last_error text, OUT last_error_time timestamptz,
    OUT last_batch_time timestamptz, OUT started_at timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'stream_ext_kafka_sink_worker_stats'
LANGUAGE C VOLATILE;

CREATE VIEW stream_ext.sink_status WITH (security_invoker = true) AS
SELECT s.name AS sink,
       s.stream,
       s.topic,
       s.format,
       s.key_column,
       s.owner,
       CASE
         WHEN s.state <> 'running' THEN s.state
         WHEN w.pid IS NULL THEN 'starting'
         ELSE w.state
       END AS state,
       s.rows_delivered,
       s.batches,
       coalesce(w.errors, 0) AS errors,
       coalesce(w.last_error, s.last_error) AS last_error,
       w.last_error_time,
       q.queued_rows,
       q.oldest_queued_at,
       s.delivered_seq,
       s.last_delivered_at,
       w.pid,
       w.started_at
  FROM stream_ext.kafka_sinks s
  LEFT JOIN stream_ext.kafka_sink_worker_stats() w ON w.sink_id = s.id
  LEFT JOIN LATERAL (SELECT count(*) AS queued_rows,
                            min(enqueued_at) AS oldest_queued_at
                       FROM stream_ext.sink_queue q
                      WHERE q.sink = s.id) q ON true;

GRANT SELECT ON stream_ext.sink_status TO PUBLIC;
