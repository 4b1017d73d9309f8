-- ALTER VIEW v SET (...) / RESET (...) of a continuous view's options that
-- change without a rebuild (docs/continuous-views.md#changing-options):
-- ttl, allowed_lateness, notify; the others point to CREATE OR REPLACE.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE SCHEMA alt;
SET search_path = alt, public;

SELECT stream_ext.create_stream('alt.ev', 'k int, ts timestamptz, v int');
CREATE VIEW daily WITH (continuous, ttl = '365 days', ttl_column = 'day') AS
  SELECT k, date_trunc('day', ts) AS day, count(*) AS n FROM ev GROUP BY 1, 2;
INSERT INTO ev VALUES (1, now() - interval '10 days', 1), (1, now(), 1), (2, now() - interval '3 hours', 2);

-- ttl: a shorter one applies at the next run_maintenance()
SELECT coalesce(sum(removed), 0) AS removed FROM stream_ext.run_maintenance() WHERE object = 'alt.daily'::regclass;
ALTER VIEW daily SET (ttl = '2 days');
SELECT ttl FROM stream_ext.continuous_views WHERE name = 'alt.daily'::regclass;
SELECT task, removed FROM stream_ext.run_maintenance() WHERE object = 'alt.daily'::regclass;
SELECT k, n FROM daily ORDER BY k;
-- RESET: the view keeps its groups from now on
ALTER VIEW daily RESET (ttl);
SELECT ttl IS NULL AS no_ttl FROM stream_ext.continuous_views WHERE name = 'alt.daily'::regclass;
ALTER VIEW daily SET (ttl = '1 day');
ALTER VIEW daily SET (ttl = '-1 day');

-- notify: a channel per batch, set and reset without a rebuild (the
-- notifications themselves: isolation/alter_view_options)
ALTER VIEW daily SET (notify = 'alt_batches');
SELECT notify FROM stream_ext.view_catalog WHERE view = 'alt.daily'::regclass;
ALTER VIEW daily SET (notify = true);
SELECT notify FROM stream_ext.view_catalog WHERE view = 'alt.daily'::regclass;
ALTER VIEW daily RESET (notify);
SELECT notify IS NULL AS no_notify FROM stream_ext.view_catalog WHERE view = 'alt.daily'::regclass;
ALTER VIEW daily SET (notify = '');

-- allowed_lateness: the next batch's watermark uses the new value
SELECT stream_ext.create_stream('alt.ev2', 'k int, ts timestamptz');
CREATE VIEW win WITH (continuous, allowed_lateness = '1 hour') AS
  SELECT k, stream_ext.tumble(ts, '5 minutes') AS w, count(*) AS n FROM ev2 GROUP BY 1, 2;
INSERT INTO ev2 VALUES (9, '2026-01-01 01:00+00');
INSERT INTO ev2 VALUES (9, '2026-01-01 00:30+00');   -- 30 minutes late: within the hour
ALTER VIEW win SET (allowed_lateness = '10 minutes');
SELECT allowed_lateness, watermark AT TIME ZONE 'UTC' AS watermark FROM stream_ext.lateness WHERE view = 'alt.win'::regclass;
INSERT INTO ev2 VALUES (9, '2026-01-01 00:40+00');   -- 20 minutes late: now too late
SELECT w AT TIME ZONE 'UTC' AS w, n FROM win WHERE k = 9 ORDER BY w;
SELECT event_time AT TIME ZONE 'UTC' AS event_time, watermark AT TIME ZONE 'UTC' AS watermark
  FROM stream_ext.late_rows WHERE view = 'alt.win'::regclass;
ALTER VIEW win RESET (allowed_lateness);
ALTER VIEW daily SET (allowed_lateness = '1 minute');

-- options fixed by the materialization, PostgreSQL's own options, owners
ALTER VIEW daily SET (ttl_column = 'k');
ALTER VIEW win SET (session_gap = '1 minute');
ALTER VIEW daily SET (ttl = '3 days', security_barrier = true);
ALTER VIEW daily SET (security_barrier = true);
SELECT reloptions FROM pg_class WHERE oid = 'alt.daily'::regclass;
CREATE ROLE alt_other;
GRANT USAGE ON SCHEMA alt TO alt_other;
SET ROLE alt_other;
ALTER VIEW alt.daily SET (ttl = '3 days');
RESET ROLE;
-- an ordinary view is left to PostgreSQL
CREATE VIEW plain AS SELECT 1 AS x;
ALTER VIEW plain SET (ttl = '1 day');

RESET search_path;
DROP SCHEMA alt CASCADE;
DROP ROLE alt_other;
