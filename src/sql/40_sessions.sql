-- stream_ext install script: session windows (windows/sessions.c).

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
