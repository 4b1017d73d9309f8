-- Batches aggregated without the executor (stream_ext.fast_batches,
-- maintain/fast_batch.c): every view shape equals its query over a logged
-- copy of the rows with the path on, its delta holds the very states the
-- executor's statement writes (the same views over a second stream fed the
-- same rows with the path off), errors are the same, the path is taken for
-- the shapes it supports and not for the others, and privileges and row
-- security are enforced as before.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
CREATE SCHEMA fb;
SET search_path = fb, public;
-- each view its own delta (no shared storage): deltas compared one by one
SET stream_ext.share_storage = off;

SELECT stream_ext.create_stream('fb.ev_on',
  'url text, user_id int, ts timestamptz, lat float8, amount numeric, small int2, big int8, f4 float4, dur interval, flag bool, bits int') \g /dev/null
SELECT stream_ext.create_stream('fb.ev_off',
  'url text, user_id int, ts timestamptz, lat float8, amount numeric, small int2, big int8, f4 float4, dur interval, flag bool, bits int') \g /dev/null
CREATE TABLE ev_log (url text, user_id int, ts timestamptz, lat float8, amount numeric,
  small int2, big int8, f4 float4, dur interval, flag bool, bits int);

CREATE AGGREGATE my_sum(int) (sfunc = int4pl, stype = int, combinefunc = int4pl, initcond = '0');
CREATE FUNCTION my_bucket(int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN RETURN $1 % 5; END $$;

-- each shape's query, {src} the relation it reads; fast: the path is expected
CREATE TABLE shapes (name text PRIMARY KEY, fast bool NOT NULL, query text NOT NULL);
INSERT INTO shapes VALUES
 ('w1', true, 'SELECT user_id % 50 AS k, date_bin(''1 minute'', ts, ''2000-01-01'') AS minute, count(*) AS n, sum(user_id) AS s FROM {src} GROUP BY 1, 2'),
 ('sums', true, 'SELECT flag, sum(small) AS s2, sum(user_id) AS s4, sum(f4) AS sf4, sum(lat) AS sf8, sum(dur) AS sd, avg(small) AS a2, avg(user_id) AS a4, avg(lat) AS af8, avg(f4) AS af4, avg(dur) AS ad, count(lat) AS nl FROM {src} GROUP BY flag'),
 ('minmax', true, 'SELECT user_id % 3 AS k, min(url) AS minu, max(url COLLATE "C") AS maxu, min(ts) AS mints, max(ts) AS maxts, max(amount) AS maxa, min(amount) AS mina, min(dur) AS mind, max(f4) AS maxf, min(lat) AS minl, min(big) AS minb, max(small) AS maxs FROM {src} GROUP BY 1'),
 ('keyless', true, 'SELECT count(*) AS n, count(lat) AS nlat, sum(user_id) AS s, max(ts) AS m, min(url) AS u FROM {src} WHERE lat > 50'),
 ('filtered', true, 'SELECT url, count(*) FILTER (WHERE flag) AS nflag, sum(lat) FILTER (WHERE lat > 5) AS s, count(*) AS n FROM {src} WHERE user_id IS NOT NULL OR url IS NULL GROUP BY url'),
 ('bools_bits', true, 'SELECT url, bool_and(flag) AS ba, bool_or(flag) AS bo, every(flag) AS ev, bit_and(bits) AS band, bit_or(bits) AS bor, bit_xor(bits) AS bx FROM {src} GROUP BY url'),
 ('stats_float', true, 'SELECT flag, round(stddev(lat)::numeric, 6) AS sd, round(var_pop(lat)::numeric, 4) AS vp, regr_count(lat, user_id) AS rc, round(covar_pop(lat, user_id)::numeric, 4) AS cp FROM {src} GROUP BY flag'),
 ('expr_keys', true, 'SELECT date_trunc(''hour'', ts) AS hour, user_id::text AS uid, lower(url) AS lu, coalesce(small, -1) AS sm, count(*) AS n FROM {src} GROUP BY 1, 2, 3, 4'),
 ('keys_only', true, 'SELECT url, flag FROM {src} GROUP BY url, flag'),
 ('internal_state', false, 'SELECT url, sum(big) AS s8, avg(amount) AS an FROM {src} GROUP BY url'),
 ('user_agg', false, 'SELECT url, my_sum(user_id) AS ms FROM {src} GROUP BY url'),
 ('user_key', false, 'SELECT my_bucket(user_id) AS b, count(*) AS n FROM {src} GROUP BY 1'),
 ('distinct', false, 'SELECT url, count(*) AS n, count(DISTINCT user_id) AS users FROM {src} GROUP BY url'),
 ('having', true, 'SELECT url, count(*) AS n, sum(lat) AS s FROM {src} GROUP BY url HAVING count(*) > 40 AND sum(lat) IS NOT NULL');

DO $$
DECLARE r record;
BEGIN
  FOR r IN SELECT * FROM shapes ORDER BY name LOOP
    EXECUTE format('CREATE VIEW %I WITH (continuous) AS %s', r.name || '_on', replace(r.query, '{src}', 'ev_on'));
    EXECUTE format('CREATE VIEW %I WITH (continuous) AS %s', r.name || '_off', replace(r.query, '{src}', 'ev_off'));
  END LOOP;
END $$;

-- per shape: rows differing between the view and its query over the log,
-- between the views of the two streams, and between their deltas
CREATE FUNCTION check_all() RETURNS TABLE (shape text, view_rows bigint, vs_query bigint, on_vs_off bigint, deltas_differ bigint)
LANGUAGE plpgsql AS $$
DECLARE r record; q text; d_on regclass; d_off regclass;
BEGIN
  FOR r IN SELECT * FROM shapes ORDER BY name LOOP
    q := replace(r.query, '{src}', 'ev_log');
    shape := r.name;
    SELECT delta INTO d_on FROM stream_ext.view_catalog WHERE view = (r.name || '_on')::regclass;
    SELECT delta INTO d_off FROM stream_ext.view_catalog WHERE view = (r.name || '_off')::regclass;
    EXECUTE format('SELECT count(*) FROM %I', r.name || '_on') INTO view_rows;
    EXECUTE format('SELECT count(*) FROM ((TABLE %I EXCEPT ALL (%s)) UNION ALL ((%s) EXCEPT ALL TABLE %I)) d',
                   r.name || '_on', q, q, r.name || '_on') INTO vs_query;
    EXECUTE format('SELECT count(*) FROM ((TABLE %I EXCEPT ALL TABLE %I) UNION ALL (TABLE %I EXCEPT ALL TABLE %I)) d',
                   r.name || '_on', r.name || '_off', r.name || '_off', r.name || '_on') INTO on_vs_off;
    deltas_differ := NULL;  -- (a view without delta upserts its materialization)
    IF d_on IS NOT NULL THEN
      EXECUTE format('SELECT count(*) FROM ((TABLE %s EXCEPT ALL TABLE %s) UNION ALL (TABLE %s EXCEPT ALL TABLE %s)) d',
                     d_on, d_off, d_off, d_on) INTO deltas_differ;
    END IF;
    RETURN NEXT;
  END LOOP;
END $$;

-- n deterministic rows into ev_on (the path on), ev_off (off) and the log
CREATE FUNCTION feed(n int, seed int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  CREATE TEMP TABLE r ON COMMIT DROP AS
    SELECT CASE WHEN i % 13 = 0 THEN NULL ELSE 'u' || ((i * 7 + seed) % 50) END AS url,
           CASE WHEN i % 17 = 0 THEN NULL ELSE (i * 31 + seed) % 1000 END AS user_id,
           timestamptz '2024-01-01 00:00:00+00' + ((i * 37 + seed * 101) % 7200) * interval '1 second' AS ts,
           CASE WHEN i % 11 = 0 THEN NULL ELSE ((i * 13 + seed) % 400) / 4.0 END AS lat,
           CASE WHEN i % 19 = 0 THEN NULL ELSE ((i * 17 + seed) % 10000) / 100.0 END AS amount,
           CASE WHEN i % 29 = 0 THEN NULL ELSE ((i + seed) % 300)::int2 END AS small,
           (i::int8 * 1000003 + seed) % 100000007 AS big,
           (((i * 3 + seed) % 64) / 8.0)::float4 AS f4,
           ((i + seed) % 600) * interval '1 second' AS dur,
           CASE WHEN i % 23 = 0 THEN NULL ELSE (i + seed) % 3 <> 0 END AS flag,
           (i * 2654435761 + seed)::bigint % 65536 AS bits
      FROM generate_series(1, n) i;
  PERFORM set_config('stream_ext.fast_batches', 'on', true);
  INSERT INTO ev_on (url, user_id, ts, lat, amount, small, big, f4, dur, flag, bits) SELECT * FROM r;
  PERFORM set_config('stream_ext.fast_batches', 'off', true);
  INSERT INTO ev_off (url, user_id, ts, lat, amount, small, big, f4, dur, flag, bits) SELECT * FROM r;
  PERFORM set_config('stream_ext.fast_batches', 'on', true);
  INSERT INTO ev_log SELECT * FROM r;
  DROP TABLE r;
END $$;

SELECT * FROM check_all();
SELECT feed(1, s) FROM generate_series(1, 5) s;
SELECT feed(3, 6);
SELECT feed(10, 10);
SELECT feed(100, 11);
SELECT feed(1000, 12);
SELECT * FROM check_all();

-- rolled-back batches and savepoints
BEGIN;
SELECT feed(1000, 13);
ROLLBACK;
BEGIN;
SELECT feed(100, 14);
SAVEPOINT a;
SELECT feed(500, 15);
ROLLBACK TO SAVEPOINT a;
SELECT feed(50, 16);
SAVEPOINT b;
SELECT feed(1, 17);
RELEASE SAVEPOINT b;
COMMIT;
-- rows with NULL everywhere
INSERT INTO ev_on (url) VALUES (NULL), (NULL);
SET stream_ext.fast_batches = off;
INSERT INTO ev_off (url) VALUES (NULL), (NULL);
RESET stream_ext.fast_batches;
INSERT INTO ev_log (url) VALUES (NULL), (NULL);
SELECT feed(10000, 20);
SELECT * FROM check_all();
-- and after compaction
SELECT count(*) > 0 AS compacted FROM (SELECT stream_ext.compact(name || suffix) FROM shapes, (VALUES ('_on'), ('_off')) s(suffix)) c;
SELECT feed(100, 21);
SELECT * FROM check_all();

-- which shapes take the path: each view alone on a stream, one row
CREATE FUNCTION takes_path(shape text) RETURNS bool LANGUAGE plpgsql AS $$
DECLARE q text; before bigint; taken bool;
BEGIN
  SELECT query INTO q FROM shapes WHERE name = shape;
  PERFORM stream_ext.create_stream('fb.probe',
    'url text, user_id int, ts timestamptz, lat float8, amount numeric, small int2, big int8, f4 float4, dur interval, flag bool, bits int');
  EXECUTE format('CREATE VIEW probe_v WITH (continuous) AS %s', replace(q, '{src}', 'probe'));
  before := stream_ext.fast_batches_run();
  INSERT INTO probe (url, user_id, ts, lat) VALUES ('x', 1, '2024-01-01', 1.5);
  taken := stream_ext.fast_batches_run() > before;
  DROP VIEW probe_v;
  DROP TABLE probe;
  RETURN taken;
END $$;
SELECT name, fast, takes_path(name) AS taken FROM shapes ORDER BY name;
-- off: no batch takes it
SET stream_ext.fast_batches = off;
SELECT takes_path('w1') AS taken_when_off;
RESET stream_ext.fast_batches;

-- views sharing one storage (W4's shape): their one INSERT takes the path
SET stream_ext.share_storage = on;
SELECT stream_ext.create_stream('fb.ss', 'k int, ts timestamptz, v int') \g /dev/null
CREATE VIEW ss_a WITH (continuous) AS SELECT k, date_bin('1 minute', ts, '2000-01-01') AS minute, count(*) AS n, sum(v) AS s FROM ss GROUP BY k, minute;
CREATE VIEW ss_b WITH (continuous) AS SELECT k, date_bin('1 minute', ts, '2000-01-01') AS minute, count(*) AS n, avg(v) AS a, min(v) AS lo FROM ss GROUP BY k, minute;
SELECT count(*) AS members FROM stream_ext.shared_storage_members WHERE view IN ('ss_a'::regclass, 'ss_b'::regclass);
SELECT stream_ext.fast_batches_run() AS before \gset
INSERT INTO ss SELECT i % 7, timestamptz '2024-01-01' + i * interval '7 s', CASE WHEN i % 5 = 0 THEN NULL ELSE i END FROM generate_series(1, 1000) i;
INSERT INTO ss VALUES (NULL, NULL, NULL);
SELECT stream_ext.fast_batches_run() - :before AS fast_units;
SELECT (SELECT count(*) FROM (TABLE ss_a EXCEPT ALL SELECT k, date_bin('1 minute', ts, '2000-01-01'), count(*), sum(v) FROM ss GROUP BY 1, 2) d) AS a_differing,
       (SELECT count(*) FROM (SELECT k, date_bin('1 minute', ts, '2000-01-01'), count(*), sum(v) FROM ss GROUP BY 1, 2 EXCEPT ALL TABLE ss_a) d) AS a_missing,
       (SELECT count(*) FROM (TABLE ss_b EXCEPT ALL SELECT k, date_bin('1 minute', ts, '2000-01-01'), count(*), avg(v), min(v) FROM ss GROUP BY 1, 2) d) AS b_differing,
       (SELECT count(*) FROM (SELECT k, date_bin('1 minute', ts, '2000-01-01'), count(*), avg(v), min(v) FROM ss GROUP BY 1, 2 EXCEPT ALL TABLE ss_b) d) AS b_missing,
       (SELECT count(*) FROM ss_a) AS a_rows;
SET stream_ext.share_storage = off;

-- errors are the executor's: an overflow in a state, a division by zero in a key
SELECT stream_ext.create_stream('fb.err', 'k int, x float8') \g /dev/null
CREATE VIEW err_v WITH (continuous) AS SELECT 100 / k AS b, sum(x) AS s, count(*) AS n FROM err GROUP BY 1;
INSERT INTO err VALUES (1, 1.5), (2, 2.5);
\set VERBOSITY default
INSERT INTO err VALUES (1, 1e308), (1, 1e308);
INSERT INTO err VALUES (1, 1), (0, 1);
SET stream_ext.fast_batches = off;
INSERT INTO err VALUES (1, 1e308), (1, 1e308);
INSERT INTO err VALUES (1, 1), (0, 1);
RESET stream_ext.fast_batches;
SELECT * FROM err_v ORDER BY b;

-- privileges: checked as the owner at every batch, the path on and then off
CREATE ROLE se68_owner;
GRANT USAGE, CREATE ON SCHEMA fb TO se68_owner;
SELECT stream_ext.create_stream('fb.priv', 'k int, v int, secret int') \g /dev/null
GRANT SELECT (k, v) ON priv TO se68_owner;
CREATE POLICY p ON priv USING (k > 1);
SET ROLE se68_owner;
CREATE VIEW priv_v WITH (continuous) AS SELECT k, count(*) AS n, sum(v) AS s FROM priv GROUP BY k;
RESET ROLE;
SELECT stream_ext.fast_batches_run() AS before \gset
INSERT INTO priv VALUES (1, 10, 0), (2, 20, 0);
SELECT stream_ext.fast_batches_run() - :before AS fast_units;
SELECT * FROM priv_v ORDER BY k;
-- the owner loses SELECT on a column its view reads: marked invalid, not maintained
REVOKE SELECT (v) ON priv FROM se68_owner;
INSERT INTO priv VALUES (1, 5, 0);
SELECT stream_ext.fast_batches_run() - :before AS fast_units;
SELECT view, valid, invalid_reason FROM stream_ext.view_stats WHERE view::text = 'priv_v';
DROP VIEW priv_v;
GRANT SELECT (k, v) ON priv TO se68_owner;
-- row security that comes to apply to the owner (it loses BYPASSRLS): the batch fails
SET ROLE se68_owner;
CREATE VIEW priv_v WITH (continuous) AS SELECT k, count(*) AS n FROM priv GROUP BY k;
RESET ROLE;
ALTER ROLE se68_owner BYPASSRLS;
ALTER TABLE priv ENABLE ROW LEVEL SECURITY;
ALTER ROLE se68_owner NOBYPASSRLS;
INSERT INTO priv VALUES (3, 1, 0);
ALTER TABLE priv DISABLE ROW LEVEL SECURITY;
INSERT INTO priv VALUES (3, 1, 0);
SELECT * FROM priv_v ORDER BY k;
SELECT stream_ext.fast_batches_run() - :before AS fast_units;
DROP VIEW priv_v;
TRUNCATE priv;
SET stream_ext.fast_batches = off;
SET ROLE se68_owner;
CREATE VIEW priv_v WITH (continuous) AS SELECT k, count(*) AS n, sum(v) AS s FROM priv GROUP BY k;
RESET ROLE;
SELECT stream_ext.fast_batches_run() AS before \gset
INSERT INTO priv VALUES (1, 10, 0), (2, 20, 0);
SELECT stream_ext.fast_batches_run() - :before AS fast_units;
SELECT * FROM priv_v ORDER BY k;
-- the owner loses SELECT on a column its view reads: marked invalid, not maintained
REVOKE SELECT (v) ON priv FROM se68_owner;
INSERT INTO priv VALUES (1, 5, 0);
SELECT stream_ext.fast_batches_run() - :before AS fast_units;
SELECT view, valid, invalid_reason FROM stream_ext.view_stats WHERE view::text = 'priv_v';
DROP VIEW priv_v;
GRANT SELECT (k, v) ON priv TO se68_owner;
-- row security that comes to apply to the owner (it loses BYPASSRLS): the batch fails
SET ROLE se68_owner;
CREATE VIEW priv_v WITH (continuous) AS SELECT k, count(*) AS n FROM priv GROUP BY k;
RESET ROLE;
ALTER ROLE se68_owner BYPASSRLS;
ALTER TABLE priv ENABLE ROW LEVEL SECURITY;
ALTER ROLE se68_owner NOBYPASSRLS;
INSERT INTO priv VALUES (3, 1, 0);
ALTER TABLE priv DISABLE ROW LEVEL SECURITY;
INSERT INTO priv VALUES (3, 1, 0);
SELECT * FROM priv_v ORDER BY k;
SELECT stream_ext.fast_batches_run() - :before AS fast_units;
DROP VIEW priv_v;
TRUNCATE priv;
RESET stream_ext.fast_batches;

DROP SCHEMA fb CASCADE;
REVOKE ALL ON SCHEMA public FROM se68_owner;
DROP ROLE se68_owner;
