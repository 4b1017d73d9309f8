# stream_ext — PGXS build.
#
# Every src/*.c is compiled into the one module.  The install script
# stream_ext--$(EXTVERSION).sql is assembled at build time from the pieces in
# src/sql/ (one piece per subsystem, concatenated in name order); it is a
# build output and is never committed.  src/sql/upgrade/ holds the frozen
# install scripts of released versions and the upgrade scripts between
# them (ALTER EXTENSION stream_ext UPDATE), installed as they are.
#
# Set-up commands (see README.md):
#   make demo    build, install, start a throwaway cluster and run the demo
#   make test    build, install and run every test
#   make installcheck  (after make install) the pg_regress and isolation
#                tests against a running server that preloads stream_ext,
#                found through PGHOST/PGPORT/PGUSER like psql
EXTENSION  = stream_ext
EXTVERSION = 0.3
MODULE_big = stream_ext
OBJS       = $(patsubst %.c,%.o,$(sort $(wildcard src/*.c src/*/*.c)))
DATA_built = $(EXTENSION)--$(EXTVERSION).sql
# install scripts of earlier versions (frozen) and the upgrade scripts
DATA       = $(sort $(wildcard src/sql/upgrade/*.sql))
EXTRA_CLEAN = $(EXTENSION)--$(EXTVERSION).sql

# PGXS's installcheck: every sql/*.sql (wildcard, so new tests join by
# themselves) in database contrib_regression, then every isolation spec in
# database isolation_regression.  pg_isolation_regress wants specs/ and
# expected/ under its input directory: test/isolation (the later --inputdir
# wins over the one PGXS passes).  Outputs: results/, regression.diffs,
# output_iso/ (gitignored, removed by make clean).
REGRESS        = $(sort $(basename $(notdir $(wildcard sql/*.sql))))
ISOLATION      = $(sort $(basename $(notdir $(wildcard test/isolation/specs/*.spec))))
ISOLATION_OPTS = --inputdir=$(srcdir)/test/isolation

PG_CONFIG ?= $(shell command -v pg_config || echo /usr/lib/postgresql/15/bin/pg_config)
PG_CPPFLAGS = -I$(srcdir)/src
# librdkafka: Kafka; libavro (avro-c) and libcurl: Avro sources and their
# schema registry (src/kafka/avro_decode.c, registry.c)
SHLIB_LINK  = -lrdkafka -lavro -lcurl
# export only what PostgreSQL looks up by name (src/exports.map)
SHLIB_LINK += -Wl,--version-script=$(srcdir)/src/exports.map

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS tracks no header dependencies: rebuild every object when a header
# changes (a stale object with an old struct layout corrupts memory).
$(OBJS): $(wildcard src/*.h src/*/*.h)
$(shlib): src/exports.map

$(EXTENSION)--$(EXTVERSION).sql: $(sort $(wildcard src/sql/*.sql))
	cat $^ > $@

# ---- developer entry points (test/run-tests.sh, test/demo.sh, bench/run.sh) ----
# These must come after "include $(PGXS)" so that PGXS's default goal (all)
# stays the default.  PGXS's own installcheck/check are left untouched.
.PHONY: test demo bench
# Pass PG_CONFIG on only when the caller chose one; otherwise the scripts pick
# /usr/lib/postgresql/15/bin/pg_config themselves (after installing it).
STREAM_EXT_ENV = MAKE="$(MAKE)" $(if $(filter command line environment,$(origin PG_CONFIG)),PG_CONFIG="$(PG_CONFIG)")

test:
	$(STREAM_EXT_ENV) bash test/run-tests.sh

demo:
	$(STREAM_EXT_ENV) bash test/demo.sh

bench:
	@if [ -f bench/run.sh ]; then \
		$(STREAM_EXT_ENV) bash bench/run.sh; \
	else \
		echo "stream_ext: bench/run.sh does not exist yet; nothing to run"; \
	fi
