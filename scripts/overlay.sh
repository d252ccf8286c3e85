#!/usr/bin/env bash
# Copy Pagoda's device, hardware header and qtests into a QEMU source tree and
# hook them into QEMU's meson and Kconfig. Idempotent: files are copied only
# when their content changed, and each hook is added once, so an unchanged
# overlay causes no rebuild.
#   usage: scripts/overlay.sh QEMU_SOURCE_DIR
set -euo pipefail
. "$(dirname "$0")/lib.sh"

qemu=${1:?usage: overlay.sh QEMU_SOURCE_DIR}
[ -f "$qemu/VERSION" ] || die "$qemu is not a QEMU source tree" "run scripts/setup.sh, which fetches it"

copy_tree() {
	local from=$PAGODA_ROOT/$1 to=$qemu/$2 f
	( cd "$from" && find . -type f ) | while read -r f; do
		install_if_changed "$from/$f" "$to/$f" && info "overlay: $2/${f#./}" || true
	done
}

# add_line_after FILE ANCHOR LINE: insert LINE after the first line equal to ANCHOR.
add_line_after() {
	local file=$1 anchor=$2 line=$3
	grep -qxF "$line" "$file" && return
	grep -qxF "$anchor" "$file" || die "anchor '$anchor' not found in $file" \
		"QEMU's layout changed: update scripts/overlay.sh for this QEMU version"
	ANCHOR=$anchor LINE=$line perl -0pi -e \
		's/^\Q$ENV{ANCHOR}\E\n/$ENV{ANCHOR}\n$ENV{LINE}\n/m' "$file"
}

# The qtest list is generated from tests/qtest/ of this repository, so a new
# test file needs no edit here.
# write_if_changed DST LABEL: stdin to DST, only when it differs.
write_if_changed() {
	local tmp
	tmp=$(mktemp)
	cat >"$tmp"
	[ -s "$tmp" ] || die "empty content for $1" "see the error printed above"
	install_if_changed "$tmp" "$1" && info "overlay: $2" || true
	rm -f "$tmp"
}

qtest_block() {
	local files
	files=$(cd "$PAGODA_ROOT/tests/qtest" && find . -name '*.c' -not -path './fuzz/*' \
		-not -name "$FUZZ_REPRO_TEST.c" -not -name "$MIGRATION_TEST.c" |
		sed 's|^\./||' | sort |
		sed "s/.*/'&'/" | paste -sd, -)
	printf "if config_all_devices.has_key('CONFIG_PAGODA')\n  qos_test_ss.add(files(%s))\n" "$files"
	printf "  executable('pagoda-bench', files('pagoda-bench/pagoda-bench.c', 'libqos/pagoda.c'),\n"
	printf "             include_directories: include_directories('.'), dependencies: [qemuutil, qos])\n"
	printf "  executable('%s', files('%s.c', 'libqos/pagoda.c'), dependencies: [qemuutil, qos])\n" \
		"$MIGRATION_TEST" "$MIGRATION_TEST"
	if have_fuzz_repro_test; then
		printf "  executable('%s', files('%s.c'), dependencies: [qemuutil, qos])\n" \
			"$FUZZ_REPRO_TEST" "$FUZZ_REPRO_TEST"
	fi
	printf "endif\n"
}

wire_qtests() {
	local mesonfile=$qemu/tests/qtest/meson.build
	{ printf '# pagoda-begin\n'; qtest_block; printf '# pagoda-end\n'; } |
		BLOCK=$(cat) perl -0pe 's/# pagoda-begin\n.*?# pagoda-end\n//s;
			s/^(tpmemu_files = )/$ENV{BLOCK}\n$1/m or die "anchor tpmemu_files not found\n"' \
			"$mesonfile" | write_if_changed "$mesonfile" tests/qtest/meson.build
}

# Fixes to QEMU itself (patches/qemu/, each with its reason), applied once:
# a patch that already reverses cleanly is in place.
apply_qemu_patches() {
	local p
	for p in "$PAGODA_ROOT"/patches/qemu/*.patch; do
		[ -e "$p" ] || continue
		patch -d "$qemu" -p1 -R -s -f --dry-run <"$p" >/dev/null 2>&1 && continue
		patch -d "$qemu" -p1 -N -s <"$p" >/dev/null ||
			die "patches/qemu/${p##*/} does not apply to $qemu" \
				"remove $qemu to fetch a clean source, or update the patch for this QEMU version"
		info "overlay: applied patches/qemu/${p##*/}"
	done
}

apply_qemu_patches
copy_tree hw/display/pagoda hw/display/pagoda
copy_tree include/pagoda include/pagoda
copy_tree tests/qtest tests/qtest
copy_tree tests/bench tests/qtest/pagoda-bench
add_line_after "$qemu/hw/display/meson.build" "modules += { 'hw-display': hw_display_modules }" \
	"subdir('pagoda')"
grep -qxF "source pagoda/Kconfig" "$qemu/hw/display/Kconfig" ||
	printf '\nsource pagoda/Kconfig\n' >>"$qemu/hw/display/Kconfig"
add_line_after "$qemu/meson.build" "    'hw/display'," "    'hw/display/pagoda',"
wire_qtests
# The structure-aware fuzz target (tests/qtest/fuzz/, built only with
# --enable-fuzzing).
add_line_after "$qemu/tests/qtest/fuzz/meson.build" "specific_fuzz_ss.add(files('generic_fuzz.c'))" \
	"specific_fuzz_ss.add(when: 'CONFIG_PAGODA', if_true: files('pagoda_fuzz.c'))"
write_if_changed "$qemu/configs/devices/x86_64-softmmu/pagoda.mak" configs/devices/x86_64-softmmu/pagoda.mak <<'MAK'
# Minimal x86_64 machine set for Pagoda: q35 and pc, the Pagoda GPU, and
# QEMU's NVMe controller, the baseline of the benchmarks' round trips.
CONFIG_Q35=y
CONFIG_I440FX=y
CONFIG_PAGODA=y
CONFIG_NVME_PCI=y
MAK
