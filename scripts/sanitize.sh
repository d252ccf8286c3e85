#!/usr/bin/env bash
# Sanitizer run: builds QEMU and qos-test with AddressSanitizer and
# UndefinedBehaviorSanitizer in their own build directory, then runs every
# pagoda qtest under them, one QEMU per test, and ends with a pass/fail
# summary. A test fails on its own failure, on any ASan or UBSan report
# (they are fatal), and on a leak whose allocation stack passes through
# Pagoda's code (leaks elsewhere in QEMU are not counted).
#   usage: scripts/sanitize.sh [PATTERN]   (only the tests whose path matches)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

BUILD=$PAGODA_CACHE/qemu-build-asan
LOGS=$PAGODA_CACHE/logs/sanitize
PATTERN=${1:-}
# An optional tool: it yields the CPUs to anything else that runs.
renice -n 10 $$ >/dev/null

# Errors stop the process at once with a stack; leaks are reported at exit
# without changing the exit status, and judged by where they come from:
# that needs whole allocation stacks, which the fast unwinder loses in glib.
export ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1:detect_leaks=1:fast_unwind_on_malloc=0
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
export LSAN_OPTIONS=exitcode=0

build() {
	"$PAGODA_ROOT/scripts/setup.sh"
	step "QEMU build with ASan and UBSan (first build about 15 minutes)"
	qemu_configure "$BUILD" "$PAGODA_CACHE/logs/asan-configure.log" \
		"--python=/usr/bin/python3 --cc=/usr/lib/ccache/gcc
--host-cc=/usr/lib/ccache/gcc $QEMU_FEATURE_FLAGS --enable-asan --enable-ubsan"
	qemu_ninja "$BUILD" "$PAGODA_CACHE/logs/asan-build.log" \
		qemu-system-x86_64 tests/qtest/qos-test
	bundle_firmware "$BUILD"
	info "$BUILD/qemu-system-x86_64 ready"
}

# Leak reports of a log whose stack names a file of the device or its tests.
pagoda_leaks() {
	awk -v ours='hw/display/pagoda/|tests/qtest/(libqos/)?pagoda' '
	     /^(Direct|Indirect) leak of/ { block = $0; next }
	     block != "" && /^ *#[0-9]+ / { block = block "\n" $0; next }
	     block != "" { if (block ~ ours) print block "\n"; block = "" }
	     END { if (block ~ ours) print block }' "$1"
}

run_tests() {
	step "pagoda qtests under ASan and UBSan"
	local tests t name log rc why passed=0 failed=0 failures=()
	cd "$BUILD"
	tests=$(QTEST_QEMU_BINARY=./qemu-system-x86_64 ./tests/qtest/qos-test -l 2>/dev/null |
		grep '/pagoda' | grep -e "$PATTERN" || true)
	[ -n "$tests" ] || die "no pagoda qtest matches '$PATTERN'" "run without an argument to list them all"
	rm -rf "$LOGS" && mkdir -p "$LOGS"
	info "$(wc -l <<<"$tests") tests; logs in $LOGS"
	for t in $tests; do
		name=${t##*/pagoda/}
		name=${name//\//-}
		log=$LOGS/$name.log
		rc=0
		QTEST_QEMU_BINARY=./qemu-system-x86_64 timeout 600 \
			./tests/qtest/qos-test --tap -p "$t" >"$log" 2>&1 || rc=$?
		why=
		if grep -qE 'ERROR: AddressSanitizer|runtime error:' "$log"; then
			why=$(grep -m1 -E 'ERROR: AddressSanitizer|runtime error:' "$log")
		elif [ -n "$(pagoda_leaks "$log")" ]; then
			why="memory leaked by Pagoda code"
		elif [ "$rc" != 0 ] || ! grep -q '^ok ' "$log"; then
			why=$(grep -m1 -E '^not ok|^Bail out|ERROR' "$log" || echo "exit status $rc")
		fi
		if [ -z "$why" ]; then
			passed=$((passed + 1))
		else
			failed=$((failed + 1))
			failures+=("$name")
			info "FAIL $name: $why"
		fi
	done
	echo
	echo "==> summary"
	printf '    sanitized qtests: %d passed, %d failed\n' "$passed" "$failed"
	for t in "${failures[@]}"; do
		printf '    failed: %s (log: %s/%s.log)\n' "$t" "$LOGS" "$t"
	done
	[ "$failed" = 0 ]
}

mkdir -p "$PAGODA_CACHE/logs"
build
run_tests
