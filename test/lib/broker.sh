# shellcheck shell=bash
# test/lib/broker.sh -- start the embedded Kafka broker ($STREAM_EXT_BROKER,
# librdkafka's mock cluster on loopback, built from test/broker) for the demo
# steps.  Source it; it defines one function:
#
#   broker_start DIR TOPIC PARTITIONS [LIFETIME]
#       start the broker with TOPIC in the background, bounded by LIFETIME
#       seconds (default 900); its address goes to DIR/broker.addr, its output
#       to DIR/broker.log, its pid to DIR/broker.pid.  Waits (10 s at most)
#       until it listens; sets BROKER_BOOTSTRAP (host:port) and BROKER_PID.

broker_start() {
	local dir=$1 topic=$2 partitions=$3 lifetime=${4:-900} i
	mkdir -p "$dir"
	rm -f "$dir/broker.addr"
	timeout "$lifetime" "${STREAM_EXT_BROKER:?}" --partitions "$partitions" --topic "$topic" \
		--bootstrap-file "$dir/broker.addr" >"$dir/broker.log" 2>&1 </dev/null &
	BROKER_PID=$!
	echo "$BROKER_PID" >"$dir/broker.pid"
	for ((i = 0; i < 100; i++)); do
		[[ -s $dir/broker.addr ]] && break
		sleep 0.1
	done
	BROKER_BOOTSTRAP=$(head -n 1 "$dir/broker.addr" 2>/dev/null | sed 's/^bootstrap=//')
	if [[ -z $BROKER_BOOTSTRAP ]]; then
		cat "$dir/broker.log" >&2
		echo "broker_start: the embedded broker did not start" >&2
		return 1
	fi
	export BROKER_BOOTSTRAP BROKER_PID
}
