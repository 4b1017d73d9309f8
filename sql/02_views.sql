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

-- every batch updates each group's row once per statement: the
-- materialization leaves room on each page for one new version of every
-- row (two with a count(DISTINCT)), so a batch that touches every group of
-- the previous batch updates (nearly) all of them HOT, without new index
-- entries (with fillfactor 70, 57% of these updates were HOT)
SELECT stream_ext.create_stream('hot_s', 'k int, v int');
CREATE VIEW hot_v WITH (continuous) AS SELECT k, count(*) AS n, sum(v) AS s FROM hot_s GROUP BY k;
CREATE VIEW hot_d WITH (continuous) AS SELECT k, count(*) AS n, count(DISTINCT v) AS d FROM hot_s GROUP BY k;
SELECT c.relname, c.reloptions FROM pg_class c WHERE c.relname IN ('hot_v_mrel', 'hot_d_mrel') ORDER BY 1;
-- (the views append their batches: the compaction of each batch's delta
-- rows is what updates the materialization, once per group)
INSERT INTO hot_s SELECT i, 0 FROM generate_series(1, 5000) i;
SELECT stream_ext.compact('hot_v') AS v_folded, stream_ext.compact('hot_d') AS d_folded;
INSERT INTO hot_s SELECT i, 1 FROM generate_series(1, 5000) i;
SELECT stream_ext.compact('hot_v') AS v_folded, stream_ext.compact('hot_d') AS d_folded;
INSERT INTO hot_s SELECT i, 2 FROM generate_series(1, 5000) i;
SELECT stream_ext.compact('hot_v') AS v_folded, stream_ext.compact('hot_d') AS d_folded;
SELECT pg_stat_force_next_flush();
SELECT relname, n_tup_upd, n_tup_hot_upd >= 0.9 * n_tup_upd AS hot
  FROM pg_stat_user_tables WHERE relname IN ('hot_v_mrel', 'hot_d_mrel') ORDER BY 1;
SELECT count(*) AS groups, sum(n) AS n, min(d) AS min_d, max(d) AS max_d FROM hot_d;
DROP TABLE hot_s CASCADE;
