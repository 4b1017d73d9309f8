#!/usr/bin/env bash
# test/integration/bench_smoke.sh -- keeps the benchmark harness from rotting:
# bench/core.sh in BENCH_SMOKE mode (tiny row counts, one repetition, a few
# seconds) must run every workload, find every view equal to its query over
# the stream (core.sh fails otherwise), and print a row for each workload.
# It measures nothing worth reading; `make bench` does.
set -euo pipefail
source "$STREAM_EXT_ROOT/test/lib/integration.sh"
it_db bench_smoke

dir=$(mktemp -d "$STREAM_EXT_TMP/bench_smoke.XXXXXX")
chmod 0755 "$dir"
[[ $(id -u) -eq 0 ]] && chown postgres: "$dir"
trap 'rm -rf "$dir"' EXIT

BENCH_SMOKE=1 BENCH_RESULTS_DIR=$dir/results BENCH_DATA_DIR=$dir/data \
	bash "$STREAM_EXT_ROOT/bench/core.sh" >"$dir/out.md"
cat "$dir/out.md"

have_hop=$(q "SELECT count(*) FROM pg_proc WHERE proname = 'hop' AND pronamespace = 'stream_ext'::regnamespace")
for label in 'raw COPY/INSERT' 'W1: 1 view' 'W1 by a hand-written statement trigger' 'W1 by a hand-written row trigger' \
	'W2: by key' 'W3: no grouping' 'W4: 10 W1-style views' 'W4 by 10 hand-written' \
	'W1 over a stream that stores no rows' 'W4 over a stream that stores no rows'; do
	assert_eq 3 "$(grep -c "^| [0-9]* | $label" "$dir/out.md" || true)" "rows for '$label' (batches 10000, 100, 1)"
done
assert_eq 1 "$(grep -c '^| 10000 | W1 by REFRESH MATERIALIZED VIEW' "$dir/out.md" || true)" "REFRESH baseline row"
if [[ $(q "SELECT count(*) FROM pg_available_extensions WHERE name = 'hll'") -gt 0 ]]; then
	assert_eq 3 "$(grep -c '^| [0-9]* | W2 with hll_add_agg()' "$dir/out.md" || true)" "rows for W2 with hll (batches 10000, 100, 1)"
fi
if [[ $have_hop -gt 0 ]]; then
	assert_eq 3 "$(grep -c '^| [0-9]* | W5: hopping window' "$dir/out.md" || true)" "rows for W5"
else
	assert_eq 1 "$(grep -c 'W5 (hopping window): not available' "$dir/out.md" || true)" "W5 reported as not available"
fi
assert_eq 2 "$(grep -cE '^\| (raw COPY|W1: 1 view)[^|]*\| [0-9.]+ \| [0-9.]+ \|' "$dir/out.md" || true)" "latency rows"
assert_eq 8 "$(grep -c '^- W' "$dir/out.md" || true)" "target lines (issue #16: seven ratios and the p99)"
