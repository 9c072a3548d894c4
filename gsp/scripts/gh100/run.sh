#!/bin/sh
# Rebuilds the GH100 worked-example fixtures from OpenRM 570.144's headers.
# Usage: gsp/scripts/gh100/run.sh [open-gpu-kernel-modules-570.144]   (from the repo root)
set -e
R=${1:-../shared/reference/open-gpu-kernel-modules-570.144}/src
D=$(dirname "$0")
gcc -Wall -I "$D/stub" -I "$R/common/sdk/nvidia/inc" -I "$R/nvidia/inc/kernel" \
    -I "$R/nvidia/arch/nvalloc/common/inc" -I "$R/nvidia/inc/kernel/gpu/gsp" \
    "$D/worked_example.c" -o /tmp/nvbare_gh100_worked_example
mkdir -p "$D/../../tests/fixtures/proto/gh100"
/tmp/nvbare_gh100_worked_example "$D/../../tests/fixtures/proto/gh100"
