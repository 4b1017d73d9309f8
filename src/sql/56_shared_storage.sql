-- stream_ext install script: shared storage (ddl/shared_storage.c,
-- docs/internals.md "Shared storage").  Continuous views of one stream
-- with the same owner, TimeZone, FROM, WHERE and GROUP BY keep their states
-- in one materialization and one delta: one row per group holding every
-- member's state columns, named after the member's prefix.

-- One row per shared storage: its two tables, the number of the next
-- member (its columns are named 'm<next_member>_...'; the first member's
-- have no prefix) and its compaction.
CREATE TABLE stream_ext.shared_storage (
    matrel      regclass PRIMARY KEY,
    delta       regclass NOT NULL,
    stream      regclass NOT NULL,
    next_member integer NOT NULL DEFAULT 2,
    -- the compaction of the delta for every member: view_catalog.compact_sql
    -- of one member (the oldest), NULL for the others
    compact_sql text
);
-- The views whose states are in a shared storage, and the prefix of their
-- columns there.
CREATE TABLE stream_ext.shared_storage_members (
    view    regclass PRIMARY KEY,
    matrel  regclass NOT NULL,
    prefix  text NOT NULL
);
CREATE INDEX ON stream_ext.shared_storage_members (matrel);
SELECT pg_catalog.pg_extension_config_dump('stream_ext.shared_storage', '');
SELECT pg_catalog.pg_extension_config_dump('stream_ext.shared_storage_members', '');
GRANT SELECT ON stream_ext.shared_storage, stream_ext.shared_storage_members TO PUBLIC;
