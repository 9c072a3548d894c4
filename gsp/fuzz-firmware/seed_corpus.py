#!/usr/bin/env python3
"""Seeds each fuzz target's corpus from the real firmware (never committed: corpus/ is ignored).

Usage: seed_corpus.py FIRMWARE_ROOT [CORPUS_DIR]   (default CORPUS_DIR: ./corpus)
The 28-63 MB GSP-RM ELFs are shrunk to seeds that keep every section header and name but
cut .fwimage to 4 KiB, so libFuzzer mutates the structure, not megabytes of code.
"""
import os, shutil, struct, sys

def shrink_elf64(blob, keep=4096):
    shoff, = struct.unpack_from("<Q", blob, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", blob, 0x3A)
    heads = [list(struct.unpack_from("<IIQQQQIIQQ", blob, shoff + i * shentsize)) for i in range(shnum)]
    out = bytearray(blob[:0x40])
    for h in heads:
        data = blob[h[4]:h[4] + h[5]] if h[1] != 8 else b""
        if h[5] > keep: data = data[:keep]
        h[4] = len(out); h[5] = len(data) if h[1] != 8 else h[5]
        out += data
    struct.pack_into("<Q", out, 0x28, len(out))
    for h in heads: out += struct.pack("<IIQQQQIIQQ", *h)
    return bytes(out)

def main(root, corpus):
    targets = {"riscv_bootloader": ["bootloader"], "hs_ucode": ["booter_load", "booter_unload", "scrubber"],
               "generic_bootloader": ["gen_bootloader"], "fmc": ["fmc"], "gsp_rm_image": ["gsp"]}
    for target, kinds in targets.items():
        d = os.path.join(corpus, target); os.makedirs(d, exist_ok=True)
        for chip in sorted(os.listdir(os.path.join(root, "nvidia"))):
            for kind in kinds:
                src = os.path.join(root, "nvidia", chip, "gsp", f"{kind}-570.144.bin")
                if not os.path.exists(src): continue
                dst = os.path.join(d, f"{chip}-{kind}")
                if kind == "gsp": open(dst, "wb").write(shrink_elf64(open(src, "rb").read()))
                else: shutil.copyfile(src, dst)

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus"))
