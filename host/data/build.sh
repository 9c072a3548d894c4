#!/bin/sh
# Rebuilds bench_kernels.sm_90.cubin. Needs nvcc (CUDA 12+), e.g. from PyPI:
#   python3 -m venv /tmp/cuda && /tmp/cuda/bin/pip install nvidia-cuda-nvcc nvidia-cuda-crt
#   NVCC=/tmp/cuda/lib/python3.11/site-packages/nvidia/cu13/bin/nvcc sh build.sh
set -eu
NVCC="${NVCC:-nvcc}"
cd "$(dirname "$0")"
"$NVCC" -cubin -O3 -arch=sm_90 -o bench_kernels.sm_90.cubin bench_kernels.cu
