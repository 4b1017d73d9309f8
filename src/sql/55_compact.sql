-- stream_ext install script: compaction of continuous views that append
-- (maintain/compact.c; docs/internals.md, "Append mode").

-- Fold the delta of a continuous view into its materialization; returns the
-- number of delta rows folded (0 for a view without a delta).  Runs as the
-- view's owner; the caller must have the privileges of that owner.
CREATE FUNCTION stream_ext.compact(view regclass)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'stream_ext_compact'
    LANGUAGE C STRICT VOLATILE;
