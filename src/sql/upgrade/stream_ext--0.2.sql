-- stream_ext install script, core part: catalog, streams, continuous views.
\echo Use "CREATE EXTENSION stream_ext" to load this file. \quit

CREATE FUNCTION stream_ext._assert_preloaded() RETURNS void
    AS 'MODULE_PATHNAME', 'stream_ext_assert_preloaded' LANGUAGE C;
SELECT stream_ext._assert_preloaded();
DROP FUNCTION stream_ext._assert_preloaded();

GRANT USAGE ON SCHEMA stream_ext TO PUBLIC;

-- Catalog.  Objects are referenced by regclass so pg_dump writes them by
-- name; the tables are readable by everyone and written only by the
-- extension's own functions.
CREATE TABLE stream_ext.stream_catalog (
    stream      regclass PRIMARY KEY,
    created_at  timestamptz NOT NULL DEFAULT now(),
    -- how long raw rows stay (retention.c); NULL: kept until TRUNCATE
    retention   interval DEFAULT '1 hour'
);

CREATE TABLE stream_ext.view_catalog (
    view         regclass PRIMARY KEY,
    stream       regclass NOT NULL,
    matrel       regclass NOT NULL UNIQUE,
    aux_tables   regclass[] NOT NULL DEFAULT '{}',
    definition   text NOT NULL,
    maintain_sql text NOT NULL,
    distinct_sql text[] NOT NULL DEFAULT '{}',
    timezone     text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    -- time window (docs/windows.md); NULL when the view has none
    window_kind   text CHECK (window_kind IN ('tumbling', 'hopping', 'sliding')),
    window_size   interval,
    window_slide  interval,
    window_step   interval,
    time_column   name,
    window_column name,
    expire_sql    text,
    -- WITH (ttl, ttl_column): groups whose ttl_column < now() - ttl are
    -- deleted by stream_ext.run_maintenance() (retention.c)
    ttl          interval,
    ttl_column   name,
    ttl_sql      text,
    -- WITH (notify = 'channel'): NOTIFYed once per batch (transform.c)
    notify       text
);
CREATE INDEX ON stream_ext.view_catalog (stream);

SELECT pg_catalog.pg_extension_config_dump('stream_ext.stream_catalog', '');
SELECT pg_catalog.pg_extension_config_dump('stream_ext.view_catalog', '');
GRANT SELECT ON stream_ext.stream_catalog, stream_ext.view_catalog TO PUBLIC;

CREATE VIEW stream_ext.streams AS
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

CREATE VIEW stream_ext.continuous_views AS
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

GRANT SELECT ON stream_ext.streams, stream_ext.continuous_views TO PUBLIC;

-- Streams
CREATE FUNCTION stream_ext.create_stream(name text, columns text)
    RETURNS regclass
    AS 'MODULE_PATHNAME', 'stream_ext_create_stream'
    LANGUAGE C STRICT;

CREATE FUNCTION stream_ext.reject_stream_modification() RETURNS trigger
    AS 'MODULE_PATHNAME', 'stream_ext_reject_stream_modification'
    LANGUAGE C;

-- Continuous views: maintenance and generic partial aggregation
CREATE FUNCTION stream_ext.maintain() RETURNS trigger
    AS 'MODULE_PATHNAME', 'stream_ext_maintain'
    LANGUAGE C;

CREATE FUNCTION stream_ext.guard_materialization() RETURNS trigger
    AS 'MODULE_PATHNAME', 'stream_ext_guard_materialization'
    LANGUAGE C;

CREATE FUNCTION stream_ext.partial(aggregate "any", state_type anycompatible)
    RETURNS anycompatible
    AS 'MODULE_PATHNAME', 'stream_ext_partial'
    LANGUAGE C STABLE PARALLEL UNSAFE;

CREATE FUNCTION stream_ext.combine(state anyelement, other anyelement, aggregate regprocedure)
    RETURNS anyelement
    AS 'MODULE_PATHNAME', 'stream_ext_combine'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION stream_ext.finalize(state "any", aggregate regprocedure, result_type anycompatible)
    RETURNS anycompatible
    AS 'MODULE_PATHNAME', 'stream_ext_finalize'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;
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
CREATE TABLE stream_ext.dead_letters (
    id          bigserial PRIMARY KEY,
    source      text NOT NULL,
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
RETURNS void
AS 'MODULE_PATHNAME', 'stream_ext_create_kafka_source'
LANGUAGE C VOLATILE;

CREATE FUNCTION stream_ext.start_source(name text)
RETURNS void
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
-- stream_ext install script, PostgREST part: expose continuous views in an
-- API schema that PostgREST serves (db-schemas), readable by its anonymous
-- role (db-anon-role).  See docs/postgrest.md.

-- Is the exposed view schema.<name> the pass-through view of cv?  (Its
-- rewrite rule depends on cv.)
CREATE FUNCTION stream_ext._exposed_view(cv regclass, schema name)
    RETURNS regclass
    LANGUAGE sql STABLE
    SET search_path = pg_catalog
AS $$
    SELECT e.oid::regclass
      FROM pg_catalog.pg_class c
      JOIN pg_catalog.pg_class e ON e.relname = c.relname AND e.relkind = 'v'
      JOIN pg_catalog.pg_namespace n ON n.oid = e.relnamespace AND n.nspname = schema
     WHERE c.oid = cv
       AND e.oid <> cv
       AND EXISTS (SELECT 1
                     FROM pg_catalog.pg_rewrite r
                     JOIN pg_catalog.pg_depend d
                       ON d.classid = 'pg_catalog.pg_rewrite'::regclass AND d.objid = r.oid
                    WHERE r.ev_class = e.oid
                      AND d.refclassid = 'pg_catalog.pg_class'::regclass
                      AND d.refobjid = cv)
$$;

-- The continuous view's catalog row, after checking that the caller owns it.
CREATE FUNCTION stream_ext._check_exposable(cv regclass, action text,
                                            OUT nspname name, OUT relname name,
                                            OUT definition text)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog
AS $$
DECLARE
    owner oid;
BEGIN
    SELECT n.nspname, c.relname, c.relowner, v.definition
      INTO nspname, relname, owner, definition
      FROM stream_ext.view_catalog v
      JOIN pg_catalog.pg_class c ON c.oid = v.view
      JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     WHERE v.view = cv;
    IF NOT FOUND THEN
        RAISE EXCEPTION '"%" is not a continuous view', cv
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'Only continuous views (see stream_ext.continuous_views) can be exposed.';
    END IF;
    -- pg_has_role is true for members of the owning role and for superusers
    IF NOT pg_catalog.pg_has_role(current_user, owner, 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of continuous view "%" to % it', cv, action
            USING ERRCODE = 'insufficient_privilege';
    END IF;
END
$$;

CREATE FUNCTION stream_ext._notify_pgrst() RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog
AS $$
BEGIN
    IF coalesce(pg_catalog.current_setting('stream_ext.notify_pgrst', true), 'on') <> 'off' THEN
        PERFORM pg_catalog.pg_notify('pgrst', 'reload schema');
    END IF;
END
$$;

CREATE FUNCTION stream_ext.expose(view regclass, schema name DEFAULT 'api',
                                  role name DEFAULT 'web_anon')
    RETURNS regclass
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog
AS $$
DECLARE
    cv record;
    result regclass;
BEGIN
    IF view IS NULL OR schema IS NULL OR role IS NULL THEN
        RAISE EXCEPTION 'stream_ext.expose: arguments must not be NULL'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT * INTO cv FROM stream_ext._check_exposable(view, 'expose');
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = role) THEN
        RAISE EXCEPTION 'role "%" does not exist', role
            USING ERRCODE = 'undefined_object',
                  HINT = format('Create PostgREST''s anonymous role first, e.g. CREATE ROLE %I NOLOGIN; GRANT %I TO authenticator;', role, role);
    END IF;

    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = schema) THEN
        EXECUTE format('CREATE SCHEMA %I', schema);
    END IF;
    result := stream_ext._exposed_view(view, schema);
    IF result IS NULL THEN
        -- fails with 42P07 if schema.<name> is something else
        EXECUTE format('CREATE VIEW %I.%I AS SELECT * FROM %I.%I',
                       schema, cv.relname, cv.nspname, cv.relname);
        result := format('%I.%I', schema, cv.relname)::regclass;
    END IF;
    EXECUTE format('COMMENT ON VIEW %I.%I IS %L', schema, cv.relname, cv.definition);
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', schema, role);
    EXECUTE format('GRANT SELECT ON %I.%I TO %I', schema, cv.relname, role);

    PERFORM stream_ext._notify_pgrst();
    RETURN result;
END
$$;

CREATE FUNCTION stream_ext.unexpose(view regclass, schema name DEFAULT 'api')
    RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog
AS $$
DECLARE
    cv record;
    exposed regclass;
BEGIN
    IF view IS NULL OR schema IS NULL THEN
        RAISE EXCEPTION 'stream_ext.unexpose: arguments must not be NULL'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT * INTO cv FROM stream_ext._check_exposable(view, 'unexpose');
    exposed := stream_ext._exposed_view(view, schema);
    IF exposed IS NULL THEN
        RAISE EXCEPTION 'continuous view "%" is not exposed in schema "%"', view, schema
            USING ERRCODE = 'undefined_table';
    END IF;
    -- the schema stays: it may hold other exposed views
    EXECUTE format('DROP VIEW %I.%I', schema, cv.relname);

    PERFORM stream_ext._notify_pgrst();
END
$$;
-- stream_ext install script: observability (stats.c, explain.c).

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
-- stream_ext install script: session windows (sessions.c).

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
-- stream_ext install script: continuous transforms (transform.c).

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
-- stream_ext install script: time windows (docs/windows.md, src/windows.c).

-- Tumbling windows: the start of the size-long window holding ts, windows
-- aligned to 1970-01-01 00:00:00 (UTC for timestamptz), like
-- date_bin(size, ts, '1970-01-01').
CREATE FUNCTION stream_ext.tumble(ts timestamptz, size interval)
    RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'stream_ext_tumble'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION stream_ext.tumble(ts timestamp, size interval)
    RETURNS timestamp
    AS 'MODULE_PATHNAME', 'stream_ext_tumble'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- Hopping windows: the start of every size-long window containing ts,
-- windows starting every slide from 1970-01-01.
CREATE FUNCTION stream_ext.hop(ts timestamptz, size interval, slide interval)
    RETURNS SETOF timestamptz
    AS 'MODULE_PATHNAME', 'stream_ext_hop'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 5;

CREATE FUNCTION stream_ext.hop(ts timestamp, size interval, slide interval)
    RETURNS SETOF timestamp
    AS 'MODULE_PATHNAME', 'stream_ext_hop'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 5;

-- Reads of hopping and sliding views merge pane states with
-- stream_ext.merge_states() (src/sql/40_sessions.sql).

-- Sliding windows: delete the expired buckets of one view, or of every
-- sliding-window view the caller owns.  Returns the number deleted.
CREATE FUNCTION stream_ext.expire_sliding(view regclass DEFAULT NULL)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'stream_ext_expire_sliding'
    LANGUAGE C VOLATILE;
-- stream_ext install script: late data of tumbling windows (lateness.c).

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
-- stream_ext install script: TTL, retention and their scheduling (retention.c).

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
