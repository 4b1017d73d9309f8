# bench/kafka_lib.sh -- what the Kafka benchmarks (bench/kafka.sh,
# bench/avro.sh) and bench/cdc.sh share; sourced after they set ROOT and DB.
#
#   bench_kafka_init NAME   PG_BINDIR, PSQL, OUT (BENCH_RESULTS_DIR, made),
#                           log/q/now helpers (log lines "bench/NAME: ..."),
#                           BROKER = the embedded broker (built if needed),
#                           and kcat must be installed
#   median                  the median of the numbers on stdin

bench_kafka_init() {
	BENCH_NAME=$1
	PG_BINDIR=${PG_BINDIR:-$(pg_config --bindir)}
	PSQL=("$PG_BINDIR/psql" -X -q -v ON_ERROR_STOP=1)
	OUT=${BENCH_RESULTS_DIR:-$STREAM_EXT_TMP/bench-results}
	mkdir -p "$OUT"
	log() { printf 'bench/%s: %s\n' "$BENCH_NAME" "$*" >&2; }
	q() { "${PSQL[@]}" -d "$DB" -A -t -c "$1"; }
	now() { date +%s.%N; }

	BROKER=${STREAM_EXT_BROKER:-$ROOT/test/broker/stream_ext_broker}
	if [[ ! -x $BROKER ]]; then
		make -s -C "$ROOT/test/broker" >&2
		BROKER=$ROOT/test/broker/stream_ext_broker
	fi
	command -v kcat >/dev/null || { log "kcat is not installed"; exit 1; }
}

median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
