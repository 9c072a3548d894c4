#!/usr/bin/env python3
"""Pushbuffer words, GPFIFO entries and QMDs as tinygrad builds them: fixtures for
core/tests/submit_tinygrad.rs, which builds the same things with nvbare-core and compares.

Runs tinygrad 0.11.0's own code: the NVComputeQueue/NVCopyQueue method builders (setup, wait,
signal, memory_barrier, exec's launch methods, copy), its GPFIFO entry formula, and its QMD class
(field tables generated from NVIDIA's clc6c0qmd.h / clcec0qmd.h) filled with the keyword set
NVProgram.__init__ and NVComputeQueue.exec/signal write. tinygrad has no QMD v4 (Hopper); v4 is
checked against clcbc0qmd.h and by the decoder round trips instead.

Setup:  python3 -m venv /tmp/tgvenv && /tmp/tgvenv/bin/pip install tinygrad==0.11.0
Run:    /tmp/tgvenv/bin/python core/scripts/tinygrad_submit_fixtures.py > core/tests/data/tinygrad/submit_fixtures.txt
"""
from types import SimpleNamespace as NS
from tinygrad.runtime import ops_nv
from tinygrad.runtime.ops_nv import QMD, NVComputeQueue, NVCopyQueue, nv_gpu
from tinygrad.helpers import hi32, lo32

def words(ws): return " ".join(f"{w & 0xffffffff:08x}" for w in ws)

def queue(cls):
  q = cls()
  return q

def push(name, q): print(f"push {name} : {words(q._q)}")

sig = NS(value_addr=0x7f12_3456_7890)
push("compute_setup", queue(NVComputeQueue).setup(compute_class=0xcbc0, local_mem_window=0x729300000000, shared_mem_window=0x729400000000))
push("local_memory", queue(NVComputeQueue).setup(local_mem=0x50_0000_0000, local_mem_tpc_bytes=0x1a0000))
push("copy_setup", queue(NVCopyQueue).setup(copy_class=0xc8b5))
push("host_acquire", queue(NVComputeQueue).wait(sig, 0x1_0000_0005))
push("host_release", queue(NVComputeQueue).signal(sig, 0xdead_beef_0000_0001))
push("invalidate", queue(NVComputeQueue).memory_barrier())
push("copy_5gib", queue(NVCopyQueue).copy(0x40_0000_0000, 0x10_0000_0000, (5 << 30) + 123))
push("copy_release", queue(NVCopyQueue).signal(sig, 0x1234_5678))
# exec's launch methods, with the QMD at this address (exec emits exactly these two methods).
q = queue(NVComputeQueue)
qmd_va = 0x12_3456_7800
q.nvm(1, nv_gpu.NVC6C0_SEND_PCAS_A, qmd_va >> 8); q.nvm(1, nv_gpu.NVC6C0_SEND_SIGNALING_PCAS2_B, 9)
push("launch", q)

# GPFIFO entry of _submit_to_gpfifo for a segment at cmdq_addr of n words.
for va, n in [(0x1000, 1), (0x12_3456_7890 & ~3, 0x1234), (0xff_ffff_fffc, (1 << 21) - 1)]:
  print(f"gpentry {va:x} {n:x} : {(va//4 << 2) | (n << 42) | (1 << 41):016x}")

def qmd(ver, p):
  dev = NS(iface=NS(compute_class=nv_gpu.BLACKWELL_COMPUTE_B if ver == 5 else nv_gpu.AMPERE_COMPUTE_B), sass_version=p["sass"])
  prog = p["prog"]
  if ver == 5:
    kw = {'qmd_major_version':5, 'qmd_type':nv_gpu.NVCEC0_QMDV05_00_QMD_TYPE_GRID_CTA, 'register_count':p["regs"],
      'program_address_upper_shifted4':hi32(prog>>4), 'program_address_lower_shifted4':lo32(prog>>4),
      'shared_memory_size_shifted7':p["smem"]>>7, 'shader_local_memory_high_size_shifted4':p["slm"]>>4}
  else:
    kw = {'qmd_major_version':3, 'sm_global_caching_enable':1, 'shader_local_memory_high_size':p["slm"],
      'program_address_upper':hi32(prog), 'program_address_lower':lo32(prog), 'shared_memory_size':p["smem"], 'register_count_v':p["regs"]}
  smem_cfg = min(c * 1024 for c in [32, 64, 100] if c * 1024 >= p["smem"]) // 4096 + 1
  m = QMD(dev, **kw, qmd_group_id=0x3f, invalidate_texture_header_cache=1, invalidate_texture_sampler_cache=1,
    invalidate_texture_data_cache=1, invalidate_shader_data_cache=1, api_visible_call_limit=1, sampler_index=1, barrier_count=1,
    cwd_membar_type=nv_gpu.NVC6C0_QMDV03_00_CWD_MEMBAR_TYPE_L1_SYSMEMBAR, constant_buffer_invalidate_0=1,
    min_sm_config_shared_mem_size=smem_cfg, target_sm_config_shared_mem_size=smem_cfg, max_sm_config_shared_mem_size=0x1a,
    program_prefetch_size=min(p["prog_sz"]>>8, 0x1ff), sass_version=dev.sass_version,
    program_prefetch_addr_upper_shifted=prog>>40, program_prefetch_addr_lower_shifted=prog>>8)
  for i, (addr, sz) in p["cbufs"].items():
    m.set_constant_buf_addr(i, addr)
    m.write(**{f'constant_buffer_size_shifted4_{i}': sz, f'constant_buffer_valid_{i}': 1})
  # exec: grid, block, cbuf0 address (the kernargs buffer).
  gx, gy, gz = p["grid"]; bx, by, bz = p["block"]
  if ver < 4: m.write(cta_raster_width=gx, cta_raster_height=gy, cta_raster_depth=gz)
  else: m.write(grid_width=gx, grid_height=gy, grid_depth=gz)
  m.write(cta_thread_dimension0=bx, cta_thread_dimension1=by, cta_thread_dimension2=bz)
  m.set_constant_buf_addr(0, p["cbufs"][0][0])
  # signal with an active QMD: release slot 0 (address and 64-bit payload written whole).
  if "release" in p:
    va, val = p["release"]
    m.write(**{'release0_enable' if ver < 4 else 'release_enable_0': 1})
    lo = m.field_offset('release0_address_lower' if ver < 4 else 'release_semaphore0_addr_lower')
    # bind_sints_to_mem(fmt='Q', mask=0xfffffffff): (old & ~mask) | value.
    old = int.from_bytes(m.mv[lo:lo+8], "little")
    m.mv[lo:lo+8] = ((old & ~0xfffffffff) | va).to_bytes(8, "little")
    po = m.field_offset('release0_payload_lower' if ver < 4 else 'release_semaphore0_payload_lower')
    m.mv[po:po+8] = val.to_bytes(8, "little")
  # exec after exec: the first QMD chains the second.
  if "dependent" in p:
    m.write(dependent_qmd0_pointer=p["dependent"] >> 8, dependent_qmd0_action=1, dependent_qmd0_prefetch=1, dependent_qmd0_enable=1)
  ws = [int.from_bytes(m.mv[i:i+4], "little") for i in range(0, len(m.mv), 4)]
  args = " ".join(f"{k}={v:x}" if isinstance(v, int) else f"{k}={','.join(f'{x:x}' for x in v)}" for k, v in p.items() if k not in ("cbufs", "release"))
  cb = ";".join(f"{i}:{a:x}:{s:x}" for i, (a, s) in p["cbufs"].items())
  rel = f" release={p['release'][0]:x},{p['release'][1]:x}" if "release" in p else ""
  print(f"qmd{ver} {args} cbufs={cb}{rel} : {words(ws)}")

cases = [
  dict(prog=0x20_0000_1000, prog_sz=0x200, regs=12, smem=0x400, slm=0x340, sass=0x86, grid=(40,1,1), block=(256,1,1),
       cbufs={0: (0x30_0000_0000, 0x180), 4: (0x20_0000_2000, 0x8)}),
  dict(prog=0x7_ffff_ff00, prog_sz=0x30000, regs=255, smem=0x19000, slm=0x0, sass=0xa0, grid=(0x7fffffff,65535,65535), block=(1024,1,64),
       cbufs={0: (0x1_2345_6700, 0x390)}, release=(0x9_8765_4320, 0xfedc_ba98_7654_3210), dependent=0xab_cdef_1200),
  dict(prog=0x1000, prog_sz=0x100, regs=1, smem=0x8100, slm=0x1000, sass=0x90, grid=(1,2,3), block=(4,5,6),
       cbufs={0: (0x2000, 0x220), 3: (0x3000, 0x40), 7: (0xff_ffff_ff00, 0x1ff0)}, release=(0x10, 1)),
]
for c in cases:
  for ver in (3, 5): qmd(ver, c)
