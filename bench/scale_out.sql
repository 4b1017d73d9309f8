-- Coordinator read cost of a distributed view (docs/scale-out.md), on one
-- cluster: every "node" is a postgres_fdw loopback server to this same
-- database, so a read of n nodes fetches and merges n copies of each
-- group's states.  Run: psql -X -f bench/scale_out.sql (superuser, TCP
-- trust on 127.0.0.1, extensions stream_ext and postgres_fdw available).
\set ON_ERROR_STOP on
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
CREATE EXTENSION IF NOT EXISTS postgres_fdw;
RESET client_min_messages;

CREATE FUNCTION pg_temp.best_ms(q text, reps int) RETURNS numeric LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; best numeric := 1e12; i int;
BEGIN
  FOR i IN 1 .. reps LOOP
    t0 := clock_timestamp();
    EXECUTE q;
    best := least(best, extract(epoch FROM clock_timestamp() - t0) * 1000);
  END LOOP;
  RETURN round(best, 1);
END $$;

DO $$
DECLARE i int;
BEGIN
  FOR i IN 1 .. 8 LOOP
    EXECUTE format('CREATE SERVER bench_n%s FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host %L, port %L, dbname %L, fetch_size %L)',
                   i, '127.0.0.1', current_setting('port'), current_database(), '10000');
    EXECUTE format('CREATE USER MAPPING FOR CURRENT_USER SERVER bench_n%s', i);
  END LOOP;
END $$;

SELECT stream_ext.create_stream('bench_ev', 'k int, v int');
CREATE TABLE bench_result (groups int, nodes int, full_ms numeric, point_ms numeric);

DO $$
DECLARE g int; n int; d text;
BEGIN
  FOREACH g IN ARRAY ARRAY[1000, 10000, 100000] LOOP
    EXECUTE format('CREATE VIEW bench_v%s WITH (continuous) AS SELECT k, count(*) AS n, sum(v) AS s, avg(v) AS a FROM bench_ev WHERE k < %s GROUP BY k', g, g);
  END LOOP;
  INSERT INTO bench_ev SELECT i % 100000, i FROM generate_series(1, 300000) i;
END $$;

-- (the nodes read the materializations in their own sessions: committed)
DO $$
DECLARE g int; n int; d text;
BEGIN
  FOREACH g IN ARRAY ARRAY[1000, 10000, 100000] LOOP
    FOREACH n IN ARRAY ARRAY[1, 2, 4, 8] LOOP
      d := format('bench_d%s_%s', g, n);
      PERFORM stream_ext.create_distributed_view(d, format('bench_v%s', g)::regclass,
                (SELECT array_agg('bench_n' || i) FROM generate_series(1, n) i));
      INSERT INTO bench_result VALUES (g, n,
        pg_temp.best_ms(format('SELECT count(*), sum(n), sum(a) FROM %I', d), 3),
        pg_temp.best_ms(format('SELECT * FROM %I WHERE k = 42', d), 20));
    END LOOP;
  END LOOP;
END $$;

SELECT groups, nodes, full_ms, point_ms,
       round(full_ms * 1000 / (groups * nodes), 2) AS us_per_group_and_node
  FROM bench_result ORDER BY groups, nodes;
