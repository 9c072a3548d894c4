#!/bin/bash
# D2D kernel shapes at exactly one wave (2048 threads per SM) and chunked variants, then CUDA.
cd "$(dirname "$0")"
nvcc -O2 -arch=sm_90 -o cuda_base cuda_base.cu -lcuda > nvcc.log 2>&1 &
P=$!
for k in "copy16 4,512" "copy16 8,256" "copy64 8,256" "copy64 4,512" "copy_chunk 4,512" "copy_chunk 8,256" "copy_chunk 16,256" "copy16 8,512"; do
  set -- $k
  j=$(NVBARE_D2D_KERNEL=$1 NVBARE_D2D=$2 timeout 60 ./nvbare bench --json)
  echo "D2D=[$k] $(echo "$j" | sed 's/.*"d2d_sm_GBps":\([0-9.]*\).*/\1/')"
done
wait $P
echo "CUDA $(timeout 60 ./cuda_base --json | sed 's/.*"d2d_GBps":\([0-9.]*\).*/\1/')"
