#!/usr/bin/env bash
# Coverage-guided fuzzing of the driver's UAPI: pagoda-kfuzz
# (guest-driver/tools/pagoda-kfuzz.c) on the debug kernel (KCOV on
# pagoda.ko, KASAN, lockdep, kmemleak, UBSAN), several processes at once,
# on a small device so that allocations compete for VRAM, with the debugfs
# hooks among the calls and hung jobs found after 1 s. At the end: the
# fuzzer's figures (programs, corpus, driver PCs and edges, the errnos each
# ioctl returned), any finding (an errno the guide does not document, with
# the program that got it; a kernel report), and pagoda.ko's line and
# branch coverage per file for the run (gcov).
#   usage: scripts/fuzz-driver.sh [--seconds N] [--procs N] [--seed S]
#                                 [--device OPTS]
#   --seconds N   fuzzing time (default 1800)
#   --procs N     fuzzing processes (default 3)
#   --seed S      the first process's seed (default: from the clock)
#   --device OPTS the device (default: 16 MiB VRAM, 8 MiB hidden VRAM,
#                 a 16 MiB aperture, a 1 MiB host aperture)
# The console is kept in $PAGODA_CACHE/logs/fuzz-driver-<date>.log. Exit
# status 0 when the fuzzer found nothing and the kernel stayed clean.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

SECS=1800
PROCS=3
SEED=
DEVICE=vram-size=16M,hidden-vram-size=8M,aperture-size=16M,host-aperture-size=1M
while [ $# -gt 0 ]; do
	case $1 in
	--seconds) SECS=$2; shift 2 ;;
	--procs) PROCS=$2; shift 2 ;;
	--seed) SEED=$2; shift 2 ;;
	--device) DEVICE=$2; shift 2 ;;
	*) die "unknown argument $1" "see the usage at the top of scripts/fuzz-driver.sh" ;;
	esac
done
[[ $SECS =~ ^[0-9]+$ && $PROCS =~ ^[1-9][0-9]*$ ]] ||
	die "--seconds and --procs take numbers" "see the usage at the top of scripts/fuzz-driver.sh"

"$PAGODA_ROOT/scripts/debug-kernel.sh"
"$PAGODA_ROOT/scripts/build-guest.sh" --kernel debug

LOG=$PAGODA_CACHE/logs/fuzz-driver-$(date +%Y%m%d-%H%M%S).log
APPEND="pagoda.hang_timeout_ms=1000 pagoda_guest.kfuzz_seconds=$SECS"
APPEND+=" pagoda_guest.kfuzz_procs=$PROCS${SEED:+ pagoda_guest.kfuzz_seed=$SEED}"
step "pagoda-kfuzz: $SECS s, $PROCS processes, device $DEVICE (console: $LOG)"
status=0
# the guest boots and checks its kernel for a few minutes besides the fuzzing
"$PAGODA_ROOT/scripts/run-guest.sh" --kernel debug --prebuilt --timeout $((SECS + 600)) \
	--device "$DEVICE" --append "$APPEND" pagoda-kfuzz >"$LOG" 2>&1 || status=$?

step "what the fuzzer found"
awk '/^PAGODA-START pagoda-kfuzz/ { on = 1; next } /^PAGODA-RESULT / { on = 0 }
	on && !/^PAGODA-GCOV|^[A-Za-z0-9+\/=]{60,}$/' "$LOG" | sed 's/^/    /'
sed -n '/^==> results/,$p' "$LOG" | sed '1d'

step "driver coverage of this run (pagoda.ko, gcov)"
gcov_dir=$(sed -n 's/^    gcov: \(\/.*\)$/\1/p' "$LOG" | tail -n 1)
if [ -n "$gcov_dir" ] && ls "$gcov_dir"/*.gcda >/dev/null 2>&1; then
	driver_gcov_load "$gcov_dir"
	driver_gcov_table "$SECS s of pagoda-kfuzz"
	driver_errno_sites "${LOG%.log}-errno-sites-not-run.txt"
else
	info "no coverage counters came back"
fi
exit "$status"
