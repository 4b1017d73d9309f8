-- stream_ext upgrade 0.2 -> 0.3.  Every object added or changed in src/sql/ since
-- 0.2 must be added or changed here too: sql/12_upgrade.sql checks that an
-- updated installation has exactly the objects of a fresh one.
\echo Use "ALTER EXTENSION stream_ext UPDATE TO '0.3'" to load this file. \quit

-- late data and emit-on-close for every window kind (lateness.c)
-- Hopping windows with allowed_lateness: where the windows of pane that a
-- row may still join start, given the watermark (-infinity: all of them).
CREATE FUNCTION stream_ext.hop_open_from(pane timestamptz, size interval, slide interval,
                                         watermark timestamptz)
    RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'stream_ext_hop_open_from'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;
