#!/bin/busybox sh
# /init of the guest image that scripts/build-guest.sh packs. Mounts the
# kernel file systems, loads the modules listed in /modules/order, runs the
# programs named by pagoda_guest.run=A,B,... on the kernel command line and
# prints one line per program for scripts/run-guest.sh:
#   PAGODA-RESULT <name> PASS|FAIL|SKIP <exit status> <seconds>
# (exit status 77 means the program does not apply to this kernel: SKIP;
# seconds: how long it ran, by the guest's clock), and
#   PAGODA-TIME boot|end <seconds since the kernel started>
# then powers off. A program fails too when the kernel reports a problem
# while it runs: an oops, BUG or WARN, and under the debug kernel a KASAN,
# KFENCE, lockdep, UBSAN, DEBUG_OBJECTS or DMA-API report. The debug
# kernel's kmemleak is scanned after the last program; a leak it finds is
# printed as "PAGODA-KERNEL: kmemleak ..." and fails the run.

/bin/busybox mkdir -p /dev /proc /sys /tmp
/bin/busybox mount -t devtmpfs devtmpfs /dev
# The image has no /dev/console node, so the kernel started us without one.
exec </dev/console >/dev/console 2>&1
/bin/busybox --install -s /bin
export PATH=/tests:/usr/bin:/bin

mount -t proc proc /proc
uptime_s() {
	cut -d' ' -f1 /proc/uptime
}
echo "PAGODA-TIME boot $(uptime_s)"
mount -t sysfs sysfs /sys
mount -t debugfs debugfs /sys/kernel/debug
mount -t tmpfs tmpfs /tmp

# Taint flags the kernel sets when something went wrong: M (machine check),
# B (bad page), D (oops or BUG), W (WARN), L (soft lockup).
BAD_TAINT=$(( (1 << 4) | (1 << 5) | (1 << 7) | (1 << 9) | (1 << 14) ))
bad_taint() {
	echo $(( $(cat /proc/sys/kernel/tainted) & BAD_TAINT ))
}

# The first line of every kernel report; lockdep, KASAN, KFENCE and
# atomic-sleep reports start with "WARNING:" or "BUG:". Not all of them
# taint the kernel, so the log is searched too.
REPORT='BUG:|WARNING:|Oops|general protection fault|UBSAN:|ODEBUG:|list_(add|del) corruption|INFO: task .* blocked|detected stalls'
# The kernel log is cleared before each program, so that what a program
# caused stands alone (and a full log buffer cannot hide a new report).
reports() {
	dmesg | grep -cE "$REPORT"
}
# show_report: the kernel log on standard input from the first report on.
show_report() {
	awk -v re="$REPORT" '$0 ~ re { n++ } n && shown < 150 { print; shown++ }'
}

KMEMLEAK=/sys/kernel/debug/kmemleak
# Only leaks from here on are reported: the final report leaves out objects
# allocated before now (what boot left unreferenced), by the time kmemleak
# records for each, which costs nothing where a scan now cost seconds.
if [ -w "$KMEMLEAK" ]; then
	leaks_since=$(awk '/^jiffies:/ { print $2; exit }' /proc/timer_list)
fi

# pagoda.NAME=VALUE on the kernel command line: pagoda.ko's parameters
# (busybox insmod does not look there itself).
pagoda_args=$(tr ' ' '\n' </proc/cmdline | sed -n 's/^pagoda\.//p')
for m in $(cat /modules/order); do
	args=
	[ "$m" = pagoda.ko ] && args=$pagoda_args
	# shellcheck disable=SC2086 # one word per parameter
	if ! insmod "/modules/$m" $args; then
		echo "PAGODA-INIT: insmod $m failed; kernel log:"
		dmesg | tail -n 20
	fi
done
# QEMU's NVMe controller, beside the GPU for the benchmarks' baseline
# (class 0x010802): its driver, when the image has it.
if [ -f /modules/nvme/order ] && grep -qx 0x010802 /sys/bus/pci/devices/*/class; then
	for m in $(cat /modules/nvme/order); do
		insmod "/modules/nvme/$m" || echo "PAGODA-INIT: insmod nvme/$m failed"
	done
fi
dmesg | grep -E 'pagoda[ :]|\[drm\]' | sed 's/^/PAGODA-INIT: /'
if [ "$(reports)" != 0 ]; then
	echo "PAGODA-KERNEL: kernel report during boot or module load:"
	dmesg | show_report
elif [ "$(bad_taint)" != 0 ]; then
	echo "PAGODA-KERNEL: tainted $(cat /proc/sys/kernel/tainted) after loading modules; kernel log:"
	dmesg | tail -n 80
fi

# Between programs the loop starts as few processes as it can: under the
# debug kernel each costs 25 ms, and a boot runs up to 34 programs.
# uptime_cs VAR: the time since boot in hundredths of a second, into VAR.
uptime_cs() {
	read -r up _ </proc/uptime
	frac=${up#*.}
	eval "$1=$(( ${up%.*} * 100 + ${frac#0} ))"
}
# taint_bits VAR: the bad taint flags, into VAR (the whole value in $taint).
taint_bits() {
	read -r taint </proc/sys/kernel/tainted
	eval "$1=$(( taint & BAD_TAINT ))"
}

run=$(tr ' ' '\n' </proc/cmdline | sed -n 's/^pagoda_guest\.run=//p')
dmesg -c >/dev/null
for p in $(echo "$run" | tr , ' '); do
	echo "PAGODA-START $p"
	taint_bits before
	uptime_cs start
	"$p"
	rc=$?
	uptime_cs end
	cs=$((end - start))
	frac=$((cs % 100))
	[ "$frac" -lt 10 ] && frac=0$frac
	seconds=$((cs / 100)).$frac
	case $rc in
	0) result=PASS ;;
	77) result=SKIP ;;
	*) result=FAIL ;;
	esac
	# what the kernel logged while it ran (which clears it for the next)
	dmesg -c >/tmp/klog
	taint_bits after
	if grep -qE "$REPORT" /tmp/klog; then
		echo "PAGODA-KERNEL: kernel report while $p ran:"
		show_report </tmp/klog
		result=FAIL
	elif [ "$after" != "$before" ]; then
		echo "PAGODA-KERNEL: tainted $taint while $p ran; kernel log:"
		tail -n 80 /tmp/klog
		result=FAIL
	fi
	echo "PAGODA-RESULT $p $result $rc $seconds"
done
programs_end=$(uptime_s)

# Line coverage of pagoda.ko (the debug kernel has gcov): its counters,
# copied out of debugfs (whose files report no size to tar) and printed
# as a base64 tar between markers, for scripts/run-guest.sh to unpack.
GCOV=/sys/kernel/debug/gcov
if [ -d "$GCOV" ]; then
	mkdir -p /tmp/gcov
	for f in $(find "$GCOV" -name 'pagoda*.gcda'); do
		cat "$f" >"/tmp/gcov/${f##*/}"
	done
	if [ -n "$(ls /tmp/gcov)" ]; then
		echo "PAGODA-GCOV-BEGIN"
		tar -C /tmp/gcov -cz . | base64
		echo "PAGODA-GCOV-END"
	fi
fi

# kmemleak reports only objects older than 5 s when its scan starts: wait
# until the last program ended 5.1 s ago (the coverage's copy counts), then
# scan. Each object of its report is a header line, then "  comm ...,
# jiffies N".
if [ -w "$KMEMLEAK" ]; then
	sleep "$(echo "$programs_end $(uptime_s)" | awk '{ w = 5.1 - ($2 - $1); print (w > 0 ? w : 0) }')"
	echo scan >"$KMEMLEAK"
	awk -v since="$leaks_since" '
		/^unreferenced object/ { head = $0; keep = 0; next }
		head != "" { keep = $NF + 0 >= since + 0; if (keep) print head; head = "" }
		keep' "$KMEMLEAK" >/tmp/leaks
	if [ -s /tmp/leaks ]; then
		echo "PAGODA-KERNEL: kmemleak found unreferenced objects:"
		head -n 200 /tmp/leaks
	else
		echo "PAGODA-INIT: kmemleak: no leak"
	fi
fi
echo "PAGODA-TIME end $(uptime_s)"
echo "PAGODA-DONE"
poweroff -f
