#!/usr/bin/env bash
# bench/changes.sh -- the cost of a change stream (docs/changes.md) on W1.
#
#   STREAM_EXT_PGROOT=/tmp/pg-x bash bench/changes.sh   (after make install)
#
# A throwaway cluster (test/lib/cluster.sh); W1's view (count, sum by k and
# minute; bench/core.sh's input: 1,000 keys, ~1,000 groups a minute of
# event time) over a stream, fed the same rows by COPY from
# server-side CSV files, one COPY per batch, in three set-ups side by side:
# raw (the stream without views), W1 without changes, W1 with
# changes = true, each COPY committed.  Prints rows/s and the ratio of each to raw COPY, per
# batch size, from one run: paired, on whatever else the machine is doing
# (say so when you quote it).  BENCH_ROWS (default 100000), BENCH_BATCHES
# (default "100 10000").
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export STREAM_EXT_ROOT=$ROOT
# shellcheck source=../test/lib/common.sh
source "$ROOT/test/lib/common.sh"
# shellcheck source=../test/lib/cluster.sh
source "$ROOT/test/lib/cluster.sh"

ROWS=${BENCH_ROWS:-100000}
BATCHES=${BENCH_BATCHES:-100 10000}

pg_env
scratch_create
trap cluster_cleanup EXIT
cluster_start
PSQL=("$PG_BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -At)
DATA=$STREAM_EXT_TMP/changes-data
mkdir -p "$DATA"
[[ $(id -u) -eq 0 ]] && chown postgres: "$DATA"

"${PSQL[@]}" -o /dev/null <<-SQL
	SET client_min_messages = warning;
	CREATE EXTENSION IF NOT EXISTS stream_ext;
	SELECT stream_ext.create_stream('ev_raw', 'k int, ts timestamptz, v int');
	SELECT stream_ext.create_stream('ev_plain', 'k int, ts timestamptz, v int');
	SELECT stream_ext.create_stream('ev_changes', 'k int, ts timestamptz, v int');
	CREATE VIEW w1_plain WITH (continuous) AS
	  SELECT k, date_bin('1 minute', ts, '2000-01-01') AS minute, count(*) AS n, sum(v) AS s
	    FROM ev_plain GROUP BY k, minute;
	CREATE VIEW w1_changes WITH (continuous, changes = true) AS
	  SELECT k, date_bin('1 minute', ts, '2000-01-01') AS minute, count(*) AS n, sum(v) AS s
	    FROM ev_changes GROUP BY k, minute;
	-- the compactor folds deltas in the background for both views alike
SQL

echo "| batch | raw COPY rows/s | W1 rows/s | W1 + changes rows/s | W1 / raw | W1+changes / raw | changes / W1 |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for b in $BATCHES; do
	n=$((ROWS / b))
	"${PSQL[@]}" -c "DO \$\$ BEGIN FOR i IN 0 .. $n - 1 LOOP
	  EXECUTE format('COPY (SELECT ((hashint4(i) %% 1000) + 1000) %% 1000,
	                          timestamptz ''2024-01-01 00:00:00+00'' + i * interval ''4 ms'' + (hashint4(-i) %% 2000) * interval ''1 ms'',
	                          (i * 37) %% 100 FROM generate_series(%s, %s) i) TO %L WITH (FORMAT csv)',
	                 i * $b + 1, (i + 1) * $b, '$DATA/b${b}_' || i || '.csv');
	END LOOP; END \$\$;"
	line="| $b"
	declare -A rate=()
	# one round of the three, interleaved batch by batch: the same load on each
	# each COPY its own transaction, committed (as writers do; the compactor
	# folds the deltas meanwhile); the time of each includes its commit
	setup_sql="SET client_min_messages = warning; CREATE TABLE IF NOT EXISTS bench_t (name text, ms float8);
	  TRUNCATE bench_t;
	  CREATE OR REPLACE PROCEDURE bench_load() LANGUAGE plpgsql AS \$\$
	  DECLARE t0 timestamptz; s text; BEGIN
	    FOR i IN 0 .. $n - 1 LOOP
	      FOREACH s IN ARRAY ARRAY['ev_raw', 'ev_plain', 'ev_changes'] LOOP
	        t0 := clock_timestamp();
	        EXECUTE format('COPY %I (k, ts, v) FROM %L WITH (FORMAT csv)', s, '$DATA/b${b}_' || i || '.csv');
	        COMMIT;
	        INSERT INTO bench_t VALUES (s, extract(epoch FROM clock_timestamp() - t0) * 1000);
	      END LOOP;
	    END LOOP; END \$\$;"
	while IFS='|' read -r name r; do rate[$name]=$r; done < <("${PSQL[@]}" -c "$setup_sql" -c "CALL bench_load()" \
		-c "SELECT name, round($ROWS / (sum(ms) / 1000)) FROM bench_t GROUP BY name")
	ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
	echo "| $b | ${rate[ev_raw]} | ${rate[ev_plain]} | ${rate[ev_changes]} | $(ratio "${rate[ev_plain]}" "${rate[ev_raw]}") | $(ratio "${rate[ev_changes]}" "${rate[ev_raw]}") | $(ratio "${rate[ev_changes]}" "${rate[ev_plain]}") |"
done
# the two views agree, and the change stream replays to the view
"${PSQL[@]}" -c "SELECT 'views differ: ' || count(*) FROM ((SELECT * FROM w1_plain EXCEPT ALL SELECT * FROM w1_changes)
                  UNION ALL (SELECT * FROM w1_changes EXCEPT ALL SELECT * FROM w1_plain)) d" >&2
"${PSQL[@]}" -c "SELECT 'replay differs: ' || count(*) FROM ((SELECT k, minute, n, s FROM w1_changes) EXCEPT ALL
                  (SELECT DISTINCT ON (k, minute) k, minute, new_n, new_s FROM w1_changes_changes ORDER BY k, minute, change_seq DESC)) d" >&2
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores (shared machine)"
