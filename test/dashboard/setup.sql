-- test/dashboard/setup.sql -- the pipeline the live dashboard shows
-- (test/dashboard/www/): Kafka topic live_orders -> stream live_orders ->
-- two continuous views -> PostgREST (schema api) -> the page.
-- psql variables: anon (PostgREST's anonymous role, must exist),
-- bootstrap (the Kafka broker).  Run by test/lib/dashboard.sh dash_setup_sql.

SELECT stream_ext.create_stream('live_orders', 'shop text, amount numeric, ts timestamptz');

-- the line chart: orders per minute per shop
CREATE VIEW live_orders_per_minute WITH (continuous) AS
  SELECT shop, date_bin('1 minute', ts, '2000-01-01') AS minute,
         count(*) AS orders, sum(amount) AS revenue
    FROM live_orders
   GROUP BY shop, minute;

-- the bar chart: the top shops so far
CREATE VIEW live_top_shops WITH (continuous) AS
  SELECT shop, count(*) AS orders, sum(amount) AS revenue
    FROM live_orders
   GROUP BY shop;

-- a btree index for the page's filter (minute >= now - N minutes)
SELECT stream_ext.create_index('live_orders_per_minute', 'minute');

SELECT stream_ext.expose('live_orders_per_minute', 'api', :'anon');
SELECT stream_ext.expose('live_top_shops', 'api', :'anon');

SELECT stream_ext.create_kafka_source('live_orders_src', 'live_orders', :'bootstrap', 'live_orders',
                                      'json', '{"batch_size": 500, "max_wait_ms": 50}');
SELECT stream_ext.start_source('live_orders_src');

-- The pipeline's health for the page.  stream_ext.source_status and
-- stream_ext.view_stats are not exposed: the API view api.pipeline_health
-- shows only the numbers the page needs (no broker address, options or error
-- texts), only for this pipeline.  stream_ext.source_status shows a role only
-- the sources it owns (row-level security), so the numbers are read by a
-- SECURITY DEFINER function owned by the source's owner, outside the API
-- schema; the anonymous role may only execute it and read the view.
CREATE FUNCTION public.live_orders_health()
    RETURNS TABLE (kind text, name text, state text, rows_in bigint,
                   rows_per_second float8, lag bigint, dead_letters bigint,
                   last_activity timestamptz)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog
AS $$
    SELECT 'source', source::text, state, messages, rate, lag, dead_letters, last_batch_time
      FROM stream_ext.source_status
     WHERE source = 'live_orders_src'
    UNION ALL
    SELECT 'view', c.relname::text, NULL, rows_in, NULL, NULL, NULL, last_maintained_at
      FROM stream_ext.view_stats s
      JOIN pg_class c ON c.oid = s.view
     WHERE s.view IN ('public.live_orders_per_minute'::regclass, 'public.live_top_shops'::regclass)
$$;
REVOKE EXECUTE ON FUNCTION public.live_orders_health() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.live_orders_health() TO :"anon";

CREATE VIEW api.pipeline_health AS SELECT * FROM public.live_orders_health();
COMMENT ON VIEW api.pipeline_health IS
  'Health of the live_orders pipeline: the Kafka source (messages, rows/s, lag, dead letters) and its continuous views (rows maintained).';
GRANT SELECT ON api.pipeline_health TO :"anon";
-- PostgREST reloads its schema cache (expose() does this for its views)
SELECT pg_notify('pgrst', 'reload schema');
