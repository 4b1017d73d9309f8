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
    -- how long raw rows stay (housekeeping/retention.c); NULL: kept until TRUNCATE
    retention   interval DEFAULT '1 hour',
    -- false: create_stream(..., retain => false), the stream stores no rows
    -- (access method stream_ext_discard, storage/discard_am.c)
    retain      boolean NOT NULL DEFAULT true
);

CREATE TABLE stream_ext.view_catalog (
    view         regclass PRIMARY KEY,
    stream       regclass NOT NULL,
    -- not UNIQUE: the members of a shared storage (56_shared_storage.sql)
    -- have the same materialization
    matrel       regclass NOT NULL,
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
    -- deleted by stream_ext.run_maintenance() (housekeeping/retention.c)
    ttl          interval,
    ttl_column   name,
    ttl_sql      text,
    -- WITH (notify = 'channel'): NOTIFYed once per batch (maintain/transform.c)
    notify       text,
    -- append mode (docs/internals.md): the table batches append their
    -- partial states to, and the statement folding it into matrel; NULL
    -- when the view upserts into matrel (views made by 0.2, and shapes
    -- that need the upsert's group lock)
    delta        regclass,
    compact_sql  text
);
CREATE INDEX ON stream_ext.view_catalog (stream);
CREATE INDEX ON stream_ext.view_catalog (matrel);

SELECT pg_catalog.pg_extension_config_dump('stream_ext.stream_catalog', '');
SELECT pg_catalog.pg_extension_config_dump('stream_ext.view_catalog', '');
GRANT SELECT ON stream_ext.stream_catalog, stream_ext.view_catalog TO PUBLIC;

-- Continuous views and transforms no longer maintained because their owner
-- lost a privilege on what they read or write (privileges.c): recorded by
-- the maintenance trigger, in the inserting transaction.  Reading such an
-- object raises an error; it stays here until it is dropped.
CREATE TABLE stream_ext.invalid_objects (
    object  regclass PRIMARY KEY,
    kind    text NOT NULL,
    reason  text NOT NULL,
    since   timestamptz NOT NULL DEFAULT now()
);
SELECT pg_catalog.pg_extension_config_dump('stream_ext.invalid_objects', '');
GRANT SELECT ON stream_ext.invalid_objects TO PUBLIC;
-- the reason may quote the row that broke a view (an error's message):
-- each row is for those who may read the object (security.md)
ALTER TABLE stream_ext.invalid_objects ENABLE ROW LEVEL SECURITY;
CREATE POLICY invalid_objects_readers ON stream_ext.invalid_objects
    USING (pg_catalog.has_table_privilege(object, 'SELECT'));

CREATE VIEW stream_ext.streams AS
SELECT s.stream AS name,
       n.nspname AS schema,
       c.relname AS stream_name,
       pg_catalog.pg_get_userbyid(c.relowner) AS owner,
       (SELECT count(*) FROM stream_ext.view_catalog v WHERE v.stream = s.stream) AS views,
       s.created_at,
       s.retention,
       s.retain
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
-- The table access method of streams that store no rows (retain => false):
-- inserts keep nothing, scans return nothing, statement triggers still see
-- every row in their transition tables (storage/discard_am.c).
CREATE FUNCTION stream_ext.discard_am_handler(internal)
    RETURNS table_am_handler
    AS 'MODULE_PATHNAME', 'stream_ext_discard_am_handler'
    LANGUAGE C;
REVOKE ALL ON FUNCTION stream_ext.discard_am_handler(internal) FROM PUBLIC;
CREATE ACCESS METHOD stream_ext_discard TYPE TABLE HANDLER stream_ext.discard_am_handler;
COMMENT ON ACCESS METHOD stream_ext_discard IS
    'stream_ext: tables that store no rows (streams created with retain => false)';

-- not STRICT: a NULL argument is an error, not a NULL result
CREATE FUNCTION stream_ext.create_stream(name text, columns text, retain boolean DEFAULT true,
                                         changelog boolean DEFAULT false)
    RETURNS regclass
    AS 'MODULE_PATHNAME', 'stream_ext_create_stream'
    LANGUAGE C;

CREATE FUNCTION stream_ext.reject_stream_modification() RETURNS trigger
    AS 'MODULE_PATHNAME', 'stream_ext_reject_stream_modification'
    LANGUAGE C;

-- Continuous views: maintenance and generic partial aggregation.
-- maintain_views(): the one trigger of a stream for all its views;
-- maintain(materialization): the per-view trigger of views made before 0.3.
CREATE FUNCTION stream_ext.maintain_views() RETURNS trigger
    AS 'MODULE_PATHNAME', 'stream_ext_maintain_views'
    LANGUAGE C;

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

-- Continuous views with wide group keys: refuses a batch whose group has the hash of another
CREATE FUNCTION stream_ext.key_hash_collision(materialization regclass) RETURNS int8
    AS 'MODULE_PATHNAME', 'stream_ext_key_hash_collision'
    LANGUAGE C VOLATILE PARALLEL SAFE;

-- The 64-bit hash of value by its own type's extended hash function, combined into seed
CREATE FUNCTION stream_ext.key_hash(value "any", seed int8) RETURNS int8
    AS 'MODULE_PATHNAME', 'stream_ext_key_hash'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;
