#!/bin/bash
# nvbare's device runs on the H200, one script with modes. Every results file in this
# directory was made by one of them (BENCHMARKS.md, "Raw output", says which by which).
#
# Layout: run from a directory holding, beside this script,
#   nvbare                       cargo build --release -p nvbare-host
#   nvk_h200                     cargo test --release -p nvbare-host --test nvk_h200 --no-run
#   cuda_base.cu                 shared/bench/cuda_base.cu (built here with nvcc)
#   bench_kernels.sm_90.cubin    host/data/ (for `nvbare run`)
#   cli_kernels.sm_90.cubin      host/data/ (mode cli; cli_kernels.cu beside it is rebuilt
#                                with the machine's nvcc and compared with the committed one)
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
#   cli                  `nvbare run` as a CUDA user runs a kernel: saxpy_shared with x from a
#                        file, y filled, dynamic shared memory and --out, checked against
#                        numpy; then decoded faults (shared store out of range, a trap in
#                        one warp, an MMU fault), a stall that says how long it waited,
#                        Ctrl-C during a run, and the --version / info --json / list --json
#                        forms. Every command is echoed before it runs, with its exit status.
#   ab [N]               ./nvbare-pre (a build before a change) and ./nvbare (after)
#                        alternately, N rounds (default 5) of `bench --launch-only --json`,
#                        then both studies' summaries: a change's effect in one run.
#   pipeline [N]         the proofs, `nvbare run` with its GPU time, N alternating pairs
#                        (default 4) of `nvbare bench --pipeline --json` and
#                        `cuda_pipeline --pipeline --json` (cuda_pipeline.cu beside the
#                        script), then one pair of the baseline figures.
#   ce-alloc             issue 20, items 5 and 6 (research): `nvbare bench --ce-study` on each
#                        copy engine COPY0..9 in turn, then several engines at once (one
#                        process each, started together), the allocation knobs
#                        (NVBARE_ALLOC) alternating with cuda_base, the proofs' data checks
#                        with RM's mapping record left out, CUDA's and nvbare's allocations
#                        under the ioctl tracer (alloc_probe.cu, nvtrace.c beside the script;
#                        traces to $OUT), and a soak smoke.
#   soak [N]             issue 20, item 7: nvk_h200_soak (a million launches, 10 000
#                        allocation cycles, samples), then N (default 100) cycles of a
#                        faulting `nvbare run` followed by `nvbare bench --quick --json`,
#                        with nvidia-smi's memory.used before and after.
#   issue20 [N]          issue 20's recorded run: info, the proofs, the study, then N rounds
#                        (default 3) of four: nvbare as run 32 made its figures
#                        (NVBARE_ALLOC=rmmap=1,huge2m=0 NVBARE_COPY_ENGINE=2), nvbare,
#                        nvbare with 4 KiB pages below 8 MiB (NVBARE_ALLOC=huge2m=0), and
#                        cuda_base; both tables; the copy-engine study on the engine nvbare
#                        now picks and on COPY2; then `soak 100`.
#   replay [N]           issue 20 items 1 and 8: info, the library examples on --backend nvk
#                        (./vector_add, ./recorded_sequence: cargo build --release -p
#                        nvbare-examples --examples), then N alternating pairs (default 4) of
#                        `nvbare bench --launch-only --json` and `cuda_base_graph --json`
#                        (cuda_base_graph.cu beside the script: cuda_base plus the graph of the
#                        replay's kernels, with and without cudaGraphExecKernelNodeSetParams),
#                        then both tables, then `bench --launch-only --json` under the launch
#                        tunings chainmembar=1, chainmembar=0, cbpre=0 and both (where the
#                        chain's time goes;
#                        runs 34-36 tried chainmembar=3, inval=0, both, membar=0).
#   ordering             issue 20 item 1, how to order a sequence's grids: probe/graph_qmd_probe
#                        (the QMDs and launch methods CUDA's graph and stream launches leave in
#                        memory; full output to $OUT/qmd-probe.txt; NOPROBE=1 skips it), then
#                        `bench --launch-only --json` under each tuning of TUNES (replay_us and
#                        the ordering check's wrong elements), then 3 alternating pairs with
#                        cuda_base_graph.
#   alloc-ab [N] [V...]  issue 20 item 5 (runs 47-50): N rounds (default 5) of a fresh-allocation
#                        A/B, each round `nvbare bench --json`, the same under each
#                        NVBARE_ALLOC=V, and `cuda_base --json` (2 MiB and 1 GiB alloc+free and the
#                        round trip printed); the proofs under the first V; with TRACE=1 then
#                        CUDA's alloc_probe, nvbare and nvbare under the first V under the ioctl
#                        tracer (alloc_probe.cu, nvtrace.c beside the script; traces to $OUT).
#                        PIN=CPU runs every nvbare and CUDA program of the rounds on that one CPU
#                        (taskset), so neither is placed differently from the other.
#   pdl [N]              issue 20 item 1 (runs 53-56): programmatic dependent launch.
#                        probe/pdl_probe (CUDA graphs of kernels that wait, with programmatic
#                        edges: per kernel, the ordering check, the QMDs and latch IDs to
#                        $OUT/pdl-probe.txt); nvbare bench --launch-only for each of PDL_CASES
#                        ("KERNELS P|- TUNE|-", see below); then N (3) triples: nvbare
#                        --programmatic, nvbare's default, cuda_base_graph (graph_update_us,
#                        graph_pdl_update_us). kernels.sm_90.cubin must be beside the script.
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
# Echoes a command, runs it (at most $T seconds), and prints its exit status and duration.
T=60
show() {
  echo "\$ $*"
  local s; s=$(date +%s%N)
  timeout "$T" "$@"
  echo "rc=$? after $(( ($(date +%s%N) - s) / 1000000 )) ms"
}
cli() {
  local C=cli_kernels.sm_90.cubin B=bench_kernels.sm_90.cubin
  if [ -f cli_kernels.cu ] && command -v nvcc > /dev/null; then
    echo "== $(nvcc --version | tail -1): rebuilding $C from cli_kernels.cu"
    if nvcc -cubin -O3 -arch=sm_90 -o cli_rebuilt.cubin cli_kernels.cu; then
      if cmp -s "$C" cli_rebuilt.cubin; then echo "same bytes as the committed $C"
      else echo "differs from the committed $C: running the rebuilt one (copied to \$OUT)"
        cp cli_rebuilt.cubin "$C"; cp "$C" "$OUT/"; fi
    fi
  fi
  show ./nvbare --version
  local n=65536 blk=256
  python3 -c "import numpy as np; (np.arange($n, dtype=np.float32) * 0.25 - 100).tofile('x.bin')"
  echo "== saxpy_shared: x from x.bin (host memory), y filled with 1.5 (video memory),"
  echo "   $((4 * blk)) bytes of dynamic shared memory per block, y written back with --out"
  show ./nvbare run "$C" --kernel saxpy_shared --grid $((n / blk)) --block $blk \
    --shared $((4 * blk)) --arg n=u32:$n --arg a=f32:2.5 --arg x=buf:@x.bin:f32 \
    --arg y=buf:$((4 * n)):f32:fill=1.5:vram --out "y=$OUT/y.bin" --dump y --dump x
  echo "== the CPU computation: y = 2.5 * x[i'] + 1.5, i' the next thread of the block"
  python3 - "$n" "$blk" "$OUT/y.bin" <<'PY'
import sys, numpy as np
n, blk, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
x = np.fromfile("x.bin", dtype=np.float32)
y = np.fromfile(path, dtype=np.float32)
want = np.float32(2.5) * np.roll(x.reshape(-1, blk), -1, axis=1).ravel() + np.float32(1.5)
bad = np.flatnonzero(y != want) if y.size == n else np.arange(n)
print(f"{y.size} floats back, {bad.size} differ from numpy"
      + (f" (first at {bad[0]})" if bad.size else ": the GPU's y equals the CPU's exactly"))
sys.exit(1 if bad.size else 0)
PY
  echo "rc=$?"
  echo "== the same with x = iota, y zeroed in host memory (fill patterns, no file)"
  show ./nvbare run "$C" --kernel saxpy_shared --grid 4 --block 64 --shared 256 \
    --arg u32:256 --arg f32:2 --arg buf:1K:f32:fill=iota --arg buf:1K:f32 --dump 3 --dump-count 8
  echo "== saxpy_shared with --shared 0: its staging store runs past the block's shared memory"
  show ./nvbare run "$C" --kernel saxpy_shared --grid 2 --block 256 --shared 0 \
    --arg u32:512 --arg f32:1 --arg buf:2K:f32 --arg buf:2K:f32
  echo "== oob_shared 262144: thread 0 stores 1 MiB past a 128-byte shared array"
  show ./nvbare run "$C" --kernel oob_shared --block 32 --arg u32:262144
  echo "== trap_in_warp 3: warp 3 of a 256-thread block traps"
  show ./nvbare run "$C" --kernel trap_in_warp --block 256 --arg u32:3
  echo "== store_value to an unmapped address: an MMU fault"
  show ./nvbare run "$B" --kernel store_value --arg u64:0x7f00dead0000 --arg u64:42
  echo "== spin_cycles (8e9 cycles, seconds) with --timeout 2: the stall says how long it waited"
  show ./nvbare run "$B" --kernel spin_cycles --arg u64:8000000000 --timeout 2
  echo "== spin_cycles again, Ctrl-C (SIGINT) after 1.5 s"
  echo "\$ ./nvbare run $B --kernel spin_cycles --arg u64:8000000000 & sleep 1.5; kill -INT \$!"
  local s; s=$(date +%s%N)
  ./nvbare run "$B" --kernel spin_cycles --arg u64:8000000000 & local P=$!
  sleep 1.5; kill -INT $P; wait $P
  echo "rc=$? after $(( ($(date +%s%N) - s) / 1000000 )) ms"
  echo "== the GPU is usable after the stall and the interruption"
  show ./nvbare run "$B" --kernel store_value --arg buf:64 --arg u64:3735928559 --dump 0:u64 --dump-count 2
  show ./nvbare info --json
  show ./nvbare list --json
  show ./nvbare explain NVB-E106
}
soak() {
  local n=$1
    q="--query-gpu=memory.used --format=csv,noheader"
    echo "== nvidia-smi memory.used before: $(nvidia-smi $q)"
    echo "== nvk_h200_soak"; timeout 300 ./nvk_h200_soak --ignored --test-threads=1 --nocapture 2>&1 | grep -v "^$"
    echo "== $n cycles: faulting nvbare run, then nvbare bench --quick --json"
    fails=0; slow=0; rer=0
    for r in $(seq 1 "$n"); do
      s=$(date +%s%N)
      f=$(timeout 30 ./nvbare run bench_kernels.sm_90.cubin --kernel store_value --arg u64:139638171729920 --arg u64:42 2>&1 | grep -c "NVB-E105")
      b=$(timeout 60 ./nvbare bench --quick --json 2>&1); rc=$?
      ms=$(( ($(date +%s%N) - s) / 1000000 ))
      rr=$(echo "$b" | sed -n 's/.*"doorbell_rerings":\([0-9]*\).*/\1/p')
      [ "$rc" = 0 ] || { fails=$((fails + 1)); echo "cycle $r: bench rc=$rc: $b"; }
      [ "$ms" -lt 5000 ] || slow=$((slow + 1))
      rer=$((rer + ${rr:-0}))
      if [ "$f" != 1 ] || [ $((r % 10)) = 0 ]; then
        echo "cycle $r: fault reported $f, bench rc=$rc, $ms ms, re-rings ${rr:-?}, memory.used $(nvidia-smi $q)"
      fi
    done
    echo "== $n cycles: $fails benches failed, $slow cycles over 5 s, $rer doorbell re-rings"
    echo "== nvidia-smi memory.used after: $(nvidia-smi $q)"
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
  cli)
    cli
    ;;
  ab)
    # Two builds of nvbare alternately in one run, so a change's effect on the launch path
    # is told apart from the spread between device runs: ./nvbare-pre (the build before the
    # change) and ./nvbare (after), N rounds of `bench --launch-only --json` each, then the
    # study's summary lines of both.
    n=${1:-5}
    for r in $(seq 1 "$n"); do
      echo "== round $r: before"; timeout 60 ./nvbare-pre bench --launch-only --json
      echo "== round $r: after"; timeout 60 ./nvbare bench --launch-only --json
    done
    for b in nvbare-pre nvbare; do
      echo "== study, $b"
      timeout 120 "./$b" bench --study 2>&1 | grep -E "CPU clock|CPU per launch|whole round|default"
    done
    ;;
  pipeline)
    # Issue 20, items 2 and 3: the proofs (GPU-side waits, timestamps), `nvbare run` printing
    # the GPU time beside the wall time, then N alternating pairs of `nvbare bench --pipeline`
    # and its CUDA counterpart (cuda_pipeline.cu: two streams and events), and one pair of
    # the baseline figures (cuda_pipeline without --pipeline prints cuda_base's).
    n=${1:-4}
    nvcc -O2 -arch=sm_90 -o cuda_pipeline cuda_pipeline.cu -lcuda > nvcc.log 2>&1 &
    NVCC_PID=$!
    info; proofs
    echo "== nvbare run: GPU time beside the wall time"
    timeout 60 ./nvbare run bench_kernels.sm_90.cubin --kernel store_value --grid 1 --block 32 --arg buf:64 --arg u64:3735928559
    timeout 60 ./nvbare run bench_kernels.sm_90.cubin --kernel spin_cycles --arg u64:10000000
    wait_cuda; cat nvcc.log
    for r in $(seq 1 "$n"); do
      echo "== pair $r: nvbare bench --pipeline --json"; timeout 60 ./nvbare bench --pipeline --json 2>&1
      echo "== pair $r: cuda_pipeline --pipeline --json"; timeout 60 ./cuda_pipeline --pipeline --json 2>&1
    done
    echo "== nvbare bench --pipeline"; timeout 60 ./nvbare bench --pipeline 2>&1
    echo "== baseline pair: nvbare bench --json"; timeout 90 ./nvbare bench --json 2>&1
    echo "== baseline pair: cuda_pipeline --json"; timeout 60 ./cuda_pipeline --json 2>&1
    ;;
  ce-alloc)
    build_cuda
    ( nvcc -O2 -arch=sm_90 -o alloc_probe alloc_probe.cu -ldl > alloc_nvcc.log 2>&1 ) &
    P=$!
    gcc -shared -fPIC -O1 -o nvtrace.so nvtrace.c -ldl
    facts
    echo "== copy engine study, default engine"; timeout 60 ./nvbare bench --ce-study 2>&1
    for ce in 0 1 3 4 5 6 7 8 9; do
      echo "== copy engine study, --copy-engine $ce"
      timeout 60 ./nvbare bench --ce-study --copy-engine "$ce" 2>&1 | grep -v "^  COPY"
    done
    for set in "2 3" "1 2 3 4" "0 1 2 3 4 5 6 7 8 9"; do
      echo "== engines at once: $set"
      at=$(( $(date +%s%3N) + 2500 ))
      for ce in $set; do
        NVBARE_CE_START_AT=$at timeout 60 ./nvbare bench --ce-study --copy-engine "$ce" > "ce_par_$ce.txt" 2>&1 &
      done
      wait
      for ce in $set; do echo "-- COPY$ce"; grep -E "runs on|1 launch|64 MiB launches, PIPE|all timed" "ce_par_$ce.txt"; done
    done
    wait_cuda; wait $P; cat alloc_nvcc.log
    for r in 1 2; do
      for t in "rmmap=1,huge2m=0" "rmmap=1,huge2m=1" "rmmap=0,huge2m=0" "rmmap=0,huge2m=1"; do
        echo "== alloc round $r NVBARE_ALLOC=$t"; NVBARE_ALLOC=$t timeout 90 ./nvbare bench --json 2>&1
      done
      echo "== alloc round $r cuda_base"; timeout 60 ./cuda_base --json 2>&1
    done
    echo "== proofs with NVBARE_ALLOC=rmmap=0"
    NVBARE_ALLOC=rmmap=0 timeout 120 ./nvk_h200 --ignored --test-threads=1 --nocapture vector_add one_gib copies_run kernel_stores 2>&1 | grep -E "^test|result"
    echo "== alloc_probe (CUDA), untraced"; timeout 60 ./alloc_probe
    echo "== alloc_probe (CUDA), traced"
    NVTRACE="$OUT/cuda-alloc-trace.txt" LD_PRELOAD=./nvtrace.so timeout 60 ./alloc_probe
    for t in "rmmap=1,huge2m=0" "rmmap=0,huge2m=1"; do
      echo "== nvbare bench --quick traced, NVBARE_ALLOC=$t"
      NVBARE_ALLOC=$t NVTRACE="$OUT/nvbare-trace-$t.txt" LD_PRELOAD=./nvtrace.so timeout 60 ./nvbare bench --quick --json 2>&1
    done
    gzip -f "$OUT"/*trace*.txt
    echo "== soak smoke"; timeout 120 ./nvk_h200_soak --ignored --test-threads=1 --nocapture 2>&1 | grep -v "^$"
    for r in 1 2 3; do
      echo "== fault then bench $r"
      timeout 30 ./nvbare run bench_kernels.sm_90.cubin --kernel store_value --arg u64:139638171729920 --arg u64:42 2>&1 | tail -1
      timeout 60 ./nvbare bench --quick --json 2>&1
    done
    ;;
  soak)
    soak "${1:-100}"
    ;;
  issue20)
    n=${1:-3}
    build_cuda; info; proofs; study; wait_cuda
    for r in $(seq 1 "$n"); do
      echo "== round $r: nvbare bench --json as in run 32 (NVBARE_ALLOC=rmmap=1,huge2m=0 NVBARE_COPY_ENGINE=2)"
      NVBARE_ALLOC=rmmap=1,huge2m=0 NVBARE_COPY_ENGINE=2 timeout 90 ./nvbare bench --json 2>&1
      echo "== round $r: nvbare bench --json"; timeout 90 ./nvbare bench --json 2>&1
      echo "== round $r: nvbare bench --json, NVBARE_ALLOC=huge2m=0"
      NVBARE_ALLOC=huge2m=0 timeout 90 ./nvbare bench --json 2>&1
      echo "== round $r: cuda_base --json"; timeout 60 ./cuda_base --json 2>&1
    done
    tables both
    echo "== nvbare bench --ce-study"; timeout 60 ./nvbare bench --ce-study 2>&1
    echo "== nvbare bench --ce-study --copy-engine 2"; timeout 60 ./nvbare bench --ce-study --copy-engine 2 2>&1 | grep -v "^  COPY"
    soak 100
    ;;
  replay)
    n=${1:-4}
    nvcc -O2 -arch=sm_90 -o cuda_base_graph cuda_base_graph.cu -lcuda > nvcc.log 2>&1 &
    NVCC_PID=$!
    info
    echo "== the library examples (examples/library) on NVIDIA's driver"
    show ./vector_add --backend nvk
    show ./recorded_sequence --backend nvk
    wait_cuda; cat nvcc.log
    for r in $(seq 1 "$n"); do
      echo "== pair $r: nvbare bench --launch-only --json"; timeout 60 ./nvbare bench --launch-only --json 2>&1
      echo "== pair $r: cuda_base_graph --json"; timeout 60 ./cuda_base_graph --json 2>&1
    done
    echo "== nvbare bench --launch-only"; timeout 60 ./nvbare bench --launch-only 2>&1
    echo "== cuda_base_graph"; timeout 60 ./cuda_base_graph 2>&1
    # Where the in-order chain's time goes: measuring knobs (--tune), not defaults. Since
    # run 39 chained grids have CUDA's GPU membar by default; chainmembar=1 puts back the
    # sysmembar between grids, chainmembar=0 has none (unsafe, the chain's floor).
    for t in chainmembar=1 chainmembar=0 cbpre=0 cbpre=0,chainmembar=0; do
      echo "TUNE=[$t] $(timeout 30 ./nvbare bench --launch-only --json --tune "$t" 2>&1)"
    done
    ;;
  ordering)
    ( nvcc -O2 -arch=sm_90 -o graph_qmd_probe graph_qmd_probe.cu && nvcc -O2 -arch=sm_90 -o cuda_base_graph cuda_base_graph.cu -lcuda ) > nvcc.log 2>&1 &
    NVCC_PID=$!
    info
    wait_cuda; cat nvcc.log
    echo "== graph_qmd_probe (full output: qmd-probe.txt)"
    [ -n "${NOPROBE:-}" ] || timeout 300 ./graph_qmd_probe > "$OUT/qmd-probe.txt" 2>&1; echo "rc=$?"
    grep -E "^(ran|QMD|PB|done)" "$OUT/qmd-probe.txt" | head -60
    # Runs 37 and 38 (nvbare of a521520) tried the knobs chain=1..3 and chainbits=N, gone
    # since: their choices are defaults or were dropped (BENCHMARKS.md). Today's knobs:
    for t in ${TUNES:-chainmembar=1 chainmembar=0 cbpre=0 inval=0}; do
      echo "TUNE=[$t] $(timeout 60 ./nvbare bench --launch-only --json ${t:+--tune "$t"} 2>&1)"
    done
    for r in 1 2 3; do
      echo "== pair $r: nvbare bench --launch-only --json"; timeout 60 ./nvbare bench --launch-only --json 2>&1
      echo "== pair $r: cuda_base_graph --json"; timeout 60 ./cuda_base_graph --json 2>&1
    done
    ;;
  pdl)
    { nvcc -O2 -arch=sm_90 -o pdl_probe pdl_probe.cu; echo "pdl_probe rc=$?"
      nvcc -O2 -arch=sm_90 -o cuda_base_graph cuda_base_graph.cu -lcuda; echo "cuda_base_graph rc=$?"
      nvcc -cubin -arch=sm_90 -DWAIT_ONLY -o kernels_wait.sm_90.cubin pdl_kernels.cu; echo "kernels_wait rc=$?"
      nvcc -cubin -arch=sm_90 -o kernels_trigger.sm_90.cubin pdl_kernels.cu; echo "kernels_trigger rc=$?"
    } > nvcc.log 2>&1
    cat nvcc.log
    echo "== pdl_probe (full output: pdl-probe.txt)"
    timeout 180 ./pdl_probe > "$OUT/pdl-probe.txt" 2>&1; echo "rc=$?"
    grep -v "^  " "$OUT/pdl-probe.txt" | head -40
    # KERNELS (default: the committed ones, host/data/pdl_kernels.cu's with --programmatic;
    # test: kernels.sm_90.cubin, which do not wait; or a pdl_kernels.cu build from above),
    # PROGRAMMATIC (p: --programmatic), TUNE.
    for c in ${PDL_CASES:-"default - -" "default p -" "test p -" "kernels_wait p -" "kernels_trigger p -" \
             "default p chainmembar=0" "default p b1150=1"}; do
      read -r k pm t <<< "$c"
      args=(bench --launch-only --json)
      case "$k" in default) ;; test) args+=(--kernels kernels.sm_90.cubin) ;; *) args+=(--kernels "$k.sm_90.cubin") ;; esac
      [ "$pm" = p ] && args+=(--programmatic)
      [ "$t" = - ] || args+=(--tune "$t")
      echo "CASE=[$c] $(timeout 60 ./nvbare "${args[@]}" 2>&1)"
    done
    for r in $(seq "${1:-3}"); do
      echo "== pair $r: nvbare bench --launch-only --json --programmatic"
      timeout 60 ./nvbare bench --launch-only --json --programmatic 2>&1
      echo "== pair $r: nvbare bench --launch-only --json"; timeout 60 ./nvbare bench --launch-only --json 2>&1
      echo "== pair $r: cuda_base_graph --json"; timeout 60 ./cuda_base_graph --json 2>&1
    done
    ;;
  alloc-ab)
    rounds=${1:-5}; shift || true
    ( nvcc -O2 -arch=sm_90 -o cuda_base cuda_base.cu -lcuda && { [ -z "${TRACE:-}" ] || nvcc -O2 -arch=sm_90 -o alloc_probe alloc_probe.cu -ldl; } ) > nvcc.log 2>&1; echo "nvcc rc=$?"
    pick() { python3 -c "
import sys,json
for l in sys.stdin:
    l=l.strip()
    if l.startswith('{'):
        d=json.loads(l); print(json.dumps({k:d[k] for k in ('alloc_free_2MiB_us','alloc_free_1GiB_us','launch_roundtrip_us') if k in d}))
    else: print(l)"; }
    pin() { if [ -n "${PIN:-}" ]; then taskset -c "$PIN" "$@"; else "$@"; fi; }
    [ -z "${PIN:-}" ] || echo "== every round's program on CPU $PIN (taskset)"
    for r in $(seq "$rounds"); do
      echo "== round $r: nvbare bench --json"; pin timeout 90 ./nvbare bench --json 2>&1 | pick
      for v in "$@"; do
        echo "== round $r: NVBARE_ALLOC=$v nvbare bench --json"; NVBARE_ALLOC=$v pin timeout 90 ./nvbare bench --json 2>&1 | pick
      done
      echo "== round $r: cuda_base --json"; pin timeout 60 ./cuda_base --json 2>&1 | pick
    done
    echo "== proofs${1:+ with NVBARE_ALLOC=$1}"; NVBARE_ALLOC=${1:-} timeout 180 ./nvk_h200 --ignored --test-threads=1 2>&1 | grep -E "^test |test result"
    if [ -n "${TRACE:-}" ]; then
      gcc -shared -fPIC -O1 -o nvtrace.so nvtrace.c -ldl
      NVTRACE=$OUT/trace-cuda.txt LD_PRELOAD=./nvtrace.so timeout 60 ./alloc_probe > /dev/null 2>&1; echo "alloc_probe rc=$?"
      NVTRACE=$OUT/trace-nvbare.txt LD_PRELOAD=./nvtrace.so timeout 120 ./nvbare bench --json 2>&1 | pick
      [ -z "${1:-}" ] || NVTRACE=$OUT/trace-nvbare-variant.txt NVBARE_ALLOC=$1 LD_PRELOAD=./nvtrace.so timeout 120 ./nvbare bench --json 2>&1 | pick
      gzip -f "$OUT"/trace-*.txt
    fi
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
