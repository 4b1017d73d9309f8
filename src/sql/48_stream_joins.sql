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
