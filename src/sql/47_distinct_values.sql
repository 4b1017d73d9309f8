-- stream_ext install script: deferred count(DISTINCT) (query/distinct_values.c,
-- query/analyze.c "Deferred count(DISTINCT)").

-- The distinct non-NULL values of a group, sorted, each once: what a batch
-- of a view that appends keeps in its delta per count(DISTINCT), for
-- compaction to move into the side table.  In partial mode (the batch's
-- aggregation) the serialization function yields that same array.
CREATE FUNCTION stream_ext.distinct_values_add(internal, anyelement) RETURNS internal
    AS 'MODULE_PATHNAME', 'stream_ext_distinct_values_add'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION stream_ext.distinct_values_final(internal, anyelement) RETURNS anyarray
    AS 'MODULE_PATHNAME', 'stream_ext_distinct_values_final'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION stream_ext.distinct_values_serialize(internal) RETURNS bytea
    AS 'MODULE_PATHNAME', 'stream_ext_distinct_values_serialize'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION stream_ext.distinct_values_deserialize(bytea, internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'stream_ext_distinct_values_deserialize'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE AGGREGATE stream_ext.distinct_values(anyelement) (
    SFUNC = stream_ext.distinct_values_add,
    STYPE = internal,
    FINALFUNC = stream_ext.distinct_values_final,
    FINALFUNC_EXTRA,
    FINALFUNC_MODIFY = READ_WRITE,
    SERIALFUNC = stream_ext.distinct_values_serialize,
    DESERIALFUNC = stream_ext.distinct_values_deserialize
);
