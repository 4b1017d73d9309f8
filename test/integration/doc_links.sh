#!/usr/bin/env bash
# test/integration/doc_links.sh -- every relative link of README.md and
# docs/*.md leads to a file that exists and to one of its headings
# (test/tools/doc_links.py).
set -euo pipefail
exec python3 "$STREAM_EXT_ROOT/test/tools/doc_links.py" "$STREAM_EXT_ROOT"
