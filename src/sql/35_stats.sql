-- stream_ext install script: observability (maintain/stats.c, maintain/explain.c).

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

CREATE FUNCTION stream_ext.explain(view regclass, verbose boolean DEFAULT false,
                                   batch_rows integer DEFAULT 1000)
    RETURNS SETOF text
    AS 'MODULE_PATHNAME', 'stream_ext_explain'
    LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

-- One row per continuous view of this database; counters since the server
-- started (or reset_stats()), committed batches only.  The columns from
-- delta_rows on are the background compaction of the view's delta
-- (housekeeping/compactor.c); NULL delta_rows: the view has no delta.
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
