#!/usr/bin/env bash
# Fuzzing campaign against the Pagoda GPU: builds QEMU's generic-fuzz target
# (libFuzzer, with ASan and UBSan) in its own build directory, then fuzzes
# the device's MMIO registers, host aperture, MSI-X table and PCI config
# space, and the DMA it issues: rings, command buffers, page tables and data
# are read from guest memory that the fuzzer fills as the device reads it.
# Each device configuration below is fuzzed for SECONDS, starting from the
# seeds of scripts/fuzz-seeds.py (one submission per command kind) and from
# the corpus of earlier runs; the corpus is then run once more with leak
# checks. Everything is kept in $PAGODA_CACHE/fuzz:
# corpus-CONFIG/ grows from run to run; findings/ holds crash-*, timeout-*,
# leak-* and oom-* inputs; logs/ the libFuzzer output.
#   usage: scripts/fuzz.sh [SECONDS]   (per configuration; default 600)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

SECONDS_EACH=${1:-600}
[[ $SECONDS_EACH =~ ^[0-9]+$ ]] || die "SECONDS must be a number of seconds" "usage: scripts/fuzz.sh [SECONDS]"
BUILD=$PAGODA_CACHE/qemu-build-fuzz
FUZZ=$PAGODA_CACHE/fuzz
PACKAGES="clang libclang-rt-14-dev llvm"
# Small segments make random addresses land inside them more often.
declare -A CONFIGS=(
	[mmu4]="vram-size=16M,hidden-vram-size=1M,aperture-size=1M,host-aperture-size=1M"
	[mmu2]="mmu-levels=2,segment-page-size=4096,vram-size=16M,hidden-vram-size=64K,aperture-size=1M,host-aperture-size=1M"
)
# An optional tool: it yields the CPUs to anything else that runs.
renice -n 10 $$ >/dev/null

# Leak checks slow fuzzing down tenfold: they run on the corpus afterwards.
export ASAN_OPTIONS=detect_leaks=0:print_stacktrace=1
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1

packages() {
	step "packages (clang and libFuzzer)"
	local p missing=
	for p in $PACKAGES; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
			missing="$missing $p"
	done
	if [ -z "$missing" ]; then
		info "all installed"
		return
	fi
	info "installing:$missing"
	local sudo=
	[ "$(id -u)" = 0 ] || sudo=sudo
	run_logged "$PAGODA_CACHE/logs/apt-install-fuzz.log" $sudo \
		env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $PACKAGES
}

build() {
	"$PAGODA_ROOT/scripts/setup.sh"
	step "QEMU generic-fuzz target (first build about 10 minutes)"
	qemu_configure "$BUILD" "$PAGODA_CACHE/logs/fuzz-configure.log" \
		"--python=/usr/bin/python3 --cc=/usr/lib/ccache/clang
--cxx=/usr/lib/ccache/clang++ --host-cc=/usr/lib/ccache/clang
$QEMU_FEATURE_FLAGS --enable-fuzzing --enable-asan --enable-ubsan"
	qemu_ninja "$BUILD" "$PAGODA_CACHE/logs/fuzz-build.log" qemu-fuzz-x86_64
	bundle_firmware "$BUILD"
	info "$BUILD/qemu-fuzz-x86_64 ready"
}

# run_fuzzer NAME ARGS...: qemu-fuzz-x86_64 on configuration NAME.
run_fuzzer() {
	local name=$1; shift
	(cd "$BUILD" &&
	 QEMU_FUZZ_ARGS="-machine q35 -nodefaults -device pagoda,${CONFIGS[$name]}" \
	 QEMU_FUZZ_OBJECTS=pagoda \
	 ./qemu-fuzz-x86_64 --fuzz-target=generic-fuzz -timeout=60 \
		-rss_limit_mb=4096 -artifact_prefix="$FUZZ/findings/$name-" "$@")
}

# fuzz_one NAME: fuzz configuration NAME for SECONDS_EACH seconds, then
# run its corpus once more with leak checks.
fuzz_one() {
	local name=$1 corpus=$FUZZ/corpus-$1 log=$FUZZ/logs/$1.log last
	step "fuzzing configuration $name for ${SECONDS_EACH}s: ${CONFIGS[$name]}"
	mkdir -p "$corpus"
	# -fork=1: a child process fuzzes, and the run goes on after a finding.
	run_fuzzer "$name" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 \
		-ignore_ooms=1 -max_total_time="$SECONDS_EACH" -max_len=4096 \
		-use_value_profile=1 -dict="$FUZZ/pagoda.dict" \
		"$corpus" "$FUZZ/seeds" >"$log" 2>&1 ||
		die "the fuzzer stopped (log: $log)" "read the end of the log"
	last=$(grep -E '^#[0-9]+: cov: ' "$log" | tail -n 1)
	info "${last:-no statistics: see $log}"
	info "corpus: $(ls "$corpus" | wc -l) inputs in $corpus"
	info "leak check of the corpus (about a minute)"
	# stops at the first leak, which it saves in findings/ as leak-*
	ASAN_OPTIONS=detect_leaks=1:print_stacktrace=1 run_fuzzer "$name" \
		-runs=0 -detect_leaks=1 "$corpus" "$FUZZ/seeds" \
		>"$FUZZ/logs/$name-leaks.log" 2>&1 ||
		info "the leak check stopped on a finding: see $FUZZ/logs/$name-leaks.log"
}

seeds() {
	step "seeds and dictionary"
	rm -rf "$FUZZ/seeds"
	python3 "$PAGODA_ROOT/scripts/fuzz-seeds.py" "$FUZZ/seeds" "$FUZZ/pagoda.dict"
	info "$(ls "$FUZZ/seeds" | wc -l) seeds in $FUZZ/seeds"
}

report() {
	local found f name
	echo
	echo "==> summary"
	found=$(find "$FUZZ/findings" -type f -newer "$FUZZ/.run-start" | sort)
	if [ -z "$found" ]; then
		info "no crash, timeout, leak or out-of-memory in this run"
		return 0
	fi
	info "findings of this run, each with the command that replays it"
	info "(add FUZZ_SERIALIZE_QTEST=1 QTEST_LOG=1 to see the qtest commands):"
	for f in $found; do
		name=$(basename "$f")
		name=${name%%-*}
		info "$f"
		info "  cd $BUILD && QEMU_FUZZ_ARGS='-machine q35 -nodefaults" \
		     "-device pagoda,${CONFIGS[$name]}' QEMU_FUZZ_OBJECTS=pagoda" \
		     "./qemu-fuzz-x86_64 --fuzz-target=generic-fuzz $f"
	done
	return 1
}

main() {
	mkdir -p "$PAGODA_CACHE/logs" "$FUZZ/findings" "$FUZZ/logs"
	packages
	build
	seeds
	touch "$FUZZ/.run-start"
	local name
	for name in mmu4 mmu2; do
		fuzz_one "$name"
	done
	report
}

main "$@"
