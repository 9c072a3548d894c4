#!/bin/bash
# One device call: the round-trip study, the D2D probe (CUDA), an ioctl trace of
# CUDA, nvbare's D2D with the TMA kernel, and cuda_base for the same-run ratios.
# Run from .devbin (binaries and sources copied in beside this script).
cd "$(dirname "$0")"
O=${OUT:-/tmp/out}; mkdir -p "$O"
( nvcc -O2 -arch=sm_90 -I . -o d2d_probe d2d_probe.cu && nvcc -O2 -arch=sm_90 -o cuda_base cuda_base.cu -lcuda ) > "$O/nvcc.log" 2>&1 &
P=$!
gcc -shared -fPIC -O1 -o nvtrace.so nvtrace.c -ldl >> "$O/nvcc.log" 2>&1
echo "== study"; timeout 120 ./nvbare bench --study 2>&1
for k in "copy_h100_1 4,512" "copy_h200_4 4,512" "copy_h110_1 4,512" "copy_h100_2 8,256" "copy16 4,512"; do
  set -- $k
  echo "D2D=[$k] $(NVBARE_D2D_KERNEL=$1 NVBARE_D2D=$2 timeout 60 ./nvbare bench --json 2>&1)"
done
while kill -0 $P 2>/dev/null; do sleep 1; done
echo "== probe"; timeout 120 ./d2d_probe 2>&1
echo "== cuda_base"; timeout 60 ./cuda_base --json 2>&1
echo "== nvbare"; timeout 60 ./nvbare bench --json 2>&1
echo "== traced probe"; NVTRACE="$O/trace.txt" LD_PRELOAD=./nvtrace.so timeout 120 ./d2d_probe > "$O/traced-probe.txt" 2>&1; echo rc=$?
gzip -f "$O/trace.txt"; ls -la "$O"
