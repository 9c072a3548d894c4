#!/usr/bin/env python3
"""Page-table entries as tinygrad encodes them: fixtures for nvbare-mmu's cross-check.

Runs tinygrad 0.11.0's own page-table code -- NVDev.include (its hwref header parser),
NVReg.encode, NVPageTableEntry.set_entry and MemoryManager.map_range -- for a fixed set of
mappings on a fake VRAM buffer, then walks the resulting tables with tinygrad's accessors and
prints every entry on the way to each mapped page. nvbare-mmu's tests/tinygrad_crosscheck.rs
re-encodes each entry with our encoders and maps the same set into our own tables.

Setup:   python3 -m venv /tmp/tgvenv && /tmp/tgvenv/bin/pip install tinygrad==0.11.0
Run:     /tmp/tgvenv/bin/python mmu/scripts/tinygrad_pte_fixtures.py --hwref-root DIR > mmu/tests/fixtures/tinygrad_entries.txt

DIR is an open-gpu-kernel-modules checkout at tag 570.144 (commit 8ec351ae, the commit tinygrad
0.11.0 downloads its headers from); it must contain
kernel-open/nvidia-uvm/hwref/{turing/tu102,hopper/gh100}/dev_mmu.h. Without --hwref-root the
script lets tinygrad download them itself (needs network).

What tinygrad covers (and so what the fixtures cover): ver2 (tinygrad's GA1/AD1 path, tu102
header) and ver3 (its GB2 path, gh100 header); PTEs for 4 KiB pages (in the small page table),
2 MiB (PD0) and 512 MiB (PD1); video and system-coherent apertures; cached and uncached; kind 6;
PDEs at every directory level and the small half of PD0's dual PDE. tinygrad never writes 64 KiB
PTEs, big-page-table dual PDEs, peer or non-coherent apertures, so those are checked only
against the hwref headers.
"""
import argparse, pathlib, sys

from tinygrad.runtime.support.nv.nvdev import NVDev, NVPageTableEntry, NVReg
from tinygrad.runtime.support.memory import MemoryManager

MiB, GiB = 1 << 20, 1 << 30

class FakeVram:
  """The two operations tinygrad's page-table code performs on its BAR1 mapping of VRAM."""
  def __init__(self, size): self.buf = bytearray(size)
  def view(self, offset, size, fmt='B'): return memoryview(self.buf)[offset:offset+size].cast(fmt)
  def __setitem__(self, sl, data): self.buf[sl] = data

def make_dev(ver, hwref_root):
  dev = NVDev.__new__(NVDev)
  dev.reg_names, dev.reg_offsets, dev.mmu_ver, dev.devfmt, dev.smi_dev = set(), {}, ver, "fixture", False
  if hwref_root is not None: dev._download = lambda file: (pathlib.Path(hwref_root) / file).read_text()
  # The MMU part of NVDev._early_init, verbatim in effect: register the three entry layouts, then
  # let tinygrad parse the header into their bit fields.
  names = [f'NV_MMU_VER{ver}_PTE', f'NV_MMU_VER{ver}_PDE', f'NV_MMU_VER{ver}_DUAL_PDE']
  dev.reg_names.update(names)
  for name in names: dev.__dict__[name] = NVReg(dev, None, None, fields={})
  dev.include(f"kernel-open/nvidia-uvm/hwref/{'hopper/gh100' if ver == 3 else 'turing/tu102'}/dev_mmu.h")
  dev.pte_t, dev.pde_t, dev.dual_pde_t = (dev.__dict__[n] for n in names)
  # As NVDev._early_mmu_init sets up the memory manager.
  bits, shifts = (56, [12, 21, 29, 38, 47, 56]) if ver == 3 else (48, [12, 21, 29, 38, 47])
  dev.vram, dev.is_booting = FakeVram(128 * MiB), True
  dev.mm = MemoryManager(dev, 128 * MiB, boot_size=2 * MiB, pt_t=NVPageTableEntry, va_bits=bits, va_shifts=shifts, va_base=0,
                         palloc_ranges=[(x, x) for x in [512 * MiB, 2 * MiB, 4 << 10]])
  dev.is_booting = False
  return dev

def mappings(ver):
  """name, va, [(pa, size)], uncached, system. Every call is one map_range."""
  top = (1 << 56) if ver == 3 else (1 << 48)  # the upper half of the root directory
  return [
    ("vid_4k",           0x7f_0000_1000, [(0x1234_5000, 0x3000)], False, False),
    ("vid_2m",           0x40_0020_0000, [(0x8020_0000, 4 * MiB)], False, False),
    ("vid_512m",         0x80_0000_0000, [(0x2_0000_0000, 512 * MiB)], False, False),
    ("vid_uncached_4k",  0x7f_1000_0000, [(0xabc_d000, 0x1000)], True, False),
    ("sys_4k",           0x12_3456_7000, [(0x1_2345_6000, 0x2000)], False, True),
    ("sys_uncached_2m",  0x20_0000_0000, [(0x3_0040_0000, 2 * MiB)], True, True),
    ("vid_mixed",        0x90_0000_0000, [(0x4000_0000, 2 * MiB), (0x5_5000, 0x2000), (0x6000_0000, 0x4000)], False, False),
    ("vid_high_va",      top + 0x20_0000, [(0x7_7000, 0x1000)], False, False),
    ("vid_big_addr",     0x55_0000_0000, [(0xff_ffe0_0000 if ver == 3 else 0x1f_ffe0_0000, 2 * MiB)], False, False),
  ]

def walk(dev, va):
  """The entries tinygrad's own accessors pass through on the way to va."""
  mm, pt, out = dev.mm, dev.mm.root_page_table, []
  for lv in range(mm.level_cnt):
    idx = (va // mm.pte_covers[lv]) % mm.pte_cnt[lv]
    raw = pt.entry(idx)
    if pt.is_huge_page(idx):
      out.append((lv, idx, "pte", raw, None))
      return out, mm.pte_covers[lv]
    child = pt.address(idx)
    out.append((lv, idx, "dual" if pt._is_dual_pde() else "pde", raw, child))
    pt = NVPageTableEntry(dev, child, lv + 1)
  raise SystemExit(f"tinygrad walk of {va:#x} did not end in a PTE")

def main():
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--hwref-root", default=None)
  args = ap.parse_args()
  print("# Generated by mmu/scripts/tinygrad_pte_fixtures.py with tinygrad 0.11.0 and the dev_mmu.h headers of")
  print("# open-gpu-kernel-modules 570.144 (8ec351aeb96a93a4bb69ccc12a542bf8a8df2b6f). Do not edit by hand.")
  print("# ver mapping va level index entry raw target page_size pa uncached system")
  print("#   entry: pde (8 B), dual (16 B PD0 entry, small table only), pte; target: child table (pde, dual) or page address (pte)")
  for ver in (2, 3):
    dev = make_dev(ver, args.hwref_root)
    for name, va, paddrs, uncached, system in mappings(ver):
      size = sum(s for _, s in paddrs)
      dev.mm.map_range(va, size, paddrs, uncached=uncached, system=system)
      off = 0
      for pa, psize in paddrs:
        page_va, page_pa, end = va + off, pa, va + off + psize
        while page_va < end:
          chain, covers = walk(dev, page_va)
          for lv, idx, kind, raw, child in chain:
            target = child if kind != "pte" else page_pa
            print(f"{ver} {name} {page_va:#x} {lv} {idx} {kind} {raw:#x} {target:#x} {covers:#x} {page_pa:#x} {int(uncached)} {int(system)}")
          page_va, page_pa = page_va + covers, page_pa + covers
        off += psize
  return 0

if __name__ == "__main__": sys.exit(main())
