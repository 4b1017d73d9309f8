#!/usr/bin/env bash
# bench/kafka.sh -- Kafka ingest: throughput, latency, worker memory.
#
# Run by bench/run.sh against its throwaway cluster, or by hand against any
# cluster where stream_ext is preloaded (superuser connection):
#     source /tmp/stream_ext.XXXXXX/env.sh      # from test/lib/cluster.sh start
#     bash bench/kafka.sh
#
# Uses the embedded broker (test/broker/stream_ext_broker, built if needed)
# and kcat.  Three measurements:
#
#   throughput  BENCH_KAFKA_MSGS CSV messages (k int, v int, s text) are
#               produced to a 4-partition topic first (the embedded broker
#               keeps about 200,000 messages per partition); then they are loaded
#               into the same stream, with one continuous view
#               (count, sum(v) by k), two ways:
#                 stream_ext  a Kafka source (format csv), timed from
#                             start_source until every offset is stored
#                 pipeline    kcat -C ... -e | psql -c "COPY ev FROM STDIN (FORMAT csv)"
#                             (one COPY for everything: the pipeline's best
#                             case, and not exactly-once)
#               BENCH_REPS times each, interleaved; medians and the ratio.
#               Also the JSON format, CSV with batch_size 100000 (the
#               view's upserts are paid once per group per batch), and CSV
#               with 1% bad messages (half not-an-integer values, half
#               broken CSV): every bad one must be a dead letter and the
#               rest applied once; reported as a ratio to clean input.
#   latency     BENCH_KAFKA_RATE msg/s for BENCH_KAFKA_SECONDS s, each
#               message carrying its send time; latency = arrival_timestamp
#               (set when the batch is inserted) - send time: median, p99.
#   memory      the worker's private memory (RssAnon) and VmRSS after the
#               first pass and after all BENCH_KAFKA_RSS_PASSES passes
#               (VmRSS also counts the shared buffers the worker touched),
#               and Pss_Anon from /proc/PID/smaps_rollup after every pass,
#               0.6 s later (idle), and its peak (sampled every 0.1 s);
#               BENCH_KAFKA_RSS_OPTIONS: the source's options (JSON) for
#               this run, e.g. '{"queued.min.messages": 20000}'.
#
# Writes $BENCH_RESULTS_DIR/kafka.md (and kafka.tsv); prints the tables.
# Reports figures and ratios; exits non-zero only when something broke.
set -euo pipefail

: "${STREAM_EXT_TMP:?STREAM_EXT_TMP must name a temp dir (source the cluster env.sh)}"
ROOT=${STREAM_EXT_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
MSGS=${BENCH_KAFKA_MSGS:-400000}
REPS=${BENCH_REPS:-3}
RATE=${BENCH_KAFKA_RATE:-2000}
SECS=${BENCH_KAFKA_SECONDS:-10}
RSS_PASSES=${BENCH_KAFKA_RSS_PASSES:-6}
RSS_OPTIONS=${BENCH_KAFKA_RSS_OPTIONS:-"{}"}
DB=bench_kafka

# shellcheck source=kafka_lib.sh
source "$ROOT/bench/kafka_lib.sh"
bench_kafka_init kafka

work=$(mktemp -d "$STREAM_EXT_TMP/kafka-bench.XXXXXX")
"$BROKER" --partitions 4 --topic csv --topic json --topic csvbad --topic rss --partitions 1 --topic lat \
	--bootstrap-file "$work/bootstrap" >"$work/broker.out" 2>&1 &
broker_pid=$!
cleanup() {
	kill "$broker_pid" 2>/dev/null || true
	wait "$broker_pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
for _ in $(seq 100); do [[ -s $work/bootstrap ]] && break; sleep 0.1; done
BS=$(<"$work/bootstrap")
log "broker at $BS"

"${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" >/dev/null
q "CREATE EXTENSION stream_ext" >/dev/null

# ---- data -----------------------------------------------------------------
log "producing $MSGS CSV and $MSGS JSON messages"
awk -v n="$MSGS" 'BEGIN { for (i = 1; i <= n; i++) printf "%d,%d,item-%d\n", i % 1000, i % 97, i }' >"$work/csv.txt"
awk -v n="$MSGS" 'BEGIN { for (i = 1; i <= n; i++) printf "{\"k\":%d,\"v\":%d,\"s\":\"item-%d\"}\n", i % 1000, i % 97, i }' >"$work/json.txt"
produce4() {				# topic file: line i goes to partition i mod 4
	local p
	for p in 0 1 2 3; do
		awk -v p="$p" 'NR % 4 == p' "$2" >"$work/part.$p"
		kcat -P -b "$BS" -t "$1" -p "$p" -X linger.ms=50 -X batch.num.messages=10000 -l "$work/part.$p"
	done
}
produce4 csv "$work/csv.txt"
produce4 json "$work/json.txt"
expect_sum=$(awk -F, '{ s += $2 } END { print s }' "$work/csv.txt")
# the same messages with 1% bad ones: every 100th has a value that is not
# an integer, every 200th is broken CSV (an unterminated quote)
awk -F, 'NR % 200 == 0 { printf "\"%s,%s,unterminated\n", $1, $2; next }
         NR % 100 == 0 { printf "%s,not-a-number,%s\n", $1, $3; next } { print }' \
	"$work/csv.txt" >"$work/csvbad.txt"
produce4 csvbad "$work/csvbad.txt"
bad_count=$(awk 'NR % 100 == 0' "$work/csvbad.txt" | wc -l)
bad_good_sum=$(awk -F, 'NR % 100 != 0 { s += $2 } END { print s }' "$work/csvbad.txt")

fresh_stream() {
	q "DROP TABLE IF EXISTS ev CASCADE" >/dev/null
	q "SELECT stream_ext.create_stream('ev', 'k int, v int, s text')" >/dev/null
	q "CREATE VIEW ev_v WITH (continuous) AS SELECT k, count(*) AS c, sum(v) AS sv FROM ev GROUP BY k" >/dev/null
	q "CHECKPOINT" >/dev/null
}

check_view() {
	local got
	got=$(q "SELECT sum(c) || ':' || sum(sv) FROM ev_v")
	if [[ $got != "$MSGS:$expect_sum" ]]; then
		log "WRONG RESULT: view has $got, want $MSGS:$expect_sum"
		exit 1
	fi
}

# when the first batch of a source is stored (after worker start-up and the
# consumer's first fetch): the start of its steady-state ingest
first_stored() {			# source -> epoch seconds
	while [[ $(q "SELECT count(*) FROM stream_ext.kafka_offsets WHERE source = '$1'") -lt 1 ]]; do
		sleep 0.01
	done
	now
}

wait_stored() {				# source, count
	while [[ $(q "SELECT coalesce(sum(next_offset), 0) FROM stream_ext.kafka_offsets WHERE source = '$1'") -lt $2 ]]; do
		sleep 0.02
	done
}

run_source() {				# format topic [options] -> seconds
	local fmt=$1 topic=$2 opts=${3:-"{}"} t0 t1
	fresh_stream
	q "SELECT stream_ext.drop_source('b', true)" >/dev/null 2>&1
	q "SELECT stream_ext.create_kafka_source('b', 'ev', '$BS', '$topic', '$fmt', '$opts')" >/dev/null
	t0=$(now)
	q "SELECT stream_ext.start_source('b')" >/dev/null
	first_stored b >"$work/first"
	wait_stored b "$MSGS"
	t1=$(now)
	echo "$t1 - $(<"$work/first")" | bc -l >"$work/steady"
	check_view
	q "SELECT stream_ext.drop_source('b')" >/dev/null
	echo "$t1 - $t0" | bc -l
}

# 1% bad messages: every one a dead letter, the others applied once
run_source_bad() {			# -> seconds
	local t0 t1 got dead
	fresh_stream
	q "DELETE FROM stream_ext.dead_letters WHERE source = 'bad'" >/dev/null
	q "SELECT stream_ext.drop_source('bad', true)" >/dev/null 2>&1
	q "SELECT stream_ext.create_kafka_source('bad', 'ev', '$BS', 'csvbad', 'csv')" >/dev/null
	t0=$(now)
	q "SELECT stream_ext.start_source('bad')" >/dev/null
	first_stored bad >"$work/first"
	wait_stored bad "$MSGS"
	t1=$(now)
	echo "$t1 - $(<"$work/first")" | bc -l >"$work/steady"
	got=$(q "SELECT sum(c) || ':' || sum(sv) FROM ev_v")
	dead=$(q "SELECT count(*) FROM stream_ext.dead_letters WHERE source = 'bad'")
	if [[ $got != "$((MSGS - bad_count)):$bad_good_sum" || $dead != "$bad_count" ]]; then
		log "WRONG RESULT with bad messages: view has $got, want $((MSGS - bad_count)):$bad_good_sum; $dead dead letters, want $bad_count"
		exit 1
	fi
	q "SELECT stream_ext.drop_source('bad')" >/dev/null
	q "DELETE FROM stream_ext.dead_letters WHERE source = 'bad'" >/dev/null
	echo "$t1 - $t0" | bc -l
}

run_pipeline() {			# -> seconds
	local t0 t1
	fresh_stream
	t0=$(now)
	kcat -C -b "$BS" -t csv -o beginning -e -q -f '%s\n' |
		"${PSQL[@]}" -d "$DB" -c "COPY ev (k, v, s) FROM STDIN (FORMAT csv)"
	t1=$(now)
	check_view
	echo "$t1 - $t0" | bc -l
}


: >"$OUT/kafka.tsv"
for rep in $(seq "$REPS"); do
	for w in stream_ext pipeline stream_ext_json stream_ext_b100k stream_ext_bad1pct; do
		case $w in
			stream_ext_bad1pct) t=$(run_source_bad) ;;
			stream_ext) t=$(run_source csv csv) ;;
			stream_ext_b100k) t=$(run_source csv csv '{"batch_size": 100000, "max_wait_ms": 200}') ;;
			pipeline) t=$(run_pipeline) ;;
			stream_ext_json) t=$(run_source json json) ;;
		esac
		printf '%s\t%s\t%s\n' "$w" "$rep" "$t" >>"$OUT/kafka.tsv"
		if [[ $w == stream_ext || $w == stream_ext_bad1pct ]]; then
			printf '%s_steady\t%s\t%s\n' "$w" "$rep" "$(<"$work/steady")" >>"$OUT/kafka.tsv"
		fi
		log "rep $rep $w: $(printf '%.3f' "$t") s"
	done
done
med() { awk -F'\t' -v w="$1" '$1 == w { print $3 }' "$OUT/kafka.tsv" | median; }
t_se=$(med stream_ext)
t_pipe=$(med pipeline)
t_json=$(med stream_ext_json)
t_big=$(med stream_ext_b100k)
rate() { printf '%.0f' "$(echo "$MSGS / $1" | bc -l)"; }
ratio=$(printf '%.2f' "$(echo "$t_pipe / $t_se" | bc -l)")
ratio_big=$(printf '%.2f' "$(echo "$t_pipe / $t_big" | bc -l)")
t_bad=$(med stream_ext_bad1pct)
ratio_bad=$(printf '%.2f' "$(echo "$t_se / $t_bad" | bc -l)")
# the same, from the first stored batch on (worker start-up excluded)
ratio_bad_steady=$(printf '%.2f' "$(echo "$(med stream_ext_steady) / $(med stream_ext_bad1pct_steady)" | bc -l)")

# ---- latency at a fixed rate ---------------------------------------------------
log "latency: $RATE msg/s for $SECS s"
q "DROP TABLE IF EXISTS lat CASCADE" >/dev/null
q "SELECT stream_ext.create_stream('lat', 'seq int, sent timestamptz')" >/dev/null
q "CREATE VIEW lat_v WITH (continuous) AS SELECT count(*) AS c FROM lat" >/dev/null
q "SELECT stream_ext.create_kafka_source('lat_src', 'lat', '$BS', 'lat', 'csv', '{\"start\": \"latest\"}')" >/dev/null
q "SELECT stream_ext.start_source('lat_src')" >/dev/null
while [[ $(q "SELECT count(*) FROM stream_ext.kafka_offsets WHERE source = 'lat_src'") -lt 1 ]]; do sleep 0.05; done
total=$((RATE * SECS))
perl -MTime::HiRes=time,sleep -MPOSIX=strftime -e '
	$| = 1;
	my ($rate, $n) = @ARGV;
	my $t0 = time;
	for my $i (1 .. $n) {
		my $due = $t0 + ($i - 1) / $rate;
		my $d = $due - time;
		sleep($d) if $d > 0;
		my $t = time;
		printf "%d,%s.%06d+00\n", $i, strftime("%Y-%m-%d %H:%M:%S", gmtime($t)), ($t - int($t)) * 1e6;
	}' "$RATE" "$total" |
	kcat -P -b "$BS" -t lat -X linger.ms=0 -X queue.buffering.max.ms=0
wait_stored lat_src "$total"
read -r lat_med lat_p99 lat_max < <(q "SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1),
                                      round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms)::numeric, 1),
                                      round(max(ms)::numeric, 1)
                                 FROM (SELECT extract(epoch FROM arrival_timestamp - sent) * 1000 AS ms FROM lat) l" | tr '|' ' ')
got=$(q "SELECT c FROM lat_v")
[[ $got == "$total" ]] || { log "WRONG RESULT: lat_v has $got, want $total"; exit 1; }

# ---- worker memory over a long run ----------------------------------------------
log "memory: $RSS_PASSES passes of $MSGS messages through one worker"
fresh_stream
q "SELECT stream_ext.create_kafka_source('rss_src', 'ev', '$BS', 'rss', 'csv', '$RSS_OPTIONS')" >/dev/null
q "SELECT stream_ext.start_source('rss_src')" >/dev/null
produce4 rss "$work/csv.txt"
wait_stored rss_src "$MSGS"
pid=$(q "SELECT w.pid FROM stream_ext.kafka_worker_stats() w JOIN stream_ext.kafka_sources s ON s.id = w.source_id WHERE s.name = 'rss_src'")
rss1=$(awk '/VmRSS/ { print $2 }' "/proc/$pid/status")
anon1=$(awk '/RssAnon/ { print $2 }' "/proc/$pid/status")
pss_anon() { awk '/^Pss_Anon/ { print $2 }' "/proc/$pid/smaps_rollup"; }
# the peak, sampled every 0.1 s while the passes run
(peak=0; while [[ -e /proc/$pid ]]; do v=$(pss_anon 2>/dev/null || echo 0); ((v > peak)) && { peak=$v; echo "$peak" >"$work/peak"; }; sleep 0.1; done) &
sampler=$!
anon_series=$(pss_anon)
sleep 0.6						# idle: the worker gives freed memory back
idle_series=$(pss_anon)
for pass in $(seq 2 "$RSS_PASSES"); do
	produce4 rss "$work/csv.txt"
	wait_stored rss_src $((MSGS * pass))
	anon_series="$anon_series $(pss_anon)"
	sleep 0.6
	idle_series="$idle_series $(pss_anon)"
done
kill "$sampler" 2>/dev/null || true
wait "$sampler" 2>/dev/null || true
anon_peak=$(cat "$work/peak" 2>/dev/null || echo "?")
rss2=$(awk '/VmRSS/ { print $2 }' "/proc/$pid/status")
anon2=$(awk '/RssAnon/ { print $2 }' "/proc/$pid/status")
total_rss=$((MSGS * RSS_PASSES))
# its workers would keep the database busy (the next run drops it)
q "SELECT stream_ext.drop_source('rss_src'), stream_ext.drop_source('lat_src')" >/dev/null

{
	echo "### Kafka ingest"
	echo
	echo "$MSGS messages, 4 partitions, one source worker, one continuous view (count, sum by 1000 keys); median of $REPS; $(nproc) cores."
	echo
	echo "| path | seconds | messages/s |"
	echo "| --- | ---: | ---: |"
	printf '| stream_ext source, CSV | %.3f | %s |\n' "$t_se" "$(rate "$t_se")"
	printf '| kcat -C \\| psql COPY (FORMAT csv), one COPY | %.3f | %s |\n' "$t_pipe" "$(rate "$t_pipe")"
	printf '| stream_ext source, JSON | %.3f | %s |\n' "$t_json" "$(rate "$t_json")"
	printf '| stream_ext source, CSV, batch_size 100000 | %.3f | %s |\n' "$t_big" "$(rate "$t_big")"
	printf '| stream_ext source, CSV with 1%% bad messages (all %s dead letters) | %.3f | %s |\n' "$bad_count" "$t_bad" "$(rate "$t_bad")"
	echo
	echo "stream_ext / pipeline throughput ratio (CSV): **${ratio}x** (default batch_size 10000), **${ratio_big}x** (batch_size 100000)"
	echo
	echo "throughput with 1% bad messages / clean input (same source settings): **${ratio_bad}** from start_source, **${ratio_bad_steady}** from the first stored batch (worker start-up, which varies by up to a second, excluded)"
	echo
	echo "Produce -> visible latency at $RATE msg/s for $SECS s ($total messages, default batch_size/max_wait_ms):"
	echo "median ${lat_med} ms, p99 ${lat_p99} ms, max ${lat_max} ms."
	echo
	echo "Worker private memory (RssAnon): ${anon1} kB after $MSGS messages, ${anon2} kB after $total_rss (source options: $RSS_OPTIONS)."
	echo "Worker Pss_Anon (smaps_rollup) after each pass of $MSGS, kB: ${anon_series}."
	echo "The same 0.6 s later (the worker idle), kB: ${idle_series}."
	echo "Highest Pss_Anon sampled (every 0.1 s) during the passes: ${anon_peak} kB."
	echo "Worker VmRSS: ${rss1} kB and ${rss2} kB (includes the shared buffers it touched: up to shared_buffers)."
} | tee "$OUT/kafka.md"
