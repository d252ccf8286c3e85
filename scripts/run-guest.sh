#!/usr/bin/env bash
# Boot the guest kernel under QEMU with a Pagoda device and run guest
# programs in it (tests from tests/guest/, tools from guest-driver/tools/).
#
#   scripts/run-guest.sh [--kvm] [--timeout SECONDS] [--device OPTS]
#                        [--append KERNEL_ARGS] [PROGRAM...]
#
#   --kvm          use KVM instead of TCG (needs a working /dev/kvm)
#   --timeout S    kill QEMU after S seconds (default 300); programs that
#                  did not report count as failed
#   --device OPTS  properties of the device: -device pagoda,OPTS
#   --append ARGS  extra kernel command line arguments (e.g. pci=nomsi)
#   PROGRAM        name of a guest program; without any, every test in
#                  tests/guest/ runs
#
# The image is brought up to date with scripts/build-guest.sh first. The
# serial console is shown live and kept in $PAGODA_CACHE/logs/. The last
# line is "N passed, M failed"; the exit status is 0 only when every
# program passed and the kernel logged no oops, BUG or WARNING.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# usage STATUS: print the synopsis above, to stderr unless asked for.
usage() {
	if [ "$1" = 0 ]; then
		sed -n '5,14s/^# \{0,1\}//p' "$0"
	else
		sed -n '5,14s/^# \{0,1\}//p' "$0" >&2
	fi
	exit "$1"
}

PAGODA_STEP=arguments
ACCEL=tcg
TIMEOUT=300
DEVICE_OPTS=
APPEND=
while [ $# -gt 0 ]; do
	case $1 in
	--kvm) ACCEL=kvm ;;
	--timeout) TIMEOUT=${2:?--timeout needs a value}; shift ;;
	--device) DEVICE_OPTS=${2:?--device needs a value}; shift ;;
	--append) APPEND=${2:?--append needs a value}; shift ;;
	-h|--help) usage 0 ;;
	--) shift; break ;;
	-*) printf 'unknown option %s\n\n' "$1" >&2; usage 2 ;;
	*) break ;;
	esac
	shift
done
[[ $TIMEOUT =~ ^[1-9][0-9]*$ ]] || die "--timeout must be a positive number of seconds, not '$TIMEOUT'"
[[ $DEVICE_OPTS != *[[:space:]]* ]] || die "--device options must not contain spaces"

"$PAGODA_ROOT/scripts/build-guest.sh"

STAGE=$GUEST_BUILD/initramfs
IMAGE=$GUEST_BUILD/initramfs.cpio.gz

step "guest run"
known=()
for f in "$STAGE"/tests/* "$STAGE"/usr/bin/*; do
	known+=("$(basename "$f")")
done
if [ $# -eq 0 ]; then
	for f in "$STAGE"/tests/*; do
		set -- "$@" "$(basename "$f")"
	done
fi
for p in "$@"; do
	printf '%s\n' "${known[@]}" | grep -qxF -- "$p" ||
		die "unknown guest program '$p'" "use one of: ${known[*]}"
done
[ -x "$QEMU_BIN" ] || die "QEMU is not built ($QEMU_BIN)" "run scripts/setup.sh"

if [ "$ACCEL" = kvm ]; then
	[ -w /dev/kvm ] || die "--kvm given but /dev/kvm is not usable" "run without --kvm (TCG)"
	CPU=host
else
	CPU=max
fi

# iomem=relaxed: the tests read registers through sysfs BAR0 mappings while
# the driver owns the BAR, to check the driver against the device directly.
CMDLINE="console=ttyS0 quiet panic=-1 iomem=relaxed pagoda_guest.run=$(IFS=,; echo "$*")"
[ -n "$DEVICE_OPTS" ] && CMDLINE+=" pagoda_guest.device=$DEVICE_OPTS"
[ -n "$APPEND" ] && CMDLINE+=" $APPEND"

mkdir -p "$PAGODA_CACHE/logs"
LOG=$PAGODA_CACHE/logs/guest-$(date +%Y%m%d-%H%M%S)-$$.log
info "programs: $*"
info "accel $ACCEL, timeout ${TIMEOUT}s, device pagoda${DEVICE_OPTS:+,$DEVICE_OPTS}"
info "log: $LOG"
[ -z "${PAGODA_QEMU_ARGS:-}" ] || info "extra QEMU arguments: $PAGODA_QEMU_ARGS"

start=$(date +%s.%N)
set +e
timeout -k 5 "$TIMEOUT" "$QEMU_BIN" \
	-machine q35 -accel "$ACCEL" -cpu "$CPU" -m 1G -smp 2 \
	-nodefaults -serial stdio -display none -no-reboot \
	-kernel "$KERNEL_DIR/vmlinuz" -initrd "$IMAGE" -append "$CMDLINE" \
	-device "pagoda${DEVICE_OPTS:+,$DEVICE_OPTS}" ${PAGODA_QEMU_ARGS:-} </dev/null 2>&1 |
	sed -u 's/\r$//' | tee "$LOG"
qemu_rc=${PIPESTATUS[0]}
set -e
elapsed=$(echo "$(date +%s.%N) - $start" | bc)
printf '\n'

step "results"
case $qemu_rc in
0) info "guest ran for ${elapsed%.*} s" ;;
124|137) info "TIMEOUT: QEMU killed after $TIMEOUT s" ;;
*) info "QEMU exited with status $qemu_rc after ${elapsed%.*} s" ;;
esac

passed=0
failed=0
mapfile -t results < <(grep '^PAGODA-RESULT ' "$LOG" || true)
i=0
for p in "$@"; do
	read -r _ name result rc <<<"${results[$i]:-}"
	if [ "${name:-}" != "$p" ]; then
		info "FAIL $p (no result: the guest timed out, crashed or stopped early)"
		failed=$((failed + 1))
		continue
	fi
	i=$((i + 1))
	if [ "$result" = PASS ]; then
		info "PASS $p"
		passed=$((passed + 1))
	else
		info "FAIL $p (exit status $rc)"
		failed=$((failed + 1))
	fi
done

# A kernel problem fails the run even when every program passed.
kernel=$(grep -E '^PAGODA-KERNEL:|Oops|BUG:|WARNING:|Kernel panic|general protection fault|Call Trace:' \
	"$LOG" | head -n 5 || true)
if [ -n "$kernel" ]; then
	info "FAIL kernel log:"
	printf '%s\n' "$kernel" | sed 's/^/        /'
	failed=$((failed + 1))
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
