#!/usr/bin/env bash
# Fuzzing campaign against the Pagoda GPU. Builds QEMU's fuzz targets twice
# in their own build directories: with libFuzzer, ASan and UBSan to fuzz,
# and with clang's source-based coverage to measure. Then fuzzes the device
# in each configuration its properties allow: MMU levels 2, 3 and 4,
# segment pages of 4 KiB and 64 KiB, tiny and default segment sizes (12
# configurations). The default target, pagoda-fuzz
# (tests/qtest/fuzz/pagoda_fuzz.c), turns each input into a device program:
# page tables, GART, rings, command buffers of every opcode, display flips,
# resets, migrations. generic-fuzz (QEMU's register and DMA fuzzer, started
# from the seeds of scripts/fuzz-seeds.py) can be chosen instead.
#
# For each configuration: fuzz for the given time (a child process fuzzes,
# so the run goes on after a finding), then replay the corpus in the
# coverage build (lines and branches per device file:
# scripts/fuzz-coverage.py), and once more with leak checks. The summary
# gives executions and coverage per configuration; each finding is
# minimised and turned into a qtest (scripts/fuzz-reproducer.py) in
# tests/qtest/pagoda-fuzz-repro-test.c.
#
# Everything is kept in $PAGODA_CACHE/fuzz: <target>/corpus-<config>/
# grows from run to run, findings/ holds crash-*, timeout-*, leak-* and
# oom-* inputs, logs/ the libFuzzer output, coverage-<target>-<config>.txt
# the per-file figures of the last run.
#   usage: scripts/fuzz.sh [--seconds N] [--target pagoda-fuzz|generic-fuzz]
#                          [--jobs N] [CONFIG...]
#   --seconds N   fuzzing time per configuration (default 1800)
#   --jobs N      fuzzing processes per configuration (default 1)
#   CONFIG        only these configurations (default: all; names below)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

SECONDS_EACH=1800
TARGET=pagoda-fuzz
JOBS=1
ONLY=()
while [ $# -gt 0 ]; do
	case $1 in
	--seconds) SECONDS_EACH=$2; shift 2 ;;
	--target) TARGET=$2; shift 2 ;;
	--jobs) JOBS=$2; shift 2 ;;
	-*) die "unknown option $1" "see the usage at the top of scripts/fuzz.sh" ;;
	*) ONLY+=("$1"); shift ;;
	esac
done
[[ $SECONDS_EACH =~ ^[0-9]+$ && $JOBS =~ ^[1-9][0-9]*$ ]] ||
	die "--seconds and --jobs take numbers" "see the usage at the top of scripts/fuzz.sh"
case $TARGET in
pagoda-fuzz|generic-fuzz) ;;
*) die "unknown target $TARGET" "use pagoda-fuzz or generic-fuzz" ;;
esac

BUILD=$PAGODA_CACHE/qemu-build-fuzz
# The same fuzz targets with clang's source-based coverage and no
# sanitizers: the corpus is replayed there to count lines and branches.
COV_BUILD=$PAGODA_CACHE/qemu-build-fuzz-cov
FUZZ=$PAGODA_CACHE/fuzz
WORK=$FUZZ/$TARGET
PACKAGES="clang libclang-rt-14-dev llvm"
CAMPAIGN_BIN=qemu-fuzz-x86_64-campaign
# Tiny segments make picked addresses land near their ends more often and
# keep the host aperture's page table small; default ones are what a guest
# gets without properties.
TINY=vram-size=16M,hidden-vram-size=1M,aperture-size=1M,host-aperture-size=1M
# A scanout is converted pixel by pixel at each display update; with the
# default 2560x1600 maximum, updates took two fifths of the fuzzing time.
# Every configuration's largest mode is the default 1024x768: the same
# checks at a fifth of the pixels.
LARGEST_MODE=max-xres=1024,max-yres=768
declare -A CONFIGS=()
CONFIG_NAMES=()
for levels in 4 3 2; do
	for page in 64k 4k; do
		for sizes in tiny default; do
			name=l$levels-$page-$sizes
			props=mmu-levels=$levels,$LARGEST_MODE
			[ "$page" = 4k ] && props=$props,segment-page-size=4096
			[ "$sizes" = tiny ] && props=$props,$TINY
			CONFIGS[$name]=$props
			CONFIG_NAMES+=("$name")
		done
	done
done
if [ ${#ONLY[@]} -gt 0 ]; then
	for name in "${ONLY[@]}"; do
		[ -n "${CONFIGS[$name]:-}" ] || die "unknown configuration $name" \
			"one of: ${CONFIG_NAMES[*]}"
	done
	CONFIG_NAMES=("${ONLY[@]}")
fi
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

# campaign_copy BUILD: the binary this run uses. Fork mode starts a new
# process for every job: a rebuild during the run must not change (or
# half-write) the program under it.
campaign_copy() {
	cp -f "$1/qemu-fuzz-x86_64" "$1/$CAMPAIGN_BIN"
}

build() {
	"$PAGODA_ROOT/scripts/setup.sh"
	step "QEMU fuzz targets (first build about 15 minutes)"
	qemu_configure "$BUILD" "$PAGODA_CACHE/logs/fuzz-configure.log" \
		"--python=/usr/bin/python3 --cc=/usr/lib/ccache/clang
--cxx=/usr/lib/ccache/clang++ --host-cc=/usr/lib/ccache/clang
$QEMU_FEATURE_FLAGS --enable-fuzzing --enable-asan --enable-ubsan"
	qemu_ninja "$BUILD" "$PAGODA_CACHE/logs/fuzz-build.log" qemu-fuzz-x86_64
	bundle_firmware "$BUILD"
	campaign_copy "$BUILD"
	info "$BUILD/qemu-fuzz-x86_64 ready"
	step "QEMU fuzz targets with source-based coverage (first build about 15 minutes)"
	qemu_configure "$COV_BUILD" "$PAGODA_CACHE/logs/fuzz-cov-configure.log" \
		"--python=/usr/bin/python3 --cc=/usr/lib/ccache/clang
--cxx=/usr/lib/ccache/clang++ --host-cc=/usr/lib/ccache/clang
$QEMU_FEATURE_FLAGS --enable-fuzzing
--extra-cflags=-fprofile-instr-generate --extra-cflags=-fcoverage-mapping
--extra-ldflags=-fprofile-instr-generate"
	qemu_ninja "$COV_BUILD" "$PAGODA_CACHE/logs/fuzz-cov-build.log" qemu-fuzz-x86_64
	bundle_firmware "$COV_BUILD"
	campaign_copy "$COV_BUILD"
	info "$COV_BUILD/qemu-fuzz-x86_64 ready"
}

# fuzz_env NAME: the environment that selects configuration NAME, as
# VAR=VALUE words (printed in replay commands, exported by run_fuzzer).
fuzz_env() {
	if [ "$TARGET" = pagoda-fuzz ]; then
		printf '%s\n' "PAGODA_FUZZ_DEVICE=${CONFIGS[$1]}"
	else
		printf '%s\n' "QEMU_FUZZ_ARGS=-machine q35 -nodefaults -device pagoda,${CONFIGS[$1]}" \
		       "QEMU_FUZZ_OBJECTS=pagoda"
	fi
}

# run_fuzzer NAME ARGS...: the target on configuration NAME (the binary
# of RUN_BUILD, by default the sanitizer build).
run_fuzzer() {
	local name=$1 var; shift
	(cd "${RUN_BUILD:-$BUILD}" &&
	 while IFS= read -r var; do export "$var"; done < <(fuzz_env "$name") &&
	 "./$CAMPAIGN_BIN" --fuzz-target="$TARGET" -timeout=60 \
		-rss_limit_mb=4096 -artifact_prefix="$FUZZ/findings/$TARGET-$name-" "$@")
}

# corpus_dirs NAME: the corpus of NAME, then the seeds (generic-fuzz only).
corpus_dirs() {
	echo "$WORK/corpus-$1"
	[ "$TARGET" = generic-fuzz ] && echo "$FUZZ/seeds"
	return 0
}

declare -A EXECS COVERED REACHABLE

# coverage NAME: replay the corpus of NAME in the coverage build and report
# lines and branches per device file (scripts/fuzz-coverage.py).
coverage() {
	local name=$1 dir=$FUZZ/profile-$TARGET-$1
	local out=$FUZZ/coverage-$TARGET-$name.txt line
	rm -rf "$dir" && mkdir -p "$dir"
	LLVM_PROFILE_FILE="$dir/%p.profraw" RUN_BUILD=$COV_BUILD run_fuzzer "$name" \
		-runs=0 $(corpus_dirs "$name") >"$FUZZ/logs/$TARGET-$name-coverage.log" 2>&1 || true
	llvm-profdata-14 merge -sparse -o "$dir/merged.profdata" "$dir"/*.profraw
	llvm-cov-14 export "$COV_BUILD/$CAMPAIGN_BIN" -instr-profile="$dir/merged.profdata" \
		"$(qemu_source_dir)"/hw/display/pagoda/*.c >"$dir/export.json"
	python3 "$PAGODA_ROOT/scripts/fuzz-coverage.py" "$dir/export.json" >"$out"
	line=$(grep '^reachable ' "$out" | tail -n 1)
	set -- $line
	COVERED[$name]=$2
	REACHABLE[$name]=$3
	grep -v '^reachable [0-9]* [0-9]*$' "$out" | sed 's/^/    /'
	rm -f "$dir"/*.profraw
}

# fuzz_one NAME: fuzz configuration NAME for SECONDS_EACH seconds, measure
# the coverage of its corpus, then run the corpus with leak checks.
fuzz_one() {
	local name=$1 corpus=$WORK/corpus-$1 log=$FUZZ/logs/$TARGET-$1.log last
	step "$TARGET on $name for ${SECONDS_EACH}s: ${CONFIGS[$name]}"
	mkdir -p "$corpus"
	# pagoda-fuzz reads structures: inputs of any length from the start
	local extra=(-len_control=0)
	[ "$TARGET" = generic-fuzz ] &&
		extra=(-use_value_profile=1 -dict="$FUZZ/pagoda.dict")
	# -detect_leaks=0: even with ASan's leak checks off, libFuzzer runs
	# every input that allocated more than it freed a second time (a fifth
	# of the CPU time of a corpus replay)
	run_fuzzer "$name" -fork="$JOBS" -ignore_crashes=1 -ignore_timeouts=1 \
		-ignore_ooms=1 -detect_leaks=0 -max_total_time="$SECONDS_EACH" -max_len=4096 \
		"${extra[@]}" $(corpus_dirs "$name") >"$log" 2>&1 ||
		die "the fuzzer stopped (log: $log)" "read the end of the log"
	last=$(grep -E '^#[0-9]+: cov: ' "$log" | tail -n 1)
	EXECS[$name]=$(echo "${last:-#0:}" | sed 's/^#\([0-9]*\):.*/\1/')
	info "${last:-no statistics: see $log}"
	info "corpus: $(ls "$corpus" | wc -l) inputs in $corpus"
	info "coverage of the corpus, per device file:"
	coverage "$name"
	info "leak check of the corpus"
	# stops at the first leak, which it saves in findings/ as leak-*
	ASAN_OPTIONS=detect_leaks=1:print_stacktrace=1 run_fuzzer "$name" \
		-runs=0 -detect_leaks=1 $(corpus_dirs "$name") \
		>"$FUZZ/logs/$TARGET-$name-leaks.log" 2>&1 ||
		info "the leak check stopped on a finding: see $FUZZ/logs/$TARGET-$name-leaks.log"
}

seeds() {
	[ "$TARGET" = generic-fuzz ] || return 0
	step "seeds and dictionary"
	rm -rf "$FUZZ/seeds"
	python3 "$PAGODA_ROOT/scripts/fuzz-seeds.py" "$FUZZ/seeds" "$FUZZ/pagoda.dict"
	info "$(ls "$FUZZ/seeds" | wc -l) seeds in $FUZZ/seeds"
}

# reproduce FINDING: minimise it and add it to the reproducer qtest.
reproduce() {
	local f=$1 base name min
	base=$(basename "$f")
	name=${base#"$TARGET"-}
	name=${name%%-crash*}; name=${name%%-timeout*}; name=${name%%-leak*}
	name=${name%%-oom*}
	min=$FUZZ/findings/min-$base
	info "$f"
	info "  replay: cd $BUILD &&$(fuzz_env "$name" | sed "s/.*/ '&'/" | tr -d '\n') ./qemu-fuzz-x86_64 --fuzz-target=$TARGET $f"
	run_fuzzer "$name" -minimize_crash=1 -max_total_time=300 \
		-exact_artifact_path="$min" "$f" >"$FUZZ/logs/minimize-$base.log" 2>&1 || true
	[ -s "$min" ] || cp "$f" "$min"
	FUZZ_SERIALIZE_QTEST=1 QTEST_LOG=1 run_fuzzer "$name" "$min" \
		>"$FUZZ/logs/trace-$base.log" 2>&1 || true
	python3 "$PAGODA_ROOT/scripts/fuzz-reproducer.py" \
		"$PAGODA_ROOT/tests/qtest/pagoda-fuzz-repro-test.c" "$base" \
		"-machine pc -m 64M -nodefaults -display none -device pagoda,addr=04.0,${CONFIGS[$name]}" \
		<"$FUZZ/logs/trace-$base.log" |& sed 's/^/      /'
}

report() {
	local found f name execs=0 covered reachable
	echo
	echo "==> summary ($TARGET, ${SECONDS_EACH}s per configuration)"
	for name in "${CONFIG_NAMES[@]}"; do
		covered=${COVERED[$name]:-0}
		reachable=${REACHABLE[$name]:-0}
		printf '    %-16s %10s executions, reachable branch outcomes %5s/%-5s (%s%%)\n' \
			"$name" "${EXECS[$name]:-0}" "$covered" "$reachable" \
			"$(awk -v c="$covered" -v t="$reachable" 'BEGIN { printf "%.1f", t ? 100 * c / t : 0 }')"
		execs=$((execs + ${EXECS[$name]:-0}))
	done
	info "executions in all: $execs"
	found=$(find "$FUZZ/findings" -type f -newer "$FUZZ/.run-start" -name "$TARGET-*" | sort)
	if [ -z "$found" ]; then
		info "no crash, timeout, leak or out-of-memory in this run"
		return 0
	fi
	info "findings of this run, minimised, each added to tests/qtest/pagoda-fuzz-repro-test.c:"
	for f in $found; do
		reproduce "$f"
	done
	return 1
}

main() {
	mkdir -p "$PAGODA_CACHE/logs" "$FUZZ/findings" "$FUZZ/logs" "$WORK"
	packages
	build
	seeds
	touch "$FUZZ/.run-start"
	local name
	for name in "${CONFIG_NAMES[@]}"; do
		fuzz_one "$name"
	done
	report
}

main
