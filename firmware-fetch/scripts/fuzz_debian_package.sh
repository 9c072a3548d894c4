#!/bin/sh
# Fuzzes the .deb reader (ar members -> xz / zstd / plain tar -> links -> cache) for SECONDS
# (default 330), seeding the corpus with three small packages made here (data.tar.xz,
# data.tar.zst and plain data.tar, GNU ar names, a symlink between chips) so that mutations
# start past the ar and compression layers. Needs cargo-fuzz, binutils' ar, tar, xz, zstd;
# on a stable toolchain RUSTC_BOOTSTRAP=1 enables the sanitizer flags cargo-fuzz uses.
#   sh firmware-fetch/scripts/fuzz_debian_package.sh 330
# A crash leaves its input in firmware-fetch/fuzz/artifacts/debian_package/; turn it into a
# test in firmware-fetch/tests/ (the 68-byte archive of issue 14 is one).
set -eu
SECONDS_TO_RUN="${1:-330}"
cd "$(dirname "$0")/../fuzz"
corpus=corpus/debian_package
mkdir -p "$corpus"
seed=$(mktemp -d)
trap 'rm -rf "$seed"' EXIT
fw="$seed/root/usr/lib/firmware/nvidia"
mkdir -p "$fw/ga102/gsp" "$fw/gh100/gsp"
# The fuzz target wants these two paths with the bytes "abc".
printf abc > "$fw/ga102/gsp/a-570.144.bin"
printf abc > "$fw/ga102/gsp/gsp-570.144.bin"
ln -s ../../ga102/gsp/gsp-570.144.bin "$fw/gh100/gsp/gsp-570.144.bin"
printf abd > "$fw/ga102/gsp/other.bin"
(
    cd "$seed"
    echo 2.0 > debian-binary
    tar -C root -cf data.tar ./usr
    xz -k -1 data.tar
    zstd -q -1 data.tar -o data.tar.zst
    tar -cf control.tar --files-from /dev/null
    xz -1 control.tar
    ar rc xz.deb debian-binary control.tar.xz data.tar.xz
    ar rc zst.deb debian-binary control.tar.xz data.tar.zst
    ar rc plain.deb debian-binary control.tar.xz data.tar
)
cp "$seed"/*.deb "$corpus"/
RUSTC_BOOTSTRAP=1 cargo fuzz run debian_package "$corpus" -- \
    -max_total_time="$SECONDS_TO_RUN" -rss_limit_mb=2048
