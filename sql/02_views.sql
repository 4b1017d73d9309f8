-- Continuous views: shape of what is created, reads, catalog, lifecycle.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
SELECT stream_ext.create_stream('pageviews', 'url text, user_id int, ts timestamptz, ms float8');
INSERT INTO pageviews VALUES ('/a', 1, '2024-01-01 00:00:10+00', 10), ('/a', 2, '2024-01-01 00:00:20+00', 30);

CREATE VIEW pv_minute WITH (continuous) AS
  SELECT url, date_bin('1 minute', ts, '2000-01-01') AS minute,
         count(*) AS hits, avg(ms) AS avg_ms, count(DISTINCT user_id) AS users
    FROM pageviews GROUP BY url, minute;
\d+ pv_minute
\d pv_minute_mrel
SELECT * FROM pv_minute ORDER BY url, minute;

INSERT INTO pageviews VALUES ('/a', 1, '2024-01-01 00:00:30+00', 20), ('/b', 3, '2024-01-01 00:01:05+00', 5);
SELECT * FROM pv_minute ORDER BY url, minute;
SELECT * FROM pv_minute WHERE url = '/b';

-- CREATE VIEW ... (column names) and continuous = false (a plain view)
CREATE VIEW pv_total (n, distinct_users) WITH (continuous) AS SELECT count(*), count(DISTINCT user_id) FROM pageviews;
SELECT * FROM pv_total;
CREATE VIEW plain_view WITH (continuous = false) AS SELECT url FROM pageviews;
SELECT name FROM stream_ext.continuous_views ORDER BY 1;
SELECT name, source, materialization, definition FROM stream_ext.continuous_views WHERE name = 'pv_total'::regclass;
SELECT name, views FROM stream_ext.streams;

-- the materialization is maintained only by stream_ext
INSERT INTO pv_minute_mrel (url) VALUES ('/x');
UPDATE pv_minute_mrel SET url = '/y';
TRUNCATE pv_minute_mrel;
INSERT INTO pv_minute (url) VALUES ('/x');
DROP TABLE pv_minute_mrel;
ALTER TABLE pv_minute_mrel RENAME TO other;

-- columns a view reads cannot be changed under it
ALTER TABLE pageviews DROP COLUMN ms;
ALTER TABLE pageviews ALTER COLUMN ms TYPE numeric;
ALTER TABLE pageviews RENAME COLUMN url TO path;
-- adding columns is fine, and the views keep working
ALTER TABLE pageviews ADD COLUMN referrer text;
INSERT INTO pageviews (url, user_id, ts, ms, referrer) VALUES ('/b', 4, '2024-01-01 00:01:10+00', 7, 'x');
SELECT * FROM pv_minute WHERE url = '/b';

-- a stream with views needs CASCADE
DROP TABLE pageviews;
-- DROP VIEW removes everything it created
DROP VIEW pv_total;
SELECT count(*) FROM pg_class WHERE relname LIKE 'pv_total%';
SELECT count(*) FILTER (WHERE tgname LIKE 'stream_ext_maintain_%') AS maintain_triggers, count(*) AS triggers
  FROM pg_trigger WHERE tgrelid = 'pageviews'::regclass AND NOT tgisinternal;
DROP TABLE pageviews CASCADE;
SELECT count(*) FROM pg_class WHERE relname LIKE 'pv_%';
SELECT count(*) AS views, (SELECT count(*) FROM stream_ext.streams) AS streams FROM stream_ext.continuous_views;
