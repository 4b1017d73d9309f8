#!/usr/bin/env bash
# bench/avro.sh -- Avro against JSON: decode throughput of Kafka sources for
# the same records (docs/benchmarks.md).
#
# By hand, against any cluster where stream_ext is preloaded (superuser):
#     source /tmp/stream_ext.XXXXXX/env.sh      # from test/lib/cluster.sh start
#     bash bench/avro.sh
#
# BENCH_AVRO_MSGS records (k int, v bigint, s text, x float8, ts
# timestamp-millis) are encoded three ways -- JSON, Avro binary (format
# avro, the schema in the options), Confluent wire format (format
# avro-confluent, the schema fetched once from test/tools/schema_registry.py)
# -- and produced to three 4-partition topics of the embedded broker.  Each
# is then loaded into the same stream, which has no view (so the time is
# consumer + decoding + insert), by a source with one worker, timed from the
# first stored batch until every offset is stored (steady state, without
# the worker's start-up).  BENCH_REPS repetitions, interleaved; medians,
# events/s, and each format's ratio to JSON.  Every load is checked: the
# stream must hold each record once (count and sum(v)).
#
# Writes $BENCH_RESULTS_DIR/avro.md (and avro.tsv); prints the table.
set -euo pipefail

: "${STREAM_EXT_TMP:?STREAM_EXT_TMP must name a temp dir (source the cluster env.sh)}"
ROOT=${STREAM_EXT_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
MSGS=${BENCH_AVRO_MSGS:-200000}
REPS=${BENCH_REPS:-3}
DB=bench_avro
DELIM='@@sep@@!'

# shellcheck source=kafka_lib.sh
source "$ROOT/bench/kafka_lib.sh"
bench_kafka_init avro

work=$(mktemp -d "$STREAM_EXT_TMP/avro-bench.XXXXXX")
chmod 755 "$work"
"$BROKER" --partitions 4 --topic json --topic avro --topic conf \
	--bootstrap-file "$work/bootstrap" >"$work/broker.out" 2>&1 &
broker_pid=$!
python3 "$ROOT/test/tools/schema_registry.py" >"$work/registry.out" 2>"$work/registry.err" &
registry_pid=$!
cleanup() {
	kill "$broker_pid" "$registry_pid" 2>/dev/null || true
	wait "$broker_pid" "$registry_pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
for _ in $(seq 100); do [[ -s $work/bootstrap && -s $work/registry.out ]] && break; sleep 0.1; done
BS=$(<"$work/bootstrap")
REG="http://127.0.0.1:$(sed -n 's/listening on //p' "$work/registry.out")"
log "broker at $BS, registry at $REG"

"${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" >/dev/null
q "CREATE EXTENSION stream_ext" >/dev/null

# ---- data -----------------------------------------------------------------
SCHEMA='{"type": "record", "name": "Ev", "fields": [
  {"name": "k", "type": "int"}, {"name": "v", "type": "long"}, {"name": "s", "type": "string"},
  {"name": "x", "type": "double"},
  {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}'
printf '%s' "$SCHEMA" >"$work/schema.json"
ID=$(curl -sS -X POST -H 'Content-Type: application/vnd.schemaregistry.v1+json' \
	--data-binary "$(python3 -c 'import json,sys; print(json.dumps({"schema": sys.argv[1]}))' "$SCHEMA")" \
	"$REG/subjects/ev-value/versions" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
log "producing $MSGS records as JSON, Avro and Confluent Avro (schema id $ID)"
# JSON: timestamps as ISO text, the way JSON producers write them
awk -v n="$MSGS" 'BEGIN { for (i = 1; i <= n; i++)
	printf "{\"k\":%d,\"v\":%d,\"s\":\"item-%d\",\"x\":%d.5,\"ts\":\"2026-01-01T00:00:%02d.%03dZ\"}\n",
		i % 1000, i % 97, i, i % 10, i % 60, i % 1000 }' >"$work/json.txt"
awk -v n="$MSGS" 'BEGIN { for (i = 1; i <= n; i++)
	printf "{\"k\":%d,\"v\":%d,\"s\":\"item-%d\",\"x\":%d.5,\"ts\":%d}\n",
		i % 1000, i % 97, i, i % 10, 1767225600000 + (i % 60) * 1000 + i % 1000 }' >"$work/avro.jsonl"
hexdelim=$(printf '%s' "$DELIM" | od -An -tx1 | tr -d ' \n')
for p in 0 1 2 3; do
	awk -v p="$p" 'NR % 4 == p' "$work/json.txt" >"$work/json.$p"
	awk -v p="$p" 'NR % 4 == p' "$work/avro.jsonl" >"$work/avro.$p"
	python3 "$ROOT/test/tools/avro_encode.py" "$work/schema.json" "$work/avro.$p.bin" \
		--delimited "$hexdelim" <"$work/avro.$p" >/dev/null
	python3 "$ROOT/test/tools/avro_encode.py" "$work/schema.json" "$work/conf.$p.bin" \
		--delimited "$hexdelim" --confluent "$ID" <"$work/avro.$p" >/dev/null
	kcat -P -b "$BS" -t json -p "$p" -X linger.ms=50 -X batch.num.messages=10000 -l "$work/json.$p"
	kcat -P -b "$BS" -t avro -p "$p" -X linger.ms=50 -X batch.num.messages=10000 -D "$DELIM" -l "$work/avro.$p.bin"
	kcat -P -b "$BS" -t conf -p "$p" -X linger.ms=50 -X batch.num.messages=10000 -D "$DELIM" -l "$work/conf.$p.bin"
done
expect="$MSGS:$(awk -v n="$MSGS" 'BEGIN { for (i = 1; i <= n; i++) s += i % 97; print s }')"

fresh_stream() {
	q "DROP TABLE IF EXISTS ev CASCADE" >/dev/null
	q "SELECT stream_ext.create_stream('ev', 'k int, v bigint, s text, x float8, ts timestamptz')" >/dev/null
	q "CHECKPOINT" >/dev/null
}

stored() { q "SELECT coalesce(sum(next_offset), 0) FROM stream_ext.kafka_offsets WHERE source = '$1'"; }

run_source() {				# format topic options -> steady-state seconds
	local fmt=$1 topic=$2 opts=$3 t0 t1 got
	fresh_stream
	q "SELECT stream_ext.drop_source('b', true)" >/dev/null 2>&1
	q "SELECT stream_ext.create_kafka_source('b', 'ev', '$BS', '$topic', '$fmt', '$opts')" >/dev/null
	q "SELECT stream_ext.start_source('b')" >/dev/null
	while [[ $(stored b) -lt 1 ]]; do sleep 0.01; done
	t0=$(now)
	while [[ $(stored b) -lt $MSGS ]]; do sleep 0.02; done
	t1=$(now)
	got=$(q "SELECT count(*) || ':' || sum(v) FROM ev")
	if [[ $got != "$expect" ]]; then
		log "WRONG RESULT for $fmt: stream has $got, want $expect"
		q "SELECT error, count(*) FROM stream_ext.dead_letters GROUP BY 1 LIMIT 5" >&2
		exit 1
	fi
	q "SELECT stream_ext.drop_source('b')" >/dev/null
	echo "$t1 - $t0" | bc -l
}

SCHEMA_SQL=${SCHEMA//\'/\'\'}
: >"$OUT/avro.tsv"
for rep in $(seq "$REPS"); do
	for w in json avro avro-confluent; do
		case $w in
			json) t=$(run_source json json '{}') ;;
			avro) t=$(run_source avro avro "{\"schema\": $SCHEMA_SQL}") ;;
			avro-confluent) t=$(run_source avro-confluent conf "{\"schema_registry\": \"$REG\"}") ;;
		esac
		log "rep $rep: $w ${t}s"
		printf '%s\t%s\n' "$w" "$t" >>"$OUT/avro.tsv"
	done
done

json_s=$(awk -F'\t' '$1 == "json" { print $2 }' "$OUT/avro.tsv" | median)
{
	echo "Avro vs JSON decoding, $MSGS records (5 fields) per load, one worker, no view; medians of $REPS:"
	echo
	echo "| format | seconds | events/s | ratio to json |"
	echo "| --- | ---: | ---: | ---: |"
	for w in json avro avro-confluent; do
		s=$(awk -F'\t' -v w="$w" '$1 == w { print $2 }' "$OUT/avro.tsv" | median)
		printf '| %s | %.2f | %.0f | %.2f |\n' "$w" "$s" "$(echo "$MSGS / $s" | bc -l)" \
			"$(echo "$json_s / $s" | bc -l)"
	done
} >"$OUT/avro.md"
cat "$OUT/avro.md"
