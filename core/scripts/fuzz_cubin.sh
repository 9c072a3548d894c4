#!/bin/sh
# Fuzzes the cubin loader (parse, image layout + relocation, launch preparation) for SECONDS
# (default 60), seeding the corpus with the real nvcc cubins. Needs cargo-fuzz; on a stable
# toolchain RUSTC_BOOTSTRAP=1 enables the sanitizer flags it uses.
#   sh core/scripts/fuzz_cubin.sh 120
# A crash leaves its input in core/fuzz/artifacts/cubin_parse/; copy it into
# core/tests/data/cubin/fuzz-regressions/ so `fuzz_regressions_do_not_panic` keeps it fixed.
set -eu
SECONDS_TO_RUN="${1:-60}"
cd "$(dirname "$0")/../fuzz"
mkdir -p corpus/cubin_parse
cp ../tests/data/cubin/*.cubin corpus/cubin_parse/
RUSTC_BOOTSTRAP=1 cargo fuzz run cubin_parse corpus/cubin_parse -- \
    -max_total_time="$SECONDS_TO_RUN" -rss_limit_mb=2048
