-- stream_ext upgrade 0.2 -> 0.3.  Every object added or changed in src/sql/ since
-- 0.2 must be added or changed here too: sql/12_upgrade.sql checks that an
-- updated installation has exactly the objects of a fresh one.
\echo Use "ALTER EXTENSION stream_ext UPDATE TO '0.3'" to load this file. \quit

-- wide group keys: continuous views index them by a hash (issue #14, item 7)
CREATE FUNCTION stream_ext.key_hash_collision(materialization regclass) RETURNS int8
    AS 'MODULE_PATHNAME', 'stream_ext_key_hash_collision'
    LANGUAGE C VOLATILE PARALLEL SAFE;
