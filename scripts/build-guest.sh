#!/usr/bin/env bash
# Build the guest side and pack it into an initramfs for scripts/run-guest.sh:
#   - pagoda.ko, with kbuild against the cached kernel's headers;
#   - the guest programs: tests/guest/*.c into /tests, guest-driver/tools/*.c
#     into /usr/bin, linked statically against libpagoda
#     (guest-driver/libpagoda/) and libdrm;
#   - the kernel modules pagoda.ko depends on, decompressed for busybox insmod;
#   - libdrm's modetest and drm_info (Debian's libdrm-tests and drm-info)
#     into /usr/bin, with the shared libraries and the loader they need;
#   - Weston (Debian's weston) with the modules tests/guest/weston.c loads,
#     and that test's Wayland client (tests/guest/wayland/, linked against
#     Debian's libwayland-client), with their shared libraries;
#   - busybox and /init (scripts/guest-init.sh).
# One image per guest kernel: "stock" (Debian's 6.12, the default) or
# "debug" (scripts/debug-kernel.sh, which has DRM and its helpers built in).
# Output: $GUEST_BUILD/initramfs-<kernel>.cpio.gz. Only what changed is
# rebuilt.
#   usage: scripts/build-guest.sh [--kernel stock|debug]
set -euo pipefail
. "$(dirname "$0")/lib.sh"

KERNEL=stock
if [ "${1:-}" = --kernel ]; then
	KERNEL=${2:?--kernel needs stock or debug}
fi
check_kernel_flavour "$KERNEL"
STAGE=$GUEST_BUILD/initramfs-$KERNEL
IMAGE=$GUEST_BUILD/initramfs-$KERNEL.cpio.gz
MANIFEST=$GUEST_BUILD/initramfs-$KERNEL.manifest
# pagoda.ko is built from a copy of guest-driver/ per kernel, so that the
# two builds do not overwrite each other's objects (and nothing is built in
# the repository).
MODULE_BUILD=$GUEST_BUILD/module-$KERNEL
LOGS=$PAGODA_CACHE/logs
DRIVER=$PAGODA_ROOT/guest-driver
GUEST_CFLAGS="-static -O2 -std=gnu11 -Wall -Wextra -Werror"
# libdrm's clients in the image (stage_drm_clients)
DRM_CLIENTS="/usr/bin/modetest /usr/bin/drm_info"
# Weston, and the modules it loads for tests/guest/weston.c: the DRM
# backend (the pixman renderer is in libweston) and the fullscreen shell
# (stage_weston)
WESTON=/usr/bin/weston
WESTON_MODULES="/usr/lib/x86_64-linux-gnu/libweston-10/drm-backend.so
/usr/lib/x86_64-linux-gnu/weston/fullscreen-shell.so"
# the directory of libexec_weston, which weston finds by its RUNPATH and
# its modules through weston
WESTON_LIBDIR=/usr/lib/x86_64-linux-gnu/weston
# the protocols of that test's Wayland client, besides the core one
WAYLAND_PROTOCOLS="/usr/share/wayland-protocols/unstable/fullscreen-shell/fullscreen-shell-unstable-v1.xml
/usr/share/wayland-protocols/stable/presentation-time/presentation-time.xml"
WAYLAND_CLIENT_SRC=$PAGODA_ROOT/tests/guest/wayland/pagoda-wl-client.c

check_stock_kernel() {
	RELEASE=$(kernel_release)
	{ [ -n "$RELEASE" ] && [ -f "$KERNEL_DIR/vmlinuz" ]; } ||
		die "no guest kernel in $KERNEL_DIR" "run scripts/setup.sh, which downloads it"
	MODROOT=$KERNEL_DIR/root
	KDIR=$KERNEL_DIR/headers/usr/src/linux-headers-$RELEASE
	[ -f "$KDIR/Makefile" ] || die "no kernel headers in $KDIR" "run scripts/setup.sh"
	[ -f "$MODROOT/lib/modules/$RELEASE/modules.dep" ] ||
		die "no modules.dep for $RELEASE in $MODROOT" "run scripts/setup.sh (it runs depmod)"
	KMAKEFILE=$(kernel_makefile)
	[ -f "$KMAKEFILE" ] || die "kernel Makefile $KMAKEFILE not found" \
		"the headers in $KERNEL_DIR/headers are incomplete: remove $KERNEL_DIR and rerun scripts/setup.sh"
}

check_debug_kernel() {
	KDIR=$DEBUG_KERNEL_BUILD
	KMAKEFILE=$KDIR/Makefile
	{ [ -f "$KDIR/arch/x86/boot/bzImage" ] && [ -f "$KDIR/Module.symvers" ]; } ||
		die "no debug kernel in $KDIR" "run scripts/debug-kernel.sh, which builds it"
	RELEASE=$(cat "$KDIR/include/config/kernel.release")
}

check_inputs() {
	step "guest build inputs ($KERNEL kernel)"
	if [ "$KERNEL" = stock ]; then
		check_stock_kernel
	else
		check_debug_kernel
	fi
	{ [ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1; } ||
		die "/bin/busybox is missing or not static" "apt-get install busybox-static (scripts/setup.sh does)"
	[ -f /usr/lib/x86_64-linux-gnu/libdrm.a ] ||
		die "libdrm.a is missing" "apt-get install libdrm-dev (scripts/setup.sh does)"
	local tool
	for tool in $DRM_CLIENTS; do
		[ -x "$tool" ] || die "$tool is missing" \
			"apt-get install libdrm-tests drm-info (scripts/setup.sh does)"
	done
	for tool in $WESTON $WESTON_MODULES; do
		[ -f "$tool" ] || die "$tool is missing" "apt-get install weston (scripts/setup.sh does)"
	done
	for tool in $WAYLAND_PROTOCOLS; do
		[ -f "$tool" ] || die "$tool is missing" \
			"apt-get install wayland-protocols (scripts/setup.sh does)"
	done
	{ command -v wayland-scanner >/dev/null && pkg-config --exists wayland-client; } ||
		die "wayland-scanner or libwayland-client's development files are missing" \
		    "apt-get install libwayland-dev libwayland-bin (scripts/setup.sh does)"
	for tool in make gcc cpio gzip xz modinfo modprobe ldd pkg-config; do
		command -v "$tool" >/dev/null || die "$tool not found" "run scripts/setup.sh"
	done
	info "kernel $RELEASE"
}

# Debian's linux-headers-<release>/Makefile includes the common headers'
# Makefile by an absolute /usr/src path; the headers here are unpacked under
# $KERNEL_DIR/headers, so point kbuild at the unpacked copy of that file.
kernel_makefile() {
	local common
	common=$(sed -n 's|^include /usr/src/\(.*\)$|\1|p' "$KDIR/Makefile")
	if [ -n "$common" ]; then
		echo "$KERNEL_DIR/headers/usr/src/$common"
	else
		echo "$KDIR/Makefile"
	fi
}

# Mirror guest-driver/ into $MODULE_BUILD/guest-driver, next to a link to
# the repository's include/ (Kbuild includes $(src)/../include). Unchanged
# files keep their timestamps, so kbuild rebuilds only what changed.
mirror_driver() {
	local f rel
	mkdir -p "$MODULE_BUILD/guest-driver"
	ln -sfn "$PAGODA_ROOT/include" "$MODULE_BUILD/include"
	for f in "$DRIVER"/Kbuild "$DRIVER"/Makefile "$DRIVER"/*.[ch]; do
		rel=${f#"$DRIVER"/}
		install_if_changed "$f" "$MODULE_BUILD/guest-driver/$rel" || true
	done
	# a source file removed from the repository leaves the build too
	for f in "$MODULE_BUILD"/guest-driver/*.[ch]; do
		[ -e "$f" ] || continue
		[ -e "$DRIVER/${f##*/}" ] || rm -f "$f" "${f%.c}.o"
	done
}

build_module() {
	step "pagoda.ko (kbuild against $RELEASE)"
	local log=$LOGS/guest-module-$KERNEL.log
	mirror_driver
	run_logged "$log" make -C "$MODULE_BUILD/guest-driver" -j"$(nproc)" \
		KDIR="$KDIR" KMAKEFILE="$KMAKEFILE" modules
	grep -E 'warning:|error:' "$log" >&2 &&
		die "pagoda.ko built with warnings (shown above)" "fix them; the driver builds warning-free"
	MODULE=$MODULE_BUILD/guest-driver/pagoda.ko
	info "$MODULE"
}

LIBPAGODA=$DRIVER/libpagoda
# tests/guest/ for the tools too: pagoda_screen.h (the screen channel) is
# shared with them.
INCLUDES="-I$PAGODA_ROOT/include -I$LIBPAGODA -I$PAGODA_ROOT/tests/guest -I/usr/include/libdrm"

# libpagoda.a, rebuilt when one of its files or a shared header changed.
build_libpagoda() {
	local lib=$GUEST_BUILD/lib/libpagoda.a src obj
	mkdir -p "$GUEST_BUILD/lib"
	if [ -f "$lib" ] && ! newer_than "$lib" "$LIBPAGODA"/* "$PAGODA_ROOT"/include/uapi/drm/*.h; then
		return
	fi
	rm -f "$lib"
	for src in "$LIBPAGODA"/*.c; do
		obj=$GUEST_BUILD/lib/$(basename "$src" .c).o
		run_logged "$LOGS/guest-programs.log" gcc ${GUEST_CFLAGS/-static/} $INCLUDES -c -o "$obj" "$src"
		run_logged "$LOGS/guest-programs.log" ar rcs "$lib" "$obj"
	done
	info "$lib"
}

# Programs are rebuilt when their source, a test helper, libpagoda or a
# shared header is newer.
build_programs() {
	step "guest programs (static, libpagoda, libdrm; the Wayland client dynamic)"
	mkdir -p "$GUEST_BUILD/bin"
	build_libpagoda
	local headers src name out built=0
	headers=$(ls "$PAGODA_ROOT"/tests/guest/*.h "$PAGODA_ROOT"/include/pagoda/*.h \
		"$PAGODA_ROOT"/include/uapi/drm/*.h "$GUEST_BUILD/lib/libpagoda.a")
	for src in "$PAGODA_ROOT"/tests/guest/*.c "$DRIVER"/tools/*.c; do
		name=$(basename "$src" .c)
		out=$GUEST_BUILD/bin/$name
		if [ -f "$out" ] && ! newer_than "$out" "$src" $headers; then
			continue
		fi
		run_logged "$LOGS/guest-programs.log" \
			gcc $GUEST_CFLAGS $INCLUDES -o "$out.tmp" "$src" \
			-L"$GUEST_BUILD/lib" -lpagoda -ldrm
		mv "$out.tmp" "$out"
		built=$((built + 1))
	done
	info "$built rebuilt, into $GUEST_BUILD/bin"
	build_wayland_client
}

# The Wayland client of tests/guest/weston.c, linked dynamically (Debian
# has no static libwayland-client), with the protocol code wayland-scanner
# makes from Debian's wayland-protocols; rebuilt when its source, the
# picture's header or a protocol changed.
build_wayland_client() {
	local dir=$GUEST_BUILD/wayland out=$GUEST_BUILD/bin/pagoda-wl-client xml name code=()
	mkdir -p "$dir"
	for xml in $WAYLAND_PROTOCOLS; do
		name=$(basename "$xml" .xml)
		if [ "$xml" -nt "$dir/$name-protocol.c" ]; then
			run_logged "$LOGS/guest-programs.log" \
				wayland-scanner client-header "$xml" "$dir/$name-client-protocol.h"
			run_logged "$LOGS/guest-programs.log" \
				wayland-scanner private-code "$xml" "$dir/$name-protocol.c"
		fi
		code+=("$dir/$name-protocol.c")
	done
	if [ -f "$out" ] && ! newer_than "$out" "$WAYLAND_CLIENT_SRC" \
	   "$PAGODA_ROOT/tests/guest/weston_pattern.h" "${code[@]}"; then
		return
	fi
	# shellcheck disable=SC2046 # pkg-config's flags are words
	run_logged "$LOGS/guest-programs.log" \
		gcc ${GUEST_CFLAGS/-static/} -I"$dir" -I"$PAGODA_ROOT/tests/guest" \
		-o "$out.tmp" "$WAYLAND_CLIENT_SRC" "${code[@]}" \
		$(pkg-config --cflags --libs wayland-client) -lm
	mv "$out.tmp" "$out"
	info "$out (dynamic, libwayland-client)"
}

# newer_than TARGET FILE...: true when a FILE is newer than TARGET.
newer_than() {
	local target=$1 f
	shift
	for f in "$@"; do
		[ "$f" -nt "$target" ] && return 0
	done
	return 1
}

# stage SRC DST: copy SRC into the image tree when its content changed.
stage() {
	install_if_changed "$1" "$STAGE/$2" || true
	WANTED+=("./$2")
}

# The modules pagoda.ko needs, in load order, as modprobe resolves them.
module_chain() {
	local deps dep line
	deps=$(modinfo -F depends "$MODULE" | tr , ' ')
	for dep in $deps; do
		modprobe -d "$MODROOT" -S "$RELEASE" --show-depends "$dep" ||
			die "modprobe cannot resolve $dep for $RELEASE" \
			    "check that $dep exists in $MODROOT/lib/modules/$RELEASE"
	done | while read -r line; do
		case $line in
		insmod\ *) line=${line#insmod }; echo "${line%% *}" ;;
		esac
	done | awk '!seen[$0]++'
}

# stage_kernel_module KO DIR: the kernel's module KO (xz), decompressed for
# busybox insmod, as DIR/<name>.ko in the image.
stage_kernel_module() {
	local ko=$1 dst=$STAGE/$2/$(basename "$1" .xz) tmp
	if [ ! -f "$dst" ] || [ "$ko" -nt "$dst" ]; then
		tmp=$(mktemp)
		xz -dc "$ko" >"$tmp" || die "cannot decompress $ko" "rerun scripts/setup.sh to refetch the kernel"
		install_if_changed "$tmp" "$dst" || touch "$dst"
		rm -f "$tmp"
	fi
	WANTED+=("./$2/$(basename "$ko" .xz)")
}

# The stock kernel's NVMe driver, for the benchmarks that measure QEMU's
# NVMe controller beside the GPU: /init loads modules/nvme/order only when
# the guest has an NVMe controller.
stage_nvme_modules() {
	local ko order=()
	[ "$KERNEL" = stock ] || return 0
	for ko in $(modprobe -d "$MODROOT" -S "$RELEASE" --show-depends nvme |
		    sed -n 's/^insmod \([^ ]*\).*/\1/p'); do
		stage_kernel_module "$ko" modules/nvme
		order+=("$(basename "$ko" .xz)")
	done
	[ ${#order[@]} -gt 0 ] || die "modprobe cannot resolve nvme for $RELEASE" \
		"check that nvme exists in $MODROOT/lib/modules/$RELEASE"
	printf '%s\n' "${order[@]}" >"$MODULE_BUILD/nvme.order"
	stage "$MODULE_BUILD/nvme.order" modules/nvme/order
}

stage_modules() {
	step "modules for pagoda.ko"
	local chain= ko order=()
	# The debug kernel has DRM and its helpers built in.
	if [ "$KERNEL" = stock ]; then
		chain=$(module_chain) || exit 1
	elif [ -n "$(modinfo -F depends "$MODULE")" ]; then
		die "pagoda.ko needs modules the debug kernel does not build in: $(modinfo -F depends "$MODULE")" \
			"select them in scripts/debug-kernel/Kconfig.pagoda"
	fi
	for ko in $chain; do
		stage_kernel_module "$ko" modules
		order+=("$(basename "$ko" .xz)")
	done
	stage "$MODULE" modules/pagoda.ko
	order+=(pagoda.ko)
	printf '%s\n' "${order[@]}" >"$MODULE_BUILD/modules.order"
	stage "$MODULE_BUILD/modules.order" modules/order
	info "load order: ${order[*]}"
}

# stage_libraries FILE REMEDY: every library ldd resolves for the
# dynamically linked FILE, and the loader, staged at their paths: the
# paths the loader searches without an ld.so.cache. (ldd runs with the
# caller's LD_LIBRARY_PATH.)
stage_libraries() {
	local file=$1 lib deps
	deps=$(ldd "$file") && ! grep -q 'not found' <<<"$deps" ||
		die "ldd $file does not resolve all its libraries" "$2"
	# "libx.so.1 => /lib/.../libx.so.1 (0x...)" and "/lib64/ld-linux-x86-64.so.2 (0x...)"
	for lib in $(awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' <<<"$deps"); do
		# cp follows symbolic links: the soname gets the library itself
		stage "$lib" "${lib#/}"
	done
}

# libdrm's clients, dynamically linked (Debian's builds), at the same paths
# with their libraries.
stage_drm_clients() {
	local bin
	for bin in $DRM_CLIENTS; do
		stage "$bin" "${bin#/}"
		stage_libraries "$bin" "reinstall them: apt-get install --reinstall libdrm-tests drm-info"
	done
}

# Weston and the modules it loads (dlopen() by their paths), with their
# libraries; the modules leave libexec_weston to weston, so ldd looks for
# it where weston does. Then the test's Wayland client, in /usr/bin.
stage_weston() {
	local f fix="reinstall them: apt-get install --reinstall weston libweston-10-0"
	stage "$WESTON" "${WESTON#/}"
	stage_libraries "$WESTON" "$fix"
	for f in $WESTON_MODULES; do
		stage "$f" "${f#/}"
		LD_LIBRARY_PATH=$WESTON_LIBDIR stage_libraries "$f" "$fix"
	done
	stage "$GUEST_BUILD/bin/pagoda-wl-client" usr/bin/pagoda-wl-client
	stage_libraries "$GUEST_BUILD/bin/pagoda-wl-client" \
		"reinstall them: apt-get install --reinstall libwayland-client0 libffi8"
	# Weston makes an XKB context when it starts, which libxkbcommon
	# refuses without its data directory; it compiles a keymap (from the
	# data) only for a keyboard, and the guest gives it none: the
	# directory, empty, is enough.
	mkdir -p "$STAGE/usr/share/X11/xkb"
}

stage_files() {
	step "initramfs tree"
	local src name
	stage /bin/busybox bin/busybox
	stage "$PAGODA_ROOT/scripts/guest-init.sh" init
	chmod 755 "$STAGE/init"
	for src in "$PAGODA_ROOT"/tests/guest/*.c; do
		name=$(basename "$src" .c)
		stage "$GUEST_BUILD/bin/$name" "tests/$name"
	done
	for src in "$DRIVER"/tools/*.c; do
		name=$(basename "$src" .c)
		stage "$GUEST_BUILD/bin/$name" "usr/bin/$name"
	done
	stage_drm_clients
	stage_weston
	# Drop what an earlier build staged and this one does not (a removed test).
	local f
	(cd "$STAGE" && find . -type f) | while read -r f; do
		# a here-string, not a pipe: grep -q stops reading early, and
		# under pipefail the writer's SIGPIPE would count as no match
		grep -qxF -- "$f" <<<"$(printf '%s\n' "${WANTED[@]}")" ||
			{ rm -f "$STAGE/$f"; info "removed $f"; }
	done
	info "$STAGE"
}

pack() {
	step "initramfs image"
	local manifest
	manifest=$(cd "$STAGE" && find . -type f | LC_ALL=C sort)
	if [ -f "$IMAGE" ] && [ "$manifest" = "$(cat "$MANIFEST" 2>/dev/null)" ] &&
	   [ -z "$(find "$STAGE" -newer "$IMAGE" -print -quit)" ]; then
		info "up to date: $IMAGE"
		return
	fi
	(cd "$STAGE" && find . -print0 | LC_ALL=C sort -z |
		cpio --null -o -H newc -R 0:0 --quiet) | gzip -1 >"$IMAGE.tmp" ||
		die "cpio/gzip failed writing $IMAGE.tmp" "check free space in $GUEST_BUILD"
	mv "$IMAGE.tmp" "$IMAGE"
	printf '%s\n' "$manifest" >"$MANIFEST"
	info "$IMAGE ($(du -k "$IMAGE" | cut -f1) KiB)"
}

main() {
	local start=$SECONDS
	mkdir -p "$GUEST_BUILD" "$STAGE" "$LOGS"
	# One build at a time: concurrent runs share $GUEST_BUILD.
	exec 9>"$GUEST_BUILD/.lock"
	flock 9
	WANTED=()
	check_inputs
	build_module
	build_programs
	stage_modules
	stage_nvme_modules
	stage_files
	pack
	info "guest build done in $((SECONDS - start)) s"
}

main "$@"
