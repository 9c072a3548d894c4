#!/bin/bash
# One device run: facts, our proofs, our benchmarks, CUDA's baseline. Output to $OUT.
cd "$(dirname "$0")"
exec > >(tee $OUT/log.txt) 2>&1
nvidia-smi --query-gpu=name,driver_version,pci.device_id,clocks.sm,clocks.max.sm --format=csv
(nvcc -O2 -arch=sm_90 -o cuda_base cuda_base.cu -lcuda > nvcc.log 2>&1; echo "nvcc rc=$?") & NVCC_PID=$!
echo "== nvbare info"; timeout 60 ./nvbare info; echo "rc=$?"
echo "== proofs"; timeout 120 ./nvk_h200 --ignored --test-threads=1 --nocapture ${TESTS:-}; echo "rc=$?"
wait $NVCC_PID
echo "== nvbare bench --json"; timeout 90 ./nvbare bench --json | tee $OUT/nvbare.json; echo "rc=$?"
echo "== cuda_base --json"; timeout 60 ./cuda_base --json | tee $OUT/cuda.json; echo "rc=$?"
echo "== nvbare bench"; timeout 90 ./nvbare bench; echo "rc=$?"
echo "== cuda_base"; timeout 60 ./cuda_base; echo "rc=$?"
