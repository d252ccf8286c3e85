#!/usr/bin/env bash
# The main job: set up what is missing, boot a Linux guest with the Pagoda
# GPU, load the driver and run the guest tools, showing their output.
#   usage: scripts/demo.sh [--kvm] [--device OPTS]
set -euo pipefail
. "$(dirname "$0")/lib.sh"

"$PAGODA_ROOT/scripts/setup.sh"
exec "$PAGODA_ROOT/scripts/run-guest.sh" "$@" pagoda-info
