-- The core oracle: every continuous view equals its query run as plain SQL
-- over a logged copy of the committed rows, across batch sizes 1..100k,
-- NULL keys and values, empty batches, COPY, rollbacks and savepoints.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
SET client_min_messages = warning;
CREATE SCHEMA oracle;
SET search_path = oracle, public;

SELECT stream_ext.create_stream('oracle.ev',
  'url text, user_id int, ts timestamptz, lat float8, amount numeric, small int2, big int8, f4 float4, dur interval, flag bool, bits int');
-- the logged copy: same columns, filled by the same statements
CREATE TABLE ev_log (url text, user_id int, ts timestamptz, lat float8, amount numeric,
  small int2, big int8, f4 float4, dur interval, flag bool, bits int);

-- a user-defined combinable aggregate: no per-aggregate code in stream_ext
CREATE AGGREGATE my_sum(int) (sfunc = int4pl, stype = int, combinefunc = int4pl, initcond = '0');

-- Each shape's query, with {src} for the relation it reads.
CREATE TABLE shapes (name text PRIMARY KEY, query text NOT NULL);
INSERT INTO shapes VALUES
 ('by_url', 'SELECT url, count(*) AS n FROM {src} GROUP BY url'),
 ('by_url_minute', 'SELECT url, date_bin(''1 minute'', ts, ''2000-01-01'') AS minute, count(*) AS n, sum(amount) AS total, avg(lat) AS avg_lat, min(lat) AS min_lat, max(ts) AS last_ts, count(DISTINCT user_id) AS users FROM {src} GROUP BY url, minute'),
 ('keyless', 'SELECT count(*) AS n, count(lat) AS nlat, sum(user_id) AS s, avg(amount) AS a, max(ts) AS m, min(url) AS u FROM {src}'),
 ('keyless_distinct', 'SELECT count(DISTINCT url) AS urls, count(DISTINCT user_id) AS users FROM {src}'),
 ('filtered', 'SELECT user_id % 5 AS bucket, sum(amount) AS s, count(*) AS n FROM {src} WHERE flag AND lat > 10 GROUP BY 1'),
 ('having', 'SELECT url, count(*) AS n, sum(lat) AS s FROM {src} GROUP BY url HAVING count(*) > 40 AND sum(lat) IS NOT NULL'),
 ('agg_exprs', 'SELECT url, sum(amount) / nullif(count(*), 0) AS mean, round(avg(amount), 3) AS r, count(*) * 2 + 1 AS odd, url || '':'' || count(*) AS label FROM {src} GROUP BY url'),
 ('sums', 'SELECT flag, sum(small) AS s2, sum(user_id) AS s4, sum(big) AS s8, sum(f4) AS sf4, sum(lat) AS sf8, sum(amount) AS sn, sum(dur) AS sd, avg(small) AS a2, avg(user_id) AS a4, avg(big) AS a8, avg(dur) AS ad FROM {src} GROUP BY flag'),
 ('stats_numeric', 'SELECT flag, stddev(amount) AS sd, variance(amount) AS v, stddev_pop(big) AS sdp, var_samp(user_id) AS vs FROM {src} GROUP BY flag'),
 ('stats_float', 'SELECT flag, round(stddev(lat)::numeric, 6) AS sd, round(var_pop(lat)::numeric, 4) AS vp, round(corr(lat, user_id)::numeric, 6) AS c, round(regr_slope(lat, user_id)::numeric, 6) AS slope, regr_count(lat, user_id) AS rc, round(covar_pop(lat, user_id)::numeric, 4) AS cp FROM {src} GROUP BY flag'),
 ('bools_bits', 'SELECT url, bool_and(flag) AS ba, bool_or(flag) AS bo, every(flag) AS ev, bit_and(bits) AS band, bit_or(bits) AS bor, bit_xor(bits) AS bx FROM {src} GROUP BY url'),
 ('minmax', 'SELECT user_id % 3 AS k, min(url) AS minu, max(url COLLATE "C") AS maxu, min(ts) AS mints, max(amount) AS maxa, min(dur) AS mind, max(f4) AS maxf FROM {src} GROUP BY 1'),
 ('filter_clause', 'SELECT url, count(*) FILTER (WHERE flag) AS nflag, sum(amount) FILTER (WHERE lat > 5) AS s, count(DISTINCT user_id) FILTER (WHERE NOT flag) AS du FROM {src} GROUP BY url'),
 ('hidden_key', 'SELECT count(*) AS n, max(lat) AS m FROM {src} GROUP BY url, user_id % 4'),
 ('expr_keys', 'SELECT date_trunc(''hour'', ts) AS hour, user_id::text AS uid, lower(url) AS lu, count(*) AS n FROM {src} GROUP BY 1, 2, 3'),
 ('keys_only', 'SELECT url, flag FROM {src} GROUP BY url, flag'),
 ('user_agg', 'SELECT url, my_sum(user_id) AS ms FROM {src} GROUP BY url');

DO $$
DECLARE r record;
BEGIN
  FOR r IN SELECT * FROM shapes ORDER BY name LOOP
    EXECUTE format('CREATE VIEW %I WITH (continuous) AS %s', r.name, replace(r.query, '{src}', 'ev'));
  END LOOP;
END $$;

-- rows differing between each view and its query over the log, both ways
CREATE FUNCTION check_all() RETURNS TABLE (shape text, view_rows bigint, differing bigint)
LANGUAGE plpgsql AS $$
DECLARE r record; q text;
BEGIN
  FOR r IN SELECT * FROM shapes ORDER BY name LOOP
    q := replace(r.query, '{src}', 'ev_log');
    shape := r.name;
    EXECUTE format('SELECT count(*) FROM %I', r.name) INTO view_rows;
    EXECUTE format('SELECT count(*) FROM ((TABLE %I EXCEPT ALL (%s)) UNION ALL ((%s) EXCEPT ALL TABLE %I)) d',
                   r.name, q, q, r.name) INTO differing;
    RETURN NEXT;
  END LOOP;
END $$;

-- n deterministic rows (seed varies them) into the stream and the log, in one statement
CREATE FUNCTION feed(n int, seed int) RETURNS void LANGUAGE sql AS $$
  WITH r AS (
    SELECT CASE WHEN i % 13 = 0 THEN NULL ELSE 'u' || ((i * 7 + seed) % 50) END AS url,
           CASE WHEN i % 17 = 0 THEN NULL ELSE (i * 31 + seed) % 1000 END AS user_id,
           timestamptz '2024-01-01 00:00:00+00' + ((i * 37 + seed * 101) % 7200) * interval '1 second' AS ts,
           CASE WHEN i % 11 = 0 THEN NULL ELSE ((i * 13 + seed) % 400) / 4.0 END AS lat,
           CASE WHEN i % 19 = 0 THEN NULL ELSE ((i * 17 + seed) % 10000) / 100.0 END AS amount,
           ((i + seed) % 300)::int2 AS small,
           (i::int8 * 1000003 + seed) % 100000007 AS big,
           (((i * 3 + seed) % 64) / 8.0)::float4 AS f4,
           ((i + seed) % 600) * interval '1 second' AS dur,
           CASE WHEN i % 23 = 0 THEN NULL ELSE (i + seed) % 3 <> 0 END AS flag,
           (i * 2654435761 + seed)::bigint % 65536 AS bits
      FROM generate_series(1, n) i),
  s AS (INSERT INTO ev (url, user_id, ts, lat, amount, small, big, f4, dur, flag, bits) SELECT * FROM r)
  INSERT INTO ev_log SELECT * FROM r;
$$;

-- empty stream: keyless views show one row, grouped views none
SELECT * FROM check_all();

-- empty batches
INSERT INTO ev SELECT * FROM ev WHERE false;
SELECT feed(0, 1);

-- single-row batches, a few times
SELECT feed(1, s) FROM generate_series(1, 5) s;
-- growing batches
SELECT feed(10, 10);
SELECT feed(100, 11);
SELECT feed(1000, 12);
SELECT * FROM check_all();

-- rolled-back batches leave no trace
BEGIN;
SELECT feed(1000, 13);
ROLLBACK;
BEGIN;
SELECT feed(100, 14);
SAVEPOINT a;
SELECT feed(500, 15);
ROLLBACK TO SAVEPOINT a;
SELECT feed(50, 16);
COMMIT;
BEGIN;
SELECT feed(10, 17);
SELECT 1 / 0;
COMMIT;

-- rows with NULL everywhere
INSERT INTO ev (url) VALUES (NULL), (NULL);
INSERT INTO ev_log (url) VALUES (NULL), (NULL);

-- COPY batches
SELECT current_setting('data_directory') || '/stream_ext_oracle_batch.csv' AS batchfile \gset
COPY (SELECT 'copied' || (i % 5), i, timestamptz '2024-01-01 01:00:00+00' + i * interval '1 minute',
             i / 2.0, i * 1.25, i % 7, i * 10, i / 8.0, i * interval '1 minute', i % 2 = 0, i
        FROM generate_series(1, 5000) i) TO :'batchfile' (FORMAT csv);
COPY ev (url, user_id, ts, lat, amount, small, big, f4, dur, flag, bits) FROM :'batchfile' (FORMAT csv);
COPY ev_log FROM :'batchfile' (FORMAT csv);
COPY ev (url, user_id, ts, lat, amount, small, big, f4, dur, flag, bits) FROM stdin;
inline	1	2024-01-01 00:00:00+00	1.5	2.5	1	2	0.5	1 hour	t	3
\N	\N	2024-01-01 00:00:01+00	\N	\N	\N	\N	\N	\N	\N	\N
\.
COPY ev_log FROM stdin;
inline	1	2024-01-01 00:00:00+00	1.5	2.5	1	2	0.5	1 hour	t	3
\N	\N	2024-01-01 00:00:01+00	\N	\N	\N	\N	\N	\N	\N	\N
\.
SELECT * FROM check_all();

-- large batches
SELECT feed(10000, 20);
SELECT feed(100000, 21);
SELECT * FROM check_all();

-- a view created over a stream that already holds rows starts from them
CREATE VIEW late_view WITH (continuous) AS SELECT url, count(*) AS n, sum(amount) AS s FROM ev GROUP BY url;
INSERT INTO shapes VALUES ('late_view', 'SELECT url, count(*) AS n, sum(amount) AS s FROM {src} GROUP BY url');
SELECT feed(300, 22);
SELECT * FROM check_all() WHERE shape = 'late_view';

-- reads by group key are index scans of the materialization and of the delta
-- (in the merged read's plan; by default a read fixing every key is one
-- node, StreamExtKeyRead: regress 74)
SET enable_seqscan = off;
SET stream_ext.key_read_scan = off;
EXPLAIN (COSTS OFF) SELECT * FROM by_url WHERE url = 'u1';
RESET enable_seqscan;
RESET stream_ext.key_read_scan;

DROP SCHEMA oracle CASCADE;
SELECT count(*) AS leftover_views FROM stream_ext.continuous_views;
SELECT count(*) AS leftover_streams FROM stream_ext.streams;
