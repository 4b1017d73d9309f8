# shellcheck shell=bash
# test/demo/30_postgrest.sh -- demo step: serve the click-stream view of
# 10_clicks.sh over HTTP with a real PostgREST (12.0.2, installed by
# test/lib/deps.sh), feed more rounds and GET the view with curl after each.
# At the end the HTTP answer is checked against SQL.  PostgREST is stopped
# when the step ends, unless STREAM_EXT_KEEP_CLUSTER=1: then it keeps running
# and its URL and stop command are printed (test/lib/cluster.sh stop also
# stops it).
# Sourced by test/demo.sh (see there for the helpers and variables).

source "$STREAM_EXT_ROOT/test/lib/postgrest.sh"
if ! why=$(pgrst_bin 2>&1 >/dev/null); then
	demo_say "PostgREST step skipped: $why"
	return 0
fi
export PGTZ=UTC
PGRST_DIR=$STREAM_EXT_TMP/postgrest
PGRST_ROUNDS=${DEMO_PGRST_ROUNDS:-3}

demo_say "PostgREST roles (docs/postgrest.md) and stream_ext.expose()"
demo_sql -q -e <<'SQL'
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'web_anon') THEN
    CREATE ROLE web_anon NOLOGIN;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'authenticator') THEN
    CREATE ROLE authenticator LOGIN NOINHERIT PASSWORD 'change-me';
  END IF;
END $$;
GRANT web_anon TO authenticator;
SELECT stream_ext.expose('clicks_per_minute');   -- api.clicks_per_minute, for web_anon
SQL

demo_say "start PostgREST ($(basename "$(pgrst_bin)") $("$(pgrst_bin)" --version | awk '{print $2}'))"
pgrst_stop "$PGRST_DIR"
pgrst_start "$PGRST_DIR" "$DEMO_DB" authenticator:change-me web_anon
if [[ ${STREAM_EXT_KEEP_CLUSTER:-} != 1 ]]; then
	trap 'pgrst_stop "$PGRST_DIR"' EXIT
fi
sed 's/^/    /' "$PGRST_DIR/postgrest.conf"

URL_PATH='/clicks_per_minute?url=eq./docs&order=minute.desc&limit=3'
base=$(demo_sql -qAt -c 'SELECT count(*) FROM demo_clicks_copy')
for ((i = 1; i <= PGRST_ROUNDS; i++)); do
	r=$((DEMO_ROUNDS + i))
	demo_say "round $r: INSERT 2000 events, then curl '$PGRST_URL$URL_PATH'"
	demo_sql -q -v r="$r" -v n=2000 <<'SQL'
INSERT INTO clicks (url, user_id, ts, latency_ms) SELECT * FROM demo_events(:r, :n);
INSERT INTO demo_clicks_copy SELECT * FROM demo_events(:r, :n);
SQL
	curl -s -g --max-time 10 "$PGRST_URL$URL_PATH"
	echo
	if [[ $i -lt $PGRST_ROUNDS ]]; then demo_pause; fi
done

demo_say "Prefer: count=exact, Range 0-1: the page and the total number of rows in Content-Range"
curl -s -g -i --max-time 10 -H 'Prefer: count=exact' -H 'Range: 0-1' \
	"$PGRST_URL/clicks_per_minute?select=url,minute,hits&order=hits.desc,url" |
	tr -d '\r' | awk 'body { print; next } /^$/ { body = 1; next }
	                 tolower($0) ~ /^(http\/|content-range)/'

demo_say "check: the hits served over HTTP equal the view in SQL"
http_hits=$(curl -s -g --max-time 10 "$PGRST_URL/clicks_per_minute?select=hits" |
	grep -o '"hits":[0-9]*' | cut -d: -f2 | awk '{s += $1} END {print s + 0}')
sql_hits=$(demo_sql -qAt -c 'SELECT sum(hits) FROM clicks_per_minute')
expected=$((base + PGRST_ROUNDS * 2000))
echo "events: $expected, hits over HTTP: $http_hits, in SQL: $sql_hits"
if [[ $http_hits != "$expected" || $sql_hits != "$expected" ]]; then
	echo "demo check FAILED" >&2
	exit 1
fi
echo "demo check ok"

if [[ ${STREAM_EXT_KEEP_CLUSTER:-} == 1 ]]; then
	demo_say "PostgREST keeps running at $PGRST_URL (try: curl '$PGRST_URL$URL_PATH')"
	echo "stop it with: kill \$(cat $PGRST_DIR/postgrest.pid)   (test/lib/cluster.sh stop also stops it)"
fi
