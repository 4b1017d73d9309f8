-- stream_ext install script: late data of tumbling windows (windows/lateness.c).

CREATE TABLE stream_ext.lateness_views (
    view              regclass PRIMARY KEY
                      REFERENCES stream_ext.view_catalog (view) ON DELETE CASCADE,
    allowed_lateness  interval NOT NULL,
    late_sql          text NOT NULL,
    max_sql           text NOT NULL,
    -- emit = 'on_close': the stream receiving final rows, and the statement
    emit_sql          text,
    output_stream     regclass
);

-- newest event time each view has seen; watermark = max_event_time -
-- allowed_lateness
CREATE TABLE stream_ext.watermarks (
    view            regclass PRIMARY KEY
                    REFERENCES stream_ext.lateness_views (view) ON DELETE CASCADE,
    max_event_time  timestamptz
);

-- rows not applied because their window had closed
CREATE TABLE stream_ext.late_rows (
    view         regclass NOT NULL
                 REFERENCES stream_ext.lateness_views (view) ON DELETE CASCADE,
    event_time   timestamptz,
    watermark    timestamptz NOT NULL,
    reason       text NOT NULL,
    "row"        jsonb NOT NULL,
    received_at  timestamptz NOT NULL DEFAULT pg_catalog.now()
);
CREATE INDEX ON stream_ext.late_rows (view, received_at);

SELECT pg_catalog.pg_extension_config_dump('stream_ext.lateness_views', '');
SELECT pg_catalog.pg_extension_config_dump('stream_ext.watermarks', '');
SELECT pg_catalog.pg_extension_config_dump('stream_ext.late_rows', '');

-- late rows are rows of the stream: only the view's owner (and members of
-- that role) see them; maintenance adds them as the view's owner, so the
-- policy lets an owner add rows of its own views only
ALTER TABLE stream_ext.late_rows ENABLE ROW LEVEL SECURITY;
CREATE POLICY late_rows_owner ON stream_ext.late_rows
    USING (pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c
                                    WHERE c.oid = late_rows.view), 'USAGE'));
GRANT SELECT ON stream_ext.lateness_views, stream_ext.watermarks TO PUBLIC;
GRANT SELECT, INSERT, DELETE ON stream_ext.late_rows TO PUBLIC;

CREATE VIEW stream_ext.lateness AS
SELECT l.view,
       l.allowed_lateness,
       w.max_event_time,
       w.max_event_time - l.allowed_lateness AS watermark,
       (SELECT pg_catalog.count(*) FROM stream_ext.late_rows r WHERE r.view = l.view) AS late_rows
  FROM stream_ext.lateness_views l
  LEFT JOIN stream_ext.watermarks w USING (view);
GRANT SELECT ON stream_ext.lateness TO PUBLIC;

CREATE FUNCTION stream_ext.advance_watermark(view regclass, event_time timestamptz)
    RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'stream_ext_advance_watermark'
    LANGUAGE C STRICT VOLATILE;
