#!/usr/bin/env bash
# bench/reads.sh -- the cost of reading a continuous view that appends
# (materialization (+) delta merged per group, cv_merged_source_sql()) against
# the same view read as 0.2 read it, a plain view over the materialization
# alone (docs/benchmarks.md, "Reads of appending views").  Not part of make
# test or make bench.
#
#   bash bench/reads.sh                   throwaway cluster, 100,000 groups
#   BENCH_READS_DELTAS="0 10000" BENCH_READS_PAIRS=5 bash bench/reads.sh
#
# Against the cluster of the environment when PGPORT is set (e.g. after
# `source .../env.sh`; it must run with stream_ext.background_compaction =
# off, or the compactor empties the delta under the reads), else on a
# throwaway cluster (test/lib/cluster.sh, honours STREAM_EXT_PGROOT; build and
# install first: make install).
#
# One view  v: SELECT k, count(*) AS n, sum(x) AS s, avg(x) AS a, max(ts) AS
# last FROM ev GROUP BY k  over BENCH_READS_GROUPS (100,000) groups, compacted,
# with stream_ext.create_index('v', 's'); the baseline  v_base  is 0.2's view:
# the same select list over v's materialization only.  For each delta size of
# BENCH_READS_DELTAS (0 1000 10000 100000 rows): compact v, append that many
# delta rows (batches of 1,000 groups chosen at random, compaction off),
# ANALYZE, then BENCH_READS_PAIRS (9) pairs of timed reads, v and v_base
# alternately first (and, for the reads by key, v_noidx: the same view made
# with stream_ext.delta_key_index = off, and v_hash: made with
# stream_ext.delta_key_index = hash), each timed inside the server
# (plpgsql EXECUTE: planned and run, clock_timestamp() around it):
#   full       COPY (SELECT * FROM V) TO '/dev/null'
#   count      SELECT count(*) FROM V
#   key        SELECT * FROM V WHERE k = K                (50 random keys per sample)
#   key_prepared  the same, a prepared statement run with its generic plan
#              (PostgREST prepares its statements)
#   range      SELECT * FROM V WHERE k BETWEEN K AND K + 99 (20 per sample)
#   order_key  SELECT * FROM V ORDER BY k LIMIT 10        (5 per sample)
#   order_range  SELECT * FROM V WHERE k > K ORDER BY k LIMIT 10  (20 per
#              sample; PostgREST's k=gt.K&order=k&limit=10)
#   order_agg  SELECT * FROM V ORDER BY s DESC LIMIT 10   (5 per sample; s has
#              the user index of create_index)
# Two more sides compare v with what it was before: v_old, a plain view with
# the merged read as 0.3 wrote it before the delta's groups were left-joined
# to their materialization rows (every query), and v_off, v's ORDER BY reads
# with stream_ext.ordered_reads = off (query/read_order.c off) and v's reads
# by key (key, key_prepared) with stream_ext.key_read_scan = off (the merged
# read's plan instead of the StreamExtKeyRead node, query/key_read.c).
# Prints per delta size and query the medians (ms per read) and the median of
# the paired ratios v / v_base (and v_noidx, v_hash, v_old, v_off / v_base), the plan shapes of the
# key read, and the load average before and after.  Only ratios from one run compare: the machine
# may be shared.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export STREAM_EXT_ROOT=$ROOT
source "$ROOT/test/lib/common.sh"
source "$ROOT/test/lib/cluster.sh"
source "$ROOT/bench/bench_db.sh"

NGROUPS=${BENCH_READS_GROUPS:-100000}
DELTAS=${BENCH_READS_DELTAS:-0 1000 10000 100000}
PAIRS=${BENCH_READS_PAIRS:-9}
DB=bench_reads

pg_env
DIR=$(mktemp -d /tmp/stream_ext_bench_reads.XXXXXX)
bench_cluster "$DIR" "stream_ext.background_compaction = off"
cleanup() { bench_cleanup "$DIR"; }
bench_traps cleanup

bench_fresh_db $DB
export PGOPTIONS="-c client_min_messages=warning -c stream_ext.compact_threshold=-1"
q() { psql -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }

[[ $(q -c "SHOW stream_ext.background_compaction") == off ]] ||
	die "stream_ext.background_compaction is on in this cluster: the compactor would empty the delta under the reads"

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
msg "loading $NGROUPS groups"
q <<SQL >/dev/null
CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('ev', 'k int, x float8, ts timestamptz');
-- separate tables per view: the sides are compared, not shared (share_storage)
SET stream_ext.share_storage = off;
CREATE VIEW v WITH (continuous) AS
  SELECT k, count(*) AS n, sum(x) AS s, avg(x) AS a, max(ts) AS last FROM ev GROUP BY k;
-- the same view without the delta's key index (reads by key scan the delta)
SET stream_ext.delta_key_index = off;
CREATE VIEW v_noidx WITH (continuous) AS
  SELECT k, count(*) AS n, sum(x) AS s, avg(x) AS a, max(ts) AS last FROM ev GROUP BY k;
-- and with a hash index on the delta's first key
SET stream_ext.delta_key_index = hash;
CREATE VIEW v_hash WITH (continuous) AS
  SELECT k, count(*) AS n, sum(x) AS s, avg(x) AS a, max(ts) AS last FROM ev GROUP BY k;
RESET stream_ext.delta_key_index;
INSERT INTO ev SELECT i, i * 0.5, '2026-01-01'::timestamptz + i * interval '1 s'
  FROM generate_series(1, $NGROUPS) AS i;
SELECT stream_ext.compact('v'), stream_ext.compact('v_noidx'), stream_ext.compact('v_hash');
SELECT stream_ext.create_index('v', 's');
-- 0.2's view: the same select list over the materialization alone
CREATE VIEW v_base AS
  SELECT m.k, m.state_count_1 AS n, m.state_sum_2 AS s,
         stream_ext.finalize(m.state_avg_3, 'avg(double precision)'::regprocedure, NULL::double precision) AS a,
         m.state_max_4 AS last
    FROM v_mrel m;

-- the merged read of v as 0.3 wrote it before the merged delta groups were
-- left-joined to their materialization rows: the delta's rows and the
-- materialization rows of their groups (a semi-join) merged together
CREATE VIEW v_old AS
  SELECT m.k, m.state_count_1 AS n, m.state_sum_2 AS s,
         stream_ext.finalize(m.state_avg_3, 'avg(double precision)'::regprocedure, NULL::double precision) AS a,
         m.state_max_4 AS last
    FROM (SELECT m.* FROM v_mrel m
           WHERE NOT (m.k IS NULL) AND NOT EXISTS (SELECT FROM v_delta d WHERE d.k = m.k)
          UNION ALL
          SELECT u.k, stream_ext.merge_states(u.state_count_1, 'count()'::regprocedure),
                 stream_ext.merge_states(u.state_sum_2, 'sum(double precision)'::regprocedure),
                 stream_ext.merge_states(u.state_avg_3, 'avg(double precision)'::regprocedure),
                 stream_ext.merge_states(u.state_max_4, 'max(timestamp with time zone)'::regprocedure)
            FROM (SELECT d.* FROM v_delta d
                  UNION ALL
                  SELECT m.* FROM v_mrel m WHERE EXISTS (SELECT FROM v_delta d WHERE d.k = m.k)
                  UNION ALL
                  SELECT m.* FROM v_mrel m WHERE m.k IS NULL) u
           GROUP BY u.k) m;

-- ms per execution of sql (%s: each key of keys in turn), planning included
CREATE FUNCTION bench_time(sql text, keys int[]) RETURNS float8 LANGUAGE plpgsql AS \$\$
DECLARE
  t0 timestamptz;
  k int;
BEGIN
  t0 := clock_timestamp();
  FOREACH k IN ARRAY keys LOOP
    EXECUTE format(sql, k);
  END LOOP;
  RETURN extract(epoch FROM clock_timestamp() - t0) * 1000 / cardinality(keys);
END \$\$;

CREATE TABLE results (delta int, query text, pair int, side text, ms float8);

-- PAIRS pairs of samples of every query, v and v_base alternately first
CREATE FUNCTION bench_pairs(delta int, pairs int) RETURNS void LANGUAGE plpgsql AS \$\$
DECLARE
  qs text[][] := ARRAY[
    ARRAY['full', 'COPY (SELECT * FROM %s) TO ''/dev/null''', '1'],
    ARRAY['count', 'SELECT count(*) FROM %s', '1'],
    ARRAY['key', 'SELECT * FROM %s WHERE k = \$1', '50'],
    ARRAY['key_prepared', 'EXECUTE p_%s(\$1)', '50'],
    ARRAY['range', 'SELECT * FROM %s WHERE k BETWEEN \$1 AND \$1 + 99', '20'],
    ARRAY['order_key', 'SELECT * FROM %s ORDER BY k LIMIT 10', '5'],
    ARRAY['order_range', 'SELECT * FROM %s WHERE k > \$1 ORDER BY k LIMIT 10', '20'],
    ARRAY['order_agg', 'SELECT * FROM %s ORDER BY s DESC LIMIT 10', '5']];
  i int;
  p int;
  keys int[];
  side text;
BEGIN
  -- PostgREST's reads are prepared statements: generic plans after 5 runs
  FOREACH side IN ARRAY ARRAY['v', 'v_noidx', 'v_hash', 'v_base', 'v_old', 'v_off'] LOOP
    -- v_off: v's read planned (generic plan) with the key read node off
    PERFORM set_config('stream_ext.key_read_scan', CASE WHEN side = 'v_off' THEN 'off' ELSE 'on' END, false);
    EXECUTE format('PREPARE p_%s(int) AS SELECT * FROM %s WHERE k = \$1', side,
                   CASE WHEN side = 'v_off' THEN 'v' ELSE side END);
    FOR i IN 1..10 LOOP EXECUTE format('EXECUTE p_%s(%s)', side, i); END LOOP;
  END LOOP;
  PERFORM set_config('stream_ext.key_read_scan', 'on', false);
  FOR p IN 1..pairs LOOP
    FOR i IN 1..array_length(qs, 1) LOOP
      keys := ARRAY(SELECT 1 + floor(random() * $NGROUPS)::int FROM generate_series(1, qs[i][3]::int));
      FOREACH side IN ARRAY CASE WHEN p % 2 = 1 THEN ARRAY['v', 'v_old', 'v_noidx', 'v_hash', 'v_off', 'v_base'] ELSE ARRAY['v_base', 'v_off', 'v_hash', 'v_noidx', 'v_old', 'v'] END LOOP
        CONTINUE WHEN side IN ('v_noidx', 'v_hash') AND qs[i][1] NOT IN ('key', 'key_prepared', 'range');
        CONTINUE WHEN side = 'v_off' AND qs[i][1] NOT LIKE 'order%' AND qs[i][1] NOT IN ('key', 'key_prepared');
        PERFORM set_config('stream_ext.ordered_reads', CASE WHEN side = 'v_off' THEN 'off' ELSE 'on' END, false);
        PERFORM set_config('stream_ext.key_read_scan', CASE WHEN side = 'v_off' THEN 'off' ELSE 'on' END, false);
        INSERT INTO results VALUES (delta, qs[i][1], p, side,
                                    bench_time(replace(format(qs[i][2], CASE WHEN side = 'v_off' AND qs[i][1] <> 'key_prepared' THEN 'v' ELSE side END),
                                                       '\$1', '%1\$s'), keys));
      END LOOP;
      PERFORM set_config('stream_ext.ordered_reads', 'on', false);
      PERFORM set_config('stream_ext.key_read_scan', 'on', false);
    END LOOP;
  END LOOP;
  DEALLOCATE ALL;
END \$\$;
SQL

for d in $DELTAS; do
	msg "delta of $d rows"
	q <<SQL >/dev/null
SELECT stream_ext.compact('v'), stream_ext.compact('v_noidx'), stream_ext.compact('v_hash');
VACUUM ANALYZE v_mrel, v_delta, v_noidx_mrel, v_noidx_delta, v_hash_mrel, v_hash_delta;
DO \$\$ BEGIN
  FOR b IN 1..ceil($d / 1000.0)::int LOOP
    INSERT INTO ev SELECT k, 1, '2026-06-01'
      FROM (SELECT DISTINCT 1 + floor(random() * $NGROUPS)::int AS k
              FROM generate_series(1, 1100)) s LIMIT least(1000, $d - (b - 1) * 1000);
    COMMIT;
  END LOOP;
END \$\$;
ANALYZE v_delta, v_noidx_delta, v_hash_delta;
SELECT bench_pairs($d, 1);  -- warm-up, discarded
DELETE FROM results WHERE delta = $d;
SELECT bench_pairs($d, $PAIRS);
SQL
	q -c "SELECT count(*) FROM v_delta" >"$DIR/rows.$d"
	q -c "EXPLAIN (COSTS OFF) SELECT * FROM v WHERE k = 42" |
		grep -o 'Custom Scan ([A-Za-z]*)\|Seq Scan on [a-z_]*\|Index[A-Za-z ]* Scan using [a-z_0-9]*\|Hash[A-Za-z ]*Join\|Nested Loop[A-Za-z ]*' |
		tr '\n' ',' | sed 's/,$//; s/,/, /g' >"$DIR/plan.$d"
	q -c "EXPLAIN (COSTS OFF) SELECT * FROM v_hash WHERE k = 42" |
		grep -o 'Custom Scan ([A-Za-z]*)\|Seq Scan on [a-z_]*\|Index[A-Za-z ]* Scan using [a-z_0-9]*\|Hash[A-Za-z ]*Join\|Nested Loop[A-Za-z ]*' |
		tr '\n' ',' | sed 's/,$//; s/,/, /g' >"$DIR/plan_hash.$d"
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

echo
echo "Reads of a $NGROUPS-group view: v (materialization (+) delta) vs v_base (materialization only, 0.2's read);"
echo "$PAIRS pairs per query, ms per read (median), ratio = median of the paired v / v_base; $(nproc) cores,"
echo "load average $load_before before, $load_after after"
echo
echo "| delta rows | query | v_base ms | v ms | v / v_base | v_noidx ms | v_noidx / v_base | v_hash ms | v_hash / v_base | v_old ms | v_old / v_base | v_off ms | v_off / v_base |"
echo "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
q -F ' | ' <<SQL | sed 's/^/| /; s/$/ |/'
SELECT r.delta, r.query,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY b.ms)::numeric, 3),
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY r.ms)::numeric, 3),
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY r.ms / nullif(b.ms, 0))::numeric, 2),
       coalesce(round(percentile_cont(0.5) WITHIN GROUP (ORDER BY n.ms)::numeric, 3)::text, ''),
       coalesce(round(percentile_cont(0.5) WITHIN GROUP (ORDER BY n.ms / nullif(b.ms, 0))::numeric, 2)::text, ''),
       coalesce(round(percentile_cont(0.5) WITHIN GROUP (ORDER BY h.ms)::numeric, 3)::text, ''),
       coalesce(round(percentile_cont(0.5) WITHIN GROUP (ORDER BY h.ms / nullif(b.ms, 0))::numeric, 2)::text, ''),
       coalesce(round(percentile_cont(0.5) WITHIN GROUP (ORDER BY w.ms)::numeric, 3)::text, ''),
       coalesce(round(percentile_cont(0.5) WITHIN GROUP (ORDER BY w.ms / nullif(b.ms, 0))::numeric, 2)::text, ''),
       coalesce(round(percentile_cont(0.5) WITHIN GROUP (ORDER BY o.ms)::numeric, 3)::text, ''),
       coalesce(round(percentile_cont(0.5) WITHIN GROUP (ORDER BY o.ms / nullif(b.ms, 0))::numeric, 2)::text, '')
  FROM results r JOIN results b USING (delta, query, pair)
       LEFT JOIN results n ON n.delta = r.delta AND n.query = r.query AND n.pair = r.pair AND n.side = 'v_noidx'
       LEFT JOIN results h ON h.delta = r.delta AND h.query = r.query AND h.pair = r.pair AND h.side = 'v_hash'
       LEFT JOIN results w ON w.delta = r.delta AND w.query = r.query AND w.pair = r.pair AND w.side = 'v_old'
       LEFT JOIN results o ON o.delta = r.delta AND o.query = r.query AND o.pair = r.pair AND o.side = 'v_off'
 WHERE r.side = 'v' AND b.side = 'v_base'
 GROUP BY r.delta, r.query
 ORDER BY r.delta, array_position(ARRAY['full', 'count', 'key', 'key_prepared', 'range', 'order_key', 'order_range', 'order_agg'], r.query);
SQL
echo
for d in $DELTAS; do
	echo "delta $d ($(cat "$DIR/rows.$d") rows): plan of WHERE k = 42: $(cat "$DIR/plan.$d"); v_hash: $(cat "$DIR/plan_hash.$d")"
done
