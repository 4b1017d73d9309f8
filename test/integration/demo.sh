#!/usr/bin/env bash
# test/integration/demo.sh -- the `make demo` steps (test/demo/*.sh) must run
# and pass their own checks against the test cluster.  No pauses.
set -euo pipefail
DEMO_PAUSE=0 DEMO_DB=it_demo bash "$STREAM_EXT_ROOT/test/demo.sh" --no-setup
