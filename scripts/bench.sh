#!/usr/bin/env bash
# Device benchmark: builds what it needs, then drives the Pagoda GPU through
# qtest and prints throughputs next to the host's memcpy/memset.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

"$PAGODA_ROOT/scripts/setup.sh"
step "device benchmark"
cd "$QEMU_BUILD"
QTEST_QEMU_BINARY=./qemu-system-x86_64 ./tests/qtest/pagoda-bench
