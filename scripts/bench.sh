#!/usr/bin/env bash
# Benchmarks: the device benchmark (drives the Pagoda GPU through qtest and
# prints throughputs next to the host doing the same work, then plots
# throughput against operation size for each path next to the host's),
# then the video memory manager benchmark in a guest
# (guest-driver/tools/pagoda-membench.c: CPU access, allocation rate,
# eviction and re-admission, each next to a baseline of the same run) and
# the address-space benchmark (guest-driver/tools/pagoda-vmbench.c: binds,
# page-table size, job round trips against QEMU's NVMe controller's in
# the same guest, rebinding after eviction). See docs/performance.md.
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
step "video memory manager benchmark (guest, stock kernel, two linked GPUs of 128 MiB of VRAM, a lone one and QEMU's NVMe beside)"
# QEMU's own NVMe controller on a null-co drive, beside the GPU in the same
# guest: pagoda-vmbench's round trips are also given as ratios of its reads.
# A lone GPU, not linked: the baseline of binding on the link.
NVME_ARGS="-blockdev driver=null-co,node-name=nvme-null,size=1073741824,read-zeroes=on
-device nvme,serial=pagoda-bench,drive=nvme-null -device pagoda,vram-size=128M"
PAGODA_QEMU_ARGS="${PAGODA_QEMU_ARGS:-} $(echo $NVME_ARGS)" \
	"$PAGODA_ROOT/scripts/run-guest.sh" --device vram-size=128M --link 2 "$@" \
	pagoda-membench pagoda-vmbench
step "where a job's round trip goes (guest, stock kernel; the device traced by QEMU)"
# The guest's phases from its tracepoints; the device's, doorbell to
# retirement, from QEMU's trace of the same run (host clock).
QEMU_TRACE=$BENCH_DIR/qemu-trace.log
rm -f "$QEMU_TRACE"
PAGODA_QEMU_ARGS="${PAGODA_QEMU_ARGS:-} -msg timestamp=on -D $QEMU_TRACE
-trace pagoda_doorbell -trace pagoda_retire" \
	"$PAGODA_ROOT/scripts/run-guest.sh" "$@" pagoda-latency
# "<tid>@<sec>.<usec>:pagoda_doorbell engine E head H tail T", then
# "...:pagoda_retire engine E entry N fence F": each doorbell to the next
# retirement on its engine
awk -F'[@: ]+' '
	/:pagoda_doorbell / { if (!($5 in rung)) rung[$5] = $2 }
	/:pagoda_retire / { if ($5 in rung) { print $5, ($2 - rung[$5]) * 1e6; delete rung[$5] } }' \
	"$QEMU_TRACE" | sort -k1,1n -k2,2n |
	awk '{ v[$1, ++n[$1]] = $2; sum[$1] += $2 }
	END { for (e in n)
		printf "device, engine %s (%s): doorbell to retirement, median %.1f us, mean %.1f us over %d jobs\n",
		       e, e == 0 ? "paging" : "render", v[e, int((n[e] + 1) / 2)], sum[e] / n[e], n[e] }'
step "DMA buffer splitting benchmark (guest, stock kernel: 16 MiB of VRAM, then 256 MiB)"
SPLIT_LOG=$BENCH_DIR/splitbench.log
"$PAGODA_ROOT/scripts/run-guest.sh" --device vram-size=16M,hidden-vram-size=8M,aperture-size=16M \
	"$@" pagoda-splitbench | tee "$SPLIT_LOG"
"$PAGODA_ROOT/scripts/run-guest.sh" --device vram-size=256M "$@" pagoda-splitbench |
	tee -a "$SPLIT_LOG"
# split throughput against the same buffers unsplit on the large device
# (the first trace's: the unsplit run is of that one)
awk '/^driver \(next use\):/ && !split_rate { split_rate = $(NF - 4) }
	/^unsplit:/ { unsplit_rate = $(NF - 4) }
	END { if (split_rate && unsplit_rate)
		printf "split throughput %.0f steps/s = %.2fx the unsplit run (%.0f steps/s)\n",
		       split_rate, split_rate / unsplit_rate, unsplit_rate }' "$SPLIT_LOG"
