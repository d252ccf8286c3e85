#!/usr/bin/env bash
# The main job: set up what is missing, boot a Linux guest with a small
# Pagoda GPU (16 MiB of VRAM, 8 MiB of hidden VRAM, a 16 MiB aperture, so
# that the model has to work: eviction, splitting) linked with a second one
# (one logical adapter: a peer copy), load the driver and run
# pagoda-info and pagoda-demo, a one-minute walk through the model
# (guest-driver/tools/pagoda-demo.c), then pagoda-kms-demo when the tools
# have it, showing their output.
#
# The guest's screen: a program saves it as a PNG on the host with
# pagoda_screen_png("NAME", ...) (tests/guest/pagoda_screen.h) at the
# moment it has drawn; the pictures of the run go to $PAGODA_CACHE/demo/
# (NAME.png; the previous run's are removed) and their paths are printed
# with the results ("screen: PATH").
#   usage: scripts/demo.sh [--kvm] [--device OPTS]
#   --kvm          use KVM instead of TCG
#   --device OPTS  the device's properties, instead of the small GPU's
set -euo pipefail
. "$(dirname "$0")/lib.sh"

"$PAGODA_ROOT/scripts/setup.sh"
PICTURES=$PAGODA_CACHE/demo
mkdir -p "$PICTURES"
rm -f "$PICTURES"/*.png
programs=(pagoda-info pagoda-demo)
if [ -f "$PAGODA_ROOT/guest-driver/tools/pagoda-kms-demo.c" ]; then
	programs+=(pagoda-kms-demo)
fi
exec "$PAGODA_ROOT/scripts/run-guest.sh" --device vram-size=16M,hidden-vram-size=8M,aperture-size=16M \
	--link 2 --pngs "$PICTURES" "$@" "${programs[@]}"
