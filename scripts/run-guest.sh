#!/usr/bin/env bash
# Boot the guest kernel under QEMU with a Pagoda device and run guest
# programs in it (tests from tests/guest/, tools from guest-driver/tools/).
#
#   scripts/run-guest.sh [--kvm] [--kernel stock|debug] [--timeout SECONDS]
#                        [--device OPTS] [--link N] [--append KERNEL_ARGS]
#                        [--stress-seconds N] [--pngs DIR] [--prebuilt]
#                        [--migrate N] [--snapshots K] [--migrate-interval S]
#                        [PROGRAM...]
#
#   --kvm          use KVM instead of TCG (needs a working /dev/kvm)
#   --kernel K     stock: Debian's 6.12 (default); debug: the same 6.12 with
#                  KASAN, lockdep, kmemleak, ... (built on first use)
#   --timeout S    kill QEMU after S seconds (default 300, 900 with the
#                  debug kernel); programs that did not report count as failed
#   --device OPTS  properties of the device: -device pagoda,OPTS
#   --link N       N Pagoda GPUs (2 to 4) forming one linked adapter, each
#                  with the --device properties: the first has id=gpu0,
#                  the others link=gpu0 (docs/hardware.md section 11)
#   --append ARGS  extra kernel command line arguments (e.g. pci=nomsi;
#                  pagoda.NAME=VALUE sets a parameter of pagoda.ko)
#   --stress-seconds N  how long the stress program runs (default 60)
#   --pngs DIR     where the guest's "screendump-png NAME" requests write
#                  NAME.png (default: next to the log, as <log>-NAME.png)
#   --prebuilt     boot the kernel and image as they are, without bringing
#                  them up to date first (scripts/test.sh builds them once
#                  for boots that run side by side)
#   --migrate N    live-migrate the running guest N times, every S seconds
#                  (--migrate-interval, default 8), each time to a new QEMU
#                  (scripts/migrate-guest.py); fewer than N migrations fail
#                  the run. The screen channel (ttyS1) follows the guest
#   --snapshots K  before that, K times every S seconds: save a snapshot
#                  (savevm), let the guest run 2 s, load it back (loadvm)
#   PROGRAM        name of a guest program; without any, every test in
#                  tests/guest/ runs
#
# The image is brought up to date with scripts/build-guest.sh first. The
# serial console is shown live and kept in $PAGODA_CACHE/logs/. The guest's
# second serial port (/dev/ttyS1) talks to scripts/guest-agent.py, which
# takes screendumps through QMP (tests/guest/pagoda_screen.h); its requests
# are logged in <log>-agent.log (its PNGs go next to the log or to --pngs). The last
# line is "N passed, M failed" (skipped programs, which do not apply to the
# kernel, are listed but not counted); the exit status is 0 only when every
# program passed and the kernel reported no problem (oops, BUG, WARNING,
# and under the debug kernel KASAN, lockdep, UBSAN, DEBUG_OBJECTS, kmemleak).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# usage STATUS: print the synopsis above, to stderr unless asked for.
usage() {
	if [ "$1" = 0 ]; then
		sed -n '5,25s/^# \{0,1\}//p' "$0"
	else
		sed -n '5,25s/^# \{0,1\}//p' "$0" >&2
	fi
	exit "$1"
}

PAGODA_STEP=arguments
ACCEL=tcg
KERNEL=stock
TIMEOUT=
DEVICE_OPTS=
LINK=1
APPEND=
PNGS=
PREBUILT=
MIGRATE=
SNAPSHOTS=0
MIGRATE_INTERVAL=8
while [ $# -gt 0 ]; do
	case $1 in
	--kvm) ACCEL=kvm ;;
	--kernel) KERNEL=${2:?--kernel needs stock or debug}; shift ;;
	--timeout) TIMEOUT=${2:?--timeout needs a value}; shift ;;
	--stress-seconds) APPEND+=" pagoda_guest.stress_seconds=${2:?--stress-seconds needs a value}"; shift ;;
	--device) DEVICE_OPTS=${2:?--device needs a value}; shift ;;
	--link) LINK=${2:?--link needs a count}; shift ;;
	--append) APPEND+=" ${2:?--append needs a value}"; shift ;;
	--pngs) PNGS=${2:?--pngs needs a directory}; shift ;;
	--prebuilt) PREBUILT=1 ;;
	--migrate) MIGRATE=${2:?--migrate needs a count}; shift ;;
	--migrate-interval) MIGRATE_INTERVAL=${2:?--migrate-interval needs seconds}; shift ;;
	--snapshots) SNAPSHOTS=${2:?--snapshots needs a count}; shift ;;
	-h|--help) usage 0 ;;
	--) shift; break ;;
	-*) printf 'unknown option %s\n\n' "$1" >&2; usage 2 ;;
	*) break ;;
	esac
	shift
done
check_kernel_flavour "$KERNEL"
if [ -z "$TIMEOUT" ]; then
	TIMEOUT=300
	[ "$KERNEL" = stock ] || TIMEOUT=900
fi
[[ $TIMEOUT =~ ^[1-9][0-9]*$ ]] || die "--timeout must be a positive number of seconds, not '$TIMEOUT'"
[[ $DEVICE_OPTS != *[[:space:]]* ]] || die "--device options must not contain spaces"
[[ $LINK =~ ^[1-4]$ ]] || die "--link must be a count of GPUs from 1 to 4, not '$LINK'"
[[ -z $MIGRATE || $MIGRATE =~ ^[1-9][0-9]*$ ]] || die "--migrate must be a positive count, not '$MIGRATE'"
[[ $SNAPSHOTS =~ ^[0-9]+$ ]] || die "--snapshots must be a count, not '$SNAPSHOTS'"
[ "$SNAPSHOTS" = 0 ] || MIGRATE=${MIGRATE:-0}
APPEND=${APPEND# }

if [ "$KERNEL" = debug ]; then
	[ -n "$PREBUILT" ] || "$PAGODA_ROOT/scripts/debug-kernel.sh"
	VMLINUZ=$DEBUG_KERNEL_BUILD/arch/x86/boot/bzImage
else
	VMLINUZ=$KERNEL_DIR/vmlinuz
fi
[ -n "$PREBUILT" ] || "$PAGODA_ROOT/scripts/build-guest.sh" --kernel "$KERNEL"

STAGE=$GUEST_BUILD/initramfs-$KERNEL
IMAGE=$GUEST_BUILD/initramfs-$KERNEL.cpio.gz
[ -f "$IMAGE" ] && [ -f "$VMLINUZ" ] ||
	die "no $KERNEL kernel or guest image built" "run scripts/build-guest.sh --kernel $KERNEL"

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
	# a here-string, not a pipe: see build-guest.sh
	grep -qxF -- "$p" <<<"$(printf '%s\n' "${known[@]}")" ||
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
[ "$LINK" = 1 ] || CMDLINE+=" pagoda_guest.link=$LINK"
# A soft lockup or RCU stall panics, which ends the run at once instead of
# at the timeout; the debug kernel also prints its reports' call traces
# (KERN_WARNING) on the console.
CMDLINE+=" softlockup_panic=1 panic_on_rcu_stall=1"
[ "$KERNEL" = debug ] && CMDLINE+=" loglevel=5"
[ -n "$APPEND" ] && CMDLINE+=" $APPEND"

mkdir -p "$PAGODA_CACHE/logs"
LOG=$PAGODA_CACHE/logs/guest-$(date +%Y%m%d-%H%M%S)-$$.log
info "programs: $*"
info "$KERNEL kernel, accel $ACCEL, timeout ${TIMEOUT}s, device pagoda${DEVICE_OPTS:+,$DEVICE_OPTS}$( [ "$LINK" = 1 ] || echo ", $LINK linked")"
info "log: $LOG"
[ -z "${PAGODA_QEMU_ARGS:-}" ] || info "extra QEMU arguments: $PAGODA_QEMU_ARGS"

# The screen channel: QMP and the guest's ttyS1 on sockets in a directory
# of this run (in /tmp: a socket's path must fit in 108 bytes).
RUNDIR=$(mktemp -d /tmp/pagoda-guest.XXXXXX)
AGENT_LOG=${LOG%.log}-agent.log
agent_pid=
cleanup() {
	[ -z "$agent_pid" ] || kill "$agent_pid" 2>/dev/null || true
	rm -rf "$RUNDIR"
}
# (bash runs an EXIT trap on Ctrl-C too)
trap cleanup EXIT
if [ -n "$PNGS" ]; then
	mkdir -p "$PNGS" || die "cannot create $PNGS" "give --pngs a writable directory"
	PNGS=$(cd "$PNGS" && pwd)
fi
# The GPUs: one, or the members of a link after its first.
GPUS=(-device "pagoda${DEVICE_OPTS:+,$DEVICE_OPTS}")
if [ "$LINK" -gt 1 ]; then
	GPUS=(-device "pagoda,id=gpu0${DEVICE_OPTS:+,$DEVICE_OPTS}")
	for ((i = 1; i < LINK; i++)); do
		GPUS+=(-device "pagoda,link=gpu0${DEVICE_OPTS:+,$DEVICE_OPTS}")
	done
fi
# The guest's machine; the console and the screen channel are added below.
# shellcheck disable=SC2206 # PAGODA_QEMU_ARGS is split on purpose
MACHINE=(-machine q35 -accel "$ACCEL" -cpu "$CPU" -m 1G -smp 2
	-nodefaults -display none -no-reboot
	-kernel "$VMLINUZ" -initrd "$IMAGE" -append "$CMDLINE"
	"${GPUS[@]}" ${PAGODA_QEMU_ARGS:-})

start=$(date +%s.%N)
set +e
# The screen agent: QMP and the guest's ttyS1 (for a guest that migrates,
# sockets of migrate-guest.py that follow it). It waits for the sockets and
# ends with QEMU (or with this script); the run's result never depends on
# it: a guest request it does not answer times out in the guest, which
# fails that program.
python3 "$PAGODA_ROOT/scripts/guest-agent.py" --qmp "$RUNDIR/qmp.sock" \
	--serial "$RUNDIR/agent.sock" --dumps "$PAGODA_CACHE/logs" \
	--prefix "$(basename "$LOG" .log)" ${PNGS:+--pngs "$PNGS"} ${MIGRATE:+--follow} \
	</dev/null >"$AGENT_LOG" 2>&1 &
agent_pid=$!
if [ -n "$MIGRATE" ]; then
	info "snapshots: $SNAPSHOTS, migrations: $MIGRATE, every $MIGRATE_INTERVAL s"
	# the driver gives each QEMU the console (on a socket it copies), QMP
	# and the screen channel
	timeout -k 5 "$TIMEOUT" python3 "$PAGODA_ROOT/scripts/migrate-guest.py" \
		--count "$MIGRATE" --snapshots "$SNAPSHOTS" --interval "$MIGRATE_INTERVAL" \
		--rundir "$RUNDIR" -- \
		"$QEMU_BIN" "${MACHINE[@]}" </dev/null 2>&1 |
		sed -u 's/\r$//' | tee "$LOG"
	qemu_rc=${PIPESTATUS[0]}
else
	# -serial stdio comes first: the console stays ttyS0, the agent is ttyS1.
	timeout -k 5 "$TIMEOUT" "$QEMU_BIN" -serial stdio \
		-qmp "unix:$RUNDIR/qmp.sock,server=on,wait=off" \
		-chardev "socket,id=agent,path=$RUNDIR/agent.sock,server=on,wait=off" \
		-serial chardev:agent "${MACHINE[@]}" </dev/null 2>&1 |
		sed -u 's/\r$//' | tee "$LOG"
	qemu_rc=${PIPESTATUS[0]}
fi
set -e
elapsed=$(echo "$(date +%s.%N) - $start" | bc)
printf '\n'

step "results"
case $qemu_rc in
0) info "guest ran for ${elapsed%.*} s" ;;
124|137) info "TIMEOUT: QEMU killed after $TIMEOUT s" ;;
*) info "QEMU exited with status $qemu_rc after ${elapsed%.*} s" ;;
esac
# pagoda.ko's coverage counters (debug kernel), unpacked next to the log;
# lines the kernel printed into the block are not base64 and are left out
if grep -q '^PAGODA-GCOV-BEGIN$' "$LOG"; then
	GCOV_DIR=${LOG%.log}-gcov
	mkdir -p "$GCOV_DIR"
	if sed -n '/^PAGODA-GCOV-BEGIN$/,/^PAGODA-GCOV-END$/p' "$LOG" |
	   grep -E '^[A-Za-z0-9+/=]+$' | base64 -d | tar -xz -C "$GCOV_DIR" 2>/dev/null; then
		info "gcov: $GCOV_DIR"
	else
		info "gcov: the counters could not be unpacked"
	fi
fi
# the PNGs the guest asked for (scripts/demo.sh shows its picture so)
while read -r _ what path; do
	if [ "$what" = wrote ]; then info "screen: $path"; fi
done <"$AGENT_LOG"

passed=0
failed=0
mapfile -t results < <(grep '^PAGODA-RESULT ' "$LOG" || true)
i=0
for p in "$@"; do
	read -r _ name result rc seconds <<<"${results[$i]:-}"
	if [ "${name:-}" != "$p" ]; then
		info "FAIL $p (no result: the guest timed out, crashed or stopped early)"
		failed=$((failed + 1))
		continue
	fi
	i=$((i + 1))
	if [ "$result" = PASS ]; then
		info "PASS $p (${seconds} s)"
		passed=$((passed + 1))
	elif [ "$result" = SKIP ]; then
		info "SKIP $p (does not apply to the $KERNEL kernel)"
	else
		info "FAIL $p (exit status $rc, ${seconds} s)"
		failed=$((failed + 1))
	fi
done
# where the guest's time went: booting, the programs, the checks after them
boot=$(sed -n 's/^PAGODA-TIME boot //p' "$LOG")
end=$(sed -n 's/^PAGODA-TIME end //p' "$LOG")
if [ -n "$boot" ] && [ -n "$end" ]; then
	info "$(awk -v boot="$boot" -v end="$end" -v all="$elapsed" '
		/^PAGODA-RESULT / { programs += $5 }
		END { printf "time: %.1f s booting, %.1f s in programs, %.1f s in init (modules, checks), %.1f s in all\n",
			boot, programs, end - boot - programs, all }' "$LOG")"
fi

# A kernel problem fails the run even when every program passed: show
# each report the guest printed (PAGODA-KERNEL: and what follows it), and
# anything else that looks like one.
REPORT='^PAGODA-KERNEL:|Oops|BUG:|WARNING:|Kernel panic|general protection fault|UBSAN:|ODEBUG:|unreferenced object|INFO: trying to register non-static key|INFO: task .* blocked|detected stalls'
# (not in the coverage block, whose base64 may spell anything)
CONSOLE=$(sed '/^PAGODA-GCOV-BEGIN$/,/^PAGODA-GCOV-END$/d' "$LOG")
if grep -qE "$REPORT" <<<"$CONSOLE"; then
	info "FAIL kernel report (full console: $LOG):"
	awk -v re="$REPORT" '$0 ~ re && !shown { shown = 1 }
		shown && /^PAGODA-(RESULT|START|DONE)/ { shown = 0; n = 0 }
		shown && n++ < 60 { print "        " $0 }' <<<"$CONSOLE" | head -n 200
	failed=$((failed + 1))
fi

if [ -n "$MIGRATE" ]; then
	migrated=$(grep -c '^PAGODA-MIGRATION [0-9]* total ' "$LOG" || true)
	info "migrations: $migrated of $MIGRATE: $(sed -n 's/^PAGODA-MIGRATION [0-9]* total \([0-9]*\) downtime \([0-9]*\) .*/\1 ms (downtime \2 ms)/p' "$LOG" | paste -sd, - | sed 's/,/, /g')"
	if [ "$migrated" -lt "$MIGRATE" ]; then
		info "FAIL migrations: $migrated of $MIGRATE completed"
		failed=$((failed + 1))
	fi
	snapshots=$(grep -c '^PAGODA-SNAPSHOT [0-9]* saved and loaded' "$LOG" || true)
	info "snapshots saved and loaded: $snapshots of $SNAPSHOTS"
	if [ "$snapshots" -lt "$SNAPSHOTS" ]; then
		info "FAIL snapshots: $snapshots of $SNAPSHOTS saved and loaded"
		failed=$((failed + 1))
	fi
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
