-- stream_ext install script: change streams of continuous views (maintain/changes.c,
-- docs/changes.md).

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
