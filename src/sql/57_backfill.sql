-- stream_ext install script: where a new continuous view's history comes
-- from (WITH (backfill, backfill_from)), and the Kafka replay that builds
-- it from a source's topic (src/kafka/replay.c, replay_worker.c;
-- docs/continuous-views.md, "Backfill").

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

-- stream_ext.backfill_progress (Kafka replays and rebuilds): 58_rebuild.sql

-- Stop the Kafka replay of a view (its owner only); true if one was running.
CREATE FUNCTION stream_ext.cancel_backfill(view regclass)
    RETURNS boolean
    AS 'MODULE_PATHNAME', 'stream_ext_cancel_backfill'
    LANGUAGE C STRICT VOLATILE;
