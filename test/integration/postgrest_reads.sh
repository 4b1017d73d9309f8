#!/usr/bin/env bash
# test/integration/postgrest_reads.sh -- reads that scale, through a real
# PostgREST: the plan PostgREST's own query gets (Accept:
# application/vnd.pgrst.plan+json, db-plan-enabled) on a continuous view with
# many groups.
#   - a filter on the leading group key uses the materialization's unique
#     index, and the delta's key index;
#   - a filter on another column (a non-leading key, an aggregate) scans the
#     whole materialization until stream_ext.create_index() indexes it, then
#     uses that index, with the same answer;
#   - create_index() refuses columns computed when read, unknown columns and
#     callers that do not own the view; nothing is half created;
#   - pg_dump/restore keeps the index.
# STREAM_EXT_READS_GROUPS (default 100000) groups.  Skipped (exit 77) where
# PostgREST is not available.
set -euo pipefail
source "$STREAM_EXT_ROOT/test/lib/integration.sh"
source "$STREAM_EXT_ROOT/test/lib/postgrest.sh"
pgrst_skip_unless_available

NGROUPS=${STREAM_EXT_READS_GROUPS:-100000}
DIR=$(mktemp -d /tmp/stream_ext_pgrst.XXXXXX)
cleanup() {
	pgrst_stop "$DIR"
	rm -rf -- "$DIR"
	PGDATABASE=postgres psql -X -q -c "DROP DATABASE IF EXISTS it_postgrest_reads WITH (FORCE)" \
		-c "DROP DATABASE IF EXISTS it_postgrest_reads2 WITH (FORCE)" \
		-c "DROP ROLE IF EXISTS it_pgrst_r_auth" -c "DROP ROLE IF EXISTS it_pgrst_r_anon" \
		-c "DROP ROLE IF EXISTS it_pgrst_r_other" >/dev/null 2>&1 || true
}
trap cleanup EXIT

it_db postgrest_reads
q <<SQL >/dev/null
SET client_min_messages = warning;
DROP ROLE IF EXISTS it_pgrst_r_auth;
DROP ROLE IF EXISTS it_pgrst_r_anon;
DROP ROLE IF EXISTS it_pgrst_r_other;
CREATE ROLE it_pgrst_r_anon NOLOGIN;
CREATE ROLE it_pgrst_r_other NOLOGIN;
CREATE ROLE it_pgrst_r_auth LOGIN NOINHERIT;
GRANT it_pgrst_r_anon TO it_pgrst_r_auth;
CREATE EXTENSION stream_ext;
SELECT stream_ext.create_stream('ev', 'k int, cat int, v int');
CREATE VIEW by_k WITH (continuous) AS
  SELECT k, cat, count(*) AS n, max(v) AS top, avg(v) AS mean FROM ev GROUP BY k, cat;
INSERT INTO ev SELECT i, i % 1000, i * 7 % 1000003 FROM generate_series(1, $NGROUPS) AS i;
SELECT stream_ext.expose('by_k', 'api', 'it_pgrst_r_anon');
SQL
mrel=$(q "SELECT matrel FROM stream_ext.view_catalog WHERE view = 'by_k'::regclass")
# the view appends: its batches wait in its delta until compacted (here:
# now), and its reads merge the delta in (docs/internals.md, "Append mode")
q "SELECT stream_ext.compact('by_k')" >/dev/null
delta=$(q "SELECT delta FROM stream_ext.view_catalog WHERE view = 'by_k'::regclass")
q "ANALYZE $mrel"
q "VACUUM ANALYZE $delta"
assert_eq "$NGROUPS" "$(q 'SELECT count(*) FROM by_k')" "groups in the view"

pgrst_start "$DIR" it_postgrest_reads it_pgrst_r_auth it_pgrst_r_anon 'db-plan-enabled = true'

# plan PATH: the plan of PostgREST's query for GET PATH (JSON, one line)
plan() {
	curl -s -g --max-time 10 -H 'Accept: application/vnd.pgrst.plan+json' "$PGRST_URL$1" | tr -d ' \n'
}
# cost PLAN: the estimated total cost of PostgREST's whole query
cost() { grep -o '"TotalCost":[0-9.]*' <<<"$1" | head -n 1 | cut -d: -f2 | cut -d. -f1; }
# seq_scans PLAN: the relations PLAN reads by sequential scan
seq_scans() { grep -o '"NodeType":"SeqScan"[^{}]*"RelationName":"[^"]*"' <<<"$1" | sed 's/.*"RelationName":"//; s/"$//'; }
# uses_index PATH INDEX: PostgREST's query reads the materialization through
# INDEX at a small cost: not a full scan (a hundredth of one at most; the
# empty delta is scanned)
uses_index() {
	local p c
	p=$(plan "$1")
	c=$(cost "$p")
	if [[ $p != *"\"IndexName\":\"$2\""* || -n $(seq_scans "$p" | grep -vx "${delta#*.}") || $c -ge $((NGROUPS / 100)) ]]; then
		echo "ASSERTION FAILED: GET $1 does not use index $2: $p" >&2
		exit 1
	fi
	echo "ok: GET $1 reads through index $2 (estimated cost $c)"
}
# full_scan PATH: PostgREST's query reads every row of the materialization
# (a sequential scan or a full scan of the unique index: cost of the order
# of the number of groups)
full_scan() {
	local p c
	p=$(plan "$1")
	c=$(cost "$p")
	if [[ $c -lt $((NGROUPS / 100)) ]]; then
		echo "ASSERTION FAILED: GET $1 was expected to scan the materialization: $p" >&2
		exit 1
	fi
	echo "ok: GET $1 scans the whole materialization (estimated cost $c, no index yet)"
}
body() { curl -s -g --max-time 10 "$PGRST_URL$1"; }
sqljson() { q "SELECT coalesce(json_agg(t), '[]')::text FROM ($1) t"; }

ukey=$(q "SELECT indexrelid::regclass FROM pg_index WHERE indrelid = '$mrel'::regclass AND indisunique")
uses_index '/by_k?k=eq.4242' "$ukey"
assert_eq "$(sqljson 'SELECT * FROM by_k WHERE k = 4242')" "$(body '/by_k?k=eq.4242')" "key lookup answer"
uses_index '/by_k?k=in.(7,70,700)&order=k' "$ukey"

# a non-leading key column and an aggregate: no index until create_index()
full_scan '/by_k?cat=eq.7'
full_scan '/by_k?top=eq.29694'
assert_eq by_k_cat_idx "$(q "SELECT stream_ext.create_index('by_k', 'cat')")" "create_index(cat)"
assert_eq by_k_top_idx "$(q "SELECT stream_ext.create_index('by_k', 'top')")" "create_index(top)"
uses_index '/by_k?cat=eq.7&order=k' by_k_cat_idx
assert_eq "$(sqljson 'SELECT * FROM by_k WHERE cat = 7 ORDER BY k')" "$(body '/by_k?cat=eq.7&order=k')" \
	"non-key filter answer"
uses_index '/by_k?top=eq.29694' by_k_top_idx
assert_eq "$(sqljson 'SELECT * FROM by_k WHERE top = 29694')" "$(body '/by_k?top=eq.29694')" \
	"aggregate filter answer"
# ORDER BY ... LIMIT: a view that appends reads materialization (+) delta as
# a UNION ALL whose filtered branch PostgreSQL sorts rather than read in
# index order (docs/continuous-views.md, "Indexes")
assert_eq "$(sqljson 'SELECT * FROM by_k ORDER BY top DESC, k LIMIT 5')" "$(body '/by_k?order=top.desc,k&limit=5')" \
	"top-N answer"

# maintenance goes on through the indexes
q "INSERT INTO ev VALUES (4242, 242, 999999), (1, 1, 5)"
assert_eq '[{"k":4242,"n":2,"top":999999}]' "$(body '/by_k?k=eq.4242&select=k,n,top')" "maintained row"
assert_eq '[{"k":4242,"cat":242}]' "$(body '/by_k?top=eq.999999&select=k,cat')" "maintained row found by the new index"

# refusals
sqlstate() { psql -X -q -A -t -v VERBOSITY=sqlstate -c "$1" 2>&1 | grep -o '[0-9][0-9A-Z]\{4\}' | head -n 1; }
assert_eq 0A000 "$(sqlstate "SELECT stream_ext.create_index('by_k', 'mean')")" "avg (finalized when read) refused"
assert_eq 42703 "$(sqlstate "SELECT stream_ext.create_index('by_k', 'cat', 'nope')")" "unknown column refused"
assert_eq 42809 "$(sqlstate "SELECT stream_ext.create_index('ev', 'k')")" "a stream is not a continuous view"
assert_eq 42501 "$(sqlstate "SET ROLE it_pgrst_r_other; SELECT stream_ext.create_index('by_k', 'k')")" \
	"not the owner: refused"
assert_eq 4 "$(q "SELECT count(*) FROM pg_index WHERE indrelid = '$mrel'::regclass")" \
	"indexes on the materialization: the unique one, the NULL keys' and the two created (nothing half created)"

# a delta of 5,000 rows: a key GET reads its rows of the delta through the
# delta's key index, not by a scan of the delta (docs/internals.md, "Reading")
q "INSERT INTO ev SELECT i, i % 1000, 1 FROM generate_series(1, 5000) AS i"
q "ANALYZE $delta"
p=$(plan '/by_k?k=eq.4242')
[[ $p == *'"IndexName":"by_k_delta_k_cat_idx"'* && -z $(seq_scans "$p") ]] ||
	{ echo "ASSERTION FAILED: GET /by_k?k=eq.4242 does not read the delta through its index: $p" >&2; exit 1; }
echo "ok: GET /by_k?k=eq.4242 reads the delta through by_k_delta_k_cat_idx"
assert_eq "$(sqljson 'SELECT * FROM by_k WHERE k = 4242')" "$(body '/by_k?k=eq.4242')" "key lookup answer, delta merged"

# dump and restore keep the index
pgrst_stop "$DIR"
q "CREATE DATABASE it_postgrest_reads2"
pg_dump -d it_postgrest_reads -f "$DIR/dump.sql"
PGDATABASE=it_postgrest_reads2 psql -X -q -v ON_ERROR_STOP=1 -f "$DIR/dump.sql" >/dev/null 2>&1
assert_eq by_k_cat_idx,by_k_mrel_expr_idx,by_k_top_idx "$(PGDATABASE=it_postgrest_reads2 q "SELECT string_agg(c.relname, ',' ORDER BY c.relname)
	FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
	WHERE i.indrelid = (SELECT matrel FROM stream_ext.view_catalog WHERE view = 'by_k'::regclass)
	  AND NOT i.indisunique")" "restored: the secondary indexes (and the NULL keys')"
assert_eq by_k_delta_k_cat_idx "$(PGDATABASE=it_postgrest_reads2 q "SELECT string_agg(c.relname, ',' ORDER BY c.relname)
	FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
	WHERE i.indrelid = (SELECT delta FROM stream_ext.view_catalog WHERE view = 'by_k'::regclass)")" \
	"restored: the delta's key index"
echo "all read checks passed"
