#!/usr/bin/env bash
# test/integration/layering.sh -- no file of src/ depends on itself through
# others (test/tools/layering.py: calls from the built objects' symbol
# tables, includes of a file's header).  The objects are those make test
# just built.
set -euo pipefail
exec python3 "$STREAM_EXT_ROOT/test/tools/layering.py" "$STREAM_EXT_ROOT/src"
