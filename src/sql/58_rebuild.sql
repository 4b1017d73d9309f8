-- stream_ext install script: CREATE OR REPLACE of a continuous view built
-- beside the old one and swapped in (src/ddl/rebuild.c, rebuild_worker.c,
-- rebuild_finish.c; docs/continuous-views.md, "Changing a view").

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
