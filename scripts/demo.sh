#!/usr/bin/env bash
# The main job: set up what is missing, boot a Linux guest with a small
# Pagoda GPU (16 MiB of VRAM, 8 MiB of hidden VRAM, a 16 MiB aperture, so
# that the model has to work: eviction, splitting), load the driver and run
# pagoda-info and pagoda-demo, a one-minute walk through the model
# (guest-driver/tools/pagoda-demo.c), showing their output.
#   usage: scripts/demo.sh [--kvm] [--device OPTS]
set -euo pipefail
. "$(dirname "$0")/lib.sh"

"$PAGODA_ROOT/scripts/setup.sh"
exec "$PAGODA_ROOT/scripts/run-guest.sh" --device vram-size=16M,hidden-vram-size=8M,aperture-size=16M \
	"$@" pagoda-info pagoda-demo
