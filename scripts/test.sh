#!/usr/bin/env bash
# The test command: installs and builds what is missing, then runs every
# test: host unit tests, the device qtests and the guest tests (a Linux
# guest with the Pagoda GPU running the programs of tests/guest/), once on
# Debian's stock kernel and once on the debug kernel (KASAN, lockdep,
# kmemleak, ...). The debug kernel's build and its main boot, the longest
# part, run beside the rest (two processes on two cores: a guest leaves a
# core idle much of the time); each boot's console goes to a log of its
# own and its results are printed once it ends. Ends with where the time
# went, one summary line per kind, then one line "N passed, M failed"
# over all of them, and exits non-zero if anything failed.
#   usage: scripts/test.sh [--kvm]
set -euo pipefail
. "$(dirname "$0")/lib.sh"

GUEST_ARGS=("$@")
declare -A PASSED FAILED
LOGS=$PAGODA_CACHE/logs

count_tap() {
	PASSED[$1]=$(grep -c '^ok ' "$2" || true)
	FAILED[$1]=$(grep -c '^not ok ' "$2" || true)
}

unit_tests() {
	step "unit tests"
	local build=$HOST_BUILD log=$LOGS/unit-tests.log
	if [ ! -f "$build/build.ninja" ]; then
		run_logged "$LOGS/unit-setup.log" meson setup "$build" "$PAGODA_ROOT"
	fi
	if meson test -C "$build" --print-errorlogs >"$log" 2>&1; then :; fi
	{ grep -E '^ *[0-9]+/[0-9]+ ' "$log" || true; } | sed 's/^/    /'
	PASSED[unit]=$(grep -cE '^ *[0-9]+/[0-9]+ .* OK ' "$log" || true)
	FAILED[unit]=$(grep -cE '^ *[0-9]+/[0-9]+ .* (FAIL|ERROR|TIMEOUT) ' "$log" || true)
	if ! grep -q '^Ok: ' "$log"; then
		tail -n 30 "$log"
		FAILED[unit]=$(( ${FAILED[unit]} > 0 ? ${FAILED[unit]} : 1 ))
	fi
}

qtests() {
	step "device qtests (qos-test, pagoda node)"
	local log=$LOGS/qtests.log
	(cd "$QEMU_BUILD" && QTEST_QEMU_BINARY=./qemu-system-x86_64 \
		timeout 900 ./tests/qtest/qos-test --tap -k) >"$log" 2>&1 || true
	if have_fuzz_repro_test; then
		(cd "$QEMU_BUILD" && QTEST_QEMU_BINARY=./qemu-system-x86_64 \
			timeout 600 "./tests/qtest/$FUZZ_REPRO_TEST" --tap -k) >>"$log" 2>&1 || true
	fi
	(cd "$QEMU_BUILD" && QTEST_QEMU_BINARY=./qemu-system-x86_64 \
		timeout 600 "./tests/qtest/$MIGRATION_TEST" --tap -k) >>"$log" 2>&1 || true
	{ grep -E '^(ok|not ok) ' "$log" || true; } | sed 's|/x86_64/pc/i440FX-pcihost/pci-bus-pc/pci-bus/||; s/^/    /'
	count_tap qtest "$log"
	if ! grep -qE '^1\.\.[0-9]+' "$log" || grep -q '^Bail out!' "$log"; then
		{ grep -E 'ERROR|Bail out' "$log" || true; } | sed -n 1,5p
		FAILED[qtest]=$(( ${FAILED[qtest]} + 1 ))
	fi
}

# guest_boot KIND LABEL RUN-GUEST-ARGS...: one boot, its console in a log of
# its own; prints the boot's results (and the output of any program that
# failed), records its counts for KIND and its time.
guest_boot() {
	local kind=$1 label=$2 log=$LOGS/guest-tests-$2.log line passed=0 failed=1 start
	shift 2
	start=$(date +%s)
	"$PAGODA_ROOT/scripts/run-guest.sh" "${GUEST_ARGS[@]}" "$@" >"$log" 2>&1 || true
	echo "==> guest tests: $label (console: $log)"
	# A guest that never got a program to its end did not run the tests:
	# under TCG a vCPU has been seen to stop taking its timer interrupts
	# from early boot (an RCU stall, then every interrupt routed to it
	# lost). Booted once more, and said so; a failure that comes from the
	# driver comes back the second time.
	if ! grep -q '^PAGODA-RESULT ' "$log"; then
		mv "$log" "${log%.log}-first.log"
		echo "    the guest ran no program to its end (first report:" \
			"$({ grep -m1 -E 'rcu: INFO|BUG:|WARNING:|Oops|panic|TIMEOUT' "${log%.log}-first.log" || echo none; } |
			   sed 's/^ *//'));" "booting it once more (first console: ${log%.log}-first.log)"
		echo "$label-first-boot $(( $(date +%s) - start ))" >>"$TIMES"
		start=$(date +%s)
		"$PAGODA_ROOT/scripts/run-guest.sh" "${GUEST_ARGS[@]}" "$@" >"$log" 2>&1 || true
	fi
	# run-guest.sh's own summary: the programs' results, kernel reports, time
	sed -n '/^==> results/,$p' "$log" | sed '1d'
	failed_output "$log"
	line=$({ grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" || true; } | tail -n 1)
	if [ -n "$line" ]; then
		passed=${line%% passed*}
		failed=$(echo "$line" | sed 's/.*, \([0-9]*\) failed/\1/')
	else
		tail -n 30 "$log"
	fi
	echo "$passed $failed" >>"$LOGS/counts-$kind"
	echo "$label $(( $(date +%s) - start ))" >>"$TIMES"
}

# failed_output LOG: what each program that failed printed (its last lines).
failed_output() {
	local name
	for name in $(sed -n 's/^PAGODA-RESULT \([^ ]*\) FAIL .*/\1/p' "$1"); do
		echo "    output of $name (last 40 lines):"
		awk -v p="$name" '$0 == "PAGODA-START " p { on = 1; next }
			on && /^PAGODA-RESULT / { exit } on' "$1" | tail -n 40 | sed 's/^/        /'
	done
}

# Programs that exercise interrupt delivery, run again under INTx.
INTX_PROGRAMS="irq irq_delivery pci_reset"

# The suite runs on a device with 64 MiB of VRAM and 64 MiB of hidden VRAM,
# so that the stress and allocation tests overcommit them several times
# within the guest's 1 GiB, and a 4 MiB host aperture (64 slots of 64 KiB),
# so that CPU access to hidden VRAM reuses slots all the time.
SUITE_DEVICE=vram-size=64M,hidden-vram-size=64M,host-aperture-size=4M
# The address-space programs run again on the other page-table layouts:
# two levels (a resizable root) and 4 KiB segment pages.
VM_PROGRAMS="vm_render vm_evict vm_share suballoc tiles"
VM_DEVICES="mmu-levels=2 segment-page-size=4096"
# Physical-mode submission runs again on a small device (40 MiB that the
# render engine reaches physically), where its DMA buffers must split.
PHYS_PROGRAMS="phys_split"
PHYS_DEVICE=vram-size=16M,hidden-vram-size=8M,aperture-size=16M
# Two GPUs linked into one logical adapter (scripts/run-guest.sh --link 2):
# the link's own program, and programs that unbind, reset and use it (the
# stress program's allocations go to both GPUs); then (stock kernel) the
# link with work in flight across a snapshot and live migrations.
LINK_PROGRAMS="linked get_param_errors vm_render rebind pci_reset ioctl_fuzz stress"
LINK_GPUS=2
# the UAPI fuzzer's full 20000 calls run on one GPU; on the link, 5000
LINK_ARGS="pagoda_guest.fuzz_calls=5000"
LINK_MIGRATION_PROGRAMS="stress linked"
LINK_MIGRATION_ARGS="--snapshots 1 --migrate 2 --migrate-interval 4 --stress-seconds 12"
# Programs with GPU work in flight while the running guest is snapshotted
# and restored once, then live-migrated to a new QEMU three times
# (scripts/migrate-guest.py), on the suite's device: what they check must
# hold across it all.
MIGRATION_PROGRAMS="stress display vm_render tiles phys_split"
MIGRATION_ARGS="--snapshots 1 --migrate 3 --migrate-interval 4 --stress-seconds 15"
# The KCOV-guided UAPI fuzzer (scripts/fuzz-driver.sh runs it for longer)
# joins the small device's boot on the debug kernel, which has KCOV: 20 s
# of three processes competing for its VRAM.
declare -A KFUZZ_PROGRAM=([stock]="" [debug]=pagoda-kfuzz)
KFUZZ_ARGS="pagoda_guest.kfuzz_seconds=20 pagoda_guest.kfuzz_procs=3"
# The stress program runs 45 s where the checks are (debug kernel), 20 s
# on the stock kernel.
declare -A STRESS_SECONDS=([stock]=20 [debug]=45)
# A hung job is found after 3 s, not 10 (the driver's default): the
# recovery programs hang the engines three times on each kernel.
DRIVER_ARGS="pagoda.hang_timeout_ms=3000"

# main_boot KERNEL KIND: the whole guest suite on one kernel.
main_boot() {
	guest_boot "$2" "$1" --kernel "$1" --prebuilt --append "$DRIVER_ARGS" \
		--device "$SUITE_DEVICE" --stress-seconds "${STRESS_SECONDS[$1]}"
}

# other_boots KERNEL KIND: the interrupt programs under INTx, the
# address-space programs on the other page-table layouts, and physical
# mode on a small device (with the UAPI fuzzer on the debug kernel).
other_boots() {
	local kernel=$1 kind=$2 opts
	guest_boot "$kind" "$kernel-intx" --kernel "$kernel" --prebuilt \
		--append "pci=nomsi $DRIVER_ARGS" $INTX_PROGRAMS
	for opts in $VM_DEVICES; do
		guest_boot "$kind" "$kernel-$opts" --kernel "$kernel" --prebuilt \
			--append "$DRIVER_ARGS" --device "$SUITE_DEVICE,$opts" $VM_PROGRAMS
	done
	guest_boot "$kind" "$kernel-phys" --kernel "$kernel" --prebuilt \
		--append "$DRIVER_ARGS $KFUZZ_ARGS" --device "$PHYS_DEVICE" $PHYS_PROGRAMS \
		${KFUZZ_PROGRAM[$kernel]}
}

# link_boot KERNEL KIND: a linked adapter of two GPUs.
link_boot() {
	# shellcheck disable=SC2086 # word splitting intended
	guest_boot "$2" "$1-link" --kernel "$1" --prebuilt \
		--append "$DRIVER_ARGS $LINK_ARGS" --device "$SUITE_DEVICE" --link "$LINK_GPUS" \
		--stress-seconds 10 $LINK_PROGRAMS
}

# migration_boots KERNEL KIND: GPU work across a snapshot and live
# migrations, on one GPU, and (stock kernel) on a linked adapter.
migration_boots() {
	# shellcheck disable=SC2086 # word splitting intended
	guest_boot "$2" "$1-migration" --kernel "$1" --prebuilt \
		--append "$DRIVER_ARGS" --device "$SUITE_DEVICE" $MIGRATION_ARGS \
		$MIGRATION_PROGRAMS
	[ "$1" = stock ] || return 0
	# shellcheck disable=SC2086 # word splitting intended
	guest_boot "$2" "$1-link-migration" --kernel "$1" --prebuilt \
		--append "$DRIVER_ARGS" --device "$SUITE_DEVICE" --link "$LINK_GPUS" \
		$LINK_MIGRATION_ARGS $LINK_MIGRATION_PROGRAMS
}

# debug_side: the debug kernel (built on first use, minutes) and its image,
# then the debug kernel's main boot, the longest (KASAN and lockdep slow
# the guest down), its link and its migrations, beside everything else: a
# guest leaves a core idle much of the time. Leaves $DEBUG_READY or
# $DEBUG_FAILED for the other side, which runs the debug kernel's other
# boots. Output to DEBUG_SIDE_LOG.
debug_side() {
	local start
	start=$(date +%s)
	if "$PAGODA_ROOT/scripts/debug-kernel.sh" &&
	   "$PAGODA_ROOT/scripts/build-guest.sh" --kernel debug; then
		echo "debug-kernel-and-image $(( $(date +%s) - start ))" >>"$TIMES"
		touch "$DEBUG_READY"
		main_boot debug guest-debug
		link_boot debug guest-debug
		migration_boots debug guest-debug
	else
		touch "$DEBUG_FAILED"
		echo "0 1" >>"$LOGS/counts-guest-debug"
		echo "    the debug kernel or its image did not build: no guest test ran on it"
	fi
}

# wait_debug_image: until debug_side has built the debug kernel and image
# (true) or failed to (false).
wait_debug_image() {
	local start
	start=$(date +%s)
	while [ ! -e "$DEBUG_READY" ] && [ ! -e "$DEBUG_FAILED" ] && kill -0 "$debug_pid" 2>/dev/null; do
		sleep 2
	done
	echo "waiting-for-the-debug-kernel $(( $(date +%s) - start ))" >>"$TIMES"
	[ -e "$DEBUG_READY" ]
}

# add_counts KIND: the counts its boots recorded (a lane that recorded
# nothing failed once).
add_counts() {
	local p f
	PASSED[$1]=0
	FAILED[$1]=0
	if [ ! -s "$LOGS/counts-$1" ]; then
		FAILED[$1]=1
		return
	fi
	while read -r p f; do
		PASSED[$1]=$(( ${PASSED[$1]} + p ))
		FAILED[$1]=$(( ${FAILED[$1]} + f ))
	done <"$LOGS/counts-$1"
}

# timed LABEL COMMAND...: run it and record how long it took.
timed() {
	local label=$1 start rc=0
	shift
	start=$(date +%s)
	"$@" || rc=$?
	echo "$label $(( $(date +%s) - start ))" >>"$TIMES"
	return $rc
}

# driver_coverage: pagoda.ko's line coverage over the debug kernel's
# boots, which have gcov: the counters each boot's /init printed
# (run-guest.sh unpacks them), merged, read with the build's notes.
driver_coverage() {
	local merged=$LOGS/gcov-merged dir n=0
	echo
	echo "==> driver coverage (pagoda.ko, lines and branches run by the debug kernel's boots)"
	rm -rf "$merged" "$merged.tmp"
	for dir in $(sed -n 's/^    gcov: \(\/.*\)$/\1/p' "$LOGS"/guest-tests-debug*.log); do
		if [ "$n" = 0 ]; then
			cp -r "$dir" "$merged"
		elif ! gcov-tool merge "$merged" "$dir" -o "$merged.tmp" >/dev/null 2>&1; then
			echo "    could not merge $dir"
			continue
		else
			rm -rf "$merged" && mv "$merged.tmp" "$merged"
		fi
		n=$((n + 1))
	done
	if [ "$n" = 0 ] || ! ls "$merged"/*.gcda >/dev/null 2>&1; then
		echo "    no coverage counters came back"
		return
	fi
	driver_gcov_load "$merged"
	driver_gcov_table "$n boots"
	driver_errno_sites "$LOGS/errno-sites-not-run.txt"
}

# time_report: where the run's time went, by wall clock: each step and
# boot (the debug kernel and its lane ran beside the rest), then the
# guest programs that took longest.
time_report() {
	local label seconds
	echo
	echo "==> time (wall clock; the debug kernel's main boot ran beside the rest)"
	while read -r label seconds; do
		printf '    %-32s %5s s\n' "$label" "$seconds"
	done <"$TIMES"
	printf '    %-32s %5s s\n' "all" "$(( $(date +%s) - RUN_START ))"
	echo "    slowest guest programs:"
	# sed, not head: it reads all of sort's output (no SIGPIPE under pipefail)
	for label in "$LOGS"/guest-tests-*.log; do
		[ -f "$label" ] || continue
		sed -n "s|^PAGODA-RESULT \\([^ ]*\\) [A-Z]* [0-9]* \\([0-9.]*\\)$|\\2 \\1 $(basename "$label" .log)|p" "$label"
	done | sort -rn | sed -n 1,8p |
		while read -r seconds label boot; do
			printf '      %-30s %6s s  (%s)\n' "$label" "$seconds" "${boot#guest-tests-}"
		done
}

# summary: one line per kind, then the total; a run cut short by a failing
# step (setup, a build) counts that step as one failed test, so the last
# line is always the total.
summary() {
	local kind passed=0 failed=0
	[ "$SUMMARY_DONE" = 1 ] && return
	SUMMARY_DONE=1
	echo
	echo "==> summary"
	for kind in unit qtest guest guest-debug; do
		[ -n "${PASSED[$kind]:-}" ] || continue
		printf '    %-12s %s passed, %s failed\n' "$kind" "${PASSED[$kind]}" "${FAILED[$kind]}"
		passed=$((passed + ${PASSED[$kind]}))
		failed=$((failed + ${FAILED[$kind]}))
	done
	if [ "$MAIN_DONE" != 1 ]; then
		printf '    stopped in step "%s"\n' "${PAGODA_STEP:-?}"
		failed=$((failed + 1))
	fi
	echo "$passed passed, $failed failed"
	[ "$failed" = 0 ]
}

main() {
	mkdir -p "$LOGS"
	rm -f "$LOGS"/counts-* "$LOGS"/guest-tests-*.log "$DEBUG_READY" "$DEBUG_FAILED"
	: >"$TIMES"
	: >"$LOGS/counts-guest"
	: >"$LOGS/counts-guest-debug"
	PAGODA_STEP=scripts/setup.sh
	timed setup "$PAGODA_ROOT/scripts/setup.sh"
	# the guest programs (shared by both kernels) and the stock image
	PAGODA_STEP=scripts/build-guest.sh
	timed stock-image "$PAGODA_ROOT/scripts/build-guest.sh" --kernel stock
	PAGODA_STEP="tests"
	echo "==> the debug kernel's main boot, beside the rest (log: $DEBUG_SIDE_LOG)"
	debug_side >"$DEBUG_SIDE_LOG" 2>&1 &
	debug_pid=$!
	timed unit unit_tests
	timed qtests qtests
	main_boot stock guest
	other_boots stock guest
	link_boot stock guest
	migration_boots stock guest
	if wait_debug_image; then
		other_boots debug guest-debug
	fi
	wait "$debug_pid" || true
	debug_pid=
	cat "$DEBUG_SIDE_LOG"
	add_counts guest
	add_counts guest-debug
	driver_coverage
	time_report
	MAIN_DONE=1
	summary
}

SUMMARY_DONE=0
MAIN_DONE=0
RUN_START=$(date +%s)
TIMES=$LOGS/times
DEBUG_SIDE_LOG=$LOGS/debug-side.log
DEBUG_READY=$LOGS/debug-image.ready
DEBUG_FAILED=$LOGS/debug-image.failed
debug_pid=
# an interrupted run stops the debug side too
trap '[ -z "$debug_pid" ] || kill "$debug_pid" 2>/dev/null; summary || true' EXIT
main
