#!/usr/bin/env bash
# bench/core.sh -- ingest throughput of streams and continuous views.
#
# Run by bench/run.sh against its throwaway cluster; it can also be run by
# hand against any cluster where stream_ext is preloaded:
#     source /tmp/stream_ext.XXXXXX/env.sh      # from test/lib/cluster.sh start
#     bash bench/core.sh
#
# Workloads, all on the same stream  ev(k int, ts timestamptz, v int)  with
# 1000 keys, event time advancing 4 ms per row (a 10,000-row batch spans
# ~40 s of event time) with +-2 s of disorder, grouped by (k, minute):
#   raw      the bare stream, no views: the floor
#   cv1      1 continuous view: count(*), sum(v) by k, minute
#   cv10     10 continuous views, each a different mix of count/sum/avg/min/max
#   hand1    no continuous view; a hand-written plpgsql statement-level AFTER
#            INSERT trigger with a transition table doing
#            INSERT ... SELECT ... GROUP BY ... ON CONFLICT DO UPDATE into a
#            summary table -- what a user would write instead of cv1
#   hand10   the same hand-written trigger for each of cv10's 10 views
# Batch sizes:
#   10000, 100   server-side COPY ev (k, ts, v) FROM '<file>' per batch,
#                one statement (= one transaction) per batch
#   1            single-row INSERT ... VALUES statements
#
# Every measurement starts from a freshly created stream (and views), inserts
# one warm-up row (so that the maintenance plans are prepared), then times
# the whole load with clock_timestamp() in that same session.  Measurements
# are repeated BENCH_REPS times, interleaved (rep 1 of every workload, then
# rep 2, ...), and the median is reported.
#
# Environment (all optional):
#   BENCH_REPS=3  BENCH_ROWS_10000=500000  BENCH_ROWS_100=100000  BENCH_ROWS_1=5000
#   BENCH_WORKLOADS="raw cv1 cv10 hand1 hand10"   BENCH_BATCHES="10000 100 1"
#   BENCH_RESULTS_DIR  where core.tsv (every measurement) and core.md (the
#                      tables) go; default $STREAM_EXT_TMP/bench-results
# Needs PGHOST/PGPORT/PGUSER/PGDATABASE (a superuser: server-side COPY,
# CHECKPOINT), PG_BINDIR and STREAM_EXT_TMP (a directory the server can write).
#
# Prints the tables on stdout, progress on stderr.  Reports ratios; exits
# non-zero only when something broke (an error, or a wrong row count).
set -euo pipefail

: "${STREAM_EXT_TMP:?STREAM_EXT_TMP must name the cluster temp dir (source its env.sh)}"
PG_BINDIR=${PG_BINDIR:-$(pg_config --bindir)}
PSQL=("$PG_BINDIR/psql" -X -q -v ON_ERROR_STOP=1)

REPS=${BENCH_REPS:-3}
WORKLOADS=${BENCH_WORKLOADS:-raw cv1 cv10 hand1 hand10}
BATCHES=${BENCH_BATCHES:-10000 100 1}
declare -A ROWS=(
	[10000]=${BENCH_ROWS_10000:-500000}
	[100]=${BENCH_ROWS_100:-100000}
	[1]=${BENCH_ROWS_1:-5000}
)
RES=${BENCH_RESULTS_DIR:-$STREAM_EXT_TMP/bench-results}
DATA=$STREAM_EXT_TMP/bench-data
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

# ---- the views ---------------------------------------------------------------
# One line per view: its aggregates, from count sum avg min max countv.
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

# CREATE VIEW for view number $1 (1-based)
cv_sql() {
	local i=$1 a sel=()
	for a in ${VIEW_SPECS[$((i - 1))]}; do
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
	printf 'CREATE VIEW cv_%d WITH (continuous) AS SELECT %s, %s FROM ev GROUP BY k, minute;\n' \
		"$i" "$KEYS" "${sel[*]}"
}

# The hand-written equivalent of view $1: a summary table keyed by (k, minute)
# holding the aggregates' states, and a statement-level trigger that upserts
# the batch's partial aggregates into it.  (The input has no NULLs, so plain
# "+" is enough for sum; avg keeps sum and count.)
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

# DDL of workload $1 (after the stream exists, search_path = $SCHEMA)
workload_sql() {
	local i
	case $1 in
	raw) ;;
	cv1) cv_sql 1 ;;
	cv10) for i in $(seq 1 10); do cv_sql "$i"; done ;;
	hand1) hand_sql 1 ;;
	hand10) for i in $(seq 1 10); do hand_sql "$i"; done ;;
	*) die "unknown workload $1" ;;
	esac
}

# SQL checking the state after loading $1 rows (+1 warm-up row) with workload $2:
# returns one row "ok" or fails.
check_sql() {
	local n=$(($1 + 1)) w=$2
	echo "DO \$c\$ DECLARE got bigint; BEGIN"
	echo "  SELECT count(*) INTO got FROM ev; IF got <> $n THEN RAISE EXCEPTION 'stream holds % rows, expected $n', got; END IF;"
	case $w in
	cv1 | cv10) echo "  SELECT sum(n) INTO got FROM cv_1; IF got IS DISTINCT FROM $n THEN RAISE EXCEPTION 'cv_1 counts % rows, expected $n', got; END IF;" ;;
	hand1 | hand10) echo "  SELECT sum(n) INTO got FROM hand_1; IF got IS DISTINCT FROM $n THEN RAISE EXCEPTION 'hand_1 counts % rows, expected $n', got; END IF;" ;;
	esac
	if [[ $w == cv10 ]]; then
		echo "  SELECT count(*) INTO got FROM (TABLE cv_10 EXCEPT ALL SELECT $KEYS, count(*), sum(v), avg(v), min(v), max(v) FROM ev GROUP BY k, minute) d;"
		echo "  IF got <> 0 THEN RAISE EXCEPTION 'cv_10 differs from its query in % rows', got; END IF;"
	fi
	echo "END \$c\$;"
}

# ---- input, generated once -----------------------------------------------------
# Row i: key = a hash of i over 1000 keys, ts advancing 4 ms per row with
# +-2 s jitter, v in 0..99.
"${PSQL[@]}" <<'EOF'
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
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

say "generating input in $DATA"
for b in $BATCHES; do
	n=${ROWS[$b]}
	if [[ $b -eq 1 ]]; then
		# single-row INSERT statements
		"${PSQL[@]}" -At -c "SET TimeZone = 'UTC'" \
			-c "SELECT format('INSERT INTO ev (k, ts, v) VALUES (%s, %L, %s);', k, ts, v)
			      FROM bench_input.rows(1, $n)" >"$DATA/load_1.sql"
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
	fi
done

# ---- one measurement -------------------------------------------------------------
# measure WORKLOAD BATCH -> prints seconds
measure() {
	local w=$1 b=$2 n=${ROWS[$2]} script=$DATA/run.sql out
	{
		echo "SET client_min_messages = warning;"
		echo "DROP SCHEMA IF EXISTS $SCHEMA CASCADE;"
		echo "CREATE SCHEMA $SCHEMA;"
		echo "SET search_path = $SCHEMA, public;"
		echo "SELECT stream_ext.create_stream('$SCHEMA.ev', 'k int, ts timestamptz, v int') \\g /dev/null"
		workload_sql "$w"
		echo "INSERT INTO ev (k, ts, v) VALUES (-1, '1999-01-01 00:00:00+00', 0);"
		echo "CHECKPOINT;"
		echo "SELECT clock_timestamp() AS t0 \\gset"
		echo "\\i $DATA/load_$b.sql"
		echo "SELECT round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric, 4) AS secs \\gset"
		check_sql "$n" "$w"
		echo "\\echo SECS :secs"
	} >"$script"
	out=$("${PSQL[@]}" -f "$script" 2>&1) || { printf '%s\n' "$out" >&2; die "$w, batch $b failed"; }
	out=$(printf '%s\n' "$out" | sed -n 's/^SECS //p')
	[[ $out =~ ^[0-9.]+$ ]] || die "$w, batch $b: no timing"
	echo "$out"
}

TSV=$RES/core.tsv
printf 'rep\tbatch\tworkload\trows\tsecs\n' >"$TSV"
start=$SECONDS
for ((rep = 1; rep <= REPS; rep++)); do
	for b in $BATCHES; do
		for w in $WORKLOADS; do
			s=$(measure "$w" "$b")
			printf '%s\t%s\t%s\t%s\t%s\n' "$rep" "$b" "$w" "${ROWS[$b]}" "$s" >>"$TSV"
			say "rep $rep/$REPS  batch $b  $w: ${ROWS[$b]} rows in $s s ($((SECONDS - start)) s elapsed)"
		done
	done
done
"${PSQL[@]}" -c "SET client_min_messages = warning" -c "DROP SCHEMA IF EXISTS $SCHEMA, bench_input CASCADE"

# ---- tables ----------------------------------------------------------------------
# Medians (and spread) in SQL, formatted as markdown.
MD=$RES/core.md
"${PSQL[@]}" -At <<EOF >"$MD"
SET client_min_messages = warning;
CREATE TEMP TABLE m (rep int, batch int, workload text, rows bigint, secs numeric);
\\copy m FROM '$TSV' (FORMAT csv, DELIMITER E'\\t', HEADER)
CREATE TEMP TABLE r AS
  SELECT batch, workload, min(rows) AS rows, count(*) AS reps,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY secs) AS secs,
         min(secs) AS fastest, max(secs) AS slowest
    FROM m GROUP BY 1, 2;
ALTER TABLE r ADD COLUMN evs float8;
UPDATE r SET evs = rows / nullif(secs, 0);
CREATE TEMP TABLE ord (workload text, o int, label text);
INSERT INTO ord VALUES
  ('raw', 1, 'raw stream, no views'), ('cv1', 2, '1 continuous view'),
  ('cv10', 3, '10 continuous views'), ('hand1', 4, 'hand-written trigger, 1 summary'),
  ('hand10', 5, 'hand-written triggers, 10 summaries');
CREATE FUNCTION pg_temp.ev(b int, w text) RETURNS float8 LANGUAGE sql AS
  \$\$ SELECT evs FROM r WHERE batch = b AND workload = w \$\$;
CREATE FUNCTION pg_temp.ratio(x float8, y float8) RETURNS text LANGUAGE sql AS
  \$\$ SELECT coalesce(to_char(x / nullif(y, 0), 'FM990.00'), '-') \$\$;

SELECT format('### Ingest throughput (median of %s interleaved runs)', max(reps)) FROM r;
SELECT '';
SELECT '| batch | workload | rows | median s | events/s | vs raw | spread (max/min) |';
SELECT '|------:|:---------|-----:|---------:|---------:|-------:|-----------------:|';
SELECT format('| %s | %s | %s | %s | %s | %s | %s |',
              r.batch, coalesce(o.label, r.workload), r.rows, to_char(r.secs, 'FM99990.000'),
              to_char(r.evs, 'FM999,999,990'),
              pg_temp.ratio(r.evs, pg_temp.ev(r.batch, 'raw')),
              to_char(r.slowest / nullif(r.fastest, 0), 'FM990.00'))
  FROM r LEFT JOIN ord o USING (workload)
 ORDER BY r.batch DESC, o.o;
SELECT '';
SELECT '### Ratios';
SELECT '';
SELECT '| batch | 1 view / raw | 10 views / raw | 1 view / hand-written | 10 views / hand-written (10) |';
SELECT '|------:|-------------:|---------------:|----------------------:|-----------------------------:|';
SELECT format('| %s | %s | %s | %s | %s |', b,
              pg_temp.ratio(pg_temp.ev(b, 'cv1'), pg_temp.ev(b, 'raw')),
              pg_temp.ratio(pg_temp.ev(b, 'cv10'), pg_temp.ev(b, 'raw')),
              pg_temp.ratio(pg_temp.ev(b, 'cv1'), pg_temp.ev(b, 'hand1')),
              pg_temp.ratio(pg_temp.ev(b, 'cv10'), pg_temp.ev(b, 'hand10')))
  FROM (SELECT DISTINCT batch AS b FROM r) s ORDER BY b DESC;
SELECT '';
SELECT CASE WHEN x IS NULL THEN 'Target (1 view >= 0.60 of raw COPY at 10,000-row batches): not measured.'
            WHEN x >= 0.6 THEN format('Target (1 view >= 0.60 of raw COPY at 10,000-row batches): met, %s.', to_char(x, 'FM990.00'))
            ELSE format('Target (1 view >= 0.60 of raw COPY at 10,000-row batches): **missed**, %s.', to_char(x, 'FM990.00')) END
  FROM (SELECT pg_temp.ev(10000, 'cv1') / nullif(pg_temp.ev(10000, 'raw'), 0) AS x) t;
EOF
cat "$MD"
say "done in $((SECONDS - start)) s; every measurement in $TSV"
