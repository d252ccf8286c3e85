#!/usr/bin/env bash
# Benchmarks: the device benchmark (drives the Pagoda GPU through qtest and
# prints throughputs next to the host doing the same work, then plots
# throughput against operation size for each path next to the host's),
# then the video memory manager benchmark in a guest
# (guest-driver/tools/pagoda-membench.c: CPU access, allocation rate,
# eviction and re-admission, each next to a baseline of the same run) and
# the address-space benchmark (guest-driver/tools/pagoda-vmbench.c: binds,
# page-table size, job round trips, rebinding after eviction). See
# docs/performance.md.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

"$PAGODA_ROOT/scripts/setup.sh"
BENCH_DIR=$PAGODA_CACHE/bench
mkdir -p "$BENCH_DIR"
step "device benchmark"
(cd "$QEMU_BUILD" && PAGODA_BENCH_DATA="$BENCH_DIR/sweep.dat" \
	QTEST_QEMU_BINARY=./qemu-system-x86_64 ./tests/qtest/pagoda-bench)
step "plot: throughput against operation size"
gnuplot -e "data='$BENCH_DIR/sweep.dat'; out='$BENCH_DIR/throughput.png'" \
	"$PAGODA_ROOT/scripts/bench-plot.gp"
echo "    $BENCH_DIR/throughput.png"
step "video memory manager benchmark (guest, stock kernel, 128 MiB of VRAM)"
"$PAGODA_ROOT/scripts/run-guest.sh" --device vram-size=128M "$@" pagoda-membench pagoda-vmbench
