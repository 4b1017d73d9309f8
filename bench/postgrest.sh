#!/usr/bin/env bash
# bench/postgrest.sh -- latency of REST reads through a real PostgREST
# (test/lib/postgrest.sh) on a continuous view with many groups
# (docs/benchmarks.md, "REST reads").  Not part of make test or make bench.
#
#   bash bench/postgrest.sh                 throwaway cluster, 1,000,000 groups
#   BENCH_PGRST_GROUPS=100000 BENCH_PGRST_GETS=200 bash bench/postgrest.sh
#
# Against the cluster of the environment when PGPORT is set (e.g. after
# `source .../env.sh`), else on a throwaway cluster (test/lib/cluster.sh,
# honours STREAM_EXT_PGROOT; build and install first: make install).
#
# Loads one INSERT ... SELECT generate_series into the stream of a view
# GROUP BY k, cat (k unique, cat = k % 1000), then runs BENCH_PGRST_GETS
# (1000) GETs of random keys through PostgREST (the view compacted and its
# tables VACUUM ANALYZEd first), over one keep-alive
# connection (one curl, one URL per request), for:
#   key      GET /by_k?k=eq.K             the unique index on the keys
#   top      GET /by_k?top=eq.T           an aggregate column, after
#                                         stream_ext.create_index('by_k', 'top')
# and prints the median and p99 of curl's time_total per request, and the
# plan of each query (Accept: application/vnd.pgrst.plan+json).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export STREAM_EXT_ROOT=$ROOT
source "$ROOT/test/lib/common.sh"
source "$ROOT/test/lib/cluster.sh"
source "$ROOT/test/lib/postgrest.sh"
source "$ROOT/bench/bench_db.sh"

NGROUPS=${BENCH_PGRST_GROUPS:-1000000}
GETS=${BENCH_PGRST_GETS:-1000}
DB=bench_postgrest
pgrst_bin >/dev/null || die "PostgREST is not available"

pg_env
DIR=$(mktemp -d /tmp/stream_ext_bench_pgrst.XXXXXX)
bench_cluster "$DIR"
cleanup() {
	pgrst_stop "$DIR"
	bench_cleanup "$DIR"
}
bench_traps cleanup

bench_fresh_db $DB
q() { psql -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }

msg "loading $NGROUPS groups"
t0=$(date +%s.%N)
q <<SQL >/dev/null
SET client_min_messages = warning;
DO \$\$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'web_anon') THEN CREATE ROLE web_anon NOLOGIN; END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'authenticator') THEN
    CREATE ROLE authenticator LOGIN NOINHERIT PASSWORD 'change-me';
  END IF;
END \$\$;
GRANT web_anon TO authenticator;
CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('ev', 'k int, cat int, v int');
CREATE VIEW by_k WITH (continuous) AS
  SELECT k, cat, count(*) AS n, max(v) AS top FROM ev GROUP BY k, cat;
INSERT INTO ev SELECT i, i % 1000, i * 7 % 100000007 FROM generate_series(1, $NGROUPS) AS i;
SELECT stream_ext.create_index('by_k', 'top');
SELECT stream_ext.expose('by_k');
SQL
# the view as it is between batches once the compactor has caught up: its
# delta folded into the materialization, and both tables' statistics and
# sizes as VACUUM ANALYZE leaves them (a delta just emptied still has the
# pages and the statistics of the million rows it held until then)
q -c "SELECT stream_ext.compact('by_k')" >/dev/null
q -c "VACUUM ANALYZE $(q -c "SELECT matrel || ', ' || delta FROM stream_ext.view_catalog WHERE view = 'by_k'::regclass")"
load_s=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')
msg "loaded in ${load_s} s"

pgrst_start "$DIR" "$DB" authenticator:change-me web_anon 'db-plan-enabled = true' 'db-pool = 10'

# run NAME URL_TEMPLATE: GETS requests, %K% replaced by a random key
run() {
	local name=$1 tmpl=$2 i k
	: >"$DIR/$name.urls"
	for ((i = 0; i < GETS; i++)); do
		k=$(( (RANDOM * 32768 + RANDOM) % NGROUPS + 1 ))
		[[ $name == top ]] && k=$((k * 7 % 100000007))
		printf 'url = "%s%s"\noutput = "/dev/null"\n' "$PGRST_URL" "${tmpl//%K%/$k}" >>"$DIR/$name.urls"
	done
	# a few warm-up requests, then the measured ones (bounded: 10 s each)
	curl -s -g --max-time 10 -o /dev/null "$PGRST_URL${tmpl//%K%/1}"
	curl -s -g --max-time 10 -w '%{http_code} %{time_total}\n' -K "$DIR/$name.urls" >"$DIR/$name.times"
	local bad
	bad=$(awk '$1 != 200' "$DIR/$name.times" | wc -l)
	[[ $bad -eq 0 ]] || die "$name: $bad requests did not answer 200"
	sort -n -k2 "$DIR/$name.times" | awk -v n="$GETS" -v name="$name" '
		{ t[NR] = $2 * 1000; s += $2 * 1000 }
		END { printf "%s| %d | %.2f | %.2f | %.2f | %.2f |\n", name, NR, t[int((NR + 1) / 2)],
		      t[int(NR * 0.99 + 0.5)], t[NR], s / NR }' >>"$DIR/results"
	curl -s -g --max-time 10 -H 'Accept: application/vnd.pgrst.plan+json' \
		"$PGRST_URL${tmpl//%K%/1}" >"$DIR/$name.plan"
}
run key '/by_k?k=eq.%K%'
run top '/by_k?top=eq.%K%'

echo
echo "REST reads through PostgREST $("$(pgrst_bin)" --version | awk '{print $2}'): $NGROUPS groups, $GETS GETs each, one keep-alive connection, $(nproc) cores"
echo
echo "| query | GETs | median ms | p99 ms | max ms | mean ms |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
sed 's/^key|/| `GET \/by_k?k=eq.K` (group key) |/; s/^top|/| `GET \/by_k?top=eq.T` (aggregate, `create_index`) |/' "$DIR/results"
echo
for n in key top; do
	echo "plan of $n: $(tr -d ' \n' <"$DIR/$n.plan" | grep -o '"NodeType":"[A-Za-z]*"\|"IndexName":"[a-z_]*"\|"TotalCost":[0-9.]*' | tr '\n' ' ')"
done
echo "load: $load_s s for $NGROUPS rows (one INSERT ... SELECT)"
