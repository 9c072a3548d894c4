#!/bin/bash
cd "$(dirname "$0")"
echo "== nvbare info"; timeout 60 ./nvbare info | grep -v "class list"
echo "== proofs"; timeout 120 ./nvk_h200 --ignored --test-threads=1 --nocapture 2>&1 | grep -v "^$"
echo "== nvbare run faulting kernel"; s=$(date +%s%N); timeout 60 ./nvbare run bench_kernels.sm_90.cubin --kernel store_value --arg u64:139638171729920 --arg u64:42; rc=$?; echo "rc=$rc after $(( ($(date +%s%N) - s) / 1000000 )) ms"
echo "== nvbare bench"; timeout 90 ./nvbare bench
