-- stream_ext install script, Kafka ingest part (see docs/kafka.md):
-- source catalog, stored offsets, dead letters, SQL functions, status views.

-- One row per Kafka source.  Written only by the functions below (which run
-- their catalog writes as the extension owner); readable by each source's
-- owner through row-level security.
CREATE TABLE stream_ext.kafka_sources (
    id          serial PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    stream      regclass NOT NULL,
    brokers     text NOT NULL,
    topic       text NOT NULL,
    format      text NOT NULL DEFAULT 'json',
    options     jsonb NOT NULL DEFAULT '{}',
    owner       regrole NOT NULL,
    state       text NOT NULL DEFAULT 'stopped'
                CHECK (state IN ('stopped', 'running', 'failed')),
    last_error  text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- Next offset to consume for each (source, partition); written by the
-- workers in the same transaction as the batch they cover.
CREATE TABLE stream_ext.kafka_offsets (
    source          text NOT NULL
                    REFERENCES stream_ext.kafka_sources (name)
                    ON DELETE CASCADE ON UPDATE CASCADE,
    partition       int NOT NULL,
    next_offset     bigint NOT NULL,
    high_watermark  bigint,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source, partition)
);

-- Messages that could not be decoded or inserted (on_error = 'dead_letter').
-- They go with their source: drop_source deletes them, so a source created
-- later under the same name (by anyone) starts with none.
CREATE TABLE stream_ext.dead_letters (
    id          bigserial PRIMARY KEY,
    source      text NOT NULL
                REFERENCES stream_ext.kafka_sources (name)
                ON DELETE CASCADE ON UPDATE CASCADE,
    partition   int NOT NULL,
    "offset"    bigint NOT NULL,
    key         bytea,
    payload     bytea,
    error       text NOT NULL,
    time        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX dead_letters_source_idx ON stream_ext.dead_letters (source, time);

SELECT pg_catalog.pg_extension_config_dump('stream_ext.kafka_sources', '');
SELECT pg_catalog.pg_extension_config_dump('stream_ext.kafka_sources_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('stream_ext.kafka_offsets', '');
SELECT pg_catalog.pg_extension_config_dump('stream_ext.dead_letters', '');
SELECT pg_catalog.pg_extension_config_dump('stream_ext.dead_letters_id_seq', '');

-- Row-level security: a role sees (and may clear dead letters of) only the
-- sources it owns or is a member of the owner of; superusers see all.
ALTER TABLE stream_ext.kafka_sources ENABLE ROW LEVEL SECURITY;
ALTER TABLE stream_ext.kafka_offsets ENABLE ROW LEVEL SECURITY;
ALTER TABLE stream_ext.dead_letters ENABLE ROW LEVEL SECURITY;

CREATE POLICY kafka_sources_owner ON stream_ext.kafka_sources
    USING (pg_catalog.pg_has_role(owner, 'USAGE'));
CREATE POLICY kafka_offsets_owner ON stream_ext.kafka_offsets
    USING (EXISTS (SELECT 1 FROM stream_ext.kafka_sources s
                   WHERE s.name = kafka_offsets.source));
CREATE POLICY dead_letters_owner ON stream_ext.dead_letters
    USING (EXISTS (SELECT 1 FROM stream_ext.kafka_sources s
                   WHERE s.name = dead_letters.source));

GRANT SELECT ON stream_ext.kafka_sources TO PUBLIC;
GRANT SELECT ON stream_ext.kafka_offsets TO PUBLIC;
GRANT SELECT, DELETE ON stream_ext.dead_letters TO PUBLIC;

CREATE FUNCTION stream_ext.create_kafka_source(
    name text, stream regclass, brokers text, topic text,
    format text DEFAULT 'json', options jsonb DEFAULT '{}')
RETURNS text
AS 'MODULE_PATHNAME', 'stream_ext_create_kafka_source'
LANGUAGE C VOLATILE;

CREATE FUNCTION stream_ext.start_source(name text)
RETURNS text
AS 'MODULE_PATHNAME', 'stream_ext_start_source'
LANGUAGE C VOLATILE STRICT;

CREATE FUNCTION stream_ext.stop_source(name text)
RETURNS void
AS 'MODULE_PATHNAME', 'stream_ext_stop_source'
LANGUAGE C VOLATILE STRICT;

CREATE FUNCTION stream_ext.drop_source(name text, if_exists boolean DEFAULT false)
RETURNS void
AS 'MODULE_PATHNAME', 'stream_ext_drop_source'
LANGUAGE C VOLATILE;

-- Live counters of this database's source workers (shared memory); a role
-- sees only the workers of sources whose owner it has the privileges of.
CREATE FUNCTION stream_ext.kafka_worker_stats(
    OUT source_id int, OUT worker int, OUT pid int, OUT state text,
    OUT messages bigint, OUT bytes bigint, OUT batches bigint,
    OUT errors bigint, OUT dead_letters bigint, OUT rate float8,
    OUT last_error text, OUT last_error_time timestamptz,
    OUT last_batch_time timestamptz, OUT started_at timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'stream_ext_kafka_worker_stats'
LANGUAGE C VOLATILE;

CREATE FUNCTION stream_ext.kafka_partition_stats(
    OUT source_id int, OUT worker int, OUT partition int,
    OUT next_offset bigint, OUT high_watermark bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'stream_ext_kafka_partition_stats'
LANGUAGE C VOLATILE;


-- Per-partition progress: lag = high watermark - stored offset.  The high
-- watermark is the worker's live view when it runs, else the one stored with
-- the last batch.
CREATE VIEW stream_ext.source_partitions WITH (security_invoker = true) AS
SELECT s.name AS source,
       o.partition,
       o.next_offset AS stored_offset,
       coalesce(p.high_watermark, o.high_watermark) AS high_watermark,
       greatest(coalesce(p.high_watermark, o.high_watermark) - o.next_offset, 0) AS lag,
       p.worker,
       o.updated_at
  FROM stream_ext.kafka_sources s
  JOIN stream_ext.kafka_offsets o ON o.source = s.name
  LEFT JOIN stream_ext.kafka_partition_stats() p
         ON p.source_id = s.id AND p.partition = o.partition;

CREATE VIEW stream_ext.source_status WITH (security_invoker = true) AS
SELECT s.name AS source,
       s.stream,
       s.topic,
       s.format,
       s.owner,
       CASE
         WHEN s.state <> 'running' THEN s.state
         WHEN w.workers IS NULL THEN 'starting'
         WHEN w.retrying > 0 THEN 'retrying'
         WHEN w.starting > 0 THEN 'starting'
         ELSE 'running'
       END AS state,
       coalesce(w.workers, 0) AS workers,
       coalesce(w.messages, 0) AS messages,
       coalesce(w.bytes, 0) AS bytes,
       coalesce(w.batches, 0) AS batches,
       coalesce(w.errors, 0) AS errors,
       coalesce(w.dead_letters, 0) AS dead_letters,
       l.lag,
       l.partition_lag,
       coalesce(w.rate, 0) AS rate,
       coalesce(w.last_error, s.last_error) AS last_error,
       w.last_error_time,
       w.last_batch_time,
       w.started_at
  FROM stream_ext.kafka_sources s
  LEFT JOIN (SELECT source_id,
                    count(*)::int AS workers,
                    count(*) FILTER (WHERE state = 'retrying') AS retrying,
                    count(*) FILTER (WHERE state = 'starting') AS starting,
                    sum(messages)::bigint AS messages,
                    sum(bytes)::bigint AS bytes,
                    sum(batches)::bigint AS batches,
                    sum(errors)::bigint AS errors,
                    sum(dead_letters)::bigint AS dead_letters,
                    sum(rate) AS rate,
                    (array_agg(last_error ORDER BY last_error_time DESC NULLS LAST))[1] AS last_error,
                    max(last_error_time) AS last_error_time,
                    max(last_batch_time) AS last_batch_time,
                    min(started_at) AS started_at
               FROM stream_ext.kafka_worker_stats()
              GROUP BY source_id) w ON w.source_id = s.id
  LEFT JOIN (SELECT source,
                    sum(lag)::bigint AS lag,
                    jsonb_object_agg(partition, lag ORDER BY partition) AS partition_lag
               FROM stream_ext.source_partitions
              GROUP BY source) l ON l.source = s.name;

GRANT SELECT ON stream_ext.source_partitions TO PUBLIC;
GRANT SELECT ON stream_ext.source_status TO PUBLIC;
