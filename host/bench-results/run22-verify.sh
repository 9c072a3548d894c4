#!/bin/bash
# Run 22: the committed defaults on the H200: info, the six proofs, the round-trip study,
# then six alternating nvbare / CUDA pairs and one table.
cd "$(dirname "$0")"
nvcc -O2 -arch=sm_90 -o cuda_base cuda_base.cu -lcuda > nvcc.log 2>&1 &
P=$!
echo "== nvbare info"; timeout 60 ./nvbare info | grep -v "class list"
echo "== proofs"; timeout 120 ./nvk_h200 --ignored --test-threads=1 --nocapture 2>&1 | grep -v "^$"
echo "== nvbare bench --study"; timeout 120 ./nvbare bench --study 2>&1
while kill -0 $P 2>/dev/null; do sleep 1; done
for r in 1 2 3 4 5 6; do
  echo "== pair $r: nvbare bench --json"; timeout 90 ./nvbare bench --json 2>&1
  echo "== pair $r: cuda_base --json"; timeout 60 ./cuda_base --json 2>&1
done
echo "== nvbare bench"; timeout 90 ./nvbare bench 2>&1
