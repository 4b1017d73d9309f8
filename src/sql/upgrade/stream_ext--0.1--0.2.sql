-- stream_ext upgrade 0.1 -> 0.2.  Every object added or changed in src/sql/ since
-- 0.1 must be added or changed here too: sql/12_upgrade.sql checks that an
-- updated installation has exactly the objects of a fresh one.
\echo Use "ALTER EXTENSION stream_ext UPDATE TO '0.2'" to load this file. \quit

-- observability (src/sql/35_stats.sql)
CREATE FUNCTION stream_ext._view_stats(
    OUT view oid, OUT stream oid, OUT rows_in bigint, OUT batches bigint,
    OUT groups_updated bigint, OUT last_batch_rows bigint,
    OUT total_maintenance_ms float8, OUT max_maintenance_ms float8,
    OUT last_maintained_at timestamptz, OUT max_arrival timestamptz)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'stream_ext_view_stats_raw'
    LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION stream_ext.stats_info(OUT stats_reset timestamptz, OUT uncounted_batches bigint)
    RETURNS record
    AS 'MODULE_PATHNAME', 'stream_ext_stats_info'
    LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION stream_ext.reset_stats(view regclass DEFAULT NULL)
    RETURNS void
    AS 'MODULE_PATHNAME', 'stream_ext_reset_stats'
    LANGUAGE C VOLATILE PARALLEL RESTRICTED;
REVOKE ALL ON FUNCTION stream_ext.reset_stats(regclass) FROM PUBLIC;

CREATE FUNCTION stream_ext.view_groups(view regclass)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'stream_ext_view_groups'
    LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION stream_ext.explain(view regclass, verbose boolean DEFAULT false,
                                   batch_rows integer DEFAULT 1000)
    RETURNS SETOF text
    AS 'MODULE_PATHNAME', 'stream_ext_explain'
    LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

-- One row per continuous view of this database; counters since the server
-- started (or reset_stats()), committed batches only.
CREATE VIEW stream_ext.view_stats AS
SELECT v.view,
       v.stream,
       COALESCE(s.rows_in, 0) AS rows_in,
       COALESCE(s.batches, 0) AS batches,
       COALESCE(s.groups_updated, 0) AS groups_updated,
       stream_ext.view_groups(v.view) AS groups,
       s.last_batch_rows,
       s.last_maintained_at,
       s.max_arrival AS max_event_time,
       pg_catalog.now() - s.max_arrival AS freshness,
       s.total_maintenance_ms,
       CASE WHEN s.batches > 0 THEN s.total_maintenance_ms / s.batches END
           AS mean_maintenance_ms,
       s.max_maintenance_ms
  FROM stream_ext.view_catalog v
  LEFT JOIN stream_ext._view_stats() s ON s.view = v.view::oid;

-- One row per stream: what went in (PostgreSQL's own table statistics) and
-- how far its continuous views have got.
CREATE VIEW stream_ext.stream_stats AS
SELECT st.stream,
       (SELECT count(*) FROM stream_ext.view_catalog v WHERE v.stream = st.stream)
           AS views,
       t.rows_inserted,
       t.rows_stored,
       pg_catalog.pg_total_relation_size(st.stream) AS bytes,
       vs.last_maintained_at,
       vs.max_event_time,
       pg_catalog.now() - vs.max_event_time AS freshness
  FROM stream_ext.stream_catalog st
  LEFT JOIN LATERAL (
       SELECT pg_catalog.sum(pg_catalog.pg_stat_get_tuples_inserted(p.relid))::bigint AS rows_inserted,
              pg_catalog.sum(pg_catalog.pg_stat_get_live_tuples(p.relid))::bigint AS rows_stored
         FROM (SELECT st.stream AS relid
               UNION SELECT pt.relid FROM pg_catalog.pg_partition_tree(st.stream) pt) p) t ON true
  LEFT JOIN LATERAL (
       SELECT pg_catalog.max(s.last_maintained_at) AS last_maintained_at,
              pg_catalog.max(s.max_arrival) AS max_event_time
         FROM stream_ext._view_stats() s
        WHERE s.stream = st.stream::oid) vs ON true;

GRANT SELECT ON stream_ext.view_stats, stream_ext.stream_stats TO PUBLIC;

-- session windows (src/sql/40_sessions.sql)
-- Merges partial states of one aggregate (the aggregate's combine function,
-- through stream_ext.combine): the read side of session windows.
CREATE AGGREGATE stream_ext.merge_states(state anyelement, aggregate regprocedure) (
    SFUNC = stream_ext.combine,
    STYPE = anyelement
);

CREATE TABLE stream_ext.session_views (
    view         regclass PRIMARY KEY
                 REFERENCES stream_ext.view_catalog (view) ON DELETE CASCADE,
    time_column  name NOT NULL,
    session_gap  interval NOT NULL,
    compact_sql  text NOT NULL
);
SELECT pg_catalog.pg_extension_config_dump('stream_ext.session_views', '');
GRANT SELECT ON stream_ext.session_views TO PUBLIC;

CREATE FUNCTION stream_ext.compact_sessions(view regclass)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'stream_ext_compact_sessions'
    LANGUAGE C STRICT VOLATILE;

-- time windows (src/sql/00_core.sql catalog columns, src/sql/45_windows.sql)
ALTER TABLE stream_ext.view_catalog
    ADD COLUMN window_kind   text CHECK (window_kind IN ('tumbling', 'hopping', 'sliding')),
    ADD COLUMN window_size   interval,
    ADD COLUMN window_slide  interval,
    ADD COLUMN window_step   interval,
    ADD COLUMN time_column   name,
    ADD COLUMN window_column name,
    ADD COLUMN expire_sql    text;

CREATE OR REPLACE VIEW stream_ext.continuous_views AS
SELECT v.view AS name,
       v.stream AS source,
       v.definition,
       v.matrel AS materialization,
       pg_catalog.pg_get_userbyid(c.relowner) AS owner,
       v.created_at,
       v.window_kind,
       v.window_size,
       v.window_slide,
       v.window_step,
       v.time_column
  FROM stream_ext.view_catalog v
  JOIN pg_catalog.pg_class c ON c.oid = v.view;

CREATE FUNCTION stream_ext.tumble(ts timestamptz, size interval)
    RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'stream_ext_tumble'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION stream_ext.tumble(ts timestamp, size interval)
    RETURNS timestamp
    AS 'MODULE_PATHNAME', 'stream_ext_tumble'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION stream_ext.hop(ts timestamptz, size interval, slide interval)
    RETURNS SETOF timestamptz
    AS 'MODULE_PATHNAME', 'stream_ext_hop'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 5;

CREATE FUNCTION stream_ext.hop(ts timestamp, size interval, slide interval)
    RETURNS SETOF timestamp
    AS 'MODULE_PATHNAME', 'stream_ext_hop'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 5;

CREATE FUNCTION stream_ext.expire_sliding(view regclass DEFAULT NULL)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'stream_ext_expire_sliding'
    LANGUAGE C VOLATILE;

-- Kafka sinks (src/sql/25_kafka_sink.sql)
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

-- late data of tumbling windows (src/sql/50_lateness.sql)
CREATE TABLE stream_ext.lateness_views (
    view              regclass PRIMARY KEY
                      REFERENCES stream_ext.view_catalog (view) ON DELETE CASCADE,
    allowed_lateness  interval NOT NULL,
    late_sql          text NOT NULL,
    max_sql           text NOT NULL,
    -- emit = 'on_close': the stream receiving final rows, and the statement
    emit_sql          text,
    output_stream     regclass
);

-- newest event time each view has seen; watermark = max_event_time -
-- allowed_lateness
CREATE TABLE stream_ext.watermarks (
    view            regclass PRIMARY KEY
                    REFERENCES stream_ext.lateness_views (view) ON DELETE CASCADE,
    max_event_time  timestamptz
);

-- rows not applied because their window had closed
CREATE TABLE stream_ext.late_rows (
    view         regclass NOT NULL
                 REFERENCES stream_ext.lateness_views (view) ON DELETE CASCADE,
    event_time   timestamptz,
    watermark    timestamptz NOT NULL,
    reason       text NOT NULL,
    "row"        jsonb NOT NULL,
    received_at  timestamptz NOT NULL DEFAULT pg_catalog.now()
);
CREATE INDEX ON stream_ext.late_rows (view, received_at);

SELECT pg_catalog.pg_extension_config_dump('stream_ext.lateness_views', '');
SELECT pg_catalog.pg_extension_config_dump('stream_ext.watermarks', '');
SELECT pg_catalog.pg_extension_config_dump('stream_ext.late_rows', '');

-- late rows are rows of the stream: only the view's owner (and members of
-- that role) see them
ALTER TABLE stream_ext.late_rows ENABLE ROW LEVEL SECURITY;
CREATE POLICY late_rows_owner ON stream_ext.late_rows
    USING (pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c
                                    WHERE c.oid = late_rows.view), 'USAGE'));
GRANT SELECT ON stream_ext.lateness_views, stream_ext.watermarks TO PUBLIC;
GRANT SELECT, DELETE ON stream_ext.late_rows TO PUBLIC;

CREATE VIEW stream_ext.lateness AS
SELECT l.view,
       l.allowed_lateness,
       w.max_event_time,
       w.max_event_time - l.allowed_lateness AS watermark,
       (SELECT pg_catalog.count(*) FROM stream_ext.late_rows r WHERE r.view = l.view) AS late_rows
  FROM stream_ext.lateness_views l
  LEFT JOIN stream_ext.watermarks w USING (view);
GRANT SELECT ON stream_ext.lateness TO PUBLIC;

CREATE FUNCTION stream_ext.advance_watermark(view regclass, event_time timestamptz)
    RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'stream_ext_advance_watermark'
    LANGUAGE C STRICT VOLATILE;

-- TTL, retention and their scheduling (src/sql/00_core.sql, 50_maintenance.sql).
-- Streams made before the update keep their raw rows (retention NULL);
-- new streams get the default.
ALTER TABLE stream_ext.stream_catalog ADD COLUMN retention interval;
ALTER TABLE stream_ext.stream_catalog ALTER COLUMN retention SET DEFAULT '1 hour';
ALTER TABLE stream_ext.view_catalog
    ADD COLUMN ttl interval, ADD COLUMN ttl_column name, ADD COLUMN ttl_sql text;

CREATE OR REPLACE VIEW stream_ext.streams AS
SELECT s.stream AS name,
       n.nspname AS schema,
       c.relname AS stream_name,
       pg_catalog.pg_get_userbyid(c.relowner) AS owner,
       (SELECT count(*) FROM stream_ext.view_catalog v WHERE v.stream = s.stream) AS views,
       s.created_at,
       s.retention
  FROM stream_ext.stream_catalog s
  JOIN pg_catalog.pg_class c ON c.oid = s.stream
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace;

CREATE OR REPLACE VIEW stream_ext.continuous_views AS
SELECT v.view AS name,
       v.stream AS source,
       v.definition,
       v.matrel AS materialization,
       pg_catalog.pg_get_userbyid(c.relowner) AS owner,
       v.created_at,
       v.window_kind,
       v.window_size,
       v.window_slide,
       v.window_step,
       v.time_column,
       v.ttl,
       v.ttl_column
  FROM stream_ext.view_catalog v
  JOIN pg_catalog.pg_class c ON c.oid = v.view;
CREATE FUNCTION stream_ext.set_retention(stream regclass, retention interval)
    RETURNS void
    AS 'MODULE_PATHNAME', 'stream_ext_set_retention'
    LANGUAGE C VOLATILE;

-- TTL of every continuous view and retention of every stream the caller
-- may maintain; one row per piece of work done.
CREATE FUNCTION stream_ext.run_maintenance(
    OUT task text, OUT object regclass, OUT removed bigint)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'stream_ext_run_maintenance'
    LANGUAGE C VOLATILE;

-- The pg_cron job 'stream_ext_maintenance' (needs pg_cron in this database).
CREATE FUNCTION stream_ext.schedule_maintenance()
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'stream_ext_schedule_maintenance'
    LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION stream_ext.schedule_maintenance() FROM PUBLIC;

CREATE FUNCTION stream_ext.unschedule_maintenance()
    RETURNS boolean
    AS 'MODULE_PATHNAME', 'stream_ext_unschedule_maintenance'
    LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION stream_ext.unschedule_maintenance() FROM PUBLIC;

-- per-batch NOTIFY (src/sql/00_core.sql, transform.c)
ALTER TABLE stream_ext.view_catalog ADD COLUMN notify text;

-- continuous transforms (src/sql/40_transforms.sql)
-- One row per continuous transform: a continuous view without aggregates.
-- Its rows go to output_stream, or (without one) to output_table, which the
-- user-facing view reads.  columns and select_sql make up the per-batch
-- INSERT INTO <target> (columns) select_sql.
CREATE TABLE stream_ext.transform_catalog (
    transform     regclass PRIMARY KEY,
    stream        regclass NOT NULL,
    output_stream regclass,
    output_table  regclass UNIQUE,
    definition    text NOT NULL,
    columns       text NOT NULL,
    select_sql    text NOT NULL,
    notify        text,
    timezone      text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    CHECK ((output_stream IS NULL) <> (output_table IS NULL))
);
CREATE INDEX ON stream_ext.transform_catalog (stream);
SELECT pg_catalog.pg_extension_config_dump('stream_ext.transform_catalog', '');
GRANT SELECT ON stream_ext.transform_catalog TO PUBLIC;

CREATE FUNCTION stream_ext.transform() RETURNS trigger
    AS 'MODULE_PATHNAME', 'stream_ext_transform'
    LANGUAGE C;

CREATE VIEW stream_ext.transforms AS
SELECT t.transform AS name,
       t.stream AS source,
       t.output_stream,
       t.output_table,
       t.definition,
       t.notify,
       pg_catalog.pg_get_userbyid(c.relowner) AS owner,
       COALESCE(s.rows_in, 0) AS rows_in,
       COALESCE(s.batches, 0) AS batches,
       COALESCE(s.groups_updated, 0) AS rows_out,
       s.last_maintained_at,
       t.created_at
  FROM stream_ext.transform_catalog t
  JOIN pg_catalog.pg_class c ON c.oid = t.transform
  LEFT JOIN stream_ext._view_stats() s ON s.view = t.transform::oid;
GRANT SELECT ON stream_ext.transforms TO PUBLIC;
