-- PostgREST: stream_ext.expose() publishes a continuous view in an API schema
-- for PostgREST's anonymous role, and nothing else.  What a real PostgREST
-- answers over HTTP (filters, counts, JWT roles, reloads, confinement) is
-- checked by test/integration/postgrest_http.sh; this test keeps what HTTP
-- cannot show: expose()/unexpose() errors and idempotence, the exact
-- privileges granted, the anonymous role's reach in plain SQL, quoted names,
-- dependencies, and the notify_pgrst setting.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
DROP ROLE IF EXISTS web_anon;
DROP ROLE IF EXISTS pgrst_other;
RESET client_min_messages;
SET TimeZone = 'UTC';

CREATE ROLE web_anon NOLOGIN;
CREATE ROLE pgrst_other NOLOGIN;

SELECT stream_ext.create_stream('clicks', 'url text, user_id int, latency int, ts timestamptz');
CREATE VIEW clicks_per_minute WITH (continuous) AS
  SELECT url, date_bin('1 minute', ts, '2000-01-01') AS minute,
         count(*) AS hits, max(latency) AS max_latency,
         count(DISTINCT user_id) AS users
    FROM clicks
   GROUP BY url, minute;

INSERT INTO clicks (url, user_id, latency, ts)
SELECT CASE WHEN i % 3 = 0 THEN '/about' ELSE '/home' END,
       i % 4, 10 * (i % 7),
       timestamptz '2024-01-01 00:00:00+00' + (i * 7) * interval '1 minute'
  FROM generate_series(0, 19) AS i;
INSERT INTO clicks (url, user_id, latency, ts) VALUES
  ('/home', 9, 5, '2024-01-01 00:00:30+00'),
  ('/home', 9, 5, '2023-12-31 23:59:59+00');

-- the continuous view describes itself
SELECT obj_description('clicks_per_minute'::regclass, 'pg_class')
     = (SELECT definition FROM stream_ext.continuous_views
         WHERE name = 'clicks_per_minute'::regclass) AS commented;

-- errors: not a continuous view, role missing, not the owner
\set VERBOSITY default
\set SHOW_CONTEXT never
SELECT stream_ext.expose('clicks');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT stream_ext.expose('clicks_per_minute', role => 'no_such_role');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SET ROLE pgrst_other;
SELECT stream_ext.expose('clicks_per_minute');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT stream_ext.unexpose('clicks_per_minute');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT stream_ext.unexpose('clicks_per_minute');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
\set VERBOSITY terse
\set SHOW_CONTEXT errors
-- nothing was created by the failed calls
SELECT count(*) AS api_schemas FROM pg_namespace WHERE nspname = 'api';

SELECT stream_ext.expose('clicks_per_minute');
-- idempotent
SELECT stream_ext.expose('clicks_per_minute');
SELECT c.oid::regclass AS exposed, c.relkind,
       obj_description(c.oid, 'pg_class')
     = (SELECT definition FROM stream_ext.continuous_views
         WHERE name = 'clicks_per_minute'::regclass) AS commented
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = 'api'
 ORDER BY 1;
-- exactly two privileges for web_anon: USAGE on api, SELECT on the view
SELECT has_schema_privilege('web_anon', 'api', 'USAGE') AS api_usage,
       has_table_privilege('web_anon', 'api.clicks_per_minute', 'SELECT') AS api_select,
       has_table_privilege('web_anon', 'api.clicks_per_minute', 'INSERT') AS api_insert;
-- all web_anon may read outside the system catalogs and stream_ext's schema
SELECT c.oid::regclass AS readable_by_web_anon
  FROM pg_class c
 WHERE has_table_privilege('web_anon', c.oid, 'SELECT')
   AND c.relnamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace,
                              'stream_ext'::regnamespace)
 ORDER BY c.oid::regclass::text;
-- stream_ext's catalog is readable by PUBLIC, as documented in
-- docs/continuous-views.md, so by web_anon too in plain SQL; PostgREST never
-- reaches it, as it only queries relations of the schemas in db-schemas
-- (shown below)
SELECT has_table_privilege('web_anon', 'stream_ext.view_catalog', 'SELECT') AS catalog_public;

-- the anonymous role reads nothing else, even with plain SQL: not the
-- continuous view in its own schema, its materialization and side table,
-- nor the stream; and it cannot write through the API view
SELECT materialization AS mrel, (SELECT aux_tables[1] FROM stream_ext.view_catalog
                                  WHERE view = name) AS auxrel
  FROM stream_ext.continuous_views WHERE name = 'clicks_per_minute'::regclass \gset
BEGIN;
SET LOCAL ROLE web_anon;
SAVEPOINT s;
SELECT * FROM public.:mrel;
ROLLBACK TO s;
SELECT * FROM public.:auxrel;
ROLLBACK TO s;
SELECT * FROM public.clicks_per_minute;
ROLLBACK TO s;
SELECT * FROM public.clicks;
ROLLBACK TO s;
INSERT INTO public.clicks (url) VALUES ('/x');
ROLLBACK TO s;
INSERT INTO api.clicks_per_minute VALUES ('/x', now(), 1, 1, 1);
ROLLBACK TO s;
ROLLBACK;

-- a quoted schema and view name
CREATE VIEW "Odd ""CV""" WITH (continuous) AS SELECT url, count(*) AS n FROM clicks GROUP BY url;
SELECT stream_ext.expose('"Odd ""CV"""', 'My API');
SELECT url, n FROM "My API"."Odd ""CV""" ORDER BY url;
SELECT stream_ext.unexpose('"Odd ""CV"""', 'My API');
DROP VIEW "Odd ""CV""";
DROP SCHEMA "My API";

-- an exposed view holds on to its continuous view
DROP VIEW clicks_per_minute;

-- unexpose: the API view goes, the schema and the continuous view stay
SELECT stream_ext.unexpose('clicks_per_minute');
SELECT count(*) AS api_relations FROM pg_class WHERE relnamespace = 'api'::regnamespace;
SELECT to_regclass('api.clicks_per_minute') AS api_view;
SELECT "api"."clicks_per_minute".* FROM "api"."clicks_per_minute";
SELECT count(*) AS rows FROM clicks_per_minute;
SELECT stream_ext.unexpose('clicks_per_minute');

-- stream_ext.notify_pgrst is a boolean, on by default
SHOW stream_ext.notify_pgrst;
SET stream_ext.notify_pgrst = off;
SHOW stream_ext.notify_pgrst;
RESET stream_ext.notify_pgrst;

DROP SCHEMA api;
DROP VIEW clicks_per_minute;
DROP TABLE clicks;
DROP ROLE web_anon;
DROP ROLE pgrst_other;
SELECT count(*) AS views FROM stream_ext.continuous_views;
