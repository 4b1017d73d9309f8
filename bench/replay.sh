#!/usr/bin/env bash
# bench/replay.sh -- what a view's history costs to build, by source
# (docs/kafka.md#replay-a-topics-history-into-a-new-view), in one run.
#
# By hand, against any cluster where stream_ext is preloaded (superuser):
#     source /tmp/stream_ext.XXXXXX/env.sh      # from test/lib/cluster.sh start
#     bash bench/replay.sh
#
# BENCH_REPLAY_MSGS JSON messages {url, user_id, latency} (50 urls, 5000
# users) are produced to a 2-partition topic of the embedded broker and
# loaded by a Kafka source (default batch_size) into a stream that keeps
# its rows.  Then, for each view query V (count/avg by url; the same with
# count(DISTINCT user_id)):
#   live    the source loads the messages with V maintained by its trigger
#           (a second stream and source, same topic), timed from the first
#           stored batch to the last
#   stream  CREATE VIEW V (backfill = 'stream'): the stream's rows folded in
#           the creating transaction
#   kafka   CREATE VIEW V (backfill = 'kafka'): the replay worker, from its
#           started_at to its finished_at in backfill_progress
# Every result is checked against the query over the stream.  Prints
# messages/s of each and the ratios to live.
set -euo pipefail

: "${STREAM_EXT_TMP:?STREAM_EXT_TMP must name a temp dir (source the cluster env.sh)}"
ROOT=${STREAM_EXT_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
MSGS=${BENCH_REPLAY_MSGS:-200000}
DB=bench_replay

# shellcheck source=kafka_lib.sh
source "$ROOT/bench/kafka_lib.sh"
bench_kafka_init replay

work=$(mktemp -d "$STREAM_EXT_TMP/replay-bench.XXXXXX")
chmod 755 "$work"
"$BROKER" --partitions 2 --topic m --bootstrap-file "$work/bootstrap" >"$work/broker.out" 2>&1 &
broker_pid=$!
trap 'kill $broker_pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do [[ -s $work/bootstrap ]] && break; sleep 0.1; done
bootstrap=$(sed 's/^bootstrap=//' "$work/bootstrap")

"${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
q "SET client_min_messages = warning; CREATE EXTENSION stream_ext" >/dev/null

python3 - "$MSGS" >"$work/msgs" <<'PY'
import sys
for i in range(int(sys.argv[1])):
    print('{"url":"/p%d","user_id":%d,"latency":%.1f}' % (i % 50, i % 5000, (i % 997) / 10))
PY
split -n l/2 "$work/msgs" "$work/part"
kcat -P -b "$bootstrap" -t m -p 0 <"$work/partaa"
kcat -P -b "$bootstrap" -t m -p 1 <"$work/partab"

# the columns compared (avg rounded: float sums differ in the last bits by order)
declare -A COLS=(
	[agg]="url, n, round(a::numeric, 6)"
	[distinct]="url, n, round(a::numeric, 6), u"
)
declare -A VIEW=(
	[agg]="SELECT url, count(*) AS n, avg(latency) AS a FROM %s GROUP BY url"
	[distinct]="SELECT url, count(*) AS n, avg(latency) AS a, count(DISTINCT user_id) AS u FROM %s GROUP BY url"
)

# load the topic into stream $1 with source $2; prints the seconds from the
# first stored batch to the last
load() {
	local stream=$1 src=$2 t0 t1
	q "SELECT stream_ext.create_kafka_source('$src', '$stream', '$bootstrap', 'm', 'json');
	   SELECT stream_ext.start_source('$src');" >/dev/null
	until [[ $(q "SELECT coalesce(sum(next_offset), 0) > 0 FROM stream_ext.kafka_offsets WHERE source = '$src'") == t ]]; do sleep 0.01; done
	t0=$(now)
	until [[ $(q "SELECT coalesce(sum(next_offset), 0) FROM stream_ext.kafka_offsets WHERE source = '$src'") == "$MSGS" ]]; do sleep 0.05; done
	t1=$(now)
	q "SELECT stream_ext.stop_source('$src')" >/dev/null
	echo "$t1 - $t0" | bc -l
}

# the view equals its query over stream m
check() {
	local view=$1 query=$2 cols=$3 diff
	diff=$(q "SELECT count(*) FROM ((SELECT $cols FROM ($(printf "$query" m)) q EXCEPT ALL SELECT $cols FROM $view)
	                          UNION ALL (SELECT $cols FROM $view EXCEPT ALL SELECT $cols FROM ($(printf "$query" m)) q)) d")
	[[ $diff == 0 ]] || { log "$view differs from its query in $diff rows"; exit 1; }
}

q "SELECT stream_ext.create_stream('m', 'url text, user_id int, latency float8')" >/dev/null
q "SELECT stream_ext.set_retention('m', NULL)" >/dev/null 2>&1 || true
log "loading $MSGS messages into stream m (no view)"
base=$(load m m_src)

printf '| view | live (trigger) msg/s | stream backfill rows/s | Kafka replay msg/s | replay / live |\n| --- | ---: | ---: | ---: | ---: |\n' >"$OUT/replay.md"
for v in agg distinct; do
	query=${VIEW[$v]}
	# live: a second stream with the view, loaded from the same topic
	q "SELECT stream_ext.create_stream('live_$v', 'url text, user_id int, latency float8', retain => false)" >/dev/null
	q "CREATE VIEW live_${v}_v WITH (continuous) AS $(printf "$query" "live_$v")" >/dev/null
	live=$(load "live_$v" "live_${v}_src")
	check "live_${v}_v" "$query" "${COLS[$v]}"
	# stream backfill
	t0=$(now)
	q "CREATE VIEW s_$v WITH (continuous) AS $(printf "$query" m)" >/dev/null
	t1=$(now)
	stream=$(echo "$t1 - $t0" | bc -l)
	check "s_$v" "$query" "${COLS[$v]}"
	# Kafka replay
	q "CREATE VIEW k_$v WITH (continuous, backfill = 'kafka') AS $(printf "$query" m)" >/dev/null
	until [[ $(q "SELECT state FROM stream_ext.backfill_progress WHERE view = 'k_$v'::regclass") == done ]]; do sleep 0.05; done
	kafka=$(q "SELECT extract(epoch FROM finished_at - started_at) FROM stream_ext.backfill_progress WHERE view = 'k_$v'::regclass")
	check "k_$v" "$query" "${COLS[$v]}"
	printf '| %s | %.0f | %.0f | %.0f | %.2f |\n' "$v" "$(echo "$MSGS / $live" | bc -l)" \
		"$(echo "$MSGS / $stream" | bc -l)" "$(echo "$MSGS / $kafka" | bc -l)" \
		"$(echo "$live / $kafka" | bc -l)" >>"$OUT/replay.md"
done
log "$MSGS messages; loading them into a stream without a view: $(printf '%.0f' "$(echo "$MSGS / $base" | bc -l)") msg/s"
cat "$OUT/replay.md"
"${PSQL[@]}" -d postgres -c "DROP DATABASE $DB" >/dev/null
