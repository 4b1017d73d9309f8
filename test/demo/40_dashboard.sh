# shellcheck shell=bash
# test/demo/40_dashboard.sh -- demo step: the whole path live, Kafka producer
# -> embedded broker -> Kafka source -> continuous views -> PostgREST -> a
# web page with charts (test/dashboard/www/, docs/postgrest.md).  A kcat
# producer sends orders with the current time every second; the page is
# served by Python's http.server on 127.0.0.1 and its URL printed.  The step
# checks that the page, uPlot and the API answer, and that the orders served
# over HTTP lie between 0 and what SQL counts afterwards.  Everything it
# started is stopped when the step ends, unless STREAM_EXT_KEEP_CLUSTER=1:
# then the producer, broker, PostgREST and page keep running (for
# DEMO_DASHBOARD_LIFETIME seconds, default 3600) so the chart moves; open the
# printed URL.  test/lib/cluster.sh stop stops them.
# Needs what 30_postgrest.sh needs (and its roles web_anon, authenticator).
# Sourced by test/demo.sh (see there for the helpers and variables).

source "$STREAM_EXT_ROOT/test/lib/dashboard.sh"
if [[ -z ${STREAM_EXT_BROKER:-} || ! -x $STREAM_EXT_BROKER ]]; then
	demo_say "dashboard step skipped: the embedded broker (test/broker) was not built"
	return 0
fi
if ! why=$( { pgrst_bin >/dev/null && dash_why_not; } 2>&1); then
	demo_say "dashboard step skipped: $why"
	return 0
fi
export PGTZ=UTC
DASH_DIR=$STREAM_EXT_TMP/dashboard
KEEP=${STREAM_EXT_KEEP_CLUSTER:-}
if [[ $KEEP == 1 ]]; then
	export DASH_LIFETIME=${DEMO_DASHBOARD_LIFETIME:-3600}
else
	export DASH_LIFETIME=300   # a bound in case the step is killed
fi
dash_stop "$DASH_DIR"   # left over from an earlier run
if [[ $KEEP != 1 ]]; then
	trap 'demo_sql -qAt -c "SELECT stream_ext.stop_source('"'live_orders_src'"')" >/dev/null 2>&1 || true
	      dash_stop "$DASH_DIR"' EXIT
fi

demo_say "the live pipeline: a broker, a Kafka source, two continuous views, exposed (test/dashboard/setup.sql)"
dash_broker_start "$DASH_DIR" live_orders
dash_setup_sql "$DEMO_DB" web_anon "$DASH_BOOTSTRAP" >/dev/null
sed -n '/^CREATE VIEW live_orders_per_minute/,/^SELECT stream_ext.expose.*live_top_shops/p' \
	"$DASH_SRC/setup.sql" | sed 's/^/    /'

demo_say "a kcat producer sends 40 orders/s to topic live_orders; PostgREST and the page start"
dash_producer_start "$DASH_DIR" "$DASH_BOOTSTRAP" live_orders 40
pgrst_start "$DASH_DIR" "$DEMO_DB" authenticator:change-me web_anon
dash_serve "$DASH_DIR"
PAGE=$(dash_page_url "$PGRST_URL")
echo "    dashboard: $PAGE"

# orders arrive (bounded wait), then what the page reads
for ((i = 0; i < 150; i++)); do
	[[ $(demo_sql -qAt -c 'SELECT count(*) FROM live_top_shops') -gt 0 ]] && break
	sleep 0.2
done
demo_pause
demo_say "what the page polls every second (as web_anon): /live_top_shops and /pipeline_health"
curl -s -g --max-time 10 "$PGRST_URL/live_top_shops?select=shop,orders&order=orders.desc,shop&limit=3"
echo
curl -s -g --max-time 10 "$PGRST_URL/pipeline_health?select=kind,name,state,rows_in,lag,dead_letters"
echo

demo_say "check: the page and uPlot are served, and the orders over HTTP are those in SQL"
for f in index.html dashboard.js vendor/uPlot.iife.min.js; do
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$DASH_URL/$f")
	[[ $code == 200 ]] || { echo "GET $DASH_URL/$f answered $code" >&2; exit 1; }
done
http_orders=$(curl -s -g --max-time 10 "$PGRST_URL/live_top_shops?select=orders" |
	grep -o '"orders":[0-9]*' | cut -d: -f2 | awk '{s += $1} END {print s + 0}')
sql_orders=$(demo_sql -qAt -c 'SELECT sum(orders) FROM live_top_shops')
echo "orders over HTTP: $http_orders, in SQL just after: $sql_orders"
if [[ $http_orders -le 0 || $http_orders -gt $sql_orders ]]; then
	echo "dashboard demo check FAILED" >&2
	exit 1
fi
echo "dashboard demo check ok"

if [[ $KEEP == 1 ]]; then
	demo_say "the dashboard keeps running for $DASH_LIFETIME s, the producer going: open $PAGE"
	echo "stop it all with: test/lib/cluster.sh stop $STREAM_EXT_TMP   (or only the dashboard: kill \$(cat $DASH_DIR/*.pid))"
else
	echo "dashboard was at $PAGE (STREAM_EXT_KEEP_CLUSTER=1 make demo keeps it running)"
fi
