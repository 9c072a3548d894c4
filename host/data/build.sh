#!/bin/sh
# Rebuilds bench_kernels.sm_90.cubin (the benchmarks, the H200 proofs; the simulator models
# every kernel in it) and cli_kernels.sm_90.cubin (`nvbare run`'s transcript, kernels that
# fault on purpose). Needs nvcc (CUDA 12+), e.g. from PyPI:
#   python3 -m venv /tmp/cuda && /tmp/cuda/bin/pip install nvidia-cuda-nvcc nvidia-cuda-crt
#   NVCC=/tmp/cuda/lib/python3.11/site-packages/nvidia/cu13/bin/nvcc sh build.sh
set -eu
NVCC="${NVCC:-nvcc}"
cd "$(dirname "$0")"
for k in bench_kernels cli_kernels; do
  "$NVCC" -cubin -O3 -arch=sm_90 -o "$k.sm_90.cubin" "$k.cu"
done
