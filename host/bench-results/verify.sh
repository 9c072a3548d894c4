#!/bin/bash
# Final check of the committed code on the H200: info, proofs, one nvbare/CUDA bench pair.
cd "$(dirname "$0")"
nvcc -O2 -arch=sm_90 -o cuda_base cuda_base.cu -lcuda > nvcc.log 2>&1 &
P=$!
echo "== nvbare info"; timeout 60 ./nvbare info | grep -v "class list"
echo "== nvbare run (vector_add on 4 elements of zeroed buffers)"; timeout 60 ./nvbare run bench_kernels.sm_90.cubin --kernel store_value --grid 1 --block 32 --arg buf:64 --arg u64:3735928559
echo "== proofs"; timeout 120 ./nvk_h200 --ignored --test-threads=1 --nocapture 2>&1 | grep -v "^$"
wait $P
echo "== nvbare bench --json"; timeout 90 ./nvbare bench --json
echo "== cuda_base --json"; timeout 60 ./cuda_base --json
echo "== nvbare bench"; timeout 90 ./nvbare bench
