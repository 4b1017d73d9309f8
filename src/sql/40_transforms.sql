-- stream_ext install script: continuous transforms (maintain/transform.c).

-- One row per continuous transform: a continuous view without aggregates.
-- Its rows go to output_stream, or (without one) to output_table, which the
-- user-facing view reads.  columns and select_sql make up the per-batch
-- INSERT INTO <target> (columns) select_sql.
CREATE TABLE stream_ext.transform_catalog (
    transform     regclass PRIMARY KEY,
    stream        regclass NOT NULL,
    output_stream regclass,
    output_table  regclass UNIQUE,
    definition    text NOT NULL,
    columns       text NOT NULL,
    select_sql    text NOT NULL,
    notify        text,
    timezone      text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    CHECK ((output_stream IS NULL) <> (output_table IS NULL))
);
CREATE INDEX ON stream_ext.transform_catalog (stream);
SELECT pg_catalog.pg_extension_config_dump('stream_ext.transform_catalog', '');
GRANT SELECT ON stream_ext.transform_catalog TO PUBLIC;

CREATE FUNCTION stream_ext.transform() RETURNS trigger
    AS 'MODULE_PATHNAME', 'stream_ext_transform'
    LANGUAGE C;

CREATE VIEW stream_ext.transforms AS
SELECT t.transform AS name,
       t.stream AS source,
       t.output_stream,
       t.output_table,
       t.definition,
       t.notify,
       pg_catalog.pg_get_userbyid(c.relowner) AS owner,
       COALESCE(s.rows_in, 0) AS rows_in,
       COALESCE(s.batches, 0) AS batches,
       COALESCE(s.groups_updated, 0) AS rows_out,
       s.last_maintained_at,
       t.created_at,
       i.object IS NULL AS valid,
       CASE WHEN pg_catalog.has_table_privilege(t.transform, 'SELECT')
            THEN i.reason END AS invalid_reason
  FROM stream_ext.transform_catalog t
  JOIN pg_catalog.pg_class c ON c.oid = t.transform
  LEFT JOIN stream_ext._view_stats() s ON s.view = t.transform::oid
  LEFT JOIN stream_ext.invalid_objects i ON i.object = t.transform;
GRANT SELECT ON stream_ext.transforms TO PUBLIC;
