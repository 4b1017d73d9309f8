# shellcheck shell=bash
# test/lib/dashboard.sh -- the live dashboard of the demo (test/dashboard/www/:
# a static page that polls exposed continuous views through PostgREST and
# draws them with uPlot), for test/demo/40_dashboard.sh and
# test/integration/dashboard_browser.sh.  Source it (it sources
# test/lib/postgrest.sh and test/lib/broker.sh); it defines functions only.
# Every process it starts writes DIR/NAME.pid (PostgREST: pgrst_start DIR);
# dash_stop DIR stops them, and so does test/lib/cluster.sh stop for
# DIR=$STREAM_EXT_TMP/dashboard.
#
#   dash_why_not           fail with the reason (stderr) when the page cannot
#                          be served: uPlot not installed by test/lib/deps.sh
#   dash_browser           print the headless browser (Debian's chromium) or
#                          fail with the reason: no chromium, or puppeteer-core
#                          missing in test/dashboard/node_modules
#   dash_broker_start DIR TOPIC
#                          start the embedded Kafka broker ($STREAM_EXT_BROKER)
#                          with TOPIC (1 partition), bounded by
#                          DASH_LIFETIME seconds (default 900); sets DASH_BOOTSTRAP
#   dash_setup_sql DB ANON_ROLE BOOTSTRAP
#                          the pipeline the page shows (test/dashboard/setup.sql):
#                          stream live_orders, Kafka source live_orders_src,
#                          continuous views exposed to ANON_ROLE, and
#                          api.pipeline_health
#   dash_producer_start DIR BOOTSTRAP TOPIC [PER_SECOND]
#                          produce PER_SECOND (default 40) JSON orders with the
#                          current time every second with kcat (one malformed
#                          message in the 3rd second: a dead letter), for at
#                          most DASH_LIFETIME seconds
#   dash_serve DIR         copy the page and uPlot into DIR/www and serve it with
#                          Python's http.server on 127.0.0.1 at a free port;
#                          sets DASH_URL=http://127.0.0.1:PORT
#   dash_page_url API_URL  print the page's URL for that PostgREST
#   dash_stop DIR          stop everything started with DIR (idempotent)

source "${STREAM_EXT_ROOT:?}/test/lib/postgrest.sh"
source "$STREAM_EXT_ROOT/test/lib/broker.sh"

DASH_SRC=$STREAM_EXT_ROOT/test/dashboard
DASH_UPLOT=$DASH_SRC/node_modules/uplot/dist

dash_why_not() {
	if [[ ! -f $DASH_UPLOT/uPlot.iife.min.js ]]; then
		echo "uPlot is not installed in test/dashboard/node_modules: run test/lib/deps.sh (as root)" >&2
		return 1
	fi
	if [[ ! -x /usr/bin/python3 ]]; then
		echo "no /usr/bin/python3 to serve the page: run test/lib/deps.sh (as root)" >&2
		return 1
	fi
}

dash_browser() {
	local b
	for b in "${CHROMIUM:-}" /usr/bin/chromium; do
		[[ -n $b && -x $b ]] && break
		b=
	done
	if [[ -z $b ]]; then
		echo "no headless browser: Debian's chromium is not installed (test/lib/deps.sh installs it)" >&2
		return 1
	fi
	if [[ ! -f $DASH_SRC/node_modules/puppeteer-core/package.json ]]; then
		echo "puppeteer-core is not installed in test/dashboard/node_modules: run test/lib/deps.sh" >&2
		return 1
	fi
	if ! command -v node >/dev/null 2>&1; then
		echo "no node to run puppeteer-core" >&2
		return 1
	fi
	echo "$b"
}

_dash_bg() {  # DIR NAME command...: start in the background, record its pid
	local dir=$1 name=$2; shift 2
	mkdir -p "$dir"
	"$@" >"$dir/$name.log" 2>&1 </dev/null &
	echo $! >"$dir/$name.pid"
}

dash_broker_start() {
	broker_start "$1" "$2" 1 "${DASH_LIFETIME:-900}" || return 1
	DASH_BOOTSTRAP=$BROKER_BOOTSTRAP
	export DASH_BOOTSTRAP
}

dash_setup_sql() {
	local db=$1 anon=$2 bootstrap=$3
	psql -X -q -v ON_ERROR_STOP=1 -d "$db" -v anon="$anon" -v bootstrap="$bootstrap" \
		-f "$DASH_SRC/setup.sql"
}

dash_producer_start() {
	local dir=$1 bootstrap=$2 topic=$3 rate=${4:-40}
	# shellcheck disable=SC2016
	_dash_bg "$dir" producer timeout "${DASH_LIFETIME:-900}" bash -c '
		set -u
		for ((s = 1; ; s++)); do
			ts=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
			{
				awk -v n="$3" -v ts="$ts" -v seed="$s" '\''BEGIN {
					srand(seed)
					for (i = 0; i < n; i++) {
						r = rand()   # skewed: shop-0 most, shop-5 least
						k = r < 0.30 ? 0 : r < 0.52 ? 1 : r < 0.70 ? 2 : r < 0.84 ? 3 : r < 0.94 ? 4 : 5
						printf "{\"shop\": \"shop-%d\", \"amount\": %.2f, \"ts\": \"%s\"}\n", k, 5 + rand() * 95, ts
					}
				}'\''
				[[ $s -eq 3 ]] && echo "{\"shop\": \"shop-1\", \"amount\": \"not a number\", \"ts\": \"$ts\"}"
			} | kcat -P -q -b "$1" -t "$2"
			sleep 1
		done' dash-producer "$bootstrap" "$topic" "$rate"
}

dash_serve() {
	local dir=$1 port tries
	dash_why_not || return 1
	rm -rf "$dir/www"
	mkdir -p "$dir/www/vendor"
	cp "$DASH_SRC"/www/* "$dir/www/"
	cp "$DASH_UPLOT/uPlot.iife.min.js" "$DASH_UPLOT/uPlot.min.css" "$dir/www/vendor/"
	port=${DASH_PORT_BASE:-$((5000 + $$ % 2000))}
	for ((tries = 0; tries < 30; tries++, port++)); do
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue
		_dash_bg "$dir" server /usr/bin/python3 -m http.server --bind 127.0.0.1 \
			--directory "$dir/www" "$port"
		DASH_URL=http://127.0.0.1:$port
		local i
		for ((i = 0; i < 50; i++)); do
			if curl -sf -o /dev/null --max-time 2 "$DASH_URL/index.html"; then
				export DASH_URL
				return 0
			fi
			kill -0 "$(<"$dir/server.pid")" 2>/dev/null || break
			sleep 0.1
		done
		pidfile_stop "$dir/server.pid"
	done
	echo "dash_serve: the static server did not start; its log:" >&2
	tail -n 20 "$dir/server.log" >&2
	return 1
}

dash_page_url() {
	echo "${DASH_URL:?}/index.html?api=$1"
}

dash_stop() {
	local dir=$1 name
	for name in browser producer server broker; do
		pidfile_stop "$dir/$name.pid"
	done
	pgrst_stop "$dir"
}
