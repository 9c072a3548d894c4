#!/bin/bash
# The recorded run: proofs, then nvbare and CUDA benchmarks alternating, three times.
cd "$(dirname "$0")"
nvcc -O2 -arch=sm_90 -o cuda_base cuda_base.cu -lcuda > nvcc.log 2>&1 &
P=$!
nvidia-smi --query-gpu=name,driver_version,pci.device_id,clocks.sm,clocks.max.sm --format=csv
echo "== nvbare info"; timeout 60 ./nvbare info | grep -v "class list"
echo "== proofs"; timeout 120 ./nvk_h200 --ignored --test-threads=1 --nocapture 2>&1 | grep -v "^$"
wait $P
for r in 1 2 3; do
  echo "== run $r: nvbare bench --json"; timeout 90 ./nvbare bench --json
  echo "== run $r: cuda_base --json"; timeout 60 ./cuda_base --json
done
echo "== nvbare bench (table)"; timeout 90 ./nvbare bench
echo "== cuda_base (table)"; timeout 60 ./cuda_base
