-- stream_ext upgrade 0.2 -> 0.3.  Every object added or changed in src/sql/ since
-- 0.2 must be added or changed here too: sql/12_upgrade.sql checks that an
-- updated installation has exactly the objects of a fresh one.
\echo Use "ALTER EXTENSION stream_ext UPDATE TO '0.3'" to load this file. \quit

-- ---- create_kafka_source() and start_source() return the source's name ----
-- (they returned void; CREATE OR REPLACE cannot change a return type)
DROP FUNCTION stream_ext.create_kafka_source(text, regclass, text, text, text, jsonb);
CREATE FUNCTION stream_ext.create_kafka_source(
    name text, stream regclass, brokers text, topic text,
    format text DEFAULT 'json', options jsonb DEFAULT '{}')
RETURNS text
AS 'MODULE_PATHNAME', 'stream_ext_create_kafka_source'
LANGUAGE C VOLATILE;

DROP FUNCTION stream_ext.start_source(text);
CREATE FUNCTION stream_ext.start_source(name text)
RETURNS text
AS 'MODULE_PATHNAME', 'stream_ext_start_source'
LANGUAGE C VOLATILE STRICT;

-- ---- secondary indexes on continuous views (src/indexes.c) ----
-- The materialization column a view column reads, NULL if it is computed
-- when read.
CREATE FUNCTION stream_ext._view_column_source(view regclass, col name)
    RETURNS name
    AS 'MODULE_PATHNAME', 'stream_ext_view_column_source'
    LANGUAGE C STABLE STRICT;

-- A btree index on the materialization for filters and ordering on the
-- given view columns (group keys, or aggregates stored as their result);
-- created as the caller, who must own the continuous view.
CREATE FUNCTION stream_ext.create_index(view regclass, VARIADIC columns name[])
    RETURNS regclass
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog
AS $$
DECLARE
    cv record;
    mrel regclass;
    mrel_nsp name;
    col name;
    src name;
    cols text[] := '{}';
    idxname text;
    suffix int := 0;
BEGIN
    IF view IS NULL OR columns IS NULL OR cardinality(columns) = 0 THEN
        RAISE EXCEPTION 'stream_ext.create_index: a continuous view and at least one column are needed'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT * INTO cv FROM stream_ext._check_exposable(view, 'index');
    SELECT v.matrel, n.nspname INTO mrel, mrel_nsp
      FROM stream_ext.view_catalog v
      JOIN pg_catalog.pg_class c ON c.oid = v.matrel
      JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     WHERE v.view = create_index.view;
    FOREACH col IN ARRAY columns LOOP
        IF col IS NULL OR NOT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute
                                       WHERE attrelid = view AND attname = col
                                         AND attnum > 0 AND NOT attisdropped) THEN
            RAISE EXCEPTION 'column "%" of continuous view "%" does not exist', col, view
                USING ERRCODE = 'undefined_column';
        END IF;
        src := stream_ext._view_column_source(view, col);
        IF src IS NULL THEN
            RAISE EXCEPTION 'column "%" of continuous view "%" is computed when the view is read: it cannot be indexed', col, view
                USING ERRCODE = 'feature_not_supported',
                      HINT = 'Group keys and aggregates kept as their value (count, count(DISTINCT), min, max, ...) can be indexed; avg and other aggregates finalized when read cannot.';
        END IF;
        cols := cols || quote_ident(src);
    END LOOP;
    -- <view>_<columns>_idx, numbered if taken (in the materialization's schema)
    idxname := left(cv.relname || '_' || array_to_string(columns, '_'), 58) || '_idx';
    WHILE EXISTS (SELECT 1 FROM pg_catalog.pg_class c
                   JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                  WHERE n.nspname = mrel_nsp
                    AND c.relname = CASE WHEN suffix = 0 THEN idxname ELSE idxname || suffix END) LOOP
        suffix := suffix + 1;
    END LOOP;
    IF suffix > 0 THEN
        idxname := idxname || suffix;
    END IF;
    EXECUTE format('CREATE INDEX %I ON %s (%s)', idxname, mrel, array_to_string(cols, ', '));
    RETURN format('%I.%I', mrel_nsp, idxname)::regclass;
END
$$;

-- late data and emit-on-close for every window kind (lateness.c)
-- Hopping windows with allowed_lateness: where the windows of pane that a
-- row may still join start, given the watermark (-infinity: all of them).
CREATE FUNCTION stream_ext.hop_open_from(pane timestamptz, size interval, slide interval,
                                         watermark timestamptz)
    RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'stream_ext_hop_open_from'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- late rows are kept as the view's owner, not the catalog's (src/sql/50_lateness.sql)
GRANT INSERT ON stream_ext.late_rows TO PUBLIC;

-- first contact: create_stream() raises an error on NULL arguments
ALTER FUNCTION stream_ext.create_stream(text, text) CALLED ON NULL INPUT;

-- Kafka security (issue #14).

-- Dead letters go with their source (drop_source deletes them): before, a
-- role creating a source under a dropped source's name could read and
-- delete the dead letters left behind.  Those left behind by sources
-- dropped before this update are deleted now, for the same reason.
DELETE FROM stream_ext.dead_letters d
 WHERE NOT EXISTS (SELECT 1 FROM stream_ext.kafka_sources s WHERE s.name = d.source);
ALTER TABLE stream_ext.dead_letters
    ADD FOREIGN KEY (source) REFERENCES stream_ext.kafka_sources (name)
        ON DELETE CASCADE ON UPDATE CASCADE;

-- source_status shows 'starting' while a worker sets up its consumer
-- (it showed 'running').
CREATE OR REPLACE VIEW stream_ext.source_status WITH (security_invoker = true) AS
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


-- privileges (docs/security.md): objects whose owner lost a privilege
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

CREATE OR REPLACE VIEW stream_ext.view_stats AS
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
       s.max_maintenance_ms,
       i.object IS NULL AS valid,
       CASE WHEN pg_catalog.has_table_privilege(v.view, 'SELECT')
            THEN i.reason END AS invalid_reason
  FROM stream_ext.view_catalog v
  LEFT JOIN stream_ext._view_stats() s ON s.view = v.view::oid
  LEFT JOIN stream_ext.invalid_objects i ON i.object = v.view;

CREATE OR REPLACE VIEW stream_ext.transforms AS
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
       t.created_at,
       i.object IS NULL AS valid,
       CASE WHEN pg_catalog.has_table_privilege(t.transform, 'SELECT')
            THEN i.reason END AS invalid_reason
  FROM stream_ext.transform_catalog t
  JOIN pg_catalog.pg_class c ON c.oid = t.transform
  LEFT JOIN stream_ext._view_stats() s ON s.view = t.transform::oid
  LEFT JOIN stream_ext.invalid_objects i ON i.object = t.transform;

-- wide group keys: continuous views index them by a hash (issue #14, item 7)
CREATE FUNCTION stream_ext.key_hash_collision(materialization regclass) RETURNS int8
    AS 'MODULE_PATHNAME', 'stream_ext_key_hash_collision'
    LANGUAGE C VOLATILE PARALLEL SAFE;

-- The 64-bit hash of value by its own type's extended hash function, combined into seed
CREATE FUNCTION stream_ext.key_hash(value "any", seed int8) RETURNS int8
    AS 'MODULE_PATHNAME', 'stream_ext_key_hash'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- scale-out: one continuous view over several nodes (src/sql/60_distributed.sql)

CREATE FUNCTION stream_ext.distributed_select_sql(view regclass, parts regclass[])
RETURNS text
AS 'MODULE_PATHNAME', 'stream_ext_distributed_select_sql'
LANGUAGE C STABLE STRICT;

-- create_distributed_view(name, view, servers): a foreign table per server on
-- that node's materialization of VIEW (same schema and name as the local
-- one), and the view NAME that merges their states per group and finalizes
-- them as VIEW does.  Runs as the caller (SECURITY INVOKER): the caller
-- needs USAGE on every foreign server and CREATE in the schema.
CREATE FUNCTION stream_ext.create_distributed_view(name text, view regclass, servers text[])
RETURNS regclass
LANGUAGE plpgsql SECURITY INVOKER
AS $$
DECLARE
    v_schema  text;
    m_schema  text;
    m_name    text;
    d_name    text;
    tbl       text;
    cols      text;
    parts     regclass[] := '{}';
    part      text;
    i         int := 0;
    srv       text;
BEGIN
    IF name IS NULL OR name = '' THEN
        RAISE EXCEPTION 'name of the distributed view must not be empty'
            USING ERRCODE = '22023';
    END IF;
    IF cardinality(servers) IS NULL OR cardinality(servers) = 0 THEN
        RAISE EXCEPTION 'a distributed view needs at least one server'
            USING ERRCODE = '22023';
    END IF;
    SELECT n.nspname, c.relname, vn.nspname, dc.relname
      INTO m_schema, m_name, v_schema, d_name
      FROM stream_ext.view_catalog vc
      JOIN pg_class c ON c.oid = vc.matrel
      LEFT JOIN pg_class dc ON dc.oid = vc.delta
      JOIN pg_namespace n ON n.oid = c.relnamespace
      JOIN pg_class vcl ON vcl.oid = vc.view
      JOIN pg_namespace vn ON vn.oid = vcl.relnamespace
     WHERE vc.view = create_distributed_view.view;
    IF NOT FOUND THEN
        RAISE EXCEPTION '"%" is not a continuous view', view
            USING ERRCODE = '42809';
    END IF;
    -- the materialization's columns, as the foreign tables' columns
    SELECT string_agg(format('%I %s', a.attname, format_type(a.atttypid, a.atttypmod)),
                      ', ' ORDER BY a.attnum)
      INTO cols
      FROM pg_attribute a
     WHERE a.attrelid = (SELECT matrel FROM stream_ext.view_catalog vc
                          WHERE vc.view = create_distributed_view.view)
       AND a.attnum > 0 AND NOT a.attisdropped;
    FOREACH srv IN ARRAY servers LOOP
        i := i + 1;
        IF srv IS NULL OR NOT EXISTS (SELECT FROM pg_foreign_server s WHERE s.srvname = srv) THEN
            RAISE EXCEPTION 'foreign server "%" does not exist', srv
                USING ERRCODE = '42704',
                      HINT = 'CREATE SERVER ... FOREIGN DATA WRAPPER postgres_fdw, and a user mapping, for every node.';
        END IF;
        -- the node's materialization and, when VIEW appends, its delta (the
        -- node's batches not yet compacted: more states to merge; postgres_fdw
        -- reads both in one remote transaction, one snapshot)
        FOREACH tbl IN ARRAY ARRAY[m_name, d_name] LOOP
            CONTINUE WHEN tbl IS NULL;
            part := format('%s_node%s', name, i) || CASE WHEN tbl = d_name THEN '_delta' ELSE '' END;
            EXECUTE format('CREATE FOREIGN TABLE %I.%I (%s) SERVER %I OPTIONS (schema_name %L, table_name %L)',
                           v_schema, part, cols, srv, m_schema, tbl);
            EXECUTE format('COMMENT ON FOREIGN TABLE %I.%I IS %L', v_schema, part,
                           format('%s of %s on server %s, part of distributed view %s',
                                  CASE WHEN tbl = d_name THEN 'delta' ELSE 'states' END, view, srv, name));
            parts := parts || format('%I.%I', v_schema, part)::regclass;
        END LOOP;
    END LOOP;
    EXECUTE format('CREATE VIEW %I.%I AS %s', v_schema, name,
                   stream_ext.distributed_select_sql(view, parts));
    RETURN format('%I.%I', v_schema, name)::regclass;
END
$$;

-- source_offsets(source): the stored next offset of each partition of a
-- stopped source whose workers have all exited, as {"partition": offset}
-- for the start_offsets option of the source that takes its partitions
-- over (docs/scale-out.md, "Moving partitions").  Refuses (55000) while
-- the source runs or a worker is still alive: its last batch may still
-- commit.  Row-level security shows only the caller's own sources.
CREATE FUNCTION stream_ext.source_offsets(source text)
RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY INVOKER
AS $$
DECLARE
    st   text;
    live int;
BEGIN
    SELECT s.state, s.workers INTO st, live
      FROM stream_ext.source_status s WHERE s.source = source_offsets.source;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'Kafka source "%" does not exist', source
            USING ERRCODE = '42704';
    END IF;
    IF st NOT IN ('stopped', 'failed') OR live > 0 THEN
        RAISE EXCEPTION 'Kafka source "%" is not stopped yet', source
            USING ERRCODE = '55000',
                  DETAIL = format('State %s, %s live worker(s): a batch may still commit and move the offsets.', st, live),
                  HINT = 'Call stream_ext.stop_source() and retry until its workers have exited.';
    END IF;
    RETURN (SELECT coalesce(pg_catalog.jsonb_object_agg(o.partition, o.next_offset ORDER BY o.partition), '{}')
              FROM stream_ext.kafka_offsets o WHERE o.source = source_offsets.source);
END
$$;

-- stream_ext.combine(column) at read time (query/combine.c)
CREATE FUNCTION stream_ext.combine_unplanned(state anyelement, value anyelement)
    RETURNS anyelement
    AS 'MODULE_PATHNAME', 'stream_ext_combine_unplanned'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE AGGREGATE stream_ext.combine(anyelement) (
    SFUNC = stream_ext.combine_unplanned,
    STYPE = anyelement
);
-- non-retaining streams: create_stream(..., retain => false) (issue #16)
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

ALTER TABLE stream_ext.stream_catalog ADD COLUMN retain boolean NOT NULL DEFAULT true;

CREATE OR REPLACE VIEW stream_ext.streams AS
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

-- a third argument with a default: the two-argument function would make
-- every two-argument call ambiguous, so it is replaced
DROP FUNCTION stream_ext.create_stream(text, text);
CREATE FUNCTION stream_ext.create_stream(name text, columns text, retain boolean DEFAULT true)
    RETURNS regclass
    AS 'MODULE_PATHNAME', 'stream_ext_create_stream'
    LANGUAGE C;
-- ---- append mode: deltas and their compaction (maintain/compact.c) ----
-- Views made by 0.2 keep upserting: their delta stays NULL.
ALTER TABLE stream_ext.view_catalog ADD COLUMN delta regclass;
ALTER TABLE stream_ext.view_catalog ADD COLUMN compact_sql text;

CREATE FUNCTION stream_ext.compact(view regclass)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'stream_ext_compact'
    LANGUAGE C STRICT VOLATILE;


-- Shared maintenance (issue #16): one trigger per stream for all its
-- continuous views.  Views created before 0.3 keep their own
-- stream_ext.maintain(materialization) trigger, which keeps working; the
-- stream's new trigger leaves them to it (docs/upgrades.md).
CREATE FUNCTION stream_ext.maintain_views() RETURNS trigger
    AS 'MODULE_PATHNAME', 'stream_ext_maintain_views'
    LANGUAGE C;
-- ---------------------------------------------------------------------------
-- Background compaction (housekeeping/compactor.c): its counters, the delta
-- rows waiting, the compactor's status, and their columns in view_stats.
-- ---------------------------------------------------------------------------
CREATE FUNCTION stream_ext._compaction_stats(
    OUT view oid, OUT rows_compacted bigint, OUT compactions bigint,
    OUT compaction_ms float8, OUT last_compacted_at timestamptz,
    OUT delta_since timestamptz, OUT compaction_errors bigint,
    OUT last_compaction_error text)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'stream_ext_compaction_stats'
    LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION stream_ext.view_delta_rows(view regclass)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'stream_ext_view_delta_rows'
    LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION stream_ext.compactor_status(
    OUT pid integer, OUT started_at timestamptz, OUT last_pass_at timestamptz,
    OUT rows_compacted bigint, OUT errors bigint)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'stream_ext_compactor_status'
    LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

-- One row per continuous view of this database; counters since the server
-- started (or reset_stats()), committed batches only.  The columns from
-- delta_rows on are the background compaction of the view's delta
-- (housekeeping/compactor.c); NULL delta_rows: the view has no delta.
CREATE OR REPLACE VIEW stream_ext.view_stats AS
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
       s.max_maintenance_ms,
       i.object IS NULL AS valid,
       CASE WHEN pg_catalog.has_table_privilege(v.view, 'SELECT')
            THEN i.reason END AS invalid_reason,
       d.delta_rows,
       CASE WHEN d.delta_rows > 0 THEN pg_catalog.now() - c.delta_since END
           AS oldest_delta_age,
       COALESCE(c.rows_compacted, 0) AS rows_compacted,
       COALESCE(c.compactions, 0) AS compactions,
       c.last_compacted_at,
       COALESCE(c.compaction_errors, 0) AS compaction_errors,
       CASE WHEN pg_catalog.has_table_privilege(v.view, 'SELECT')
            THEN c.last_compaction_error END AS last_compaction_error
  FROM stream_ext.view_catalog v
  LEFT JOIN stream_ext._view_stats() s ON s.view = v.view::oid
  LEFT JOIN stream_ext.invalid_objects i ON i.object = v.view
  LEFT JOIN stream_ext._compaction_stats() c ON c.view = v.view::oid
  CROSS JOIN LATERAL (SELECT stream_ext.view_delta_rows(v.view) AS delta_rows) d;


-- replay: WITH (backfill, backfill_from) and the Kafka replay of a new view's history

-- One row per continuous view created with backfill = 'kafka': the source
-- replayed, the statements that fold replayed rows into the view, and
-- where the replay is.  Written only by stream_ext (as the catalog owner).
CREATE TABLE stream_ext.backfills (
    view          regclass PRIMARY KEY
                  REFERENCES stream_ext.view_catalog (view) ON DELETE CASCADE,
    source        text NOT NULL,
    backfill_from timestamptz,
    maintain_sql  text NOT NULL,
    distinct_sql  text[] NOT NULL DEFAULT '{}',
    state         text NOT NULL DEFAULT 'running'
                  CHECK (state IN ('running', 'done', 'cancelled')),
    messages      bigint NOT NULL DEFAULT 0,
    skipped       bigint NOT NULL DEFAULT 0,
    started_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz,
    last_error    text
);

-- Per partition: where the replay starts (NULL until the replay worker
-- resolved it), the hand-over offset (the live source's stored next offset
-- when the view was created: from there on its batches reach the view
-- through the stream's trigger) and the next offset to replay, stored in
-- the transaction of each replayed batch.
CREATE TABLE stream_ext.backfill_offsets (
    view          regclass NOT NULL
                  REFERENCES stream_ext.backfills (view) ON DELETE CASCADE,
    partition     int NOT NULL,
    start_offset  bigint,
    end_offset    bigint NOT NULL,
    next_offset   bigint,
    PRIMARY KEY (view, partition)
);

-- last_error may quote a message or row that broke the backfill: it is
-- for the view's readers, through backfill_progress (docs/security.md)
GRANT SELECT (view, source, backfill_from, maintain_sql, distinct_sql, state,
              messages, skipped, started_at, updated_at, finished_at)
    ON stream_ext.backfills TO PUBLIC;
GRANT SELECT ON stream_ext.backfill_offsets TO PUBLIC;

-- Stop the Kafka replay of a view (its owner only); true if one was running.
CREATE FUNCTION stream_ext.cancel_backfill(view regclass)
    RETURNS boolean
    AS 'MODULE_PATHNAME', 'stream_ext_cancel_backfill'
    LANGUAGE C STRICT VOLATILE;

-- rollup: continuous views over continuous views (query/rollup.c).
CREATE FUNCTION stream_ext.maintain_rollup() RETURNS trigger
    AS 'MODULE_PATHNAME', 'stream_ext_maintain_rollup'
    LANGUAGE C;

-- cdc: changelog streams, create_stream(..., changelog => true) (issue #20);
-- a fourth argument with a default replaces the three-argument function
DROP FUNCTION stream_ext.create_stream(text, text, boolean);
CREATE FUNCTION stream_ext.create_stream(name text, columns text, retain boolean DEFAULT true,
                                         changelog boolean DEFAULT false)
    RETURNS regclass
    AS 'MODULE_PATHNAME', 'stream_ext_create_stream'
    LANGUAGE C;

-- changes: change streams of continuous views (maintain/changes.c)

-- a view with changes = true and its change stream
CREATE TABLE stream_ext.change_streams (
    view           regclass PRIMARY KEY
                   REFERENCES stream_ext.view_catalog (view) ON DELETE CASCADE,
    stream         regclass NOT NULL UNIQUE,
    -- the view's GROUP BY key columns, and its other columns (old_/new_ in the stream)
    key_columns    text[] NOT NULL,
    value_columns  text[] NOT NULL,
    -- the view's rows of the batch's groups (over stream_ext_new); NULL: every row
    rows_sql       text,
    -- the batch's partial states per group, as one record[]; its column
    -- definition list; NULL: no aggregate state (count(DISTINCT) only)
    states_sql     text,
    states_columns text,
    state_columns  text[] NOT NULL DEFAULT '{}'
);
SELECT pg_catalog.pg_extension_config_dump('stream_ext.change_streams', '');
GRANT SELECT ON stream_ext.change_streams TO PUBLIC;

-- change_seq of every change stream, drawn under the view's lock
CREATE SEQUENCE stream_ext.change_seq;

CREATE FUNCTION stream_ext.changes(view regclass) RETURNS regclass
    AS 'MODULE_PATHNAME', 'stream_ext_changes'
    LANGUAGE C STRICT STABLE;

-- sjoin: stream-stream windowed joins (query/stream_joins.c)
CREATE TABLE stream_ext.stream_joins (
    object        regclass PRIMARY KEY,
    left_stream   regclass NOT NULL,
    right_stream  regclass NOT NULL,
    -- the widest distance in time between two joined rows: both streams
    -- must retain their raw rows at least this long
    join_window   interval NOT NULL,
    -- a batch of right_stream: the maintenance statement (or the
    -- transform's SELECT) and, for count(DISTINCT), one more per column
    right_sql     text NOT NULL,
    right_distinct_sql text[] NOT NULL DEFAULT '{}'
);
CREATE INDEX ON stream_ext.stream_joins (right_stream);
SELECT pg_catalog.pg_extension_config_dump('stream_ext.stream_joins', '');
GRANT SELECT ON stream_ext.stream_joins TO PUBLIC;

-- sjleft: LEFT JOIN of two streams, emitted when the window closes (query/sjoin_left.c)
-- has passed the row's time plus the window's upper bound
CREATE TABLE stream_ext.stream_left_joins (
    object            regclass PRIMARY KEY
                      REFERENCES stream_ext.stream_joins (object) ON DELETE CASCADE,
    allowed_lateness  interval NOT NULL,
    -- a batch of the second stream: the NULL-extended rows of the first
    -- stream's rows whose window closed ($1 old, $2 new watermark) and,
    -- for count(DISTINCT), one more per column
    close_sql         text NOT NULL,
    close_distinct_sql text[] NOT NULL DEFAULT '{}',
    -- the batch's pairs refused because their first row had closed ($1)
    late_sql          text NOT NULL,
    -- the batch's newest and oldest time of the second stream
    max_sql           text NOT NULL,
    -- the newest time of the second stream seen: watermark = max_time -
    -- allowed_lateness; written by the batches of the second stream
    max_time          timestamptz,
    late_pairs        bigint NOT NULL DEFAULT 0
);
SELECT pg_catalog.pg_extension_config_dump('stream_ext.stream_left_joins', '');
GRANT SELECT ON stream_ext.stream_left_joins TO PUBLIC;

-- swap: CREATE OR REPLACE of a continuous view built beside it, swapped in (ddl/rebuild*.c)

-- One row per CREATE OR REPLACE built beside the view it replaces: the
-- hidden view holding the new definition (shadow), the hand-over point
-- (the snapshot taken under the stream's lock: rows visible to it are the
-- backfill's, later ones reach the shadow through the stream's trigger),
-- the blocks of the stream the backfill has read, and the statements.
-- Written only by stream_ext (as the catalog owner).  No foreign key: the
-- view's catalog row is replaced at the swap.
CREATE TABLE stream_ext.rebuilds (
    view          regclass PRIMARY KEY,
    original      oid NOT NULL,           -- the view's OID at CREATE OR REPLACE
    shadow        regclass NOT NULL,
    stream        regclass NOT NULL,
    backfill_from timestamptz,
    handover      pg_catalog.pg_snapshot NOT NULL,
    end_block     bigint NOT NULL,        -- the stream's size in blocks at the hand-over
    next_block    bigint NOT NULL DEFAULT 0,
    rows_done     bigint NOT NULL DEFAULT 0,
    view_sql      text NOT NULL,          -- the view's new SELECT, over the shadow's parts
    backfill_sql  text NOT NULL,          -- per batch: $1, $2 block bounds (tid), $3 handover
    distinct_sql  text[] NOT NULL DEFAULT '{}',
    count_sql     text NOT NULL,
    -- the settings of CREATE OR REPLACE: stream_ext.backfill_auto_swap,
    -- stream_ext.rebuild_batch_blocks
    auto_swap     boolean NOT NULL,
    batch_blocks  int NOT NULL,
    state         text NOT NULL DEFAULT 'running'
                  CHECK (state IN ('running', 'ready', 'done', 'cancelled', 'failed')),
    started_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz,
    last_error    text
);
CREATE INDEX ON stream_ext.rebuilds (original);
-- last_error may quote a row that broke the backfill: it is for the
-- view's readers, through backfill_progress (docs/security.md)
GRANT SELECT (view, original, shadow, stream, backfill_from, handover, end_block,
              next_block, rows_done, view_sql, backfill_sql, distinct_sql, count_sql,
              auto_swap, batch_blocks, state, started_at, updated_at, finished_at)
    ON stream_ext.rebuilds TO PUBLIC;

-- One row per rebuild, unlogged like the streams: a crash empties both, so
-- a rebuild whose row is gone has lost the stream rows its backfill still
-- needed (ddl/rebuild_worker.c abandons it).
CREATE UNLOGGED TABLE stream_ext.rebuild_sentinels (
    original      oid PRIMARY KEY
);

-- Is a row whose xmin is xid visible to snapshot snap (a hand-over)?  The
-- 32-bit xid is widened with the current epoch, as PostgreSQL's own
-- functions do; frozen rows keep their raw xmin.
CREATE FUNCTION stream_ext._xid_visible_in(xid, pg_catalog.pg_snapshot)
    RETURNS boolean
    AS 'MODULE_PATHNAME', 'stream_ext_xid_visible_in'
    LANGUAGE C STRICT STABLE PARALLEL SAFE;

-- Progress of each Kafka replay and of each rebuild beside a view; a
-- view whose replay is 'running' is incomplete, a view being rebuilt is
-- its old self until the swap ('done').
CREATE VIEW stream_ext.backfill_progress AS
SELECT b.view,
       b.source,
       b.state,
       b.backfill_from,
       count(o.partition)::int AS partitions,
       b.messages,
       b.skipped,
       sum(COALESCE(o.next_offset, o.start_offset, o.end_offset)
           - COALESCE(o.start_offset, o.end_offset))::bigint AS offsets_done,
       CASE WHEN bool_and(o.start_offset IS NOT NULL)
            THEN sum(o.end_offset - o.start_offset)::bigint END AS offsets_total,
       b.started_at,
       b.updated_at,
       b.finished_at,
       CASE WHEN pg_catalog.has_table_privilege(b.view, 'SELECT')
            THEN b.last_error END AS last_error,
       'kafka replay'::text AS kind,
       NULL::bigint AS rows_done,
       NULL::bigint AS rows_estimate,
       NULL::bigint AS blocks_done,
       NULL::bigint AS blocks_total
  FROM stream_ext.backfills b
  LEFT JOIN stream_ext.backfill_offsets o ON o.view = b.view
 GROUP BY b.view
UNION ALL
SELECT r.view, NULL, r.state, r.backfill_from, NULL, NULL, NULL, NULL, NULL,
       r.started_at, r.updated_at, r.finished_at,
       CASE WHEN pg_catalog.has_table_privilege(r.view, 'SELECT') THEN r.last_error END,
       'rebuild',
       r.rows_done,
       CASE WHEN r.next_block >= r.end_block THEN r.rows_done
            WHEN r.next_block > 0
            THEN (r.rows_done::numeric * r.end_block / r.next_block)::bigint END,
       LEAST(r.next_block, r.end_block),
       r.end_block
  FROM stream_ext.rebuilds r;

GRANT SELECT ON stream_ext.backfill_progress TO PUBLIC;

-- Wait until the backfill of a view (a rebuild beside it, or a Kafka
-- replay) is over, or timeout passed; returns its state then (NULL: none).
CREATE FUNCTION stream_ext.wait_backfill(view regclass, timeout interval DEFAULT NULL)
    RETURNS text
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    st text;
    auto_swap boolean;
    deadline timestamptz := clock_timestamp() + timeout;
BEGIN
    LOOP
        SELECT r.state, r.auto_swap INTO st, auto_swap FROM stream_ext.rebuilds r
         WHERE r.view = $1 OR r.original = $1::oid
         ORDER BY r.started_at DESC LIMIT 1;
        IF st IS NULL THEN
            SELECT b.state INTO st FROM stream_ext.backfills b WHERE b.view = $1;
        END IF;
        IF st IS NULL OR NOT (st = 'running' OR (st = 'ready' AND auto_swap))
           OR clock_timestamp() >= deadline THEN
            RETURN st;
        END IF;
        PERFORM pg_sleep(0.02);
    END LOOP;
END
$$;

-- Swap in a rebuild whose backfill is complete ('ready'), now (its owner
-- only); with stream_ext.backfill_auto_swap (the default) its worker does.
CREATE FUNCTION stream_ext.swap_backfill(view regclass)
    RETURNS boolean
    AS 'MODULE_PATHNAME', 'stream_ext_swap_backfill'
    LANGUAGE C STRICT VOLATILE;

-- Stop the Kafka replay of a view, or drop the rebuild beside it (the view
-- stays as it was); its owner only.  True if one was running.
CREATE OR REPLACE FUNCTION stream_ext.cancel_backfill(view regclass)
    RETURNS boolean
    AS 'MODULE_PATHNAME', 'stream_ext_cancel_backfill_or_rebuild'
    LANGUAGE C STRICT VOLATILE;

-- combine: stream_ext.combine() of an exact count(DISTINCT) column (query/combine_distinct.c)
CREATE FUNCTION stream_ext.distinct_union_trans(state internal, vals anyarray)
    RETURNS internal
    AS 'MODULE_PATHNAME', 'stream_ext_distinct_union_trans'
    LANGUAGE C CALLED ON NULL INPUT;
CREATE FUNCTION stream_ext.distinct_union_final(state internal)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'stream_ext_distinct_union_final'
    LANGUAGE C CALLED ON NULL INPUT;
CREATE AGGREGATE stream_ext.distinct_union(anyarray) (
    SFUNC = stream_ext.distinct_union_trans,
    STYPE = internal,
    FINALFUNC = stream_ext.distinct_union_final,
    FINALFUNC_MODIFY = READ_WRITE
);

-- w2: deferred count(DISTINCT): the batch's distinct values per group (query/distinct_values.c)
CREATE FUNCTION stream_ext.distinct_values_add(internal, anyelement) RETURNS internal
    AS 'MODULE_PATHNAME', 'stream_ext_distinct_values_add'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION stream_ext.distinct_values_final(internal, anyelement) RETURNS anyarray
    AS 'MODULE_PATHNAME', 'stream_ext_distinct_values_final'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION stream_ext.distinct_values_serialize(internal) RETURNS bytea
    AS 'MODULE_PATHNAME', 'stream_ext_distinct_values_serialize'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION stream_ext.distinct_values_deserialize(bytea, internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'stream_ext_distinct_values_deserialize'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE AGGREGATE stream_ext.distinct_values(anyelement) (
    SFUNC = stream_ext.distinct_values_add,
    STYPE = internal,
    FINALFUNC = stream_ext.distinct_values_final,
    FINALFUNC_EXTRA,
    FINALFUNC_MODIFY = READ_WRITE,
    SERIALFUNC = stream_ext.distinct_values_serialize,
    DESERIALFUNC = stream_ext.distinct_values_deserialize
);

-- shared: views sharing one materialization and one delta (ddl/shared_storage.c)
ALTER TABLE stream_ext.view_catalog DROP CONSTRAINT view_catalog_matrel_key;
CREATE INDEX ON stream_ext.view_catalog (matrel);
CREATE TABLE stream_ext.shared_storage (
    matrel      regclass PRIMARY KEY,
    delta       regclass NOT NULL,
    stream      regclass NOT NULL,
    next_member integer NOT NULL DEFAULT 2,
    -- the compaction of the delta for every member: view_catalog.compact_sql
    -- of one member (the oldest), NULL for the others
    compact_sql text
);
-- The views whose states are in a shared storage, and the prefix of their
-- columns there.
CREATE TABLE stream_ext.shared_storage_members (
    view    regclass PRIMARY KEY,
    matrel  regclass NOT NULL,
    prefix  text NOT NULL
);
CREATE INDEX ON stream_ext.shared_storage_members (matrel);
SELECT pg_catalog.pg_extension_config_dump('stream_ext.shared_storage', '');
SELECT pg_catalog.pg_extension_config_dump('stream_ext.shared_storage_members', '');
GRANT SELECT ON stream_ext.shared_storage, stream_ext.shared_storage_members TO PUBLIC;
-- How many maintenance statements this backend ran without the executor
-- (maintain/fast_batch.c).
CREATE FUNCTION stream_ext.fast_batches_run()
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'stream_ext_fast_batches_run'
    LANGUAGE C VOLATILE;
