-- stream_ext install script: batches aggregated without the executor
-- (maintain/fast_batch.c, stream_ext.fast_batches).

-- How many maintenance statements this backend ran without the executor.
CREATE FUNCTION stream_ext.fast_batches_run()
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'stream_ext_fast_batches_run'
    LANGUAGE C VOLATILE;
