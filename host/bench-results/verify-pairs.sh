#!/bin/bash
# The committed code on the H200: info, the proofs, the round-trip study, then N
# alternating nvbare / CUDA pairs (default 6) and one table. Runs 19 (N=4) to 24 used it.
#   bash .devbin/verify-pairs.sh [N]
cd "$(dirname "$0")"
pairs=${1:-6}
nvcc -O2 -arch=sm_90 -o cuda_base cuda_base.cu -lcuda > nvcc.log 2>&1 &
P=$!
echo "== nvbare info"; timeout 60 ./nvbare info | grep -v "class list"
echo "== proofs"; timeout 120 ./nvk_h200 --ignored --test-threads=1 --nocapture 2>&1 | grep -v "^$"
echo "== nvbare bench --study"; timeout 120 ./nvbare bench --study 2>&1
while kill -0 $P 2>/dev/null; do sleep 1; done
for r in $(seq 1 "$pairs"); do
  echo "== pair $r: nvbare bench --json"; timeout 90 ./nvbare bench --json 2>&1
  echo "== pair $r: cuda_base --json"; timeout 60 ./cuda_base --json 2>&1
done
echo "== nvbare bench"; timeout 90 ./nvbare bench 2>&1
