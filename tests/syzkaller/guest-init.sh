#!/bin/busybox sh
# /init of the syzkaller guest image (docs/building.md): kernel file
# systems, pagoda.ko, network (slirp: 10.0.2.15/24 via 10.0.2.2), dropbear
# on port 22; then it stays up forever (PID 1 must not exit).
/bin/busybox mkdir -p /dev /proc /sys /tmp
/bin/busybox mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t debugfs debugfs /sys/kernel/debug
mount -t tmpfs tmpfs /tmp
mkdir -p /dev/pts /dev/shm /run /var/run
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run
hostname syzkaller
echo "SYZ-INIT: insmod pagoda.ko"
for m in $(cat /modules/order 2>/dev/null); do
	insmod "/modules/$m" || echo "SYZ-INIT: insmod $m failed"
done
ls -l /dev/dri 2>/dev/null
ip link set lo up
ip addr add 127.0.0.1/8 dev lo 2>/dev/null
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
ip route add default via 10.0.2.2
echo "SYZ-INIT: network: $(ip -4 addr show eth0 | grep inet)"
/usr/sbin/dropbear -R -E -p 22 -P /run/dropbear.pid
echo "SYZ-INIT: dropbear started, ready"
while :; do sleep 3600; done
