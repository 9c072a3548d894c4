#!/bin/bash
# Which performance state and memory clock does the GPU run at under nvbare's D2D copy and under CUDA's?
cd "$(dirname "$0")"
nvcc -O2 -arch=sm_90 -o cuda_base cuda_base.cu -lcuda > nvcc.log 2>&1
q="--query-gpu=pstate,clocks.sm,clocks.mem,power.draw --format=csv,noheader"
nvidia-smi $q | sed 's/^/idle: /'
for prog in "./nvbare bench --json" "./cuda_base --json"; do
  $prog > out.json & P=$!
  for i in $(seq 1 12); do sleep 0.5; nvidia-smi $q | sed "s|^|${prog%% *}: |"; done
  wait $P; sed 's/.*"d2d_[a-z_]*GBps":\([0-9.]*\).*/d2d \1/' out.json | head -1; cat out.json
done
