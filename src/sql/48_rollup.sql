-- stream_ext install script: continuous views over continuous views
-- (query/rollup.c).

-- The trigger on an upstream view's delta maintaining one roll-up; its
-- argument is the roll-up's materialization.
CREATE FUNCTION stream_ext.maintain_rollup() RETURNS trigger
    AS 'MODULE_PATHNAME', 'stream_ext_maintain_rollup'
    LANGUAGE C;
