-- Upgrades: ALTER EXTENSION stream_ext UPDATE from every released version
-- yields exactly the objects of a fresh installation, and continuous views
-- built before the update keep working after it.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;

SELECT name, version FROM pg_available_extension_versions
 WHERE name = 'stream_ext' ORDER BY version;
SELECT * FROM pg_extension_update_paths('stream_ext')
 WHERE path IS NOT NULL ORDER BY source, target;

-- Everything that makes up an installation, one line per fact: members of
-- the extension with their definitions, columns, indexes, policies and
-- privileges, and the extension's configuration tables.
\set fingerprint 'SELECT f FROM ( SELECT pg_describe_object(d.classid, d.objid, d.objsubid) || coalesce(E''\n'' || CASE d.classid WHEN ''pg_proc''::regclass THEN (SELECT CASE WHEN p.prokind = ''a'' THEN ''aggregate '' || pg_get_function_arguments(p.oid) || '' sfunc '' || a.aggtransfn::regprocedure::text || '' stype '' || format_type(a.aggtranstype, NULL) || '' combine '' || a.aggcombinefn::text || '' final '' || a.aggfinalfn::text ELSE pg_get_functiondef(p.oid) END FROM pg_proc p LEFT JOIN pg_aggregate a ON a.aggfnoid = p.oid WHERE p.oid = d.objid) || coalesce(array_to_string((SELECT proacl FROM pg_proc WHERE oid = d.objid), '','') , '''') WHEN ''pg_class''::regclass THEN (SELECT relkind::text || '' '' || coalesce(array_to_string(relacl, '',''), '''') || '' rls='' || relrowsecurity || coalesce('' '' || pg_get_viewdef(d.objid), '''') || coalesce((SELECT string_agg(attname || '' '' || format_type(atttypid, atttypmod) || CASE WHEN attnotnull THEN '' not null'' ELSE '''' END || coalesce('' default '' || pg_get_expr(ad.adbin, ad.adrelid), '''') || coalesce('' acl '' || array_to_string(attacl, '',''), ''''), ''; '' ORDER BY attnum) FROM pg_attribute LEFT JOIN pg_attrdef ad ON ad.adrelid = attrelid AND ad.adnum = attnum WHERE attrelid = d.objid AND attnum > 0 AND NOT attisdropped), '''') || coalesce((SELECT string_agg(pg_get_indexdef(indexrelid), ''; '' ORDER BY 1) FROM pg_index WHERE indrelid = d.objid), '''') || coalesce((SELECT string_agg(polname || '' '' || polcmd::text || '' '' || coalesce(pg_get_expr(polqual, polrelid), '''') || '' '' || coalesce(pg_get_expr(polwithcheck, polrelid), ''''), ''; '' ORDER BY polname) FROM pg_policy WHERE polrelid = d.objid), '''') FROM pg_class WHERE oid = d.objid) WHEN ''pg_type''::regclass THEN format_type(d.objid, NULL) ELSE NULL END, '''') AS f FROM pg_depend d JOIN pg_extension e ON d.refclassid = ''pg_extension''::regclass AND d.refobjid = e.oid WHERE e.extname = ''stream_ext'' AND d.deptype = ''e'' UNION ALL SELECT ''config '' || c::regclass::text || '' '' || coalesce(cond, '''') FROM pg_extension e, unnest(e.extconfig, e.extcondition) AS x(c, cond) WHERE e.extname = ''stream_ext'' UNION ALL SELECT ''version '' || extversion FROM pg_extension WHERE extname = ''stream_ext'' ) x'

-- a fresh installation of the current version
DROP DATABASE IF EXISTS stream_ext_upgrade_fresh;
DROP DATABASE IF EXISTS stream_ext_upgrade_old;
CREATE DATABASE stream_ext_upgrade_fresh;
CREATE DATABASE stream_ext_upgrade_old;
\c stream_ext_upgrade_fresh
SET client_min_messages = warning;
CREATE EXTENSION stream_ext;
RESET client_min_messages;
SELECT string_agg(f, E'\n---\n' ORDER BY f) AS fresh FROM (:fingerprint) fp \gset

-- 0.1, with a stream and views, then updated
\c stream_ext_upgrade_old
SET client_min_messages = warning;
CREATE EXTENSION stream_ext VERSION '0.1';
RESET client_min_messages;
SELECT stream_ext.create_stream('up_clicks', 'url text, user_id int');
CREATE VIEW up_per_url WITH (continuous) AS
  SELECT url, count(*) AS n, sum(user_id) AS s, count(DISTINCT user_id) AS users
    FROM up_clicks GROUP BY url;
-- a view using a function: the modules before 0.3 recorded no dependency
-- on it (this one does at CREATE; removed here as they left it)
CREATE FUNCTION up_bucket(int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT $1 / 5';
CREATE VIEW up_by_bucket WITH (continuous) AS
  SELECT up_bucket(user_id) AS b, count(*) AS n FROM up_clicks GROUP BY 1;
DELETE FROM pg_depend WHERE refclassid = 'pg_proc'::regclass
   AND refobjid = 'up_bucket(int)'::regprocedure;
INSERT INTO up_clicks SELECT 'u' || (i % 7), i % 13 FROM generate_series(1, 1000) i;
CREATE TABLE up_copy AS SELECT url, user_id FROM up_clicks;

ALTER EXTENSION stream_ext UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'stream_ext';

-- same objects as the fresh installation (both lists empty)
SELECT 'only in fresh' AS side, f
  FROM unnest(string_to_array(:'fresh', E'\n---\n')) AS f
EXCEPT SELECT 'only in fresh', f FROM (:fingerprint) fp
UNION ALL
(SELECT 'only after update', f FROM (:fingerprint) fp
 EXCEPT SELECT 'only after update', f
   FROM unnest(string_to_array(:'fresh', E'\n---\n')) AS f)
ORDER BY 1, 2;

-- the view built under 0.1 keeps being maintained, and is exact
INSERT INTO up_clicks SELECT 'u' || (i % 11), i % 17 FROM generate_series(1, 1000) i;
INSERT INTO up_copy SELECT 'u' || (i % 11), i % 17 FROM generate_series(1, 1000) i;
SELECT count(*) AS differing FROM (
  (SELECT url, count(*) AS n, sum(user_id) AS s, count(DISTINCT user_id) AS users
     FROM up_copy GROUP BY url
   EXCEPT SELECT * FROM up_per_url)
  UNION ALL
  (SELECT * FROM up_per_url
   EXCEPT SELECT url, count(*), sum(user_id), count(DISTINCT user_id)
     FROM up_copy GROUP BY url)) d;
-- and what 0.2 added works on it
SELECT view, rows_in, batches, groups FROM stream_ext.view_stats ORDER BY view::text;
-- the update recorded what the old views use: the function cannot go
DROP FUNCTION up_bucket(int);
SELECT sum(n) AS bucketed FROM up_by_bucket;
-- streams made before the update keep their raw rows; new ones get the default
SELECT stream_ext.create_stream('up_new', 'v int');
SELECT name, retention FROM stream_ext.streams ORDER BY 1::text;

\c contrib_regression
DROP DATABASE stream_ext_upgrade_fresh;
DROP DATABASE stream_ext_upgrade_old;
