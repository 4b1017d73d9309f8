# shellcheck shell=bash
# test/lib/common.sh -- shared helpers for run-tests.sh, demo.sh and cluster.sh.
#
# Source it; it defines no side effects beyond variables and functions:
#   STREAM_EXT_ROOT   repository root (absolute)
#   msg / warn / die  messages on stderr, prefixed "stream_ext:"
#   pg_env            resolves PG_CONFIG, PG_BINDIR, PGXS_DIR, PG_REGRESS,
#                     PG_ISOLATION_REGRESS, PG_PERL_DIR (call after deps.sh);
#                     with STREAM_EXT_PGROOT=DIR set, first makes DIR a private
#                     copy of the PostgreSQL installation (see pg_private_root)
#   build_install LOG builds the module (and test/broker), installs it;
#                     output goes to LOG, tail printed on failure
#   as_postgres CMD   runs CMD as the postgres OS user when we are root

STREAM_EXT_ROOT=${STREAM_EXT_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
export STREAM_EXT_ROOT

msg()  { printf 'stream_ext: %s\n' "$*" >&2; }
warn() { printf 'stream_ext: WARNING: %s\n' "$*" >&2; }
die()  { printf 'stream_ext: ERROR: %s\n' "$*" >&2; exit 1; }

# PostgreSQL 15 is the target.  Never trust PATH for the server binaries
# (/usr/local/bin may hold stray copies of initdb/pg_ctl/postgres): every
# server binary is taken from $(pg_config --bindir).
pg_env() {
	if [[ -z ${PG_CONFIG:-} ]]; then
		if [[ -x /usr/lib/postgresql/15/bin/pg_config ]]; then
			PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
		else
			PG_CONFIG=$(command -v pg_config || true)
		fi
	fi
	[[ -n $PG_CONFIG && -x $PG_CONFIG ]] ||
		die "pg_config not found; run test/lib/deps.sh (as root) first"
	if [[ -n ${STREAM_EXT_PGROOT:-} ]]; then
		pg_private_root "$STREAM_EXT_PGROOT"
	fi
	PG_BINDIR=$("$PG_CONFIG" --bindir)
	PGXS_DIR=$(dirname "$("$PG_CONFIG" --pgxs)")     # .../lib/pgxs/src/makefiles
	PG_REGRESS=$(cd "$PGXS_DIR/../test/regress" && pwd)/pg_regress
	PG_ISOLATION_REGRESS=$(cd "$PGXS_DIR/../test/isolation" && pwd)/pg_isolation_regress
	PG_PERL_DIR=$(cd "$PGXS_DIR/../test/perl" && pwd)
	export PG_CONFIG PG_BINDIR PGXS_DIR PG_REGRESS PG_ISOLATION_REGRESS PG_PERL_DIR
}

# STREAM_EXT_PGROOT=DIR: build, install and test against a private copy of
# the PostgreSQL installation under DIR instead of the system one, so that
# several checkouts (git worktrees) can be tested side by side without
# overwriting each other's stream_ext.so.  PostgreSQL's installation is
# relocatable (like its own tmp_install): the copy's pg_config and postgres
# find lib/, share/ and include/ relative to their own location.  The copy is
# made once (about 50 MB) and reused; PG_CONFIG then points into it.
pg_private_root() {
	local root=$1
	mkdir -p "$root"
	root=$(cd "$root" && pwd)
	if [[ ! -x $root/bin/pg_config ]]; then
		local sys_bin sys_lib sys_share sys_inc
		sys_bin=$("$PG_CONFIG" --bindir)
		sys_lib=$("$PG_CONFIG" --pkglibdir)
		sys_share=$("$PG_CONFIG" --sharedir)
		sys_inc=$("$PG_CONFIG" --pkgincludedir)
		mkdir -p "$root/tree"
		local p
		for p in "$(dirname "$sys_bin")" "$sys_lib" "$sys_share" "$sys_inc"; do
			mkdir -p "$root/tree$(dirname "$p")"
			[[ -e $root/tree$p ]] || cp -a "$p" "$root/tree$p"
		done
		ln -sfn "tree$sys_bin" "$root/bin"
		msg "private PostgreSQL installation in $root"
	else
		pg_private_refresh "$root"
	fi
	PG_CONFIG=$(readlink -f "$root/bin")/pg_config
	chmod -R a+rX "$root"
}

# An existing private copy gets the extensions installed into the system
# PostgreSQL since it was made (apt-get install postgresql-15-hll): every
# file of the system's pkglibdir and share/extension/ that is missing from
# the copy or newer than the copy's is copied over.  stream_ext's own files
# are left alone (the copy has this checkout's build).
pg_private_refresh() {
	local root=$1 dir rel n=0
	# already pointed into the copy (a nested call of pg_env): nothing to do
	[[ $(readlink -f "$PG_CONFIG") == "$(readlink -f "$root")"/* ]] && return 0
	for dir in "$("$PG_CONFIG" --pkglibdir)" "$("$PG_CONFIG" --sharedir)/extension"; do
		while IFS= read -r -d '' rel; do
			[[ -e $root/tree$dir/$rel && ! $dir/$rel -nt $root/tree$dir/$rel ]] && continue
			mkdir -p "$(dirname "$root/tree$dir/$rel")"
			cp -a "$dir/$rel" "$root/tree$dir/$rel"
			n=$((n + 1))
		done < <(cd "$dir" && find . ! -type d ! -name 'stream_ext*' -print0)
	done
	[[ $n -eq 0 ]] || msg "private PostgreSQL installation in $root: $n new file(s) from the system's"
}

is_root() { [[ $(id -u) -eq 0 ]]; }

# Run a command as the postgres OS user (PostgreSQL refuses to run as root).
# The working directory is moved somewhere postgres can read, so that initdb
# and friends don't complain about an inaccessible cwd.
as_postgres() {
	if is_root; then
		(cd "${STREAM_EXT_TMP:-/tmp}" && runuser -u postgres -- "$@")
	else
		"$@"
	fi
}

# Build and install the extension; build test/broker if it exists.
# Returns non-zero (after printing the log tail) on failure.
build_install() {
	local log=$1 make=${MAKE:-make} jobs
	jobs=$(nproc 2>/dev/null || echo 2)
	: >"$log"
	msg "building (log: ${log#"$STREAM_EXT_ROOT"/})"
	if ! { "$make" -C "$STREAM_EXT_ROOT" PG_CONFIG="$PG_CONFIG" -j"$jobs" &&
	       "$make" -C "$STREAM_EXT_ROOT" PG_CONFIG="$PG_CONFIG" install; } >>"$log" 2>&1; then
		tail -n 60 "$log" >&2
		msg "build/install failed; full log: $log"
		return 1
	fi
	if [[ -f $STREAM_EXT_ROOT/test/broker/Makefile ]]; then
		if ! "$make" -C "$STREAM_EXT_ROOT/test/broker" >>"$log" 2>&1; then
			tail -n 40 "$log" >&2
			msg "test/broker build failed; full log: $log"
			return 1
		fi
	fi
	local nwarn
	nwarn=$(grep -c 'warning:' "$log" || true)
	if [[ $nwarn -gt 0 ]]; then
		msg "build ok, $nwarn compiler warning(s):"
		grep 'warning:' "$log" | head -n 20 >&2
	else
		msg "build ok, installed into $("$PG_CONFIG" --pkglibdir)"
	fi
}
