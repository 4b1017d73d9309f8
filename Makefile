# stream_ext — PGXS build.
#
# Every src/*.c is compiled into the one module.  The install script
# stream_ext--$(EXTVERSION).sql is assembled at build time from the pieces in
# src/sql/ (one piece per subsystem, concatenated in name order); it is a
# build output and is never committed.
#
# Set-up commands (see README.md):
#   make demo    build, install, start a throwaway cluster and run the demo
#   make test    build, install and run every test
EXTENSION  = stream_ext
EXTVERSION = 0.1
MODULE_big = stream_ext
OBJS       = $(patsubst %.c,%.o,$(sort $(wildcard src/*.c)))
DATA_built = $(EXTENSION)--$(EXTVERSION).sql
EXTRA_CLEAN = $(EXTENSION)--$(EXTVERSION).sql

PG_CONFIG ?= $(shell command -v pg_config || echo /usr/lib/postgresql/15/bin/pg_config)
PG_CPPFLAGS = -I$(srcdir)/src
SHLIB_LINK  = -lrdkafka

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

$(EXTENSION)--$(EXTVERSION).sql: $(sort $(wildcard src/sql/*.sql))
	cat $^ > $@
