#!/bin/bash
# nvbare's device runs on the H200, one script with modes. Every results file in this
# directory was made by one of them (BENCHMARKS.md, "Raw output", says which by which).
#
# Layout: run from a directory holding, beside this script,
#   nvbare                       cargo build --release -p nvbare-host
#   nvk_h200                     cargo test --release -p nvbare-host --test nvk_h200 --no-run
#   cuda_base.cu                 shared/bench/cuda_base.cu (built here with nvcc)
#   bench_kernels.sm_90.cubin    host/data/ (for `nvbare run`)
#   d2d_probe.cu, nvtrace.c      host/bench-results/probe/ (mode probe only)
# e.g. the git-ignored .devbin/ of the checkout:  bash .devbin/device-run.sh pairs 6
#
# Modes:
#   pairs [N]            info, the proofs, the round-trip study, then N alternating
#                        `nvbare bench --json` / `cuda_base --json` pairs (default 6) and both
#                        tables: the recorded comparison.
#   verify               info, one `nvbare run`, the proofs, one pair, nvbare's table.
#   fault                info, the proofs, a faulting `nvbare run` (store to an unmapped
#                        address) timed to its exit, nvbare's table.
#   full                 nvidia-smi facts, info, the proofs, the study, the D2D sweep, three
#                        pairs, both tables.
#   sweep-d2d [K,A,T...] `nvbare bench --json` once per SM copy kernel K with shape A,THREADS
#                        (--d2d-kernel / --d2d-shape), then CUDA's D2D figure.
#   sweep-tune [SPEC...] `nvbare bench --launch-only --json` once per launch tuning SPEC
#                        (--tune: membar=N,inval=0|1,mirror=0|1,relmembar=0|1), then CUDA.
#   pstate               P-state, SM/memory clocks and power sampled while nvbare's and CUDA's
#                        benchmarks run.
#   probe                the CUDA-side research probes: the study, a D2D sweep, d2d_probe, then
#                        d2d_probe again under the nvtrace ioctl tracer (trace to $OUT).
set -u
self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$0")"
mode=${1:-pairs}
shift || true
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"

NVCC_PID=
build_cuda() {
  nvcc -O2 -arch=sm_90 -o cuda_base cuda_base.cu -lcuda > nvcc.log 2>&1 &
  NVCC_PID=$!
}
wait_cuda() { [ -n "$NVCC_PID" ] && wait "$NVCC_PID"; echo "nvcc rc=$? (log: nvcc.log)"; }

facts() { nvidia-smi --query-gpu=name,driver_version,pci.device_id,clocks.sm,clocks.max.sm --format=csv; }
info() { echo "== nvbare info"; timeout 60 ./nvbare info | grep -v "class list"; }
proofs() { echo "== proofs"; timeout 180 ./nvk_h200 --ignored --test-threads=1 --nocapture 2>&1 | grep -v "^$"; }
study() { echo "== nvbare bench --study"; timeout 120 ./nvbare bench --study 2>&1; }
pair() {
  echo "== pair $1: nvbare bench --json"; timeout 90 ./nvbare bench --json 2>&1
  echo "== pair $1: cuda_base --json"; timeout 60 ./cuda_base --json 2>&1
}
tables() {
  echo "== nvbare bench"; timeout 90 ./nvbare bench 2>&1
  [ "${1:-}" = both ] && { echo "== cuda_base"; timeout 60 ./cuda_base 2>&1; }
  return 0
}
d2d_sweep() {
  for k in "$@"; do
    IFS=, read -r kernel a t <<< "$k"
    echo "D2D=[$kernel $a,$t] $(timeout 60 ./nvbare bench --json --d2d-kernel "$kernel" --d2d-shape "$a,$t" 2>&1)"
  done
}
D2D_DEFAULT=("copy_flat,1,256" "copy_flat,1,128" "copy_flat,1,512" "copy_flat2,2,256" "copy_flat,1,1024")

case "$mode" in
  pairs)
    n=${1:-6}
    build_cuda; info; proofs; study; wait_cuda
    for r in $(seq 1 "$n"); do pair "$r"; done
    tables both
    ;;
  verify)
    build_cuda; info
    echo "== nvbare run (store_value into a zeroed buffer)"
    timeout 60 ./nvbare run bench_kernels.sm_90.cubin --kernel store_value --grid 1 --block 32 --arg buf:64 --arg u64:3735928559
    proofs; wait_cuda; pair 1; tables
    ;;
  fault)
    info; proofs
    echo "== nvbare run faulting kernel"
    s=$(date +%s%N)
    timeout 60 ./nvbare run bench_kernels.sm_90.cubin --kernel store_value --arg u64:139638171729920 --arg u64:42
    rc=$?
    echo "rc=$rc after $(( ($(date +%s%N) - s) / 1000000 )) ms"
    tables
    ;;
  full)
    build_cuda; facts; info; proofs; study
    d2d_sweep "${D2D_DEFAULT[@]}"
    wait_cuda
    for r in 1 2 3; do pair "$r"; done
    tables both
    ;;
  sweep-d2d)
    build_cuda
    if [ $# -gt 0 ]; then d2d_sweep "$@"; else d2d_sweep "${D2D_DEFAULT[@]}"; fi
    wait_cuda
    echo "CUDA $(timeout 60 ./cuda_base --json | sed 's/.*"d2d_GBps":\([0-9.]*\).*/\1/')"
    ;;
  sweep-tune)
    build_cuda
    specs=("$@")
    [ ${#specs[@]} -gt 0 ] || specs=("" "membar=3" "membar=0" "inval=0" "mirror=0" "relmembar=1" "membar=0,relmembar=1")
    for t in "${specs[@]}"; do
      echo "TUNE=[$t] $(timeout 30 ./nvbare bench --launch-only --json --tune "$t" 2>&1)"
    done
    wait_cuda
    echo "CUDA $(timeout 60 ./cuda_base --json)"
    ;;
  pstate)
    build_cuda; wait_cuda
    q="--query-gpu=pstate,clocks.sm,clocks.mem,power.draw --format=csv,noheader"
    nvidia-smi $q | sed 's/^/idle: /'
    for prog in "./nvbare bench --json" "./cuda_base --json"; do
      $prog > "$OUT/pstate.json" & P=$!
      for _ in $(seq 1 12); do sleep 0.5; nvidia-smi $q | sed "s|^|${prog%% *}: |"; done
      wait $P; cat "$OUT/pstate.json"
    done
    ;;
  probe)
    ( nvcc -O2 -arch=sm_90 -I . -o d2d_probe d2d_probe.cu && nvcc -O2 -arch=sm_90 -o cuda_base cuda_base.cu -lcuda ) > "$OUT/nvcc.log" 2>&1 &
    P=$!
    gcc -shared -fPIC -O1 -o nvtrace.so nvtrace.c -ldl >> "$OUT/nvcc.log" 2>&1
    study
    d2d_sweep "copy_flat,1,256" "copy16,4,512"
    wait $P
    echo "== probe"; timeout 120 ./d2d_probe 2>&1
    echo "== cuda_base"; timeout 60 ./cuda_base --json 2>&1
    echo "== nvbare"; timeout 60 ./nvbare bench --json 2>&1
    echo "== traced probe"
    NVTRACE="$OUT/trace.txt" LD_PRELOAD=./nvtrace.so timeout 120 ./d2d_probe > "$OUT/traced-probe.txt" 2>&1
    echo "rc=$?"
    gzip -f "$OUT/trace.txt"; ls -la "$OUT"
    ;;
  *)
    sed -n '2,/^set -u/p' "$self" | sed 's/^# \{0,1\}//' | grep -v '^set -u'
    exit 2
    ;;
esac
