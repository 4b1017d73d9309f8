-- stream_ext install script: time windows (docs/windows.md, windows/windows.c).

-- Tumbling windows: the start of the size-long window holding ts, windows
-- aligned to 1970-01-01 00:00:00 (UTC for timestamptz), like
-- date_bin(size, ts, '1970-01-01').
CREATE FUNCTION stream_ext.tumble(ts timestamptz, size interval)
    RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'stream_ext_tumble'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION stream_ext.tumble(ts timestamp, size interval)
    RETURNS timestamp
    AS 'MODULE_PATHNAME', 'stream_ext_tumble'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- Hopping windows: the start of every size-long window containing ts,
-- windows starting every slide from 1970-01-01.
CREATE FUNCTION stream_ext.hop(ts timestamptz, size interval, slide interval)
    RETURNS SETOF timestamptz
    AS 'MODULE_PATHNAME', 'stream_ext_hop'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 5;

CREATE FUNCTION stream_ext.hop(ts timestamp, size interval, slide interval)
    RETURNS SETOF timestamp
    AS 'MODULE_PATHNAME', 'stream_ext_hop'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 5;

-- Hopping windows with allowed_lateness: where the windows of pane that a
-- row may still join start, given the watermark (-infinity: all of them).
CREATE FUNCTION stream_ext.hop_open_from(pane timestamptz, size interval, slide interval,
                                         watermark timestamptz)
    RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'stream_ext_hop_open_from'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- Reads of hopping and sliding views merge pane states with
-- stream_ext.merge_states() (src/sql/40_sessions.sql).

-- Sliding windows: delete the expired buckets of one view, or of every
-- sliding-window view the caller owns.  Returns the number deleted.
CREATE FUNCTION stream_ext.expire_sliding(view regclass DEFAULT NULL)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'stream_ext_expire_sliding'
    LANGUAGE C VOLATILE;
