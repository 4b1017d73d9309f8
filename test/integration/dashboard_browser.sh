#!/usr/bin/env bash
# test/integration/dashboard_browser.sh -- the demo's live dashboard
# (test/dashboard/www/) in a real headless browser: Kafka producer ->
# embedded broker -> Kafka source -> continuous views -> PostgREST -> the
# page served by Python's http.server -> Debian's chromium driven by
# puppeteer-core (test/dashboard/check.mjs).  The page must refresh, show in
# its table, bars, line chart and health tiles numbers that lie between what
# SQL returns just before and just after a refresh, move while messages
# arrive, and log no console error or failed request.  Screenshot:
# test/tmp/dashboard_browser.png.
# Skipped (exit 77, with the reason) where PostgREST, the embedded broker,
# chromium or the npm packages are not available.
set -euo pipefail
source "$STREAM_EXT_ROOT/test/lib/integration.sh"
source "$STREAM_EXT_ROOT/test/lib/dashboard.sh"
pgrst_skip_unless_available
if [[ -z ${STREAM_EXT_BROKER:-} || ! -x $STREAM_EXT_BROKER ]]; then
	echo "skipped: the embedded Kafka broker (test/broker) was not built"
	exit 77
fi
if ! why=$( { dash_why_not && dash_browser >/dev/null; } 2>&1); then
	echo "skipped: $why"
	exit 77
fi
BROWSER=$(dash_browser)

DIR=$(mktemp -d /tmp/stream_ext_dash.XXXXXX)
cleanup() {
	q "SELECT stream_ext.stop_source('live_orders_src')" >/dev/null 2>&1 || true
	dash_stop "$DIR"
	rm -rf -- "$DIR"
	PGDATABASE=postgres psql -X -q -c "DROP DATABASE IF EXISTS it_dashboard_browser WITH (FORCE)" \
		-c "DROP ROLE IF EXISTS it_dash_auth" -c "DROP ROLE IF EXISTS it_dash_anon" >/dev/null 2>&1 || true
}
trap cleanup EXIT

it_db dashboard_browser
q <<'SQL'
SET client_min_messages = warning;
DROP ROLE IF EXISTS it_dash_auth;
DROP ROLE IF EXISTS it_dash_anon;
CREATE ROLE it_dash_anon NOLOGIN;
CREATE ROLE it_dash_auth LOGIN NOINHERIT;
GRANT it_dash_anon TO it_dash_auth;
CREATE EXTENSION stream_ext;
SQL

DASH_LIFETIME=300 dash_broker_start "$DIR" live_orders
dash_setup_sql it_dashboard_browser it_dash_anon "$DASH_BOOTSTRAP" >/dev/null
DASH_LIFETIME=300 dash_producer_start "$DIR" "$DASH_BOOTSTRAP" live_orders 40
pgrst_start "$DIR" it_dashboard_browser it_dash_auth it_dash_anon
dash_serve "$DIR"
URL=$(dash_page_url "$PGRST_URL")
echo "page: $URL"

# the anonymous role reads the health view, not what it is built on
assert_eq 200 "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$PGRST_URL/pipeline_health")" \
	"GET /pipeline_health as the anonymous role"
assert_eq 404 "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$PGRST_URL/source_status")" \
	"GET /source_status (not exposed)"
assert_eq f "$(q "SELECT has_table_privilege('it_dash_anon', 'live_orders', 'SELECT')")" \
	"anonymous role: no privilege on the stream"
# CORS: the page (another origin) may read the answers
assert_eq "access-control-allow-origin: *" "$(curl -s -D - -o /dev/null --max-time 10 \
	-H "Origin: $DASH_URL" "$PGRST_URL/live_top_shops" | tr -d '\r' | tr 'A-Z' 'a-z' |
	grep '^access-control-allow-origin:')" "CORS header for the page's origin"

# data flows before the browser comes
wait_for "SELECT count(*) > 0 FROM live_top_shops" t 30

mkdir -p "$STREAM_EXT_ROOT/test/tmp"
SHOT=$STREAM_EXT_ROOT/test/tmp/dashboard_browser.png
rm -f "$SHOT"
rc=0
CHROMIUM=$BROWSER PAGE_URL=$URL SCREENSHOT=$SHOT BROWSER_PID=$DIR/browser.pid \
	timeout 150 node "$DASH_SRC/check.mjs" || rc=$?
[[ $rc -eq 0 ]] || { echo "the browser check failed (exit $rc); producer log:" >&2; tail -n 5 "$DIR/producer.log" >&2; exit 1; }
[[ -s $SHOT ]] || { echo "ASSERTION FAILED: no screenshot at $SHOT" >&2; exit 1; }
echo "ok: screenshot $(stat -c %s "$SHOT") bytes at ${SHOT#"$STREAM_EXT_ROOT"/}"
