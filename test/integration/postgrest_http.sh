#!/usr/bin/env bash
# test/integration/postgrest_http.sh -- continuous views served by a real
# PostgREST (12.0.2, test/lib/postgrest.sh) over HTTP:
#   - reads: filters eq/gt/in, order, limit/offset, select of some columns,
#     Prefer: count=exact with Range, the singular-object Accept header;
#     each body is compared with the same query run in SQL, and new rows are
#     visible at once;
#   - a JWT-authenticated role (HS256, jwt-secret) reads a view the anonymous
#     role cannot; a bad signature and a role the authenticator is not a
#     member of are refused;
#   - schema cache reload while the server runs: expose()/unexpose() NOTIFY
#     it (a function created without a notification answers PGRST202 until
#     then, proving the reload);
#   - confinement: the anonymous role reaches none of the stream, the
#     materialization and its side tables, stream_ext.* (Kafka sources and
#     their options, dead letters), other schemas or their functions.
# Skipped (exit 77) where PostgREST is not available (not x86-64 Linux).
set -euo pipefail
source "$STREAM_EXT_ROOT/test/lib/integration.sh"
source "$STREAM_EXT_ROOT/test/lib/postgrest.sh"
pgrst_skip_unless_available

DIR=$(mktemp -d /tmp/stream_ext_pgrst.XXXXXX)
cleanup() {
	pgrst_stop "$DIR"
	rm -rf -- "$DIR"
	PGDATABASE=postgres psql -X -q -c "DROP DATABASE IF EXISTS it_postgrest_http WITH (FORCE)" \
		-c "DROP ROLE IF EXISTS it_pgrst_auth" -c "DROP ROLE IF EXISTS it_pgrst_anon" \
		-c "DROP ROLE IF EXISTS it_pgrst_user" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# (first-run friction) the cluster's env.sh puts its PostgreSQL bin directory
# on PATH: pgbench, psql, pg_dump of this installation after sourcing it
assert_eq "$PG_BINDIR/pgbench" "$(env -i PATH=/usr/bin:/bin bash -c \
	"source '$STREAM_EXT_TMP/env.sh' && command -v pgbench")" "pgbench after sourcing env.sh"

it_db postgrest_http
SECRET='stream_ext-test-secret-at-least-32-characters-long'

q <<'SQL'
SET client_min_messages = warning;
ALTER DATABASE it_postgrest_http SET timezone = 'UTC';
DROP ROLE IF EXISTS it_pgrst_auth;
DROP ROLE IF EXISTS it_pgrst_anon;
DROP ROLE IF EXISTS it_pgrst_user;
CREATE ROLE it_pgrst_anon NOLOGIN;
CREATE ROLE it_pgrst_user NOLOGIN;
CREATE ROLE it_pgrst_auth LOGIN NOINHERIT;
GRANT it_pgrst_anon, it_pgrst_user TO it_pgrst_auth;
CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('clicks', 'url text, user_id int, latency int, ts timestamptz');
CREATE VIEW clicks_per_minute WITH (continuous) AS
  SELECT url, date_bin('1 minute', ts, '2000-01-01') AS minute,
         count(*) AS hits, max(latency) AS max_latency,
         count(DISTINCT user_id) AS users
    FROM clicks GROUP BY url, minute;
CREATE VIEW clicks_per_user WITH (continuous) AS
  SELECT user_id, count(*) AS hits FROM clicks GROUP BY user_id;
INSERT INTO clicks (url, user_id, latency, ts)
SELECT (ARRAY['/home', '/about', '/docs'])[1 + i % 3], i % 5, 10 * (i % 7),
       timestamptz '2024-01-01 00:00:00+00' + (i * 17) * interval '1 second'
  FROM generate_series(0, 299) AS i;
SELECT stream_ext.expose('clicks_per_minute', 'api', 'it_pgrst_anon');
SELECT stream_ext.expose('clicks_per_user', 'api', 'it_pgrst_user');
SQL
# Kafka source options and a dead letter the API must never show (no broker:
# the source is started and stopped only to show what the calls return)
assert_eq src "$(q "SELECT stream_ext.start_source(stream_ext.create_kafka_source('src', 'clicks',
	'127.0.0.1:1', 'clicks', 'json', '{\"client.id\": \"secret-client\"}'))")" \
	"create_kafka_source() and start_source() return the source's name"
q <<'SQL'
SELECT stream_ext.stop_source('src');
INSERT INTO stream_ext.dead_letters (source, partition, "offset", payload, error)
VALUES ('src', 0, 0, 'secret-payload', 'x');
SQL

pgrst_start "$DIR" it_postgrest_http it_pgrst_auth it_pgrst_anon "jwt-secret = \"$SECRET\""
echo "PostgREST $("$(pgrst_bin)" --version | awk '{print $2}') at $PGRST_URL"

# GET PATH [curl args...]: sets STATUS, BODY and HEADERS (lower-cased names)
http() {
	local path=$1; shift
	local out
	out=$(curl -s -g -D "$DIR/headers" -o "$DIR/body" -w '%{http_code}' --max-time 10 "$@" "$PGRST_URL$path")
	STATUS=$out
	BODY=$(<"$DIR/body")
	HEADERS=$(tr -d '\r' <"$DIR/headers" | tr 'A-Z' 'a-z')
}
# expect_json DESCRIPTION PATH SQL [curl args...]: 200 and a body equal to
# the JSON of SQL's rows (status $WANT_STATUS if set), as PostgREST builds it (json_agg)
expect_json() {
	local what=$1 path=$2 sql=$3; shift 3
	http "$path" "$@"
	assert_eq "${WANT_STATUS:-200}" "$STATUS" "$what: status"
	assert_eq "$(q "SELECT coalesce(json_agg(t), '[]')::text FROM ($sql) t")" "$BODY" "$what: body"
}
# expect_error DESCRIPTION STATUS CODE PATH [curl args...]: an error answer
# with this HTTP status and PostgREST/PostgreSQL error code
expect_error() {
	local what=$1 status=$2 code=$3 path=$4; shift 4
	http "$path" "$@"
	assert_eq "$status" "$STATUS" "$what: status"
	assert_eq "\"code\":\"$code\"" "$(grep -o '"code":"[^"]*"' <<<"$BODY")" "$what: error code"
	if grep -q -e secret-client -e secret-payload <<<"$BODY"; then
		echo "ASSERTION FAILED: $what: the answer leaks hidden data: $BODY" >&2
		exit 1
	fi
}

# ---- reads ------------------------------------------------------------------
http '/clicks_per_minute?url=eq./home&order=minute.desc&limit=2'
assert_eq 200 "$STATUS" "eq/order/limit: status"
assert_eq '[{"url":"/home","minute":"2024-01-01T01:24:00+00:00","hits":1,"max_latency":30,"users":1}, 
 {"url":"/home","minute":"2024-01-01T01:23:00+00:00","hits":1,"max_latency":0,"users":1}]' "$BODY" \
	"eq/order/limit: body"
expect_json 'eq + order + limit' '/clicks_per_minute?url=eq./home&order=minute.desc&limit=5' \
	"SELECT * FROM clicks_per_minute WHERE url = '/home' ORDER BY minute DESC LIMIT 5"
expect_json 'gt + select' '/clicks_per_minute?select=url,minute,hits&hits=gt.1&order=minute,url' \
	"SELECT url, minute, hits FROM clicks_per_minute WHERE hits > 1 ORDER BY minute, url"
expect_json 'in + order desc + limit/offset' \
	'/clicks_per_minute?url=in.(/about,/docs)&order=minute.desc,url.asc&limit=4&offset=3' \
	"SELECT * FROM clicks_per_minute WHERE url IN ('/about', '/docs')
	  ORDER BY minute DESC, url LIMIT 4 OFFSET 3"
expect_json 'timestamp range (gte/lt)' \
	'/clicks_per_minute?minute=gte.2024-01-01T00:10:00Z&minute=lt.2024-01-01T00:20:00Z&order=minute,url&select=minute,url,users' \
	"SELECT minute, url, users FROM clicks_per_minute
	  WHERE minute >= '2024-01-01T00:10:00Z' AND minute < '2024-01-01T00:20:00Z' ORDER BY minute, url"

total=$(q "SELECT count(*) FROM clicks_per_minute WHERE url <> '/docs'")
WANT_STATUS=206 expect_json 'Prefer: count=exact with Range' '/clicks_per_minute?url=neq./docs&order=url,minute' \
	"SELECT * FROM clicks_per_minute WHERE url <> '/docs' ORDER BY url, minute LIMIT 3" \
	-H 'Prefer: count=exact' -H 'Range-Unit: items' -H 'Range: 0-2'
assert_eq "content-range: 0-2/$total" "$(grep '^content-range:' <<<"$HEADERS")" "Content-Range carries the exact count"

http '/clicks_per_minute?url=eq./about&minute=eq.2024-01-01T00:00:00Z' \
	-H 'Accept: application/vnd.pgrst.object+json'
assert_eq 200 "$STATUS" "singular object: status"
assert_eq "$(q "SELECT row_to_json(t)::text FROM (SELECT * FROM clicks_per_minute
                 WHERE url = '/about' AND minute = '2024-01-01T00:00:00Z') t")" "$BODY" \
	"singular object: one JSON object, not an array"
expect_error 'singular object, several rows' 406 PGRST116 '/clicks_per_minute?url=eq./about' \
	-H 'Accept: application/vnd.pgrst.object+json'

q "INSERT INTO clicks VALUES ('/new', 1, 5, '2024-01-02 00:00:00+00'), ('/new', 2, 7, '2024-01-02 00:00:30+00')"
http '/clicks_per_minute?url=eq./new&select=hits,users,max_latency'
assert_eq '[{"hits":2,"users":2,"max_latency":7}]' "$BODY" "new rows are served at once"

# ---- JWT roles ----------------------------------------------------------------
expect_error 'anonymous: the view exposed to another role' 401 42501 '/clicks_per_user'
token=$(pgrst_jwt "$SECRET" it_pgrst_user)
expect_json 'JWT role it_pgrst_user reads its view' '/clicks_per_user?order=user_id' \
	"SELECT * FROM clicks_per_user ORDER BY user_id" -H "Authorization: Bearer $token"
expect_error 'JWT role it_pgrst_user: no privilege on the anonymous view' 403 42501 \
	'/clicks_per_minute' -H "Authorization: Bearer $token"
expect_error 'JWT with a wrong signature' 401 PGRST301 '/clicks_per_user' \
	-H "Authorization: Bearer $(pgrst_jwt "wrong-$SECRET" it_pgrst_user)"
expect_error 'JWT naming postgres (authenticator is not a member)' 403 42501 '/clicks_per_minute' \
	-H "Authorization: Bearer $(pgrst_jwt "$SECRET" postgres)"

# ---- schema cache reload while the server runs ---------------------------------
# (creating a continuous view sends a reload notification itself)
q "CREATE VIEW clicks_per_url WITH (continuous) AS SELECT url, count(*) AS hits FROM clicks GROUP BY url"
sleep 1
# later() is created with no notification: PostgREST does not know it
q <<'SQL'
CREATE FUNCTION api.later() RETURNS int LANGUAGE sql AS 'SELECT 42';
GRANT EXECUTE ON FUNCTION api.later() TO it_pgrst_anon;
SQL
sleep 1
expect_error 'function created without NOTIFY: not in the schema cache' 404 PGRST202 '/rpc/later'
expect_error 'continuous view not exposed yet' 404 42P01 '/clicks_per_url'
q "SELECT stream_ext.expose('clicks_per_url', 'api', 'it_pgrst_anon')" >/dev/null
reloaded() {  # poll PATH until it answers STATUS (10 s)
	local path=$1 want=$2 i
	for ((i = 0; i < 50; i++)); do
		http "$path"
		[[ $STATUS == "$want" ]] && return 0
		sleep 0.2
	done
	return 1
}
reloaded /rpc/later 200 || { echo "ASSERTION FAILED: expose() did not reload the schema cache: $STATUS $BODY" >&2; exit 1; }
assert_eq 42 "$BODY" "after expose(): the schema cache was reloaded (rpc/later answers)"
expect_json 'view exposed while PostgREST runs' '/clicks_per_url?order=url' \
	"SELECT * FROM clicks_per_url ORDER BY url"

q <<'SQL'
CREATE FUNCTION api.later2() RETURNS int LANGUAGE sql AS 'SELECT 43';
GRANT EXECUTE ON FUNCTION api.later2() TO it_pgrst_anon;
SQL
sleep 1
expect_error 'second function created without NOTIFY' 404 PGRST202 '/rpc/later2'
q "SELECT stream_ext.unexpose('clicks_per_url', 'api')" >/dev/null
reloaded /rpc/later2 200 || { echo "ASSERTION FAILED: unexpose() did not reload the schema cache" >&2; exit 1; }
echo "ok: after unexpose(): the schema cache was reloaded (rpc/later2 answers)"
expect_error 'unexposed view' 404 42P01 '/clicks_per_url'

# ---- confinement: what the anonymous role must not reach ----------------------
mrel=$(q "SELECT materialization FROM stream_ext.continuous_views WHERE name = 'clicks_per_minute'::regclass")
expect_error 'the stream' 404 42P01 '/clicks'
expect_error 'the materialization' 404 42P01 "/$mrel"
expect_error 'the continuous view by its own name in a schema not served' 406 PGRST106 \
	'/clicks_per_minute' -H 'Accept-Profile: public'
for rel in kafka_sources kafka_offsets dead_letters view_catalog continuous_views source_status; do
	expect_error "stream_ext.$rel" 404 42P01 "/$rel"
	expect_error "stream_ext.$rel via Accept-Profile" 406 PGRST106 "/$rel" -H 'Accept-Profile: stream_ext'
done
expect_error 'a stream_ext function over RPC' 404 PGRST202 '/rpc/expose?view=clicks'
expect_error 'a pg_catalog function over RPC' 404 PGRST202 '/rpc/pg_read_file?filename=/etc/passwd'
http '/clicks_per_minute' -X POST -H 'Content-Type: application/json' -d '{"url":"/x"}'
[[ $STATUS == 4* ]] || { echo "ASSERTION FAILED: POST to the API view answered $STATUS" >&2; exit 1; }
echo "ok: POST to the API view refused ($STATUS)"
# embedding: no relationship leads from the API view to anything else
http '/clicks_per_minute?select=*,clicks(*)&limit=1'
assert_eq 400 "$STATUS" "embedding the stream: refused"
# the OpenAPI description lists only the exposed API objects
http '/'
paths=$(grep -o '"/[a-z_0-9/]*"' <<<"$BODY" | sort -u | tr '\n' ' ')
assert_eq '"/" "/clicks_per_minute" "/rpc/later" "/rpc/later2" ' "$paths" "OpenAPI paths"
echo "all PostgREST checks passed"
