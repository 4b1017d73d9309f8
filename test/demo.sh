#!/usr/bin/env bash
# test/demo.sh -- `make demo`: install deps, build, install, start a throwaway
# cluster and walk through stream_ext, then stop the cluster.
#
# The demo itself is the step files test/demo/*.sh, run in name order
# (10_clicks.sh, 20_..., ...).  To add a step (e.g. Kafka ingest), drop a new
# NN_name.sh there; no need to edit this file.  Each step runs in its own bash
# (set -euo pipefail) with these available:
#   PGHOST PGPORT PGUSER    the cluster;  PGDATABASE=$DEMO_DB (already created)
#   STREAM_EXT_ROOT STREAM_EXT_TMP STREAM_EXT_BROKER (path, empty if not built)
#   DEMO_ROUNDS (5)  DEMO_PAUSE (1 s)  DEMO_DB (stream_ext_demo)
#   demo_say TEXT    print a banner line
#   demo_sql [psql args]   psql -X -v ON_ERROR_STOP=1 on $DEMO_DB (SQL on stdin or -c)
#   demo_pause       sleep $DEMO_PAUSE
#
#   bash test/demo.sh              full run (what `make demo` does)
#   bash test/demo.sh --no-setup   only the steps, against the cluster in the
#                                  current environment (PGHOST/PGPORT/...);
#                                  used by test/integration/demo.sh
#   STREAM_EXT_KEEP_CLUSTER=1 make demo   leave the cluster up afterwards
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export STREAM_EXT_ROOT=$ROOT
# shellcheck source=lib/common.sh
source "$ROOT/test/lib/common.sh"
# shellcheck source=lib/cluster.sh
source "$ROOT/test/lib/cluster.sh"

export DEMO_ROUNDS=${DEMO_ROUNDS:-5}
export DEMO_PAUSE=${DEMO_PAUSE:-1}
export DEMO_DB=${DEMO_DB:-stream_ext_demo}

if [[ ${1:-} != --no-setup ]]; then
	mkdir -p "$ROOT/test/tmp"
	bash "$ROOT/test/lib/deps.sh"
	pg_env
	build_install "$ROOT/test/tmp/demo-build.log" || die "build failed"
	scratch_create
	if [[ ${STREAM_EXT_KEEP_CLUSTER:-} == 1 ]]; then
		trap 'touch "$STREAM_EXT_TMP/keep"; msg "cluster kept: source $STREAM_EXT_TMP/env.sh; stop: test/lib/cluster.sh stop $STREAM_EXT_TMP"' EXIT
	else
		trap cluster_cleanup EXIT
	fi
	trap 'exit 130' INT
	trap 'exit 143' TERM
	cluster_start
else
	pg_env
	[[ -n ${PGPORT:-} ]] || die "--no-setup needs a running cluster in the environment (PGHOST/PGPORT)"
fi
export PATH="$PG_BINDIR:$PATH"

# A fresh database for the demo.
PGDATABASE=postgres PGOPTIONS="-c client_min_messages=warning" psql -X -q -v ON_ERROR_STOP=1 \
	-c "DROP DATABASE IF EXISTS $DEMO_DB" -c "CREATE DATABASE $DEMO_DB" >/dev/null
export PGDATABASE=$DEMO_DB

steps=()
while IFS= read -r f; do steps+=("$f"); done \
	< <(find "$ROOT/test/demo" -maxdepth 1 -type f -name '*.sh' | LC_ALL=C sort)
[[ ${#steps[@]} -gt 0 ]] || die "no demo steps in test/demo/"

for step in "${steps[@]}"; do
	printf '\n==== demo step: %s ====\n' "${step#"$ROOT"/}"
	bash -c '
		set -euo pipefail
		demo_say()   { printf "\n---- %s\n" "$*"; }
		demo_sql()   { psql -X -v ON_ERROR_STOP=1 -P pager=off -d "$DEMO_DB" "$@"; }
		demo_pause() { sleep "$DEMO_PAUSE"; }
		source "$1"' demo-step "$step" ||
		die "demo step ${step#"$ROOT"/} failed"
done

printf '\n==== demo finished ====\n'
