#!/bin/busybox sh
# /init of the guest image that scripts/build-guest.sh packs. Mounts the
# kernel file systems, loads the modules listed in /modules/order, runs the
# programs named by pagoda_guest.run=A,B,... on the kernel command line and
# prints one line per program for scripts/run-guest.sh:
#   PAGODA-RESULT <name> PASS|FAIL <exit status>
# then powers off. A program fails too when the kernel reports a problem
# (oops, BUG, WARN) while it runs.

/bin/busybox mkdir -p /dev /proc /sys /tmp
/bin/busybox mount -t devtmpfs devtmpfs /dev
# The image has no /dev/console node, so the kernel started us without one.
exec </dev/console >/dev/console 2>&1
/bin/busybox --install -s /bin
export PATH=/tests:/usr/bin:/bin

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t debugfs debugfs /sys/kernel/debug
mount -t tmpfs tmpfs /tmp

# Taint flags the kernel sets when something went wrong: M (machine check),
# B (bad page), D (oops or BUG), W (WARN), L (soft lockup).
BAD_TAINT=$(( (1 << 4) | (1 << 5) | (1 << 7) | (1 << 9) | (1 << 14) ))
bad_taint() {
	echo $(( $(cat /proc/sys/kernel/tainted) & BAD_TAINT ))
}

for m in $(cat /modules/order); do
	if ! insmod "/modules/$m"; then
		echo "PAGODA-INIT: insmod $m failed; kernel log:"
		dmesg | tail -n 20
	fi
done
dmesg | grep -E 'pagoda[ :]|\[drm\]' | sed 's/^/PAGODA-INIT: /'
if [ "$(bad_taint)" != 0 ]; then
	echo "PAGODA-KERNEL: tainted $(cat /proc/sys/kernel/tainted) after loading modules; kernel log:"
	dmesg | tail -n 80
fi

run=$(tr ' ' '\n' </proc/cmdline | sed -n 's/^pagoda_guest\.run=//p')
for p in $(echo "$run" | tr , ' '); do
	echo "PAGODA-START $p"
	before=$(bad_taint)
	"$p"
	rc=$?
	result=PASS
	[ "$rc" = 0 ] || result=FAIL
	if [ "$(bad_taint)" != "$before" ]; then
		echo "PAGODA-KERNEL: tainted $(cat /proc/sys/kernel/tainted) while $p ran; kernel log:"
		dmesg | tail -n 80
		result=FAIL
	fi
	echo "PAGODA-RESULT $p $result $rc"
done
echo "PAGODA-DONE"
poweroff -f
