#!/bin/bash
# Run 18: async copy-engine channel, proofs, round-trip study, flat D2D kernels, then
# alternating nvbare / CUDA pairs.
cd "$(dirname "$0")"
nvcc -O2 -arch=sm_90 -o cuda_base cuda_base.cu -lcuda > nvcc.log 2>&1 &
P=$!
echo "== nvbare info"; timeout 60 ./nvbare info | grep -v "class list"
echo "== proofs"; timeout 120 ./nvk_h200 --ignored --test-threads=1 --nocapture 2>&1 | grep -v "^$"
echo "== study"; timeout 120 ./nvbare bench --study 2>&1
for k in "copy_flat 1,256" "copy_flat 1,128" "copy_flat 1,512" "copy_flat2 2,256" "copy_flat 1,1024"; do
  set -- $k
  echo "D2D=[$k] $(NVBARE_D2D_KERNEL=$1 NVBARE_D2D=$2 timeout 60 ./nvbare bench --json 2>&1)"
done
while kill -0 $P 2>/dev/null; do sleep 1; done
for r in 1 2 3; do
  echo "== run $r: nvbare bench --json"; timeout 90 ./nvbare bench --json 2>&1
  echo "== run $r: cuda_base --json"; timeout 60 ./cuda_base --json 2>&1
done
