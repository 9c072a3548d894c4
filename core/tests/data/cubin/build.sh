#!/bin/sh
# Rebuilds the test cubins from kernels.cu. Needs nvcc (CUDA 12.8+ for sm_100/sm_120):
#   NVCC=/path/to/nvcc sh build.sh        (default: nvcc on PATH)
# The committed cubins were built with nvcc 13 from PyPI:
#   python3 -m venv /tmp/cuda && /tmp/cuda/bin/pip install nvidia-cuda-nvcc nvidia-cuda-cuobjdump nvidia-cuda-crt
#   NVCC=/tmp/cuda/lib/python3.11/site-packages/nvidia/cu13/bin/nvcc sh build.sh
# and inspected with `cuobjdump -elf kernels.sm_90.cubin` (notes in cuobjdump-notes.md).
# The SMs below are the table of nvbare-test-kernels (test-kernels/src/lib.rs, `ALL`), which
# every Rust user of these cubins reads: an SM added here is added there.
set -eu
NVCC="${NVCC:-nvcc}"
cd "$(dirname "$0")"
"$NVCC" --version | tail -n 2
for arch in 75 80 86 89 90 100 120; do
    "$NVCC" -cubin -O2 -arch=sm_$arch -o kernels.sm_$arch.cubin kernels.cu
done
ls -l ./*.cubin
