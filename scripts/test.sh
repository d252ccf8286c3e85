#!/usr/bin/env bash
# The test command: installs and builds what is missing, then runs every
# test: host unit tests, the device qtests and the guest tests (a Linux
# guest with the Pagoda GPU running the programs of tests/guest/), once on
# Debian's stock kernel and once on the debug kernel (KASAN, lockdep,
# kmemleak, ...). Ends with one summary line per kind, then one line
# "N passed, M failed" over all of them, and exits non-zero if anything
# failed.
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
	{ grep -E '^(ok|not ok) ' "$log" || true; } | sed 's|/x86_64/pc/i440FX-pcihost/pci-bus-pc/pci-bus/||; s/^/    /'
	count_tap qtest "$log"
	if ! grep -qE '^1\.\.[0-9]+' "$log" || grep -q '^Bail out!' "$log"; then
		{ grep -E 'ERROR|Bail out' "$log" || true; } | head -5
		FAILED[qtest]=$(( ${FAILED[qtest]} + 1 ))
	fi
}

# guest_boot KIND LOG RUN-GUEST-ARGS...: one boot; adds its counts to KIND.
guest_boot() {
	local kind=$1 log=$2 line; shift 2
	"$PAGODA_ROOT/scripts/run-guest.sh" "${GUEST_ARGS[@]}" "$@" 2>&1 | tee "$log" || true
	line=$({ grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" || true; } | tail -n 1)
	if [ -z "$line" ]; then
		FAILED[$kind]=$(( ${FAILED[$kind]} + 1 ))
		return
	fi
	PASSED[$kind]=$(( ${PASSED[$kind]} + ${line%% passed*} ))
	FAILED[$kind]=$(( ${FAILED[$kind]} + $(echo "$line" | sed 's/.*, \([0-9]*\) failed/\1/') ))
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
VM_PROGRAMS="vm_render vm_evict vm_share"
VM_DEVICES="mmu-levels=2 segment-page-size=4096"
# Physical-mode submission runs again on a small device (40 MiB that the
# render engine reaches physically), where its DMA buffers must split.
PHYS_PROGRAMS="phys_split"
PHYS_DEVICE=vram-size=16M,hidden-vram-size=8M,aperture-size=16M
# The stress program runs 60 s where the checks are (debug kernel), 20 s
# on the stock kernel.
declare -A STRESS_SECONDS=([stock]=20 [debug]=60)

# guest_lane KERNEL KIND: the whole guest suite on one kernel, then the
# interrupt programs under INTx.
guest_lane() {
	local kernel=$1 kind=$2
	PASSED[$kind]=0
	FAILED[$kind]=0
	step "guest tests, $kernel kernel (Linux guest with the Pagoda GPU, MSI-X)"
	guest_boot "$kind" "$LOGS/guest-tests-$kernel.log" --kernel "$kernel" \
		--device "$SUITE_DEVICE" --stress-seconds "${STRESS_SECONDS[$kernel]}"
	step "guest tests, $kernel kernel (interrupts through INTx: pci=nomsi)"
	guest_boot "$kind" "$LOGS/guest-tests-$kernel-intx.log" --kernel "$kernel" \
		--append pci=nomsi $INTX_PROGRAMS
	local opts
	for opts in $VM_DEVICES; do
		step "guest tests, $kernel kernel (address spaces with $opts)"
		guest_boot "$kind" "$LOGS/guest-tests-$kernel-$opts.log" --kernel "$kernel" \
			--device "$SUITE_DEVICE,$opts" $VM_PROGRAMS
	done
	step "guest tests, $kernel kernel (physical mode on a small device: $PHYS_DEVICE)"
	guest_boot "$kind" "$LOGS/guest-tests-$kernel-phys.log" --kernel "$kernel" \
		--device "$PHYS_DEVICE" $PHYS_PROGRAMS
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
	PAGODA_STEP=scripts/setup.sh
	"$PAGODA_ROOT/scripts/setup.sh"
	PAGODA_STEP=scripts/debug-kernel.sh
	"$PAGODA_ROOT/scripts/debug-kernel.sh"
	unit_tests
	qtests
	guest_lane stock guest
	guest_lane debug guest-debug
	MAIN_DONE=1
	summary
}

SUMMARY_DONE=0
MAIN_DONE=0
trap 'summary || true' EXIT
main
