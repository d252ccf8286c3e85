#!/usr/bin/env bash
# Idempotent set-up of everything Pagoda needs on a Debian 12 machine:
# packages, QEMU's source with the Pagoda overlay, a minimal QEMU build,
# and the guest kernel (image extracted to the cache, headers for kbuild).
# A second run with nothing changed does no work beyond a few checks.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

APT_SOURCES=/etc/apt/sources.list.d/pagoda.sources
PACKAGES="build-essential dpkg-dev patch ninja-build python3-venv libglib2.0-dev
libpixman-1-dev flex bison pkg-config ccache seabios ipxe-qemu
qemu-system-data libdrm-dev busybox-static kmod xz-utils cpio zstd bc
libelf-dev libssl-dev gnuplot-nox libpng-dev libdrm-tests drm-info weston
wayland-protocols libwayland-dev libwayland-bin"
BACKPORT_PACKAGES="meson"

as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

write_apt_sources() {
	local want
	want=$(cat <<'SRC'
# Added by Pagoda's scripts/setup.sh: backports for meson and the guest kernel,
# trixie for QEMU's source package only (never binaries).
Types: deb deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
)
	local versions
	versions=$(apt-cache showsrc qemu 2>/dev/null || true)
	if [ "$(cat "$APT_SOURCES" 2>/dev/null)" != "$want" ] ||
	   [[ "$versions" != *"Version: $QEMU_SERIES"* ]]; then
		info "adding $APT_SOURCES and refreshing the package lists"
		printf '%s\n' "$want" | as_root tee "$APT_SOURCES" >/dev/null
		run_logged "$PAGODA_CACHE/logs/apt-update.log" as_root apt-get update
	fi
}

packages_missing() {
	local p
	for p in $PACKAGES; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || echo "$p"
	done
	# meson must be >= 1.5 (QEMU 10)
	if ! dpkg --compare-versions "$(dpkg-query -W -f='${Version}' meson 2>/dev/null || echo 0)" ge 1.5; then
		echo meson
	fi
}

setup_packages() {
	step "packages (bookworm + bookworm-backports)"
	write_apt_sources
	local missing
	missing=$(packages_missing | tr '\n' ' ')
	if [ -z "${missing// }" ]; then
		info "all installed"
		return
	fi
	info "installing: $missing"
	export DEBIAN_FRONTEND=noninteractive
	run_logged "$PAGODA_CACHE/logs/apt-install.log" \
		as_root apt-get install -y --no-install-recommends $PACKAGES
	run_logged "$PAGODA_CACHE/logs/apt-install-bpo.log" \
		as_root apt-get install -y --no-install-recommends -t bookworm-backports $BACKPORT_PACKAGES
}

# The QEMU source version to use: the pinned one, or the newest of its
# series if the archive no longer serves it.
qemu_version() {
	local served newest
	served=$(apt-cache showsrc qemu 2>/dev/null | sed -n 's/^Version: //p')
	if grep -qxF "$QEMU_DEB_VERSION" <<<"$served"; then
		echo "$QEMU_DEB_VERSION"
		return
	fi
	newest=$(grep -F "$QEMU_SERIES" <<<"$served" | sort -V | tail -n 1)
	[ -n "$newest" ] || die "no QEMU ${QEMU_SERIES}x source package is served" \
		"check $APT_SOURCES and 'apt-cache showsrc qemu'"
	info "WARNING: qemu $QEMU_DEB_VERSION is no longer served; using $newest" >&2
	echo "$newest"
}

# Sets QEMU_VERSION and QEMU_SRC (the unpacked tree of that version).
fetch_qemu_source() {
	local dir=$PAGODA_CACHE/qemu-src upstream
	QEMU_VERSION=$(qemu_version)
	upstream=${QEMU_VERSION#*:}
	QEMU_SRC=$dir/qemu-${upstream%-*}
	step "QEMU $QEMU_VERSION source"
	if [ -f "$QEMU_SRC/.pagoda-unpacked" ]; then
		info "cached in $QEMU_SRC"
		return
	fi
	rm -rf "$dir" && mkdir -p "$dir"
	info "downloading with apt-get source (about 40 MB) and applying Debian's patches"
	(cd "$dir" && run_logged "$PAGODA_CACHE/logs/qemu-source.log" \
		apt-get source --only-source "qemu=$QEMU_VERSION")
	[ -f "$QEMU_SRC/VERSION" ] ||
		die "apt-get source did not unpack $QEMU_SRC" "see $PAGODA_CACHE/logs/qemu-source.log"
	touch "$QEMU_SRC/.pagoda-unpacked"
}

# QEMU_FEATURE_FLAGS (lib.sh) with gcc through ccache.
QEMU_FLAGS="--python=/usr/bin/python3 --cc=/usr/lib/ccache/gcc
--host-cc=/usr/lib/ccache/gcc $QEMU_FEATURE_FLAGS"

build_qemu() {
	step "QEMU build (minimal x86_64 with the pagoda device; first build about 7 minutes)"
	"$PAGODA_ROOT/scripts/overlay.sh" "$QEMU_SRC"
	qemu_configure "$QEMU_BUILD" "$PAGODA_CACHE/logs/qemu-configure.log" "$QEMU_FLAGS"
	local targets="qemu-system-x86_64 tests/qtest/qos-test tests/qtest/pagoda-bench
		tests/qtest/$MIGRATION_TEST"
	have_fuzz_repro_test &&
		targets="$targets tests/qtest/$FUZZ_REPRO_TEST"
	qemu_ninja "$QEMU_BUILD" "$PAGODA_CACHE/logs/qemu-build.log" $targets
	bundle_firmware "$QEMU_BUILD"
	info "$QEMU_BIN ready"
}

fetch_kernel() {
	step "guest kernel (Debian 6.12 from bookworm-backports)"
	local abi
	abi=$(apt-cache depends -t bookworm-backports linux-image-amd64 2>/dev/null |
	      sed -n 's/.*Depends: linux-image-\(6\.12\.[^ ]*\)-amd64$/\1/p' | head -n 1)
	[ -n "$abi" ] || die "cannot resolve the 6.12 kernel in bookworm-backports" \
		"run 'apt-cache depends -t bookworm-backports linux-image-amd64' and check the apt sources in $APT_SOURCES"
	local release=$abi-amd64
	if [ "$(kernel_release)" = "$release" ] && [ -f "$KERNEL_DIR/vmlinuz" ] &&
	   [ -d "$KERNEL_DIR/headers/usr/src/linux-headers-$release" ]; then
		info "cached: $release"
		return
	fi
	info "downloading linux-image-$release and its headers"
	local debs=$PAGODA_CACHE/debs
	rm -rf "$KERNEL_DIR" "$debs" && mkdir -p "$KERNEL_DIR/root" "$KERNEL_DIR/headers" "$debs"
	(cd "$debs" && run_logged "$PAGODA_CACHE/logs/kernel-download.log" \
		apt-get download "linux-image-$release" "linux-headers-$release" \
		"linux-headers-$abi-common" "linux-kbuild-$abi")
	info "extracting (the host's own kernel is not touched)"
	dpkg-deb -x "$debs"/linux-image-"$release"_*.deb "$KERNEL_DIR/root"
	local d
	for d in "$debs"/linux-headers-*.deb "$debs"/linux-kbuild-*.deb; do
		dpkg-deb -x "$d" "$KERNEL_DIR/headers"
	done
	cp "$KERNEL_DIR/root/boot/vmlinuz-$release" "$KERNEL_DIR/vmlinuz"
	run_logged "$PAGODA_CACHE/logs/depmod.log" depmod -b "$KERNEL_DIR/root" "$release"
	printf '%s\n' "$release" >"$KERNEL_DIR/release"
	rm -rf "$debs"
}

main() {
	mkdir -p "$PAGODA_CACHE/logs"
	setup_packages
	fetch_qemu_source
	build_qemu
	fetch_kernel
}

main "$@"
