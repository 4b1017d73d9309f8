#!/usr/bin/env bash
# bench/core.sh -- ingest throughput of streams and continuous views, and the
# baselines a user would otherwise use, measured side by side in one run.
#
# Run by bench/run.sh against its throwaway cluster; it can also be run by
# hand against any cluster where stream_ext is preloaded:
#     source /tmp/stream_ext.XXXXXX/env.sh      # from test/lib/cluster.sh start
#     bash bench/core.sh
#
# All workloads use the same stream  ev(k int, ts timestamptz, v int)  with
# 1000 keys, event time advancing 4 ms per row (a 10,000-row batch spans
# ~40 s of event time) with +-2 s of disorder:
#   raw      the bare stream, no views: the floor
#   w1       1 continuous view: count(*), sum(v) by k, minute
#   w1_hand  no view; a hand-written plpgsql statement-level AFTER INSERT
#            trigger with a transition table doing INSERT ... SELECT ...
#            GROUP BY ... ON CONFLICT DO UPDATE into a summary table
#   w1_row   no view; a hand-written row-level AFTER INSERT trigger doing one
#            INSERT ... ON CONFLICT DO UPDATE per row
#   w2       1 continuous view by k: count(*), avg(v), max(v), count(DISTINCT v)
#   w2_hll   W2 with an approximate distinct count instead: the HLL sketch
#            hll_add_agg(hll_hash_integer(v)) of postgresql-15-hll through
#            the generic aggregate path (skipped when hll is not installed;
#            checked: the other columns exact, hll_cardinality() within 5%)
#   w3       1 continuous view without GROUP BY: count(*), sum, min, max
#   w4       10 continuous views (W1-style), each a different aggregate mix
#   w4_hand  the hand-written statement trigger for each of w4's views
#   w5       1 hopping-window view: stream_ext.hop(ts, '10 min', '2 min'),
#            count(*), sum(v) by k, window (skipped when stream_ext.hop()
#            does not exist)
#   w1_hash, w4_hash   w1 and w4 with their views created under
#            stream_ext.delta_key_index = hash (a hash index on the delta's
#            first key instead of the btree on its keys)
#   w1_noretain, w4_noretain   w1 and w4 over a stream that stores no rows
#            (create_stream(..., retain => false)).  Their views are checked against the same query over the input
#            rows themselves, the stream being empty.
# Batch sizes (BENCH_BATCHES):
#   10000, 100   server-side COPY ev (k, ts, v) FROM '<file>' per batch,
#                one statement (= one transaction) per batch
#   1            single-row INSERT ... VALUES statements
# Besides (batch 10000 only):
#   w1_refresh   REFRESH MATERIALIZED VIEW of W1's query over a table of
#                BENCH_REFRESH_BASE (2M) rows after every 10,000-row COPY
#   latency      produce -> visible at BENCH_LAT_RATE (50,000) rows/s for
#                BENCH_LAT_SECONDS s, batches of BENCH_LAT_BATCH rows, for raw
#                and w1 (see latency_sql below)
#
# Every measurement starts from a freshly created stream (and views), inserts
# one warm-up row (so that maintenance plans are prepared), runs CHECKPOINT,
# then times the whole load with clock_timestamp() in that same session, and
# records the backend's peak RSS (VmHWM; it counts the shared buffers the
# backend touched too).  After the load the stream and the first view are
# checked against the same query over the stream (a wrong result is an
# error).  Measurements are repeated BENCH_REPS times, interleaved (rep 1 of
# everything, then rep 2, ...); medians and max/min spread are reported.
#
# Environment (all optional):
#   BENCH_REPS=5  BENCH_ROWS_10000=500000  BENCH_ROWS_100=50000  BENCH_ROWS_1=3000
#   BENCH_WORKLOADS="raw w1 w1_hand w1_row w2 w2_hll w3 w4 w4_hand w5 w1_noretain w4_noretain"
#   (w1_hash w4_hash on request)
#   BENCH_BATCHES="10000 100 1"   BENCH_ROW_TRIGGER_SHARE=4 (w1_row loads
#   1/4 of the rows: it is slow)
#   BENCH_REFRESH=1  BENCH_REFRESH_BASE=2000000  BENCH_REFRESH_BATCHES=3
#   BENCH_LAT=1  BENCH_LAT_RATE=50000  BENCH_LAT_SECONDS=5  BENCH_LAT_BATCH=1000
#   BENCH_SMOKE=1   a few seconds in all: tiny row counts, 1 rep (checks the
#                   harness, not the speed)
#   BENCH_DATA_DIR     where the input files go (default $STREAM_EXT_TMP/bench-data)
#   BENCH_RESULTS_DIR  where core.tsv (every measurement) and core.md (the
#                      tables) go; default $STREAM_EXT_TMP/bench-results
# Needs PGHOST/PGPORT/PGUSER/PGDATABASE (a superuser: server-side COPY,
# CHECKPOINT, pg_read_file of /proc), PG_BINDIR and STREAM_EXT_TMP (a
# directory the server can write).
#
# Prints the tables on stdout, progress on stderr.  Reports ratios; exits
# non-zero only when something broke (an error, or a wrong result).
set -euo pipefail

: "${STREAM_EXT_TMP:?STREAM_EXT_TMP must name the cluster temp dir (source its env.sh)}"
PG_BINDIR=${PG_BINDIR:-$(pg_config --bindir)}
PSQL=("$PG_BINDIR/psql" -X -q -v ON_ERROR_STOP=1)

if [[ -n ${BENCH_SMOKE:-} ]]; then
	: "${BENCH_REPS:=1}" "${BENCH_ROWS_10000:=40000}" "${BENCH_ROWS_100:=2000}" "${BENCH_ROWS_1:=100}"
	: "${BENCH_REFRESH_BASE:=20000}" "${BENCH_REFRESH_BATCHES:=1}" "${BENCH_LAT_SECONDS:=1}" "${BENCH_LAT_RATE:=5000}"
fi
REPS=${BENCH_REPS:-5}
WORKLOADS=${BENCH_WORKLOADS:-raw w1 w1_hand w1_row w2 w2_hll w3 w4 w4_hand w5 w1_noretain w4_noretain}
BATCHES=${BENCH_BATCHES:-10000 100 1}
ROW_SHARE=${BENCH_ROW_TRIGGER_SHARE:-4}
declare -A ROWS=(
	[10000]=${BENCH_ROWS_10000:-500000}
	[100]=${BENCH_ROWS_100:-50000}
	[1]=${BENCH_ROWS_1:-3000}
)
REFRESH=${BENCH_REFRESH:-1}
REFRESH_BASE=${BENCH_REFRESH_BASE:-2000000}
REFRESH_BATCHES=${BENCH_REFRESH_BATCHES:-3}
LAT=${BENCH_LAT:-1}
LAT_RATE=${BENCH_LAT_RATE:-50000}
LAT_SECONDS=${BENCH_LAT_SECONDS:-5}
LAT_BATCH=${BENCH_LAT_BATCH:-1000}
RES=${BENCH_RESULTS_DIR:-$STREAM_EXT_TMP/bench-results}
DATA=${BENCH_DATA_DIR:-$STREAM_EXT_TMP/bench-data}
SCHEMA=bench

say() { printf 'bench/core: %s\n' "$*" >&2; }
die() { printf 'bench/core: ERROR: %s\n' "$*" >&2; exit 1; }

for b in $BATCHES; do
	[[ -n ${ROWS[$b]:-} ]] || die "unknown batch size $b (known: ${!ROWS[*]})"
	((ROWS[$b] % b == 0)) || die "BENCH_ROWS_$b=${ROWS[$b]} is not a multiple of $b"
done

mkdir -p "$RES" "$DATA"
# the server writes the CSV files
[[ $(id -u) -eq 0 ]] && chown postgres: "$DATA"

"${PSQL[@]}" -c "SET client_min_messages = warning" -c "CREATE EXTENSION IF NOT EXISTS stream_ext"
HAVE_HOP=$("${PSQL[@]}" -At -c "SELECT count(*) FROM pg_proc WHERE proname = 'hop' AND pronamespace = 'stream_ext'::regnamespace")
if [[ $HAVE_HOP == 0 && " $WORKLOADS " == *" w5 "* ]]; then
	say "W5 (hopping window): not available, stream_ext.hop() does not exist in this build; skipped"
	WORKLOADS=$(printf '%s\n' $WORKLOADS | grep -vx w5 | tr '\n' ' ')
fi
HAVE_HLL=$("${PSQL[@]}" -At -c "SELECT count(*) FROM pg_available_extensions WHERE name = 'hll'")
if [[ $HAVE_HLL == 0 && " $WORKLOADS " == *" w2_hll "* ]]; then
	say "W2 with hll: not available, extension hll (postgresql-15-hll) is not installed; skipped"
	WORKLOADS=$(printf '%s\n' $WORKLOADS | grep -vx w2_hll | tr '\n' ' ')
elif [[ " $WORKLOADS " == *" w2_hll "* ]]; then
	"${PSQL[@]}" -c "SET client_min_messages = warning" -c "CREATE EXTENSION IF NOT EXISTS hll"
fi

# ---- the views ---------------------------------------------------------------
# One line per W4 view: its aggregates, from count sum avg min max countv.
VIEW_SPECS=(
	"count sum"
	"count avg"
	"min max"
	"sum max"
	"count sum avg"
	"min avg"
	"countv max"
	"sum min"
	"count min max"
	"count sum avg min max"
)
KEYS="k, date_bin('1 minute', ts, '2000-01-01') AS minute"

# the select list of W4 view number $1 (1-based)
agg_list() {
	local a sel=()
	for a in ${VIEW_SPECS[$(($1 - 1))]}; do
		case $a in
		count) sel+=("count(*) AS n") ;;
		sum) sel+=("sum(v) AS s") ;;
		avg) sel+=("avg(v) AS a") ;;
		min) sel+=("min(v) AS lo") ;;
		max) sel+=("max(v) AS hi") ;;
		countv) sel+=("count(v) AS nv") ;;
		esac
	done
	local IFS=,
	echo "${sel[*]}"
}

# The query of the first view of each workload, as plain SQL over ev: the
# check compares the view with it.
W1_QUERY="SELECT $KEYS, $(agg_list 1) FROM ev GROUP BY k, minute"
W2_QUERY="SELECT k, count(*) AS n, avg(v) AS a, max(v) AS hi, count(DISTINCT v) AS nd FROM ev GROUP BY k"
W2_HLL_QUERY="SELECT k, count(*) AS n, avg(v) AS a, max(v) AS hi, hll_add_agg(hll_hash_integer(v)) AS nd FROM ev GROUP BY k"
W3_QUERY="SELECT count(*) AS n, sum(v) AS s, min(v) AS lo, max(v) AS hi FROM ev"
W5_QUERY="SELECT k, w.window_start, count(*) AS n, sum(v) AS s FROM ev, stream_ext.hop(ts, '10 minutes', '2 minutes') AS w(window_start) GROUP BY k, w.window_start"

# The hand-written equivalent of W4 view $1: a summary table keyed by
# (k, minute) holding the aggregates' states, and a statement-level trigger
# that upserts the batch's partial aggregates into it.  (The input has no
# NULLs, so plain "+" is enough for sum; avg keeps sum and count.)
hand_sql() {
	local i=$1 a cols=() sel=() upd=()
	for a in ${VIEW_SPECS[$((i - 1))]}; do
		case $a in
		count) cols+=("n bigint"); sel+=("count(*)"); upd+=("n = t.n + excluded.n") ;;
		sum) cols+=("s bigint"); sel+=("sum(v)"); upd+=("s = t.s + excluded.s") ;;
		avg) cols+=("a_sum bigint" "a_n bigint"); sel+=("sum(v)" "count(v)")
		     upd+=("a_sum = t.a_sum + excluded.a_sum" "a_n = t.a_n + excluded.a_n") ;;
		min) cols+=("lo int"); sel+=("min(v)"); upd+=("lo = least(t.lo, excluded.lo)") ;;
		max) cols+=("hi int"); sel+=("max(v)"); upd+=("hi = greatest(t.hi, excluded.hi)") ;;
		countv) cols+=("nv bigint"); sel+=("count(v)"); upd+=("nv = t.nv + excluded.nv") ;;
		esac
	done
	local c s u names=()
	c=$(IFS=,; echo "${cols[*]}")
	s=$(IFS=,; echo "${sel[*]}")
	u=$(IFS=,; echo "${upd[*]}")
	for a in "${cols[@]}"; do names+=("${a%% *}"); done
	cat <<-EOF
		CREATE TABLE hand_$i (k int, minute timestamptz, $c, PRIMARY KEY (k, minute));
		CREATE FUNCTION hand_${i}_trg() RETURNS trigger LANGUAGE plpgsql AS \$f\$
		BEGIN
		  INSERT INTO hand_$i AS t (k, minute, $(IFS=,; echo "${names[*]}"))
		  SELECT k, date_bin('1 minute', ts, '2000-01-01'), $s
		    FROM new_rows GROUP BY 1, 2
		  ON CONFLICT (k, minute) DO UPDATE SET $u;
		  RETURN NULL;
		END \$f\$;
		CREATE TRIGGER hand_$i AFTER INSERT ON ev REFERENCING NEW TABLE AS new_rows
		  FOR EACH STATEMENT EXECUTE FUNCTION hand_${i}_trg();
	EOF
}

# The row-level version of W1's hand-written trigger: one upsert per row.
row_sql() {
	cat <<-'EOF'
		CREATE TABLE hand_1 (k int, minute timestamptz, n bigint, s bigint, PRIMARY KEY (k, minute));
		CREATE FUNCTION hand_row_trg() RETURNS trigger LANGUAGE plpgsql AS $f$
		BEGIN
		  INSERT INTO hand_1 AS t (k, minute, n, s)
		  VALUES (NEW.k, date_bin('1 minute', NEW.ts, '2000-01-01'), 1, NEW.v)
		  ON CONFLICT (k, minute) DO UPDATE SET n = t.n + 1, s = t.s + excluded.s;
		  RETURN NULL;
		END $f$;
		CREATE TRIGGER hand_row AFTER INSERT ON ev FOR EACH ROW EXECUTE FUNCTION hand_row_trg();
	EOF
}

# DDL of workload $1 (after the stream exists, search_path = $SCHEMA)
workload_sql() {
	local i
	case $1 in
	raw) ;;
	w1 | w1_noretain) echo "CREATE VIEW cv_1 WITH (continuous) AS $W1_QUERY;" ;;
	w1_hash | w4_hash) echo "SET stream_ext.delta_key_index = hash;"; workload_sql "${1%_hash}"
		echo "RESET stream_ext.delta_key_index;" ;;
	w1_hand) hand_sql 1 ;;
	w1_row) row_sql ;;
	w2) echo "CREATE VIEW cv_1 WITH (continuous) AS $W2_QUERY;" ;;
	w2_hll) echo "CREATE VIEW cv_1 WITH (continuous) AS $W2_HLL_QUERY;" ;;
	w3) echo "CREATE VIEW cv_1 WITH (continuous) AS $W3_QUERY;" ;;
	w4 | w4_noretain) for i in $(seq 1 10); do
		echo "CREATE VIEW cv_$i WITH (continuous) AS SELECT $KEYS, $(agg_list "$i") FROM ev GROUP BY k, minute;"
	    done ;;
	w4_hand) for i in $(seq 1 10); do hand_sql "$i"; done ;;
	w5) echo "CREATE VIEW cv_1 WITH (continuous) AS $W5_QUERY;" ;;
	*) die "unknown workload $1" ;;
	esac
}

# the retain argument of create_stream() for workload $1
retain_arg() {
	[[ $1 == *_noretain ]] && echo ", retain => false"
	return 0
}

# rows workload $1 loads at batch size $2
rows_of() {
	local n=${ROWS[$2]}
	if [[ $1 == w1_row ]]; then
		# 1/ROW_SHARE of the rows, in whole batches (at least one)
		n=$((n / ROW_SHARE / $2 * $2))
		((n > 0)) || n=$2
	fi
	echo "$n"
}

# SQL checking the state after loading $1 rows (+1 warm-up row) with
# workload $2: the stream's row count, and the first view (or summary table)
# against its query over the stream (over the input rows for *_noretain).
check_sql() {
	local w=$2 q= stored=$(($1 + 1)) src=ev
	if [[ $w == *_noretain ]]; then
		# the stream keeps nothing: compare with the rows loaded and the warm-up row
		stored=0
		src="(SELECT * FROM bench_input.rows(1, $1) UNION ALL VALUES (-1, timestamptz '1999-01-01 00:00:00+00', 0)) ev"
	fi
	echo "DO \$c\$ DECLARE got bigint; BEGIN"
	echo "  SELECT count(*) INTO got FROM ev; IF got <> $stored THEN RAISE EXCEPTION 'stream holds % rows, expected $stored', got; END IF;"
	case $w in
	w1 | w4 | w1_noretain | w4_noretain | w1_hash | w4_hash) q="SELECT $KEYS, $(agg_list 1) FROM $src GROUP BY k, minute" ;;
	w2) q=$W2_QUERY ;;
	w2_hll)
		# approximate: the exact columns equal, the sketch's cardinality within 5%
		echo "  SELECT count(*) INTO got FROM (SELECT k, n, a, hi FROM cv_1 EXCEPT ALL SELECT k, count(*), avg(v), max(v) FROM ev GROUP BY k) d;"
		echo "  IF got <> 0 THEN RAISE EXCEPTION 'cv_1 differs from its query in % rows', got; END IF;"
		echo "  SELECT count(*) INTO got FROM cv_1 c JOIN (SELECT k, count(DISTINCT v) AS nd FROM ev GROUP BY k) e USING (k)"
		echo "   WHERE abs(hll_cardinality(c.nd) - e.nd) > 0.05 * e.nd;"
		echo "  IF got <> 0 THEN RAISE EXCEPTION 'cv_1: % hll cardinalities off by more than 5%%', got; END IF;" ;;
	w3) q=$W3_QUERY ;;
	w5) q=$W5_QUERY ;;
	w1_hand | w1_row | w4_hand)
		echo "  SELECT count(*) INTO got FROM (SELECT k, minute, n, s FROM hand_1 EXCEPT ALL $W1_QUERY) d;"
		echo "  IF got <> 0 THEN RAISE EXCEPTION 'hand_1 differs from its query in % rows', got; END IF;" ;;
	esac
	if [[ -n $q ]]; then
		echo "  SELECT count(*) INTO got FROM ((TABLE cv_1 EXCEPT ALL $q) UNION ALL ($q EXCEPT ALL TABLE cv_1)) d;"
		echo "  IF got <> 0 THEN RAISE EXCEPTION 'cv_1 differs from its query in % rows', got; END IF;"
	fi
	if [[ $w == w4 || $w == w4_noretain || $w == w4_hash ]]; then
		echo "  SELECT count(*) INTO got FROM (TABLE cv_10 EXCEPT ALL SELECT $KEYS, $(agg_list 10) FROM $src GROUP BY k, minute) d;"
		echo "  IF got <> 0 THEN RAISE EXCEPTION 'cv_10 differs from its query in % rows', got; END IF;"
	fi
	echo "END \$c\$;"
}

# ---- input, generated once -----------------------------------------------------
# Row i: key = a hash of i over 1000 keys, ts advancing 4 ms per row with
# +-2 s jitter, v in 0..99.
"${PSQL[@]}" <<'EOF'
SET client_min_messages = warning;
CREATE SCHEMA IF NOT EXISTS bench_input;
CREATE OR REPLACE FUNCTION bench_input.rows(lo int, hi int)
RETURNS TABLE (k int, ts timestamptz, v int) LANGUAGE sql IMMUTABLE AS $$
  SELECT ((hashint4(i) % 1000) + 1000) % 1000,
         timestamptz '2024-01-01 00:00:00+00' + i * interval '4 ms'
           + (hashint4(-i) % 2000) * interval '1 ms',
         (i * 37) % 100
    FROM generate_series(lo, hi) i
$$;
EOF

# load_<batch>.sql loads ROWS[batch] rows; load_<batch>_<n>.sql its first n
say "generating input in $DATA"
for b in $BATCHES; do
	n=${ROWS[$b]}
	if [[ $b -eq 1 ]]; then
		# single-row INSERT statements
		"${PSQL[@]}" -At -c "SET TimeZone = 'UTC'" \
			-c "SELECT format('INSERT INTO ev (k, ts, v) VALUES (%s, %L, %s);', k, ts, v)
			      FROM bench_input.rows(1, $n)" >"$DATA/load_1.sql"
		m=$(rows_of w1_row 1)
		head -n "$m" "$DATA/load_1.sql" >"$DATA/load_1_$m.sql"
	else
		nb=$((n / b))
		mkdir -p "$DATA/b$b"
		[[ $(id -u) -eq 0 ]] && chown postgres: "$DATA/b$b"
		"${PSQL[@]}" <<-EOF
			SET TimeZone = 'UTC';
			DO \$g\$ BEGIN
			  FOR j IN 0 .. $((nb - 1)) LOOP
			    EXECUTE format('COPY (SELECT * FROM bench_input.rows(%s, %s)) TO %L (FORMAT csv)',
			                   j * $b + 1, (j + 1) * $b, format('$DATA/b$b/%s.csv', lpad(j::text, 6, '0')));
			  END LOOP;
			END \$g\$;
		EOF
		for ((j = 0; j < nb; j++)); do
			printf "COPY ev (k, ts, v) FROM '%s/b%s/%06d.csv' (FORMAT csv);\n" "$DATA" "$b" "$j"
		done >"$DATA/load_$b.sql"
		m=$(rows_of w1_row "$b")
		head -n $((m / b)) "$DATA/load_$b.sql" >"$DATA/load_${b}_$m.sql"
	fi
done

# ---- one measurement -------------------------------------------------------------
# measure WORKLOAD BATCH -> prints "seconds peak_rss_kB"
measure() {
	local w=$1 b=$2 n load script=$DATA/run.sql out secs rss
	n=$(rows_of "$w" "$b")
	load=$DATA/load_$b.sql
	[[ $n -eq ${ROWS[$b]} ]] || load=$DATA/load_${b}_$n.sql
	{
		echo "SET client_min_messages = warning;"
		echo "DROP SCHEMA IF EXISTS $SCHEMA CASCADE;"
		echo "CREATE SCHEMA $SCHEMA;"
		echo "SET search_path = $SCHEMA, public;"
		echo "SELECT stream_ext.create_stream('$SCHEMA.ev', 'k int, ts timestamptz, v int'$(retain_arg "$w")) \\g /dev/null"
		workload_sql "$w"
		echo "INSERT INTO ev (k, ts, v) VALUES (-1, '1999-01-01 00:00:00+00', 0);"
		echo "CHECKPOINT;"
		echo "SELECT clock_timestamp() AS t0 \\gset"
		echo "\\i $load"
		echo "SELECT round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric, 4) AS secs \\gset"
		echo "SELECT substring(pg_read_file('/proc/' || pg_backend_pid() || '/status') FROM 'VmHWM:\\s*(\\d+)') AS rss \\gset"
		check_sql "$n" "$w"
		echo "\\echo SECS :secs :rss"
	} >"$script"
	out=$("${PSQL[@]}" -f "$script" 2>&1) || { printf '%s\n' "$out" >&2; die "$w, batch $b failed"; }
	read -r secs rss < <(printf '%s\n' "$out" | sed -n 's/^SECS //p')
	[[ ${secs:-} =~ ^[0-9.]+$ ]] || die "$w, batch $b: no timing"
	echo "$secs ${rss:-0}"
}

# REFRESH MATERIALIZED VIEW of W1's query over a table of REFRESH_BASE rows,
# after each of REFRESH_BATCHES 10,000-row COPYs -> "seconds peak_rss_kB rows"
measure_refresh() {
	local script=$DATA/refresh.sql out secs rss j
	{
		echo "SET client_min_messages = warning;"
		echo "DROP SCHEMA IF EXISTS $SCHEMA CASCADE;"
		echo "CREATE SCHEMA $SCHEMA;"
		echo "SET search_path = $SCHEMA, public;"
		echo "SELECT stream_ext.create_stream('$SCHEMA.ev', 'k int, ts timestamptz, v int') \\g /dev/null"
		echo "INSERT INTO ev (k, ts, v) SELECT * FROM bench_input.rows(-$REFRESH_BASE, -1);"
		echo "CREATE MATERIALIZED VIEW mv_1 AS $W1_QUERY;"
		echo "VACUUM ANALYZE ev;"
		echo "CHECKPOINT;"
		echo "SELECT clock_timestamp() AS t0 \\gset"
		for ((j = 0; j < REFRESH_BATCHES; j++)); do
			printf "COPY ev (k, ts, v) FROM '%s/b10000/%06d.csv' (FORMAT csv);\n" "$DATA" "$j"
			echo "REFRESH MATERIALIZED VIEW mv_1;"
		done
		echo "SELECT round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric, 4) AS secs \\gset"
		echo "SELECT substring(pg_read_file('/proc/' || pg_backend_pid() || '/status') FROM 'VmHWM:\\s*(\\d+)') AS rss \\gset"
		echo "DO \$c\$ BEGIN IF (SELECT sum(n) FROM mv_1) <> $((REFRESH_BASE + REFRESH_BATCHES * 10000)) THEN RAISE EXCEPTION 'mv_1 is wrong'; END IF; END \$c\$;"
		echo "\\echo SECS :secs :rss"
	} >"$script"
	out=$("${PSQL[@]}" -f "$script" 2>&1) || { printf '%s\n' "$out" >&2; die "refresh failed"; }
	read -r secs rss < <(printf '%s\n' "$out" | sed -n 's/^SECS //p')
	[[ ${secs:-} =~ ^[0-9.]+$ ]] || die "refresh: no timing"
	echo "$secs $rss $((REFRESH_BATCHES * 10000))"
}

# Produce -> visible latency at a fixed rate.  A procedure plays the
# producer and the ingester at once: every LAT_BATCH / LAT_RATE seconds (a
# slot) it inserts the LAT_BATCH rows produced during the slot that just
# ended (INSERT ... SELECT, one transaction, maintenance included) and
# commits; the rows become visible at the commit.  Row j of a slot was
# "produced" at slot start + (j + 0.5) / LAT_BATCH of the slot, so its
# latency is commit time - that; a batch that starts late (the previous one
# overran) adds its delay to every row's latency.  Median and p99 over all
# rows, and the rate actually achieved.  -> "median_ms p99_ms achieved_rows_s"
latency_sql() {
	local w=$1 slots=$((LAT_RATE * LAT_SECONDS / LAT_BATCH))
	cat <<-EOF
		SET client_min_messages = warning;
		DROP SCHEMA IF EXISTS $SCHEMA CASCADE;
		CREATE SCHEMA $SCHEMA;
		SET search_path = $SCHEMA, public;
		SELECT stream_ext.create_stream('$SCHEMA.ev', 'k int, ts timestamptz, v int') \\g /dev/null
		$(workload_sql "$w")
		CREATE TABLE lat_log (slot int, slot_start timestamptz, visible timestamptz);
		CREATE PROCEDURE lat_run(slots int, rows int, slot_len interval) LANGUAGE plpgsql AS \$p\$
		DECLARE t0 timestamptz := clock_timestamp(); s timestamptz; d float8;
		BEGIN
		  FOR i IN 0 .. slots - 1 LOOP
		    s := t0 + i * slot_len;
		    d := extract(epoch FROM s + slot_len - clock_timestamp());
		    IF d > 0 THEN PERFORM pg_sleep(d); END IF;
		    INSERT INTO ev (k, ts, v) SELECT * FROM bench_input.rows(i * rows + 1, (i + 1) * rows);
		    COMMIT;
		    INSERT INTO lat_log VALUES (i, s, clock_timestamp());
		  END LOOP;
		END \$p\$;
		INSERT INTO ev (k, ts, v) VALUES (-1, '1999-01-01 00:00:00+00', 0);
		CHECKPOINT;
		CALL lat_run($slots, $LAT_BATCH, make_interval(secs => $LAT_BATCH::float8 / $LAT_RATE));
		SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1),
		       round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms)::numeric, 1),
		       round(($slots * $LAT_BATCH / extract(epoch FROM max(visible) - min(slot_start)))::numeric)
		  FROM (SELECT l.slot_start,  l.visible,
		               extract(epoch FROM l.visible - (l.slot_start + (j + 0.5) / $LAT_BATCH
		                                            * make_interval(secs => $LAT_BATCH::float8 / $LAT_RATE))) * 1000 AS ms
		          FROM lat_log l, generate_series(0, $LAT_BATCH - 1) j) x \\g (format=unaligned tuples_only fieldsep=' ')
	EOF
}

TSV=$RES/core.tsv
printf 'rep\tbatch\tworkload\trows\tsecs\trss_kb\n' >"$TSV"
LTSV=$RES/core_latency.tsv
printf 'rep\tworkload\tmedian_ms\tp99_ms\tachieved\n' >"$LTSV"
start=$SECONDS
for ((rep = 1; rep <= REPS; rep++)); do
	for b in $BATCHES; do
		for w in $WORKLOADS; do
			read -r s rss < <(measure "$w" "$b")
			n=$(rows_of "$w" "$b")
			printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$b" "$w" "$n" "$s" "$rss" >>"$TSV"
			say "rep $rep/$REPS  batch $b  $w: $n rows in $s s, peak RSS $rss kB ($((SECONDS - start)) s elapsed)"
		done
		if [[ $b == 10000 && $REFRESH == 1 ]]; then
			read -r s rss n < <(measure_refresh)
			printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$b" w1_refresh "$n" "$s" "$rss" >>"$TSV"
			say "rep $rep/$REPS  batch $b  w1_refresh: $n rows in $s s, peak RSS $rss kB ($((SECONDS - start)) s elapsed)"
		fi
	done
	if [[ $LAT == 1 ]]; then
		for w in raw w1; do
			latency_sql "$w" >"$DATA/lat.sql"
			out=$("${PSQL[@]}" -f "$DATA/lat.sql" 2>&1) || { printf '%s\n' "$out" >&2; die "latency $w failed"; }
			read -r med p99 ach < <(printf '%s\n' "$out" | tail -n 1)
			[[ ${p99:-} =~ ^[0-9.]+$ ]] || { printf '%s\n' "$out" >&2; die "latency $w: no result"; }
			printf '%s\t%s\t%s\t%s\t%s\n' "$rep" "$w" "$med" "$p99" "$ach" >>"$LTSV"
			say "rep $rep/$REPS  latency $w at $LAT_RATE rows/s: median $med ms, p99 $p99 ms, achieved $ach rows/s"
		done
	fi
done
"${PSQL[@]}" -c "SET client_min_messages = warning" -c "DROP SCHEMA IF EXISTS $SCHEMA, bench_input CASCADE"

# ---- tables ----------------------------------------------------------------------
# Medians (and spread) in SQL, formatted as markdown.
MD=$RES/core.md
"${PSQL[@]}" -At <<EOF >"$MD"
SET client_min_messages = warning;
CREATE TEMP TABLE m (rep int, batch int, workload text, rows bigint, secs numeric, rss_kb bigint);
\\copy m FROM '$TSV' (FORMAT csv, DELIMITER E'\\t', HEADER)
CREATE TEMP TABLE lat (rep int, workload text, median_ms numeric, p99_ms numeric, achieved numeric);
\\copy lat FROM '$LTSV' (FORMAT csv, DELIMITER E'\\t', HEADER)
CREATE TEMP TABLE r AS
  SELECT batch, workload, min(rows) AS rows, count(*) AS reps,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY secs) AS secs,
         min(secs) AS fastest, max(secs) AS slowest, max(rss_kb) AS rss_kb
    FROM m GROUP BY 1, 2;
ALTER TABLE r ADD COLUMN evs float8;
UPDATE r SET evs = rows / nullif(secs, 0);
CREATE TEMP TABLE ord (workload text, o int, label text);
INSERT INTO ord VALUES
  ('raw', 1, 'raw COPY/INSERT into the bare stream (floor)'),
  ('w1', 2, 'W1: 1 view, count+sum by key, minute'),
  ('w1_hand', 3, 'W1 by a hand-written statement trigger'),
  ('w1_row', 4, 'W1 by a hand-written row trigger'),
  ('w1_refresh', 5, 'W1 by REFRESH MATERIALIZED VIEW per 10,000 rows, $REFRESH_BASE base rows'),
  ('w2', 6, 'W2: by key, count, avg, max, count(DISTINCT)'),
  ('w2_hll', 6, 'W2 with hll_add_agg() (approximate) instead of count(DISTINCT)'),
  ('w3', 7, 'W3: no grouping'),
  ('w4', 8, 'W4: 10 W1-style views'),
  ('w4_hand', 9, 'W4 by 10 hand-written statement triggers'),
  ('w5', 10, 'W5: hopping window (10 min, slide 2 min)'),
  ('w1_noretain', 11, 'W1 over a stream that stores no rows (retain => false)'),
  ('w4_noretain', 12, 'W4 over a stream that stores no rows (retain => false)'),
  ('w1_hash', 13, 'W1 with stream_ext.delta_key_index = hash'),
  ('w4_hash', 14, 'W4 with stream_ext.delta_key_index = hash');
CREATE FUNCTION pg_temp.ev(b int, w text) RETURNS float8 LANGUAGE sql AS
  \$\$ SELECT evs FROM r WHERE batch = b AND workload = w \$\$;
CREATE FUNCTION pg_temp.ratio(x float8, y float8) RETURNS text LANGUAGE sql AS
  \$\$ SELECT coalesce(to_char(x / nullif(y, 0), 'FM990.00'), '-') \$\$;
-- paired ratio: the median over repetitions of (events/s of w) / (events/s
-- of base) measured in the same repetition, moments apart -- steadier on a
-- shared machine than the ratio of the two medians
CREATE FUNCTION pg_temp.pr(b int, w text, base text) RETURNS float8 LANGUAGE sql AS
  \$\$ SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY (x.rows / x.secs) / (y.rows / y.secs))
        FROM m x JOIN m y USING (rep, batch)
       WHERE x.batch = b AND x.workload = w AND y.workload = base
         AND x.secs > 0 AND y.secs > 0 \$\$;
CREATE FUNCTION pg_temp.prt(b int, w text, base text) RETURNS text LANGUAGE sql AS
  \$\$ SELECT coalesce(to_char(pg_temp.pr(b, w, base), 'FM990.00'), '-') \$\$;
CREATE FUNCTION pg_temp.target(name text, x float8, goal float8) RETURNS text LANGUAGE sql AS
  \$\$ SELECT CASE WHEN x IS NULL THEN format('- %s: not measured.', name)
                  WHEN x >= goal THEN format('- %s: met, %s.', name, to_char(x, 'FM990.00'))
                  ELSE format('- %s: **missed**, %s.', name, to_char(x, 'FM990.00')) END \$\$;

SELECT format('### Ingest throughput (median of %s interleaved runs)', max(reps)) FROM r;
SELECT '';
SELECT '| batch | workload | rows | median s | events/s | vs raw | spread (max/min) | peak RSS MB |';
SELECT '|------:|:---------|-----:|---------:|---------:|-------:|-----------------:|------------:|';
SELECT format('| %s | %s | %s | %s | %s | %s | %s | %s |',
              r.batch, coalesce(o.label, r.workload), r.rows, to_char(r.secs, 'FM99990.000'),
              to_char(r.evs, 'FM999,999,990'),
              pg_temp.prt(r.batch, r.workload, 'raw'),
              to_char(r.slowest / nullif(r.fastest, 0), 'FM990.00'),
              to_char(r.rss_kb / 1024.0, 'FM99990.0'))
  FROM r LEFT JOIN ord o USING (workload)
 ORDER BY r.batch DESC, o.o;
SELECT '';
SELECT '### Ratios';
SELECT '';
SELECT 'Each ratio (here and in "vs raw" above) is the median over the repetitions of the two throughputs measured in the same repetition.';
SELECT '';
SELECT '| batch | W1 / raw | W1 / statement trigger | W1 / row trigger | W1 / REFRESH | W2 / raw | W3 / raw | W4 / raw | W4 / 10 statement triggers | W5 / raw |';
SELECT '|------:|---------:|-----------------------:|-----------------:|-------------:|---------:|---------:|---------:|---------------------------:|---------:|';
SELECT format('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |', b,
              pg_temp.prt(b, 'w1', 'raw'), pg_temp.prt(b, 'w1', 'w1_hand'),
              pg_temp.prt(b, 'w1', 'w1_row'), pg_temp.prt(b, 'w1', 'w1_refresh'),
              pg_temp.prt(b, 'w2', 'raw'), pg_temp.prt(b, 'w3', 'raw'),
              pg_temp.prt(b, 'w4', 'raw'), pg_temp.prt(b, 'w4', 'w4_hand'),
              pg_temp.prt(b, 'w5', 'raw'))
  FROM (SELECT DISTINCT batch AS b FROM r) s ORDER BY b DESC;
SELECT '';
SELECT '| batch | W2 hll (approximate) / raw | W2 hll / W2 exact |'
 WHERE EXISTS (SELECT FROM r WHERE workload = 'w2_hll');
SELECT '|------:|---------------------------:|------------------:|'
 WHERE EXISTS (SELECT FROM r WHERE workload = 'w2_hll');
SELECT format('| %s | %s | %s |', b, pg_temp.prt(b, 'w2_hll', 'raw'), pg_temp.prt(b, 'w2_hll', 'w2'))
  FROM (SELECT DISTINCT batch AS b FROM r WHERE workload = 'w2_hll') s ORDER BY b DESC;
SELECT '';
SELECT '| batch | W1 no-retain / raw | W1 no-retain / W1 | W4 no-retain / raw | W4 no-retain / W4 |'
 WHERE EXISTS (SELECT FROM r WHERE workload LIKE '%\_noretain');
SELECT '|------:|-------------------:|------------------:|-------------------:|------------------:|'
 WHERE EXISTS (SELECT FROM r WHERE workload LIKE '%\_noretain');
SELECT format('| %s | %s | %s | %s | %s |', b,
              pg_temp.prt(b, 'w1_noretain', 'raw'), pg_temp.prt(b, 'w1_noretain', 'w1'),
              pg_temp.prt(b, 'w4_noretain', 'raw'), pg_temp.prt(b, 'w4_noretain', 'w4'))
  FROM (SELECT DISTINCT batch AS b FROM r WHERE workload LIKE '%\_noretain') s ORDER BY b DESC;
SELECT '';
SELECT '| batch | W1 hash / raw | W1 hash / W1 | W4 hash / raw | W4 hash / W4 |'
 WHERE EXISTS (SELECT FROM r WHERE workload LIKE '%\_hash');
SELECT '|------:|--------------:|-------------:|--------------:|-------------:|'
 WHERE EXISTS (SELECT FROM r WHERE workload LIKE '%\_hash');
SELECT format('| %s | %s | %s | %s | %s |', b,
              pg_temp.prt(b, 'w1_hash', 'raw'), pg_temp.prt(b, 'w1_hash', 'w1'),
              pg_temp.prt(b, 'w4_hash', 'raw'), pg_temp.prt(b, 'w4_hash', 'w4'))
  FROM (SELECT DISTINCT batch AS b FROM r WHERE workload LIKE '%\_hash') s ORDER BY b DESC;
SELECT '';
SELECT '### Produce -> visible latency';
SELECT '';
SELECT format('$LAT_RATE rows/s offered for $LAT_SECONDS s in batches of $LAT_BATCH rows (one INSERT ... SELECT and commit per batch); median of %s runs of each figure.', count(DISTINCT rep)) FROM lat HAVING count(*) > 0;
SELECT '';
SELECT '| workload | median ms | p99 ms | rows/s achieved |' WHERE EXISTS (SELECT FROM lat);
SELECT '|:---------|----------:|-------:|----------------:|' WHERE EXISTS (SELECT FROM lat);
SELECT format('| %s | %s | %s | %s |', coalesce(o.label, l.workload),
              percentile_cont(0.5) WITHIN GROUP (ORDER BY median_ms),
              percentile_cont(0.5) WITHIN GROUP (ORDER BY p99_ms),
              to_char(percentile_cont(0.5) WITHIN GROUP (ORDER BY achieved), 'FM999,999,990'))
  FROM lat l LEFT JOIN ord o USING (workload) GROUP BY l.workload, o.label, o.o ORDER BY o.o;
SELECT '';
SELECT '### Targets';
SELECT '';
SELECT pg_temp.target('W1 >= 0.85 of raw COPY at 10,000-row batches', pg_temp.pr(10000, 'w1', 'raw'), 0.85);
SELECT pg_temp.target('W4 >= 0.40 of raw COPY at 10,000-row batches', pg_temp.pr(10000, 'w4', 'raw'), 0.40);
SELECT pg_temp.target('W2 >= 0.45 of raw COPY at 10,000-row batches (exact count(DISTINCT))', pg_temp.pr(10000, 'w2', 'raw'), 0.45);
SELECT pg_temp.target('W1 >= 0.60 of raw COPY at 100-row batches', pg_temp.pr(100, 'w1', 'raw'), 0.60);
SELECT pg_temp.target('W4 >= 0.20 of raw COPY at 100-row batches', pg_temp.pr(100, 'w4', 'raw'), 0.20);
SELECT pg_temp.target('W1 >= 0.80 of raw single-row INSERTs', pg_temp.pr(1, 'w1', 'raw'), 0.80);
SELECT pg_temp.target('W4 >= 0.50 of raw single-row INSERTs', pg_temp.pr(1, 'w4', 'raw'), 0.50);
SELECT CASE WHEN NOT EXISTS (SELECT FROM lat WHERE workload = 'w1') THEN '- W1 p99 produce -> visible <= 50 ms at 50,000 rows/s: not measured.'
            WHEN $LAT_RATE < 50000 THEN format('- W1 p99 produce -> visible <= 50 ms at 50,000 rows/s: not measured (offered $LAT_RATE rows/s); p99 %s ms.', p)
            WHEN p <= 50 AND a >= 0.95 * $LAT_RATE THEN format('- W1 p99 produce -> visible <= 50 ms at 50,000 rows/s: met, p99 %s ms.', p)
            ELSE format('- W1 p99 produce -> visible <= 50 ms at 50,000 rows/s: **missed**, p99 %s ms at %s rows/s achieved.', p, round(a)) END
  FROM (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY p99_ms) AS p,
               percentile_cont(0.5) WITHIN GROUP (ORDER BY achieved) AS a
          FROM lat WHERE workload = 'w1') t;
SELECT CASE WHEN $HAVE_HOP = 0 THEN E'\nW5 (hopping window): not available, stream_ext.hop() does not exist in this build.' END;
EOF
cat "$MD"
say "done in $((SECONDS - start)) s; every measurement in $TSV"
