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
