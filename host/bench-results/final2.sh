#!/bin/bash
# D2D kernel variants, then the recorded alternating runs with the best variant.
cd "$(dirname "$0")"
nvcc -O2 -arch=sm_90 -o cuda_base cuda_base.cu -lcuda > nvcc.log 2>&1 &
P=$!
best=0; bestk="copy16 8,512"
for k in "copy16 8,512" "copy64 16,256" "copy_tile 4,512" "copy_tile 8,512" "copy_tile 16,256" "copy_tile 2,1024"; do
  set -- $k
  j=$(NVBARE_D2D_KERNEL=$1 NVBARE_D2D=$2 timeout 60 ./nvbare bench --json)
  g=$(echo "$j" | sed 's/.*"d2d_sm_GBps":\([0-9.]*\).*/\1/')
  echo "D2D=[$k] sm=$g"
  if [ "$(echo "$g > $best" | bc)" = 1 ]; then best=$g; bestk="$k"; fi
done
echo "best D2D kernel: $bestk ($best GB/s)"
set -- $bestk; export NVBARE_D2D_KERNEL=$1 NVBARE_D2D=$2
wait $P
for r in 1 2 3; do
  echo "== run $r: nvbare bench --json"; timeout 90 ./nvbare bench --json
  echo "== run $r: cuda_base --json"; timeout 60 ./cuda_base --json
done
