-- TTL of continuous views, retention of raw stream rows, run_maintenance()
-- and its pg_cron job (docs/retention.md).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;

-- event times relative to the hour of now(): a batch spans ten minutes
-- from the hour, far from any TTL boundary, so the counts are fixed
SELECT stream_ext.create_stream('ret_clicks', 'url text, user_id int, ts timestamptz');
SELECT name, retention FROM stream_ext.streams WHERE name = 'ret_clicks'::regclass;

CREATE VIEW ret_per_minute WITH (continuous, ttl = '1 day', ttl_column = 'minute') AS
  SELECT url, date_bin('1 minute', ts, '2000-01-01') AS minute,
         count(*) AS hits, count(DISTINCT user_id) AS users
    FROM ret_clicks GROUP BY url, minute;
-- ttl_column may be any time group key, named as the view names it
CREATE VIEW ret_per_day (d, url, hits) WITH (continuous, ttl = '3 days', ttl_column = 'd') AS
  SELECT ts::date AS day, url, count(*) FROM ret_clicks GROUP BY day, url;
CREATE VIEW ret_local WITH (continuous, ttl = '36 hours', ttl_column = 'hour') AS
  SELECT date_trunc('hour', ts::timestamp) AS hour, sum(user_id) AS s
    FROM ret_clicks GROUP BY hour;
SELECT name, ttl, ttl_column FROM stream_ext.continuous_views
 WHERE name::text LIKE 'ret\_%' ORDER BY name::oid;

-- a copy of every row, for the oracle
CREATE TABLE ret_copy (url text, user_id int, ts timestamptz, arrival_timestamp timestamptz);
CREATE FUNCTION ret_add(n int, age interval, arrived interval) RETURNS void LANGUAGE sql AS $$
  WITH r AS (SELECT '/p' || (i % 3) AS url, i % 7 AS user_id,
                    date_trunc('hour', now()) - age + (i % 10) * interval '1 minute' AS ts,
                    now() - arrived AS arrival_timestamp
               FROM generate_series(1, n) i),
       a AS (INSERT INTO ret_clicks (url, user_id, ts, arrival_timestamp) SELECT * FROM r)
  INSERT INTO ret_copy SELECT * FROM r $$;
SELECT ret_add(300, '5 days', '3 hours');   -- old events, arrived long ago
SELECT ret_add(300, '30 hours', '2 hours'); -- between the TTLs
SELECT ret_add(300, '2 hours', '10 minutes');
SELECT ret_add(300, '20 minutes', '0');

SELECT count(*) AS minutes, (SELECT count(*) FROM ret_local) AS hours FROM ret_per_minute;

-- one pass: expired groups and expired raw rows go
SELECT task, object, removed FROM stream_ext.run_maintenance()
 WHERE object::text LIKE 'ret\_%' ORDER BY 1, 2::text;

-- what stays is exactly the query over the rows whose group is not expired
SELECT count(*) AS differing FROM (
  (SELECT url, date_bin('1 minute', ts, '2000-01-01') AS minute,
          count(*) AS hits, count(DISTINCT user_id) AS users
     FROM ret_copy GROUP BY url, minute
   HAVING date_bin('1 minute', ts, '2000-01-01') >= now() - interval '1 day'
   EXCEPT ALL SELECT * FROM ret_per_minute)
  UNION ALL
  (SELECT * FROM ret_per_minute
   EXCEPT ALL SELECT url, date_bin('1 minute', ts, '2000-01-01') AS minute,
          count(*), count(DISTINCT user_id)
     FROM ret_copy GROUP BY url, minute)) d;
SELECT count(*) AS differing FROM (
  (SELECT ts::date, url, count(*) FROM ret_copy GROUP BY 1, 2
   HAVING ts::date >= now() - interval '3 days'
   EXCEPT ALL SELECT * FROM ret_per_day)
  UNION ALL
  (SELECT * FROM ret_per_day
   EXCEPT ALL SELECT ts::date, url, count(*) FROM ret_copy GROUP BY 1, 2)) d;
SELECT count(*) AS differing FROM (
  (SELECT date_trunc('hour', ts::timestamp), sum(user_id) FROM ret_copy GROUP BY 1
   HAVING date_trunc('hour', ts::timestamp) >= now() - interval '36 hours'
   EXCEPT ALL SELECT * FROM ret_local)
  UNION ALL
  (SELECT * FROM ret_local
   EXCEPT ALL SELECT date_trunc('hour', ts::timestamp), sum(user_id) FROM ret_copy GROUP BY 1)) d;
SELECT min(minute) >= now() - interval '1 day' AS minutes_fresh,
       count(*) AS minutes FROM ret_per_minute;
-- the count(DISTINCT) side table lost the values of the deleted groups
SELECT aux_tables[1] AS aux FROM stream_ext.view_catalog
 WHERE view = 'ret_per_minute'::regclass \gset
SELECT count(*) AS stale_distinct_values, count(DISTINCT minute) AS minutes FROM :aux
 WHERE minute < now() - interval '1 day';
SELECT count(DISTINCT minute) AS minutes FROM :aux;

-- raw rows: the default retention (1 hour) kept only the recent arrivals
SELECT count(*) AS raw_rows,
       count(*) FILTER (WHERE arrival_timestamp < now() - interval '1 hour') AS expired
  FROM ret_clicks;
-- nothing left to do
SELECT task, object, removed FROM stream_ext.run_maintenance()
 WHERE object::text LIKE 'ret\_%' ORDER BY 1, 2::text;

-- a late row for an expired group starts it again; the next pass drops it
SELECT ret_add(1, '5 days', '0');
SELECT count(*) AS late_groups FROM ret_per_minute WHERE minute < now() - interval '1 day';
SELECT task, object, removed FROM stream_ext.run_maintenance()
 WHERE object = 'ret_per_minute'::regclass;
SELECT count(*) AS late_groups FROM ret_per_minute WHERE minute < now() - interval '1 day';

-- the stream is still append-only for users
DELETE FROM ret_clicks;

-- set_retention: NULL keeps raw rows, an interval bounds them
SELECT stream_ext.set_retention('ret_clicks', NULL);
SELECT name, retention FROM stream_ext.streams WHERE name = 'ret_clicks'::regclass;
INSERT INTO ret_clicks (url, user_id, ts, arrival_timestamp)
  VALUES ('/old', 1, now(), now() - interval '1 year');
SELECT task, removed FROM stream_ext.run_maintenance() WHERE object = 'ret_clicks'::regclass;
SELECT count(*) AS raw_rows FROM ret_clicks;
SELECT stream_ext.set_retention('ret_clicks', '5 minutes');
SELECT name, retention FROM stream_ext.streams WHERE name = 'ret_clicks'::regclass;
-- a view created now backfills from the retained rows only
SELECT task, removed FROM stream_ext.run_maintenance() WHERE object = 'ret_clicks'::regclass;
CREATE VIEW ret_backfilled WITH (continuous) AS SELECT count(*) AS n FROM ret_clicks;
SELECT n AS backfilled, (SELECT count(*) FROM ret_copy) AS ever_inserted FROM ret_backfilled;

-- a stream whose raw rows all expired is truncated: its file is given back
SELECT stream_ext.create_stream('ret_burst', 'v int');
CREATE VIEW ret_burst_sum WITH (continuous) AS SELECT sum(v) AS s, count(*) AS n FROM ret_burst;
INSERT INTO ret_burst (v, arrival_timestamp)
  SELECT i, now() - interval '2 hours' FROM generate_series(1, 1000) i;
SELECT pg_relation_size('ret_burst') > 0 AS has_pages;
SELECT task, object, removed FROM stream_ext.run_maintenance()
 WHERE object = 'ret_burst'::regclass ORDER BY 1;
SELECT pg_relation_size('ret_burst') AS bytes, (SELECT count(*) FROM ret_burst) AS raw_rows;
SELECT * FROM ret_burst_sum;
INSERT INTO ret_burst (v) VALUES (1);
SELECT * FROM ret_burst_sum;

-- sliding windows: run_maintenance() expires their old buckets too (also
-- when the stream is idle).  Maintenance expires at most once a step per
-- session, the first time right away: after this first batch, the old
-- rows' bucket waits for run_maintenance().
CREATE VIEW ret_sliding WITH (continuous, sliding_window = '2 hours', time_column = 'ts', step = '1 hour') AS
  SELECT count(*) AS n FROM ret_clicks;
INSERT INTO ret_clicks (url, user_id, ts) VALUES ('/now', 1, now());
INSERT INTO ret_clicks (url, user_id, ts) SELECT '/old', i, now() - interval '5 days' FROM generate_series(1, 5) i;
SELECT task, object, removed FROM stream_ext.run_maintenance() WHERE object = 'ret_sliding'::regclass;
SELECT task, object, removed FROM stream_ext.run_maintenance() WHERE object = 'ret_sliding'::regclass;

-- a task that fails is a WARNING and reports NULL; the others still run
SELECT stream_ext.create_stream('ret_fail', 'v int');
CREATE FUNCTION ret_refuse() RETURNS trigger LANGUAGE plpgsql
  AS $$ BEGIN RAISE EXCEPTION 'refused by a trigger'; END $$;
CREATE TRIGGER ret_refuse BEFORE DELETE ON ret_fail FOR EACH ROW EXECUTE FUNCTION ret_refuse();
INSERT INTO ret_fail (v, arrival_timestamp) VALUES (1, now() - interval '2 hours');
INSERT INTO ret_burst (v, arrival_timestamp) VALUES (2, now() - interval '2 hours');
SELECT task, object, removed FROM stream_ext.run_maintenance()
 WHERE object IN ('ret_fail'::regclass, 'ret_burst'::regclass) ORDER BY 1, 2::text;
SELECT count(*) AS kept FROM ret_fail;
SELECT count(*) AS kept FROM ret_burst;
DROP TABLE ret_fail;
DROP FUNCTION ret_refuse;

-- privileges: run_maintenance() maintains what the caller's roles own;
-- set_retention() needs the stream's owner
CREATE ROLE ret_other;
GRANT SELECT, INSERT ON ret_clicks TO ret_other;
SET ROLE ret_other;
SELECT count(*) AS tasks FROM stream_ext.run_maintenance() WHERE object::text LIKE 'ret\_%';
SELECT stream_ext.set_retention('ret_clicks', '1 day');
SELECT stream_ext.schedule_maintenance();
RESET ROLE;
SELECT stream_ext.set_retention('ret_copy', '1 day');
-- its own view over a stream it may read: maintained as the view's owner,
-- by the owner or by a superuser
CREATE SCHEMA ret_other_s AUTHORIZATION ret_other;
SET ROLE ret_other;
SET client_min_messages = warning;
CREATE VIEW ret_other_s.daily WITH (continuous, ttl = '1 day', ttl_column = 'day') AS
  SELECT ts::date AS day, count(*) AS n FROM ret_clicks GROUP BY day;
RESET client_min_messages;
RESET ROLE;
INSERT INTO ret_clicks (url, user_id, ts) VALUES ('/x', 1, now() - interval '9 days');
-- the days past the TTL: 5 and 9 days ago, and yesterday when the test runs
-- within an hour after midnight (the newest rows are 11-20 minutes old)
SELECT count(DISTINCT ts::date) AS old_days FROM ret_clicks
 WHERE ts::date < now() - interval '1 day' \gset
SET ROLE ret_other;
SELECT task, object, removed = :old_days AS removed_the_old_days, removed >= 2 AS at_least_two
  FROM stream_ext.run_maintenance() WHERE object::text LIKE 'ret\_%';
SELECT count(*) AS old_days FROM ret_other_s.daily WHERE day < now() - interval '1 day';
RESET ROLE;
INSERT INTO ret_clicks (url, user_id, ts) VALUES ('/x', 1, now() - interval '9 days');
SELECT task, object, removed FROM stream_ext.run_maintenance() WHERE object = 'ret_other_s.daily'::regclass;
SELECT pg_get_userbyid(relowner) AS matrel_owner FROM pg_class
 WHERE oid = (SELECT materialization FROM stream_ext.continuous_views WHERE name = 'ret_other_s.daily'::regclass);
DROP SCHEMA ret_other_s CASCADE;

-- bad options: clear errors at CREATE time, and nothing is created
SELECT count(*) AS views_before FROM stream_ext.continuous_views \gset
CREATE VIEW ret_bad WITH (continuous, ttl = '1 day') AS
  SELECT ts::date AS day, count(*) FROM ret_clicks GROUP BY day;
CREATE VIEW ret_bad WITH (continuous, ttl_column = 'day') AS
  SELECT ts::date AS day, count(*) FROM ret_clicks GROUP BY day;
CREATE VIEW ret_bad WITH (continuous, ttl = 'a week', ttl_column = 'day') AS
  SELECT ts::date AS day, count(*) FROM ret_clicks GROUP BY day;
CREATE VIEW ret_bad WITH (continuous, ttl = '-7 days', ttl_column = 'day') AS
  SELECT ts::date AS day, count(*) FROM ret_clicks GROUP BY day;
CREATE VIEW ret_bad WITH (continuous, ttl = '0', ttl_column = 'day') AS
  SELECT ts::date AS day, count(*) FROM ret_clicks GROUP BY day;
CREATE VIEW ret_bad WITH (continuous, ttl = '1 day', ttl_column = 'nope') AS
  SELECT ts::date AS day, count(*) FROM ret_clicks GROUP BY day;
CREATE VIEW ret_bad WITH (continuous, ttl = '1 day', ttl_column = 'last_seen') AS
  SELECT url, max(ts) AS last_seen FROM ret_clicks GROUP BY url;
CREATE VIEW ret_bad WITH (continuous, ttl = '1 day', ttl_column = 'url') AS
  SELECT url, count(*) FROM ret_clicks GROUP BY url;
CREATE VIEW ret_bad WITH (continuous, ttl = '1 day', ttl_column = 'n') AS
  SELECT count(*) AS n FROM ret_clicks;
CREATE VIEW ret_bad WITH (continuous, ttl = '1 day', ttl_column = 'url', session_gap = '1 hour', time_column = 'ts') AS
  SELECT url, count(*) FROM ret_clicks GROUP BY url;
-- a sliding window adds a group key of its own: ttl_column is still the
-- view's column
CREATE VIEW ret_bad WITH (continuous, ttl = '1 day', ttl_column = 'url', sliding_window = '1 hour', time_column = 'ts') AS
  SELECT url, count(*) FROM ret_clicks GROUP BY url;
SELECT stream_ext.set_retention('ret_clicks', '-1 hour');
SELECT stream_ext.set_retention('ret_clicks', '0');
SELECT stream_ext.set_retention('ret_clicks', 'soon');
SELECT stream_ext.set_retention(NULL, '1 hour');
SELECT count(*) - :views_before AS views_added FROM stream_ext.continuous_views;
SELECT count(*) AS leftovers FROM pg_class WHERE relname LIKE 'ret\_bad%';
CREATE VIEW ret_sl_ttl WITH (continuous, ttl = '1 day', ttl_column = 'hour', sliding_window = '2 days', time_column = 'ts', step = '1 day') AS
  SELECT date_bin('1 hour', ts, '2000-01-01') AS hour, count(*) AS n FROM ret_clicks GROUP BY hour;
SELECT ttl, ttl_column FROM stream_ext.continuous_views WHERE name = 'ret_sl_ttl'::regclass;
DROP VIEW ret_sl_ttl;
SELECT name, retention FROM stream_ext.streams WHERE name = 'ret_clicks'::regclass;

DROP VIEW ret_per_minute, ret_per_day, ret_local, ret_backfilled, ret_burst_sum, ret_sliding;
SELECT count(*) AS ttl_views FROM stream_ext.continuous_views WHERE ttl IS NOT NULL;
DROP TABLE ret_clicks, ret_burst, ret_copy;
DROP FUNCTION ret_add;
DROP ROLE ret_other;

-- pg_cron: the job is scheduled when the extension is created in pg_cron's
-- database (cron.database_name = 'postgres' in the test cluster), runs
-- run_maintenance(), and goes with DROP EXTENSION.
\c postgres
SELECT NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_cron') AS need_cron \gset
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_cron;
DROP EXTENSION IF EXISTS stream_ext CASCADE;
CREATE EXTENSION stream_ext;
RESET client_min_messages;
SELECT jobname, schedule, command, database, username, active
  FROM cron.job WHERE jobname = 'stream_ext_maintenance';
-- keep pg_cron from running it during the test: its command runs here
SELECT cron.alter_job(jobid, active := false)
  FROM cron.job WHERE jobname = 'stream_ext_maintenance';
SELECT stream_ext.create_stream('ret_cron', 'v int');
SELECT stream_ext.set_retention('ret_cron', '1 minute');
INSERT INTO ret_cron (v, arrival_timestamp) VALUES (1, now() - interval '2 minutes'), (2, now());
-- the job's own command
SELECT command FROM cron.job WHERE jobname = 'stream_ext_maintenance' \gset
:command;
SELECT v FROM ret_cron;
-- a schedule pg_cron refuses: what needed the job still succeeds, warned
SELECT stream_ext.unschedule_maintenance();
SET stream_ext.maintenance_schedule = 'every blue moon';
SELECT stream_ext.set_retention('ret_cron', '2 minutes');
SELECT count(*) AS jobs FROM cron.job WHERE jobname = 'stream_ext_maintenance';
-- stream_ext.maintenance_schedule applies when (re)scheduling
SET stream_ext.maintenance_schedule = '*/5 * * * *';
SELECT stream_ext.schedule_maintenance() IS NOT NULL AS scheduled;
SELECT schedule, active FROM cron.job WHERE jobname = 'stream_ext_maintenance';
RESET stream_ext.maintenance_schedule;
-- a DROP EXTENSION that fails keeps the job; one that succeeds drops it
\set VERBOSITY terse
DROP EXTENSION stream_ext;
\set VERBOSITY default
SELECT count(*) AS jobs FROM cron.job WHERE jobname = 'stream_ext_maintenance';
SET client_min_messages = warning;
DROP EXTENSION stream_ext CASCADE;
RESET client_min_messages;
SELECT count(*) AS jobs FROM cron.job WHERE jobname = 'stream_ext_maintenance';
\if :need_cron
DROP EXTENSION pg_cron;
\endif
\c contrib_regression
