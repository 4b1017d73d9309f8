#!/usr/bin/env bash
# test/integration/exported_symbols.sh -- stream_ext.so exports only what
# PostgreSQL looks up by name (src/exports.map): the magic block, _PG_init,
# and stream_ext_* (SQL-callable functions, their pg_finfo_ records, the
# background workers' entry points; and the three functions test/fuzz's
# harness resolves from the module).  PostgreSQL loads modules with
# RTLD_GLOBAL, so anything else exported could clash with another module.
set -euo pipefail
so=$STREAM_EXT_ROOT/stream_ext.so
[[ -f $so ]] || { echo "no $so: build first" >&2; exit 1; }

exported=$(nm -D --defined-only "$so" | awk '{ print $3 }')
stray=$(grep -v -E '^(Pg_magic_func|_PG_init|pg_finfo_stream_ext_.*|stream_ext_.*|kafka_decoder_insert_sql|kafka_parse_format|kafka_parse_options)$' <<<"$exported" || true)
if [[ -n $stray ]]; then
	echo "exported beyond Pg_magic_func, _PG_init and stream_ext_*:"
	echo "$stray"
	exit 1
fi

# every C function the install script names is exported
missing=0
for f in $(grep -ho "'MODULE_PATHNAME', *'[a-z_0-9]*'" "$STREAM_EXT_ROOT"/src/sql/*.sql |
		   sed "s/.*, *'//; s/'//" | sort -u); do
	if ! grep -qx "$f" <<<"$exported" || ! grep -qx "pg_finfo_$f" <<<"$exported"; then
		echo "not exported: $f"
		missing=1
	fi
done
[[ $missing -eq 0 ]] || exit 1
echo "$(wc -l <<<"$exported") symbols exported, all of them stream_ext's interface"
