#!/usr/bin/env bash
# bench/cdc.sh -- change data capture into a W1-style view, as a ratio to
# raw COPY (docs/benchmarks.md, docs/changelog.md).
#
# By hand, against any cluster where stream_ext is preloaded:
#     source /tmp/stream_ext.XXXXXX/env.sh      # from test/lib/cluster.sh start
#     bash bench/cdc.sh
#
# BENCH_CDC_EVENTS change events of a table (k int, ts timestamptz, v int)
# -- 50% inserts, 40% updates, 10% deletes, 1000 keys -- are turned into the
# signed rows of a changelog stream (an update is two rows: -old, +new) and
# loaded with \copy, one statement per 10,000 events, into
#   raw     the bare stream, no views, the same number of plain rows (the
#           floor, as in bench/core.sh)
#   w1      a plain stream with W1's view, the same number of plain rows
#   cdc_w1  a changelog stream with W1's view over it, the signed rows
# W1: SELECT k, date_bin('1 minute', ts, '2000-01-01') AS minute,
#     count(*), sum(v) FROM ev GROUP BY k, minute.
# BENCH_REPS repetitions, interleaved; medians, events/s, and each one's
# ratio to raw.  cdc_w1's view is checked against the table's final rows.
#
# Writes $BENCH_RESULTS_DIR/cdc.md (and cdc.tsv); prints the table.
set -euo pipefail

: "${STREAM_EXT_TMP:?STREAM_EXT_TMP must name a temp dir (source the cluster env.sh)}"
ROOT=${STREAM_EXT_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
EVENTS=${BENCH_CDC_EVENTS:-200000}
REPS=${BENCH_REPS:-3}
DB=bench_cdc

# PSQL, OUT, log, q, now, median (no broker is used)
# shellcheck source=kafka_lib.sh
source "$ROOT/bench/kafka_lib.sh"
bench_kafka_init cdc

work=$(mktemp -d "$STREAM_EXT_TMP/cdc-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

# ---- data: per batch of 10,000 events, the signed rows and as many plain rows
log "generating $EVENTS change events"
python3 - "$EVENTS" "$work" <<'EOF'
import random, sys
from datetime import datetime, timedelta, timezone
n, out = int(sys.argv[1]), sys.argv[2]
random.seed(20)
rows = {}          # id -> (k, ts, v): the table
ids = []
nxt = 0
base = datetime(2026, 1, 1, tzinfo=timezone.utc)
def ts(i):
    # event time advances 4 ms an event
    return (base + timedelta(milliseconds=4 * i)).isoformat()
batch = 0
for start in range(0, n, 10000):
    signed, plain = [], []
    for i in range(start, min(n, start + 10000)):
        x = random.random()
        t = ts(i)
        if x < 0.5 or not ids:
            r = (nxt % 1000, t, random.randint(0, 999))
            rows[nxt] = r; ids.append(nxt); nxt += 1
            signed.append((*r, 1))
        elif x < 0.9:
            j = ids[random.randrange(len(ids))]
            old = rows[j]
            new = (old[0], t if random.random() < 0.5 else old[1], random.randint(0, 999))
            rows[j] = new
            signed.append((*old, -1)); signed.append((*new, 1))
        else:
            p = random.randrange(len(ids))
            j = ids[p]; ids[p] = ids[-1]; ids.pop()
            signed.append((*rows.pop(j), -1))
        plain.append((i % 1000, t, random.randint(0, 999)))
    with open("%s/signed.%06d.csv" % (out, batch), "w") as f:
        f.writelines("%d,%s,%d,%d\n" % r for r in signed)
    with open("%s/plain.%06d.csv" % (out, batch), "w") as f:
        f.writelines("%d,%s,%d\n" % r for r in plain)
    batch += 1
with open("%s/final.csv" % out, "w") as f:
    f.writelines("%d,%s,%d\n" % r for r in rows.values())
EOF
nsigned=$(cat "$work"/signed.*.csv | wc -l)
log "$EVENTS events are $nsigned signed rows"

"${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" >/dev/null
q "CREATE EXTENSION stream_ext" >/dev/null
W1="SELECT k, date_bin('1 minute', ts, '2000-01-01') AS minute, count(*) AS n, sum(v) AS s FROM ev GROUP BY k, minute"

setup() {
	q "DROP TABLE IF EXISTS ev CASCADE" >/dev/null
	case $1 in
		raw) q "SELECT stream_ext.create_stream('ev', 'k int, ts timestamptz, v int')" >/dev/null ;;
		w1) q "SELECT stream_ext.create_stream('ev', 'k int, ts timestamptz, v int')" >/dev/null
			q "CREATE VIEW w1 WITH (continuous) AS $W1" >/dev/null ;;
		cdc_w1) q "SELECT stream_ext.create_stream('ev', 'k int, ts timestamptz, v int', changelog => true)" >/dev/null
			q "CREATE VIEW w1 WITH (continuous) AS $W1" >/dev/null ;;
	esac
	q "CHECKPOINT" >/dev/null
}

load() {				# workload -> seconds
	local w=$1 script=$work/load.sql t0 t1
	: >"$script"
	for f in "$work"/$([[ $w == cdc_w1 ]] && echo signed || echo plain).*.csv; do
		if [[ $w == cdc_w1 ]]; then
			echo "\\copy ev (k, ts, v, stream_ext_sign) FROM '$f' (FORMAT csv)" >>"$script"
		else
			echo "\\copy ev (k, ts, v) FROM '$f' (FORMAT csv)" >>"$script"
		fi
	done
	t0=$(now)
	"${PSQL[@]}" -d "$DB" -f "$script"
	t1=$(now)
	echo "$t1 - $t0" | bc -l
}

: >"$OUT/cdc.tsv"
for rep in $(seq "$REPS"); do
	for w in raw w1 cdc_w1; do
		setup "$w"
		t=$(load "$w")
		log "rep $rep: $w ${t}s"
		printf '%s\t%s\n' "$w" "$t" >>"$OUT/cdc.tsv"
	done
done

# the changelog view equals W1 over the table's final rows
diff=$("${PSQL[@]}" -d "$DB" -A -t <<EOF
CREATE TEMP TABLE final (k int, ts timestamptz, v int);
\\copy final FROM '$work/final.csv' (FORMAT csv)
SELECT count(*) FROM ((TABLE w1 EXCEPT ALL ${W1//FROM ev/FROM final})
                      UNION ALL (${W1//FROM ev/FROM final} EXCEPT ALL TABLE w1)) d;
EOF
)
if [[ $diff != 0 ]]; then
	log "WRONG RESULT: the changelog view differs from W1 over the table's rows in $diff rows"
	exit 1
fi

raw_s=$(awk -F'\t' '$1 == "raw" { print $2 }' "$OUT/cdc.tsv" | median)
{
	echo "CDC into a W1-style view, $EVENTS change events (50% inserts, 40% updates, 10% deletes: $nsigned signed rows),"
	echo "\\copy per 10,000 events; raw and w1 load as many plain rows; medians of $REPS, one run on a shared machine:"
	echo
	echo "| workload | seconds | events/s | ratio to raw COPY |"
	echo "| --- | ---: | ---: | ---: |"
	for w in raw w1 cdc_w1; do
		s=$(awk -F'\t' -v w="$w" '$1 == w { print $2 }' "$OUT/cdc.tsv" | median)
		printf '| %s | %.2f | %.0f | %.2f |\n' "$w" "$s" "$(echo "$EVENTS / $s" | bc -l)" \
			"$(echo "$raw_s / $s" | bc -l)"
	done
} >"$OUT/cdc.md"
cat "$OUT/cdc.md"
