-- stream_ext install script: stream_ext.combine(column) at read time (query/combine.c).

-- The transition function is never reached: the planner hook rewrites every
-- call into a merge of the view's stored states, or raises an error.
CREATE FUNCTION stream_ext.combine_unplanned(state anyelement, value anyelement)
    RETURNS anyelement
    AS 'MODULE_PATHNAME', 'stream_ext_combine_unplanned'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- Re-aggregates an aggregate column of a continuous view across the rows
-- read, from their partial states: SELECT stream_ext.combine(users) FROM v.
CREATE AGGREGATE stream_ext.combine(anyelement) (
    SFUNC = stream_ext.combine_unplanned,
    STYPE = anyelement
);
