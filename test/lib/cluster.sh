#!/usr/bin/env bash
# test/lib/cluster.sh -- a throwaway PostgreSQL 15 cluster for tests and demo.
#
# As a library (source it after common.sh, call pg_env first):
#   scratch_create     make $STREAM_EXT_TMP, a fresh temp dir owned by postgres
#   cluster_start      initdb + start a server in $STREAM_EXT_TMP/data on a free
#                      127.0.0.1 port; exports PGHOST PGPORT PGUSER PGDATABASE
#                      and writes $STREAM_EXT_TMP/env.sh for other scripts
#   cluster_cleanup    stop the server and remove $STREAM_EXT_TMP (idempotent;
#                      install it with `trap cluster_cleanup EXIT`)
#
# As a command (for developers poking at things by hand):
#   test/lib/cluster.sh start     start one, print the env file to source
#   test/lib/cluster.sh stop DIR  stop it and remove DIR (the printed temp dir)
#
# The extension must already be installed (make install) before start:
# shared_preload_libraries names stream_ext and pg_cron.  pg_cron runs in the
# "postgres" database (cron.database_name); a test that needs pg_cron does
# CREATE EXTENSION pg_cron there.
#
# Extra settings: test/lib/cluster.conf is appended to postgresql.conf; so is
# the file named by $STREAM_EXT_EXTRA_CONF, if set.
#
# PostgreSQL refuses to run as root: initdb/pg_ctl run as the postgres OS
# user, always from $(pg_config --bindir), never from PATH.

STREAM_EXT_TMPBASE=${STREAM_EXT_TMPBASE:-${TMPDIR:-/tmp}}
_cluster_started=
_cluster_owned_tmp=

# Remove temp dirs left by runs that were killed before their trap ran (their
# owner process is gone).  Dirs marked "keep" (cluster.sh start) are left alone.
scratch_reap_stale() {
	local d pid
	for d in "$STREAM_EXT_TMPBASE"/stream_ext.*; do
		[[ -d $d && -f $d/owner.pid && ! -e $d/keep ]] || continue
		pid=$(<"$d/owner.pid")
		[[ $pid =~ ^[0-9]+$ ]] || continue
		kill -0 "$pid" 2>/dev/null && continue
		if [[ -f $d/data/postmaster.pid ]]; then
			STREAM_EXT_TMP=$d as_postgres "$PG_BINDIR/pg_ctl" -D "$d/data" \
				stop -m immediate -w -t 30 >/dev/null 2>&1 || true
		fi
		rm -rf -- "$d"
	done
}

scratch_create() {
	scratch_reap_stale
	STREAM_EXT_TMP=$(mktemp -d "$STREAM_EXT_TMPBASE/stream_ext.XXXXXX")
	chmod 0755 "$STREAM_EXT_TMP"
	echo $$ >"$STREAM_EXT_TMP/owner.pid"
	if is_root; then
		chown postgres: "$STREAM_EXT_TMP"
	fi
	_cluster_owned_tmp=1
	export STREAM_EXT_TMP
}

# Is something listening on 127.0.0.1:$1 ?
_port_in_use() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

cluster_start() {
	[[ -n ${STREAM_EXT_TMP:-} ]] || scratch_create
	local data=$STREAM_EXT_TMP/data log=$STREAM_EXT_TMP/server.log
	local port=${STREAM_EXT_PORT:-55432} tries=0

	if ! as_postgres "$PG_BINDIR/initdb" -D "$data" -U postgres -A trust \
			-E UTF8 --no-locale --no-sync >"$STREAM_EXT_TMP/initdb.log" 2>&1; then
		cat "$STREAM_EXT_TMP/initdb.log" >&2
		die "initdb failed"
	fi

	cat >"$data/pg_hba.conf" <<-EOF
		# written by test/lib/cluster.sh: trust, local and loopback only
		local all         all                trust
		host  all         all  127.0.0.1/32  trust
		local replication all                trust
		host  replication all  127.0.0.1/32  trust
	EOF
	{
		echo
		echo "# ---- test/lib/cluster.sh ----"
		echo "listen_addresses = '127.0.0.1'"
		echo "unix_socket_directories = '$STREAM_EXT_TMP'"
		echo "shared_preload_libraries = 'stream_ext,pg_cron'"
		echo "cron.database_name = 'postgres'"
		echo "max_worker_processes = 32"
		echo "fsync = off"
		echo "synchronous_commit = off"
		echo "full_page_writes = off"
		echo "log_line_prefix = '%m [%p] %q%a@%d '"
		echo "include_if_exists = 'port.conf'"
		if [[ -f $STREAM_EXT_ROOT/test/lib/cluster.conf ]]; then
			echo "# ---- test/lib/cluster.conf ----"
			cat "$STREAM_EXT_ROOT/test/lib/cluster.conf"
		fi
		if [[ -n ${STREAM_EXT_EXTRA_CONF:-} ]]; then
			echo "# ---- $STREAM_EXT_EXTRA_CONF ----"
			cat "$STREAM_EXT_EXTRA_CONF"
		fi
	} >>"$data/postgresql.conf"
	is_root && chown postgres: "$data/pg_hba.conf" "$data/postgresql.conf"

	# Pick a free port; another run may grab the same one between our check
	# and the bind, so a start that fails with "Address already in use" moves
	# on to the next port.
	while :; do
		tries=$((tries + 1))
		[[ $tries -le 50 ]] || die "no free port found from ${STREAM_EXT_PORT:-55432} upward"
		if _port_in_use "$port"; then
			port=$((port + 1))
			continue
		fi
		echo "port = $port" >"$data/port.conf"
		is_root && chown postgres: "$data/port.conf"
		: >"$log"
		is_root && chown postgres: "$log"
		if as_postgres "$PG_BINDIR/pg_ctl" -D "$data" -l "$log" -w -t 120 start >/dev/null 2>&1; then
			break
		fi
		if grep -q 'Address already in use' "$log"; then
			port=$((port + 1))
			continue
		fi
		tail -n 40 "$log" >&2
		die "server failed to start (log: $log)"
	done
	_cluster_started=1

	export PGHOST=127.0.0.1 PGPORT=$port PGUSER=postgres PGDATABASE=postgres
	export STREAM_EXT_PGDATA=$data
	local broker=
	[[ -x $STREAM_EXT_ROOT/test/broker/stream_ext_broker ]] &&
		broker=$STREAM_EXT_ROOT/test/broker/stream_ext_broker
	export STREAM_EXT_BROKER=$broker
	cat >"$STREAM_EXT_TMP/env.sh" <<-EOF
		# environment of the stream_ext test cluster (source me)
		export PGHOST=127.0.0.1
		export PGPORT=$port
		export PGUSER=postgres
		export PGDATABASE=postgres
		export PG_BINDIR='$PG_BINDIR'
		export PATH='$PG_BINDIR':"\$PATH"
		export STREAM_EXT_ROOT='$STREAM_EXT_ROOT'
		export STREAM_EXT_TMP='$STREAM_EXT_TMP'
		export STREAM_EXT_PGDATA='$data'
		export STREAM_EXT_BROKER='$broker'
	EOF
	chmod 0644 "$STREAM_EXT_TMP/env.sh"
	msg "cluster up on 127.0.0.1:$port (data: $data, log: $log)"
}

cluster_stop() {
	[[ -n $_cluster_started && -n ${STREAM_EXT_TMP:-} ]] || return 0
	local data=$STREAM_EXT_TMP/data pid
	# what the demo left running (STREAM_EXT_KEEP_CLUSTER=1): PostgREST, and
	# the dashboard's PostgREST, static server, Kafka producer and broker
	local f
	for f in "$STREAM_EXT_TMP"/postgrest/postgrest.pid "$STREAM_EXT_TMP"/dashboard/*.pid; do
		[[ -f $f ]] || continue
		pid=$(<"$f")
		[[ $pid =~ ^[0-9]+$ ]] && kill "$pid" 2>/dev/null
		rm -f "$f"
	done
	if [[ -f $data/postmaster.pid ]]; then
		as_postgres "$PG_BINDIR/pg_ctl" -D "$data" stop -m fast -w -t 60 >/dev/null 2>&1 ||
			as_postgres "$PG_BINDIR/pg_ctl" -D "$data" stop -m immediate -w -t 30 >/dev/null 2>&1 ||
			warn "could not stop the server in $data"
	fi
	_cluster_started=
	# Keep the server log where developers can find it after the temp dir goes.
	if [[ -d $STREAM_EXT_ROOT/test/tmp && -f $STREAM_EXT_TMP/server.log ]]; then
		cp "$STREAM_EXT_TMP/server.log" "$STREAM_EXT_ROOT/test/tmp/server.log" 2>/dev/null || true
	fi
}

cluster_cleanup() {
	cluster_stop
	if [[ -n $_cluster_owned_tmp && -n ${STREAM_EXT_TMP:-} && -d $STREAM_EXT_TMP ]]; then
		rm -rf -- "$STREAM_EXT_TMP"
	fi
	_cluster_owned_tmp=
}

# ---- command-line use ------------------------------------------------------
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	set -euo pipefail
	# shellcheck source=common.sh
	source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
	pg_env
	case ${1:-} in
	start)
		scratch_create
		trap cluster_cleanup EXIT
		cluster_start
		touch "$STREAM_EXT_TMP/keep"
		trap - EXIT
		echo "source $STREAM_EXT_TMP/env.sh"
		msg "stop with: $0 stop $STREAM_EXT_TMP"
		;;
	stop)
		d=${2:?usage: $0 stop DIR}
		[[ -d $d/data && $(basename "$d") == stream_ext.* ]] || die "$d is not a cluster.sh temp dir"
		STREAM_EXT_TMP=$d
		_cluster_started=1
		_cluster_owned_tmp=1
		cluster_cleanup
		msg "stopped and removed $d"
		;;
	*)
		echo "usage: $0 start | stop DIR" >&2
		exit 2
		;;
	esac
fi
