-- Stream-stream windowed joins (query/stream_joins.c, docs/joins.md): a
-- continuous view or transform whose FROM joins two streams within a time
-- window.  Its catalog row (view_catalog or transform_catalog) keeps the
-- statement of a batch of the first stream (the other read as retained
-- rows); this row keeps the second stream and the statements of a batch
-- of it (the first read as retained rows).
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

-- LEFT JOIN of two streams (query/sjoin_left.c): a row of the first stream
-- without a match gets its NULL-extended row once its window has closed,
-- i.e. once the second stream's watermark (max_time - allowed_lateness)
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
