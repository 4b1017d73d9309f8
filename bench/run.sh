#!/usr/bin/env bash
# bench/run.sh -- stream_ext benchmarks (`make bench`).
#
#   build + install (as root; otherwise the installed module is used) ->
#   throwaway cluster (test/lib/cluster.sh) ->
#     bench/core.sh    W1-W5: ingest throughput of continuous views against
#                      raw COPY, hand-written statement and row triggers and
#                      REFRESH MATERIALIZED VIEW, batches of 1, 100 and 10,000
#                      rows; peak RSS; produce->visible latency
#     bench/kafka.sh   W6: Kafka ingest against kcat | psql COPY, latency,
#                      worker memory (when it exists and is executable)
#   -> results table on stdout and in bench/results/latest.md (gitignored)
#   -> the cluster is stopped and removed on exit (trap).
#
# Benchmarks report figures and ratios; they never pass or fail on absolute
# times.  Exit 0 unless something broke (build, cluster, a benchmark script
# failing or finding wrong results).
#
# Contract for the benchmark scripts: they run with the cluster's environment
# (PGHOST PGPORT PGUSER PGDATABASE PG_BINDIR STREAM_EXT_ROOT STREAM_EXT_TMP,
# STREAM_EXT_BROKER; also in $STREAM_EXT_TMP/env.sh) plus BENCH_RESULTS_DIR,
# a directory for their output.  Progress goes to stderr; a script that
# writes BENCH_RESULTS_DIR/<name>.md (markdown) gets it included in the
# report, in the order above.
#
# Environment: BENCH_SKIP_BUILD=1 skips build/install; BENCH_KAFKA=0 skips
# bench/kafka.sh; BENCH_SMOKE=1 runs everything tiny (seconds; checks the
# harness, measures nothing); other BENCH_* variables are passed on to the
# scripts (see bench/core.sh and bench/kafka.sh).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export STREAM_EXT_ROOT=$ROOT
# shellcheck source=../test/lib/common.sh
source "$ROOT/test/lib/common.sh"
# shellcheck source=../test/lib/cluster.sh
source "$ROOT/test/lib/cluster.sh"

pg_env
OUTDIR=$ROOT/bench/results
mkdir -p "$OUTDIR"

if [[ -z ${BENCH_SKIP_BUILD:-} ]]; then
	if is_root; then
		build_install "$OUTDIR/build.log" || die "build failed"
	else
		warn "not root: not installing; benchmarking the installed $("$PG_CONFIG" --pkglibdir)/stream_ext.so"
	fi
fi
[[ -f $("$PG_CONFIG" --pkglibdir)/stream_ext.so ]] || die "stream_ext is not installed (run make install as root)"

scratch_create
trap cluster_cleanup EXIT
cluster_start
export PG_BINDIR
export BENCH_RESULTS_DIR=$STREAM_EXT_TMP/bench-results
mkdir -p "$BENCH_RESULTS_DIR"

broken=()
run_bench() {
	local name=$1 script=$ROOT/bench/$1.sh t0=$SECONDS
	msg "bench/$name.sh"
	if (cd "$STREAM_EXT_TMP" && bash "$script") >"$BENCH_RESULTS_DIR/$name.stdout"; then
		msg "bench/$name.sh done in $((SECONDS - t0)) s"
	else
		warn "bench/$name.sh failed (exit $?) after $((SECONDS - t0)) s"
		broken+=("$name")
	fi
	# a script that wrote no markdown gets its stdout in the report
	if [[ ! -s $BENCH_RESULTS_DIR/$name.md && -s $BENCH_RESULTS_DIR/$name.stdout ]]; then
		{ echo '```'; cat "$BENCH_RESULTS_DIR/$name.stdout"; echo '```'; } >"$BENCH_RESULTS_DIR/$name.md"
	fi
}

if [[ -n ${BENCH_SMOKE:-} ]]; then
	export BENCH_KAFKA_MSGS=${BENCH_KAFKA_MSGS:-2000} BENCH_KAFKA_SECONDS=${BENCH_KAFKA_SECONDS:-1}
	export BENCH_KAFKA_RSS_PASSES=${BENCH_KAFKA_RSS_PASSES:-2} BENCH_REPS=${BENCH_REPS:-1}
fi
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
run_bench core
if [[ ${BENCH_KAFKA:-1} == 0 ]]; then
	msg "BENCH_KAFKA=0: bench/kafka.sh skipped"
elif [[ -x $ROOT/bench/kafka.sh ]]; then
	run_bench kafka
else
	msg "bench/kafka.sh absent or not executable; skipped"
fi

# ---- the report ---------------------------------------------------------------
cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -n 1)
mem=$(awk '/^MemTotal:/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)
commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git -C "$ROOT" status --porcelain --untracked-files=no -- src 2>/dev/null | head -n 1)
pgver=$("$PG_BINDIR/postgres" --version)
{
	echo "# stream_ext benchmark results"
	echo
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "- commit: $commit${dirty:+ (src/ has uncommitted changes)}"
	echo "- machine: $(nproc) cores ($cpu), $mem RAM"
	echo "- server: $pgver; fsync=off, synchronous_commit=off, full_page_writes=off (test/lib/cluster.sh)"
	echo "- load average (1, 5, 15 min) before / after: $load_before / $(cut -d' ' -f1-3 /proc/loadavg)"
	[[ -z ${BENCH_SMOKE:-} ]] || echo "- **smoke mode** (BENCH_SMOKE=1): tiny loads, one repetition; these figures mean nothing"
	for name in core kafka; do
		[[ -s $BENCH_RESULTS_DIR/$name.md ]] || continue
		echo
		case $name in
		core) echo "## bench/core.sh (W1-W5)" ;;
		kafka) echo "## bench/kafka.sh (W6: Kafka -> continuous view)" ;;
		esac
		echo
		cat "$BENCH_RESULTS_DIR/$name.md"
	done
	if [[ ${#broken[@]} -gt 0 ]]; then
		echo
		echo "**Broken:** ${broken[*]} (see the log above)"
	fi
} >"$OUTDIR/latest.md"
cp "$BENCH_RESULTS_DIR"/*.tsv "$OUTDIR"/ 2>/dev/null || true

echo
cat "$OUTDIR/latest.md"
echo
msg "report written to ${OUTDIR#"$ROOT"/}/latest.md"
[[ ${#broken[@]} -eq 0 ]] || die "broken: ${broken[*]}"
