-- stream_ext 0.1 install script, as released (frozen: never edit; changes go
-- into an upgrade script stream_ext--0.1--<next>.sql and into src/sql/).
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
    created_at  timestamptz NOT NULL DEFAULT now()
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
    created_at   timestamptz NOT NULL DEFAULT now()
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
       s.created_at
  FROM stream_ext.stream_catalog s
  JOIN pg_catalog.pg_class c ON c.oid = s.stream
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace;

CREATE VIEW stream_ext.continuous_views AS
SELECT v.view AS name,
       v.stream AS source,
       v.definition,
       v.matrel AS materialization,
       pg_catalog.pg_get_userbyid(c.relowner) AS owner,
       v.created_at
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
