#!/usr/bin/env python3
"""Extracts the NV_MMU_VER2_* definitions of a hwref dev_mmu.h into tests/fixtures.

The shared reference tree holds the ver3 (gh100) header but not the UVM copy of the tu102 header
that carries the ver2 layouts. tests/hwref_fields.rs reads the real header when it is present
($NVBARE_REFERENCE/open-gpu-kernel-modules-570.144/kernel-open/nvidia-uvm/hwref/turing/tu102/
dev_mmu.h) and otherwise this extract, which keeps only the VER2 defines, with bit ranges and
values evaluated to plain numbers and nothing else of the header.

Run: python3 mmu/scripts/extract_hwref_fields.py OGKM-570.144/kernel-open/nvidia-uvm/hwref/turing/tu102/dev_mmu.h \
       > mmu/tests/fixtures/hwref_ver2_tu102.txt
"""
import re, sys

EXPR = r'[0-9+\-*() ]+'

def main(path):
  print(f"# NV_MMU_VER2_* from open-gpu-kernel-modules 570.144 (8ec351aeb96a93a4bb69ccc12a542bf8a8df2b6f)")
  print(f"# kernel-open/nvidia-uvm/hwref/turing/tu102/dev_mmu.h, via mmu/scripts/extract_hwref_fields.py")
  for line in open(path):
    m = re.match(r'#define\s+(NV_MMU_VER2_\w+)\s+(.*)', line)
    if not m: continue
    name, rest = m.group(1), m.group(2).split('/*')[0].strip()
    if f := re.fullmatch(rf'({EXPR}):({EXPR})', rest):
      print(f"#define {name} {eval(f.group(1))}:{eval(f.group(2))}")
    elif re.fullmatch(r'0x[0-9a-fA-F]+|[0-9]+', rest):
      print(f"#define {name} {int(rest, 0):#x}")

if __name__ == "__main__": main(sys.argv[1])
