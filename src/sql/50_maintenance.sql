-- stream_ext install script: TTL, retention and their scheduling (housekeeping/retention.c).

CREATE FUNCTION stream_ext.set_retention(stream regclass, retention interval)
    RETURNS void
    AS 'MODULE_PATHNAME', 'stream_ext_set_retention'
    LANGUAGE C VOLATILE;

-- TTL of every continuous view and retention of every stream the caller
-- may maintain; one row per piece of work done.
CREATE FUNCTION stream_ext.run_maintenance(
    OUT task text, OUT object regclass, OUT removed bigint)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'stream_ext_run_maintenance'
    LANGUAGE C VOLATILE;

-- The pg_cron job 'stream_ext_maintenance' (needs pg_cron in this database).
CREATE FUNCTION stream_ext.schedule_maintenance()
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'stream_ext_schedule_maintenance'
    LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION stream_ext.schedule_maintenance() FROM PUBLIC;

CREATE FUNCTION stream_ext.unschedule_maintenance()
    RETURNS boolean
    AS 'MODULE_PATHNAME', 'stream_ext_unschedule_maintenance'
    LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION stream_ext.unschedule_maintenance() FROM PUBLIC;
