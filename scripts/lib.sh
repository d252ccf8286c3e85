# Shared helpers for Pagoda's scripts: paths, step reporting, failure messages.
# Sourced, not run.

PAGODA_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PAGODA_CACHE=${PAGODA_CACHE:-$HOME/.cache/pagoda}

# Pinned inputs. QEMU comes from trixie's source package; the guest kernel from
# bookworm-backports (resolved from its meta-package, since the archive serves
# only the newest 6.12 build).
QEMU_DEB_VERSION=${QEMU_DEB_VERSION:-1:10.0.13+ds-0+deb13u1}
QEMU_UPSTREAM=10.0.13
QEMU_SRC=$PAGODA_CACHE/qemu-src/qemu-$QEMU_UPSTREAM+ds
QEMU_BUILD=$PAGODA_CACHE/qemu-build
QEMU_BIN=$QEMU_BUILD/qemu-system-x86_64
QOS_TEST=$QEMU_BUILD/tests/qtest/qos-test
KERNEL_DIR=$PAGODA_CACHE/kernel
# Guest artefacts are per checkout: each builds its own module and image.
GUEST_BUILD=$PAGODA_CACHE/guest-build/$(printf %s "$PAGODA_ROOT" | md5sum | cut -c1-12)
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

kernel_release() {
	cat "$KERNEL_DIR/release" 2>/dev/null
}
