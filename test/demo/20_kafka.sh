# shellcheck shell=bash
# test/demo/20_kafka.sh -- demo step: the embedded Kafka broker, a Kafka
# source feeding a stream, and a continuous view over it updating while
# messages arrive.  Two malformed messages go to the dead-letter table and
# ingestion carries on.  At the end the view is checked against the
# messages produced.
# Sourced by test/demo.sh (see there for the helpers and variables).

if [[ -z ${STREAM_EXT_BROKER:-} || ! -x $STREAM_EXT_BROKER ]]; then
	demo_say "Kafka step skipped: the embedded broker (test/broker) was not built"
	return 0
fi

KAFKA_ROUNDS=${DEMO_ROUNDS:-5}
KAFKA_PER_ROUND=${DEMO_KAFKA_PER_ROUND:-1000}
export PGTZ=UTC

demo_say "start the embedded Kafka broker (librdkafka's mock cluster on loopback)"
source "$STREAM_EXT_ROOT/test/lib/broker.sh"
# bounded: it cannot outlive the demo by more than a few minutes
broker_start "$STREAM_EXT_TMP/kafka" orders 2 900
BOOTSTRAP=$BROKER_BOOTSTRAP
DEMO_BROKER_PID=$BROKER_PID
demo_say "broker at $BOOTSTRAP; topic orders with 2 partitions"

demo_sql -q -e -v bootstrap="$BOOTSTRAP" <<'SQL'
SELECT stream_ext.create_stream('orders', 'shop text, amount numeric, ts timestamptz');

CREATE VIEW revenue_per_minute WITH (continuous) AS
  SELECT shop, date_bin('1 minute', ts, '2000-01-01') AS minute,
         count(*) AS orders, sum(amount) AS revenue, max(amount) AS biggest
  FROM orders
  GROUP BY shop, minute;

SELECT stream_ext.create_kafka_source('orders_src', 'orders', :'bootstrap', 'orders', 'json',
                                      '{"batch_size": 500, "max_wait_ms": 50}');
SELECT stream_ext.start_source('orders_src');
SQL

# JSON messages for round r: shop, amount, ts (deterministic)
demo_orders() {
	local r=$1 n=$2 i
	for ((i = 1; i <= n; i++)); do
		printf '{"shop": "shop-%d", "amount": %d.%02d, "ts": "2024-01-01T12:%02d:%02dZ"}\n' \
			$(((i * 7 + r) % 4)) $(((i * 13) % 90 + 10)) $((i % 100)) $((r - 1)) $((i % 60))
	done
}

produced=0
for ((r = 1; r <= KAFKA_ROUNDS; r++)); do
	demo_say "round $r/$KAFKA_ROUNDS: kcat produces $KAFKA_PER_ROUND JSON messages to topic orders"
	{
		demo_orders "$r" "$KAFKA_PER_ROUND"
		if [[ $r -eq 2 ]]; then
			echo '{"shop": "shop-1", "amount": "not a number", "ts": "2024-01-01T12:01:00Z"}'
			echo '{this is not json'
		fi
	} | kcat -P -q -b "$BOOTSTRAP" -t orders
	produced=$((produced + KAFKA_PER_ROUND + (r == 2 ? 2 : 0)))
	# wait until the source has stored offsets past everything produced
	for _ in $(seq 1 300); do
		done_n=$(demo_sql -tA -c "SELECT coalesce(sum(next_offset), 0) FROM stream_ext.kafka_offsets WHERE source = 'orders_src'")
		[[ $done_n -ge $produced ]] && break
		sleep 0.1
	done
	demo_sql -q <<'SQL'
SELECT shop, minute, orders, revenue, biggest FROM revenue_per_minute ORDER BY minute, shop;
SELECT source, state, messages, batches, dead_letters, errors FROM stream_ext.source_status;
SQL
	if [[ $r -lt $KAFKA_ROUNDS ]]; then demo_pause; fi
done

demo_say "dead letters: bad messages are kept with partition, offset and reason"
demo_sql -q -c "SELECT source, partition, \"offset\", convert_from(payload, 'UTF8') AS payload, error FROM stream_ext.dead_letters ORDER BY partition, \"offset\""

demo_say "check: the view counts exactly the good messages produced"
good=$((KAFKA_ROUNDS * KAFKA_PER_ROUND))
counted=$(demo_sql -tA -c "SELECT coalesce(sum(orders), 0) FROM revenue_per_minute")
dead=$(demo_sql -tA -c "SELECT count(*) FROM stream_ext.dead_letters WHERE source = 'orders_src'")
demo_sql -q -c "SELECT stream_ext.stop_source('orders_src')" >/dev/null
kill "$DEMO_BROKER_PID" 2>/dev/null || true
wait "$DEMO_BROKER_PID" 2>/dev/null || true
echo "good messages produced: $good, counted by the view: $counted, dead letters: $dead"
if [[ $counted -ne $good || $dead -ne 2 ]]; then
	echo "Kafka demo check failed" >&2
	return 1
fi
echo "kafka demo check ok"
