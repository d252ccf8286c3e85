# QEMU's device set for syzkaller's VMs (configs/devices/x86_64-softmmu/, with
# --with-devices-x86_64=pagoda-syz --enable-slirp): Pagoda's, an e1000 for
# syz-manager's ssh over the user network, and the virtio-rng-pci device
# syz-manager always adds. See docs/building.md.
include pagoda.mak
CONFIG_E1000_PCI=y
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_RNG=y
