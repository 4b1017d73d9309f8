#!/usr/bin/env bash
# test/integration/view_oracle.sh -- the randomized differential oracle for
# continuous views (test/fuzz/view_oracle.py): random streams, view shapes,
# batches, rollbacks, compactions and concurrent writers, every view
# compared with its query as plain SQL after each step, reads by key and
# ORDER BY ... LIMIT compared too.  A bounded, deterministic run: a fixed
# list of seeds, small batches.  For long exploratory runs:
#   VIEW_ORACLE_SEEDS=1-500 VIEW_ORACLE_STEPS=10 VIEW_ORACLE_MAX_ROWS=20000 TEST_TIMEOUT=36000 \
#     TEST_FILTER=integration/view_oracle make test
# (VIEW_ORACLE_STEPS: steps per seed; VIEW_ORACLE_REDUCE=1: reduce the
# reproducer of a finding).  docs/testing.md, "The view oracle".
set -euo pipefail
source "$STREAM_EXT_ROOT/test/lib/integration.sh"

it_db view_oracle
q "CREATE EXTENSION stream_ext" >/dev/null 2>&1
export VIEW_ORACLE_SEEDS=${VIEW_ORACLE_SEEDS:-1-16}
export VIEW_ORACLE_STEPS=${VIEW_ORACLE_STEPS:-8}
export VIEW_ORACLE_MAX_ROWS=${VIEW_ORACLE_MAX_ROWS:-3000}
rc=0
python3 "$STREAM_EXT_ROOT/test/fuzz/view_oracle.py" || rc=$?
PGDATABASE=postgres psql -X -q -c "DROP DATABASE IF EXISTS it_view_oracle WITH (FORCE)" >/dev/null 2>&1 || true
exit $rc
