-- The options of CREATE VIEW ... WITH (continuous, ...) come from one table
-- (src/ddl/view_options.c): CREATE refuses an option it does not list and
-- names the valid ones; ALTER VIEW SET/RESET changes in place the options
-- the table says it can and points every other listed option to CREATE OR
-- REPLACE; options a continuous transform does not take are refused there.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
CREATE SCHEMA vopt;
SET search_path = vopt, public;
SELECT stream_ext.create_stream('vopt.ev', 'k int, ts timestamptz, v int');

-- unknown: refused, with the list of valid options, nothing created
CREATE VIEW bad WITH (continuous, colour = 'red') AS SELECT k, count(*) FROM ev GROUP BY k;
CREATE VIEW bad_tr WITH (continuous, colour = 'red') AS SELECT k, v FROM ev;
SELECT count(*) AS leftovers FROM pg_class WHERE relname LIKE 'bad%';

-- every listed option on ALTER VIEW: changed in place, or refused with a
-- pointer to CREATE OR REPLACE (a continuous view with ttl and lateness)
CREATE VIEW per_min WITH (continuous, ttl = '7 days', ttl_column = 'm', allowed_lateness = '1 minute') AS
  SELECT k, stream_ext.tumble(ts, '1 minute') AS m, count(*) AS n FROM ev GROUP BY 1, 2;
DO $$
DECLARE
  opt text;
  val text;
BEGIN
  FOREACH opt IN ARRAY ARRAY['continuous', 'sliding_window', 'step', 'time_column',
                             'session_gap', 'allowed_lateness', 'emit', 'ttl',
                             'ttl_column', 'output_stream', 'notify'] LOOP
    val := CASE opt WHEN 'allowed_lateness' THEN '2 minutes' WHEN 'ttl' THEN '3 days'
                    WHEN 'notify' THEN 'vopt_batches' ELSE 'x' END;
    BEGIN
      EXECUTE format('ALTER VIEW vopt.per_min SET (%I = %L)', opt, val);
      RAISE NOTICE '%: changed in place', opt;
    EXCEPTION WHEN OTHERS THEN
      RAISE NOTICE '%: % (%)', opt, SQLERRM, SQLSTATE;
    END;
  END LOOP;
END $$;
SELECT ttl, notify FROM stream_ext.view_catalog WHERE view = 'vopt.per_min'::regclass;
SELECT allowed_lateness FROM stream_ext.lateness_views WHERE view = 'vopt.per_min'::regclass;
-- not ours: left to PostgreSQL
ALTER VIEW per_min SET (colour = 'red');

-- a continuous transform takes output_stream and notify only
CREATE VIEW tr WITH (continuous, ttl = '1 day', ttl_column = 'k') AS SELECT k, v FROM ev;
CREATE VIEW tr WITH (continuous, step = '1 minute') AS SELECT k, v FROM ev;
CREATE VIEW tr WITH (continuous, notify = 'vopt_tr') AS SELECT k, v FROM ev;
SELECT notify FROM stream_ext.transform_catalog WHERE transform = 'vopt.tr'::regclass;
-- an aggregate view takes output_stream only with emit
CREATE VIEW agg_out WITH (continuous, output_stream = 'vopt.ev') AS SELECT k, count(*) FROM ev GROUP BY k;

-- each module parses its own options once
CREATE VIEW twice WITH (continuous, sliding_window = '1 hour', sliding_window = '2 hours', time_column = 'ts') AS
  SELECT k, count(*) FROM ev GROUP BY k;

DROP SCHEMA vopt CASCADE;
