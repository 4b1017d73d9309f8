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
#   postgresql-15-cron                  pg_cron (preloaded by the test cluster)
#   postgresql-15-hll, postgresql-15-tdigest
#                                       other extensions' aggregates in continuous
#                                       views (sql/21_other_aggs)
#   libipc-run-perl, perl               TAP tests (prove, IPC::Run)
#   make, gcc                           the build itself
PACKAGES=(
	postgresql-15
	postgresql-server-dev-15
	postgresql-contrib
	librdkafka-dev
	postgresql-15-cron
	postgresql-15-hll
	postgresql-15-tdigest
	kcat
	libipc-run-perl
	perl
	make
	gcc
	clang-14
	llvm-14
	libclang-rt-14-dev
)

is_installed() {
	# `dpkg -s` also succeeds for removed-but-not-purged packages
	# ("deinstall ok config-files"), so look at the Status line itself.
	dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed$'
}

missing=()
for p in "${PACKAGES[@]}"; do
	is_installed "$p" || missing+=("$p")
done

[[ ${#missing[@]} -eq 0 ]] && exit 0

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
