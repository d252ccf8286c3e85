# Shared helpers for Pagoda's scripts: paths, step reporting, failure messages.
# Sourced, not run.

PAGODA_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PAGODA_CACHE=${PAGODA_CACHE:-$HOME/.cache/pagoda}

# Pinned inputs. QEMU comes from trixie's source package, pinned to one
# version; should the archive stop serving it, setup.sh falls back to the
# newest 10.0.x it serves, with a warning. The guest kernel comes from
# bookworm-backports (resolved from its meta-package, since the archive
# serves only the newest 6.12 build).
QEMU_DEB_VERSION=${QEMU_DEB_VERSION:-1:10.0.13+ds-0+deb13u1}
QEMU_SERIES=1:10.0.
QEMU_BUILD=$PAGODA_CACHE/qemu-build
QEMU_BIN=$QEMU_BUILD/qemu-system-x86_64
QOS_TEST=$QEMU_BUILD/tests/qtest/qos-test
# Reproducers of fuzzer findings (scripts/fuzz.sh): a standalone qtest,
# built and run only once a finding has added it to tests/qtest/.
FUZZ_REPRO_TEST=pagoda-fuzz-repro-test
# The migration qtest: two QEMU processes a case, so not in the qos graph.
MIGRATION_TEST=pagoda-migration-test
KERNEL_DIR=$PAGODA_CACHE/kernel
# The debug guest kernel of scripts/debug-kernel.sh: source and build.
DEBUG_KERNEL_DIR=$PAGODA_CACHE/kernel-debug
DEBUG_KERNEL_BUILD=$DEBUG_KERNEL_DIR/build
# Guest artefacts and the host unit tests' meson directory are per checkout:
# each builds its own module, image and tests (a meson directory is bound to
# the source tree that configured it).
PAGODA_CHECKOUT_ID=$(printf %s "$PAGODA_ROOT" | md5sum | cut -c1-12)
GUEST_BUILD=$PAGODA_CACHE/guest-build/$PAGODA_CHECKOUT_ID
HOST_BUILD=$PAGODA_CACHE/host-build/$PAGODA_CHECKOUT_ID
# Configure flags of every QEMU build (setup.sh's, the sanitizer and fuzzing
# builds), compilers aside: a minimal x86_64 system emulator whose only extra
# device is the Pagoda GPU. pixman and libpng: QMP's screendump (PPM and PNG)
# of the device's console, which scripts/guest-agent.py takes for the
# guest's display tests (QEMU has no screendump command without pixman).
QEMU_FEATURE_FLAGS="--target-list=x86_64-softmmu
--without-default-features --without-default-devices
--with-devices-x86_64=pagoda --enable-kvm --enable-tcg --disable-docs
--disable-download --disable-install-blobs --enable-trace-backends=log
--enable-pixman --enable-png"
export CCACHE_DIR=${CCACHE_DIR:-$PAGODA_CACHE/ccache}

pagoda_step_start=0
step() {
	pagoda_step_start=$(date +%s)
	PAGODA_STEP="$1"
	printf '==> %s\n' "$1"
}

info() { printf '    %s\n' "$*"; }

# die WHY WHAT-TO-DO
die() {
	printf '\nERROR in step "%s": %s\n' "${PAGODA_STEP:-?}" "$1" >&2
	[ -n "${2:-}" ] && printf 'What to do: %s\n' "$2" >&2
	exit 1
}

# run_logged LOG CMD...: run CMD with its output in LOG; on failure show the tail.
run_logged() {
	local log=$1; shift
	if ! "$@" >"$log" 2>&1; then
		tail -n 40 "$log" >&2
		die "command failed: $* (full log: $log)" "read the log above; rerun the same command once the cause is fixed"
	fi
}

# install_if_changed SRC DST: copy only when the content differs, so that
# unchanged files keep their timestamps and nothing is rebuilt for them.
install_if_changed() {
	if ! cmp -s "$1" "$2"; then
		mkdir -p "$(dirname "$2")"
		cp "$1" "$2"
		return 0
	fi
	return 1
}

# Whether a finding has added the reproducer qtest: it is built and run
# only then.
have_fuzz_repro_test() {
	[ -f "$PAGODA_ROOT/tests/qtest/$FUZZ_REPRO_TEST.c" ]
}

# The QEMU source tree that setup.sh unpacked and overlays.
qemu_source_dir() {
	local stamp
	stamp=$(ls -d "$PAGODA_CACHE"/qemu-src/*/.pagoda-unpacked 2>/dev/null | head -n 1)
	[ -n "$stamp" ] || die "no QEMU source tree in $PAGODA_CACHE/qemu-src" "run scripts/setup.sh"
	dirname "$stamp"
}

# qemu_configure BUILD LOG FLAGS: configure the QEMU build directory BUILD
# from the source tree with FLAGS (one string), unless it already is. A new
# source tree or new flags start BUILD from scratch; both are recorded in
# BUILD/.pagoda-configure.
qemu_configure() {
	local build=$1 log=$2 src
	src=$(qemu_source_dir)
	local want="$src $3" stamp=$build/.pagoda-configure
	# compared without regard to line breaks
	if [ -f "$build/build.ninja" ] &&
	   [ "$(echo $(cat "$stamp" 2>/dev/null))" = "$(echo $want)" ]; then
		return
	fi
	info "configuring $build (flags changed or first build)"
	rm -rf "$build" && mkdir -p "$build"
	(cd "$build" && run_logged "$log" "$src/configure" $3)
	printf '%s' "$want" >"$stamp"
}

# qemu_ninja BUILD LOG TARGET...: build TARGETs in BUILD, printing a progress
# line every ~10%. One build at a time: the builds share the overlaid source
# tree and the machine (several checkouts may use the cache).
qemu_ninja() {
	local build=$1 log=$2; shift 2
	NINJA_STATUS='[%f/%t] ' flock "$PAGODA_CACHE/qemu-build.lock" \
		ninja -C "$build" "$@" >"$log" 2>&1 &
	local pid=$! last=-1
	while kill -0 $pid 2>/dev/null; do
		sleep 1
		local line pct
		# no step line yet is not an error
		line=$(grep -o '^\[[0-9]*/[0-9]*\]' "$log" | tail -n 1 | tr -d '[]' || true)
		[ -n "$line" ] || continue
		pct=$(( ${line%/*} * 100 / ${line#*/} ))
		if [ $((pct / 10)) -ne $((last / 10)) ]; then
			info "build ${line} steps (${pct}%)"
			last=$pct
		fi
	done
	wait $pid || { tail -n 40 "$log" >&2; die "QEMU build failed (full log: $log)" \
		"fix the compile error shown above (in hw/ or tests/qtest/ of this repository) and rerun"; }
}

# bundle_firmware BUILD: an uninstalled QEMU looks for firmware under
# qemu-bundle/<datadir> of its build directory.
bundle_firmware() {
	local bundle=$1/qemu-bundle/usr/local/share/qemu f
	mkdir -p "$bundle"
	for f in /usr/share/seabios/*.bin /usr/share/qemu/*.bin /usr/share/qemu/*.rom; do
		[ -e "$f" ] && ln -sf "$f" "$bundle/$(basename "$f")"
	done
	return 0
}

kernel_release() {
	cat "$KERNEL_DIR/release" 2>/dev/null
}

# check_kernel_flavour NAME: the guest kernels are "stock" (Debian's) and
# "debug" (scripts/debug-kernel.sh).
check_kernel_flavour() {
	case $1 in
	stock|debug) ;;
	*) die "unknown kernel '$1'" "use --kernel stock or --kernel debug" ;;
	esac
}

# driver_gcov_load GCDA_DIR: the gcov counters in GCDA_DIR (what the debug
# kernel's /init printed, unpacked by run-guest.sh, possibly merged) beside
# the notes of the debug build of pagoda.ko, for the two readers below.
driver_gcov_load() {
	cp "$1"/*.gcda "$GUEST_BUILD/module-debug/guest-driver/"
}

# driver_gcov_table WHAT: pagoda.ko's line and branch coverage per file,
# from the counters driver_gcov_load put in place. WHAT says where they
# came from.
driver_gcov_table() {
	local objdir=$GUEST_BUILD/module-debug/guest-driver
	# the driver's own files, not the kernel headers they inline
	(cd "$objdir" && gcov -n -b -o . pagoda_*.c 2>/dev/null) | awk -v what="$1" -v dir="$objdir/" '
		function pct(x) { sub("%", "", x); return x }
		/^File / { file = $2; gsub("\047", "", file)
			if (index(file, dir) == 1) file = substr(file, length(dir) + 1)
			else file = "" }
		/^Lines executed:/ && file ~ /^pagoda_.*\.c$/ {
			split($2, a, ":"); lp = pct(a[2]); lines = $4
			total += lines; done += int(lp * lines / 100 + 0.5) }
		/^Taken at least once:/ && file ~ /^pagoda_.*\.c$/ {
			split($4, a, ":"); bp = pct(a[2]); br = $6
			btotal += br; bdone += int(bp * br / 100 + 0.5)
			printf "    %-24s %6.1f%% of %5d lines %6.1f%% of %5d branches\n", file, lp, lines, bp, br }
		END { if (total) printf "    %-24s %6.1f%% of %5d lines %6.1f%% of %5d branches (%s)\n", "all",
			100 * done / total, total, btotal ? 100 * bdone / btotal : 0, btotal, what }'
}

# driver_errno_sites LIST: of pagoda.ko's lines that return or set an
# errno (they name an -E... constant) and that gcov counts, how many ran
# with the counters driver_gcov_load put in place; the ones that did not are
# written to LIST (file:line: source). Lines the compiler folded into
# another (gcov shows them as not executable) are not counted.
driver_errno_sites() {
	local objdir=$GUEST_BUILD/module-debug/guest-driver tmp
	tmp=$(mktemp -d)
	(cd "$tmp" && gcov -o "$objdir" "$objdir"/pagoda_*.c >/dev/null 2>&1)
	awk -F: -v list="$1" '
		FNR == 1 { file = FILENAME; sub(".*/", "", file); sub(".gcov$", "", file) }
		$1 ~ /^ *-$/ || $0 !~ /-E[A-Z][A-Z0-9]+/ || $3 ~ /^[ \t]*(\*|\/\*|\/\/)/ { next }
		{ total++; count = $1; gsub(/ /, "", count)
		  if (count ~ /^#+$/) { src = $0; sub(/^[^:]*:[^:]*:[ \t]*/, "", src)
			printf "%s:%d: %s\n", file, $2, src >list }
		  else run++ }
		END { printf "    errno sites: %d of %d lines that return or set an errno ran (not run: %s)\n",
			run, total, list }' "$tmp"/pagoda_*.c.gcov
	rm -rf "$tmp"
}
