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

-- combine() of an exact count(DISTINCT) column (query/combine_distinct.c):
-- the number of distinct values in the arrays of the rows read, each row's
-- array being its group's values from the view's side table.
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
