#!/bin/bash
# Launch-latency and D2D experiments: each NVBARE_TUNE / NVBARE_D2D variant, one process each.
cd "$(dirname "$0")"
nvcc -O2 -arch=sm_90 -o cuda_base cuda_base.cu -lcuda > nvcc.log 2>&1 &
P=$!
for t in "" "membar=3" "membar=0" "inval=0" "membar=3,inval=0" "membar=0,inval=0" "membar=3,inval=0,pcas=3" "membar=3,inval=0,pcas=10" "chain=1" "membar=3,inval=0,chain=1"; do
  echo "TUNE=[$t] $(NVBARE_TUNE=$t timeout 30 ./nvbare bench --launch-only --json)"
done
for d in "copy16 8,512" "copy16 16,256" "copy16 4,1024" "copy64 8,512" "copy64 4,1024" "copy64 16,256" "copy64 2,1024"; do
  set -- $d
  echo "D2D=[$d] $(NVBARE_D2D_KERNEL=$1 NVBARE_D2D=$2 timeout 60 ./nvbare bench --json)"
done
wait $P
echo "CUDA $(timeout 60 ./cuda_base --json)"
echo "TUNE=[] again $(timeout 30 ./nvbare bench --launch-only --json)"
