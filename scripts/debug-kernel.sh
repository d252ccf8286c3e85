#!/usr/bin/env bash
# Build the debug guest kernel: Debian's linux-source-6.12 of the same
# version as the stock guest kernel, configured from
# scripts/debug-kernel/pagoda-debug.config on top of allnoconfig (KASAN,
# lockdep, kmemleak, DEBUG_OBJECTS, UBSAN, fault injection, ...; see that
# file). The result is cached in $PAGODA_CACHE/kernel-debug/: a build whose
# inputs (source version, config fragment, Kconfig entry) did not change is
# not redone. The first build takes about 10 minutes on 2 cores.
#   usage: scripts/debug-kernel.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"

FRAGMENT=$PAGODA_ROOT/scripts/debug-kernel/pagoda-debug.config
KCONFIG_ENTRY=$PAGODA_ROOT/scripts/debug-kernel/Kconfig.pagoda
LOGS=$PAGODA_CACHE/logs
SRC_ROOT=$DEBUG_KERNEL_DIR/src

# The Debian version of the stock guest kernel (setup.sh fetched it).
source_version() {
	local release version
	release=$(kernel_release)
	[ -n "$release" ] || die "no stock guest kernel in $KERNEL_DIR" "run scripts/setup.sh first"
	version=$(apt-cache show "linux-image-$release" 2>/dev/null | sed -n 's/^Version: //p' | head -n 1)
	[ -n "$version" ] || die "apt knows no linux-image-$release" \
		"run scripts/setup.sh (it adds bookworm-backports and refreshes the package lists)"
	echo "$version"
}

# Sets SRC: the unpacked linux-source-6.12 tree of VERSION.
fetch_source() {
	local version=$1 debs=$PAGODA_CACHE/debs-debug
	SRC=$SRC_ROOT/linux-source-6.12
	step "debug kernel source (linux-source-6.12 $version)"
	if [ "$(cat "$SRC_ROOT/.pagoda-unpacked" 2>/dev/null)" = "$version" ]; then
		info "cached in $SRC"
		return
	fi
	rm -rf "$SRC_ROOT" "$debs" && mkdir -p "$SRC_ROOT" "$debs"
	info "downloading linux-source-6.12=$version (about 150 MB) and unpacking it"
	(cd "$debs" && run_logged "$LOGS/kernel-debug-download.log" \
		apt-get download "linux-source-6.12=$version")
	dpkg-deb --fsys-tarfile "$debs"/linux-source-6.12_*.deb |
		tar -xO --wildcards './usr/src/linux-source-6.12.tar.xz' |
		tar -xJ -C "$SRC_ROOT" ||
		die "cannot unpack linux-source-6.12" "check free space in $PAGODA_CACHE and rerun"
	[ -f "$SRC/Makefile" ] || die "linux-source-6.12 did not unpack to $SRC" "remove $SRC_ROOT and rerun"
	printf '%s\n' "$version" >"$SRC_ROOT/.pagoda-unpacked"
	rm -rf "$debs"
}

# Hook the Kconfig entry that selects the DRM helpers into the tree.
add_kconfig_entry() {
	install_if_changed "$KCONFIG_ENTRY" "$SRC/drivers/gpu/drm/Kconfig.pagoda" || true
	grep -qxF 'source "drivers/gpu/drm/Kconfig.pagoda"' "$SRC/drivers/gpu/drm/Kconfig" ||
		echo 'source "drivers/gpu/drm/Kconfig.pagoda"' >>"$SRC/drivers/gpu/drm/Kconfig"
}

# Every line of the fragment must hold in the final .config.
check_config() {
	local config=$1 key value bad=0
	while IFS='=' read -r key value; do
		case $value in
		n) grep -q "^$key=" "$config" && { info "wanted $key=n, got $(grep "^$key=" "$config")"; bad=1; } ;;
		*) grep -qxF "$key=$value" "$config" ||
			{ info "wanted $key=$value, got: $(grep -E "^(# )?$key[= ]" "$config" || echo nothing)"; bad=1; } ;;
		esac
	done < <(grep -E '^CONFIG_[A-Z0-9_]+=' "$FRAGMENT")
	[ "$bad" = 0 ] || die "the kernel refused options of $FRAGMENT (listed above)" \
		"add the options they depend on to $FRAGMENT"
}

# make_progress LOG: a line every minute while make runs, then its status.
make_progress() {
	local log=$1 pid=$2 start=$SECONDS next=60
	while kill -0 "$pid" 2>/dev/null; do
		sleep 2
		if [ $((SECONDS - start)) -ge $next ]; then
			info "$(grep -c '^  CC ' "$log" || true) files compiled, $(( (SECONDS - start) / 60 )) min"
			next=$((next + 60))
		fi
	done
	wait "$pid"
}

build_kernel() {
	local version=$1 build=$DEBUG_KERNEL_DIR/build want
	want=$(cat "$FRAGMENT" "$KCONFIG_ENTRY" | md5sum | cut -c1-12)
	want="$version $want"
	step "debug kernel build (KASAN, lockdep, kmemleak; first build about 8 minutes, 1250 files)"
	if [ "$(cat "$build/.pagoda-inputs" 2>/dev/null)" = "$want" ] &&
	   [ -f "$build/arch/x86/boot/bzImage" ] && [ -f "$build/Module.symvers" ]; then
		info "cached: $build"
		return
	fi
	local start=$SECONDS log=$LOGS/kernel-debug-build.log
	rm -rf "$build" && mkdir -p "$build"
	run_logged "$LOGS/kernel-debug-config.log" make -C "$SRC" O="$build" \
		KCONFIG_ALLCONFIG="$FRAGMENT" allnoconfig
	check_config "$build/.config"
	info "configured: $(grep -c '=y$' "$build/.config") options built in"
	# modules_prepare: what an out-of-tree module (pagoda.ko) builds against.
	make -C "$SRC" O="$build" -j"$(nproc)" CC="ccache gcc" \
		bzImage modules modules_prepare >"$log" 2>&1 &
	if ! make_progress "$log" $!; then
		tail -n 40 "$log" >&2
		die "the debug kernel build failed (full log: $log)" \
			"read the log; an option in $FRAGMENT may need another one"
	fi
	printf '%s\n' "$want" >"$build/.pagoda-inputs"
	info "built in $(( (SECONDS - start) / 60 )) min $(( (SECONDS - start) % 60 )) s: $build/arch/x86/boot/bzImage"
}

main() {
	mkdir -p "$LOGS" "$DEBUG_KERNEL_DIR"
	# One build at a time: several checkouts may share the cache.
	exec 8>"$DEBUG_KERNEL_DIR/.lock"
	flock 8
	local version
	version=$(source_version)
	fetch_source "$version"
	add_kconfig_entry
	build_kernel "$version"
}

main "$@"
