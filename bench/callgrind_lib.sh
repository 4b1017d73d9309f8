# bench/callgrind_lib.sh -- what bench/callgrind.sh and bench/callgrind_reads.sh
# share: a scratch directory, a base cluster for single-user backends
# (postgres --single, no background compaction, no compaction by
# threshold), and running statements in one.  Sourced after
# test/lib/common.sh and pg_env.
#
#   cg_scratch NAME    SCRATCH=/tmp/stream_ext_NAME.XXXXXX, removed on exit
#                      unless CG_KEEP is set
#   cg_initdb          initdb $SCRATCH/base with those settings
#   single DATADIR     a single-user backend, statements on stdin (one a line)

command -v valgrind >/dev/null || die "valgrind is not installed (apt-get install valgrind)"
[[ -f $("$PG_CONFIG" --pkglibdir)/stream_ext.so ]] || die "stream_ext is not installed (make install)"

cg_scratch() {
	SCRATCH=$(mktemp -d "/tmp/stream_ext_$1.XXXXXX")
	is_root && chown postgres: "$SCRATCH"
	[[ -n ${CG_KEEP:-} ]] || trap 'rm -rf "$SCRATCH"' EXIT
}

single() {	# single DATADIR < statements (one a line)
	as_postgres "$PG_BINDIR/postgres" --single -D "$1" postgres
}

cg_initdb() {
	as_postgres "$PG_BINDIR/initdb" --no-locale -E UTF8 -D "$SCRATCH/base" >/dev/null 2>&1
	cat >>"$SCRATCH/base/postgresql.conf" <<'CONF'
shared_preload_libraries = 'stream_ext'
fsync = off
synchronous_commit = off
full_page_writes = off
stream_ext.background_compaction = off
stream_ext.compact_threshold = -1
CONF
}
