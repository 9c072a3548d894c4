#!/bin/sh
# Rebuilds bench_kernels.sm_{90,100}.cubin (the benchmarks, the H200 proofs; the simulator
# models every kernel in them) and cli_kernels.sm_{90,100}.cubin (`nvbare run`'s transcript,
# kernels that fault on purpose) and pdl_kernels.sm_{90,100}.cubin (`bench --programmatic`'s
# kernels that wait for their predecessors). Needs nvcc (CUDA 12.8+ for sm_100), e.g. from PyPI:
#   python3 -m venv /tmp/cuda && /tmp/cuda/bin/pip install nvidia-cuda-nvcc nvidia-cuda-crt
#   NVCC=/tmp/cuda/lib/python3.11/site-packages/nvidia/cu13/bin/nvcc sh build.sh
# The committed sm_100 cubins were built with nvcc 13.0 (V13.0.88), pdl_kernels with
# nvcc 13.0 (V13.0.88) from PyPI.
set -eu
NVCC="${NVCC:-nvcc}"
cd "$(dirname "$0")"
for k in bench_kernels cli_kernels pdl_kernels; do
  for arch in 90 100; do
    "$NVCC" -cubin -O3 -arch=sm_$arch -o "$k.sm_$arch.cubin" "$k.cu"
  done
done
