#!/usr/bin/env bash
# The test command: installs and builds what is missing, then runs every
# test: host unit tests, the device qtests and the guest tests (a Linux
# guest with the Pagoda GPU running the programs of tests/guest/). Ends with
# one summary line per kind and exits non-zero if anything failed.
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
	local build=$PAGODA_CACHE/host-build log=$LOGS/unit-tests.log
	if [ ! -f "$build/build.ninja" ]; then
		run_logged "$LOGS/unit-setup.log" meson setup "$build" "$PAGODA_ROOT"
	fi
	if meson test -C "$build" --print-errorlogs >"$log" 2>&1; then :; fi
	grep -E '^ *[0-9]+/[0-9]+ ' "$log" | sed 's/^/    /'
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
	grep -E '^(ok|not ok) ' "$log" | sed 's|/x86_64/pc/i440FX-pcihost/pci-bus-pc/pci-bus/||; s/^/    /'
	count_tap qtest "$log"
	if ! grep -qE '^1\.\.[0-9]+' "$log" || grep -q '^Bail out!' "$log"; then
		grep -E 'ERROR|Bail out' "$log" | head -5
		FAILED[qtest]=$(( ${FAILED[qtest]} + 1 ))
	fi
}

# guest_boot LOG RUN-GUEST-ARGS...: one boot; adds its counts to the totals.
guest_boot() {
	local log=$1 line; shift
	"$PAGODA_ROOT/scripts/run-guest.sh" "${GUEST_ARGS[@]}" "$@" 2>&1 | tee "$log" || true
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
	if [ -z "$line" ]; then
		FAILED[guest]=$(( ${FAILED[guest]} + 1 ))
		return
	fi
	PASSED[guest]=$(( ${PASSED[guest]} + ${line%% passed*} ))
	FAILED[guest]=$(( ${FAILED[guest]} + $(echo "$line" | sed 's/.*, \([0-9]*\) failed/\1/') ))
}

guest_tests() {
	PASSED[guest]=0
	FAILED[guest]=0
	step "guest tests (Linux guest with the Pagoda GPU, MSI-X)"
	guest_boot "$LOGS/guest-tests.log"
	step "guest tests (interrupts through INTx: pci=nomsi)"
	guest_boot "$LOGS/guest-tests-intx.log" --append pci=nomsi irq irq_delivery
}

main() {
	mkdir -p "$LOGS"
	"$PAGODA_ROOT/scripts/setup.sh"
	unit_tests
	qtests
	guest_tests
	echo
	echo "==> summary"
	local kind bad=0
	for kind in unit qtest guest; do
		printf '    %-7s %s passed, %s failed\n' "$kind" "${PASSED[$kind]}" "${FAILED[$kind]}"
		[ "${FAILED[$kind]}" = 0 ] || bad=1
	done
	exit $bad
}

main
