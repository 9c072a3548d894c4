#!/usr/bin/env python3
"""Golden bytes for nvbare-gsp's protocol code, produced by tinygrad's own GSP code.

Drives the functions of tinygrad's `runtime/support/nv/ip.py` (the reference snapshot in
shared/reference/tinygrad-2026-08, commit a9069c17) with the ctypes structures of tinygrad
0.11.0's autogen `nv` module (the snapshot ships without autogen), with hardware access
replaced by plain memory: `_alloc_boot_mem` hands out ctypes buffers with synthetic bus
addresses, register writes are recorded. Every fixture is written as hex to
gsp/tests/fixtures/proto/<name>.hex; gsp/tests/proto_golden.rs rebuilds the same thing with
nvbare-gsp from the same inputs (documented per fixture below) and compares.

Setup:  python3 -m venv /tmp/tg && /tmp/tg/bin/pip install tinygrad==0.11.0
Run:    /tmp/tg/bin/python gsp/scripts/golden.py [path/to/tinygrad-2026-08]
"""
import ctypes, itertools, os, sys, types, collections

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "fixtures", "proto")
REF = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "..", "shared", "reference", "tinygrad-2026-08")

from tinygrad.runtime.autogen.nv import nv
from tinygrad.runtime.autogen import nv_gpu
from tinygrad.runtime.support.hcq import MMIOInterface
from tinygrad.runtime.support import system as tg_system

# --- load the reference ip.py against 0.11.0's autogen -------------------------------------
src = open(os.path.join(REF, "tinygrad", "runtime", "support", "nv", "ip.py")).read()
src = src.replace("from tinygrad.runtime.autogen import nv, nv_570 as nv_gpu, pci\n", "")
src = src.replace("fetch_fw, wait_cond, ceildiv", "wait_cond, ceildiv")
ip = types.ModuleType("tg_ref_ip"); sys.modules["tg_ref_ip"] = ip
ip.__dict__.update(nv=nv, nv_gpu=nv_gpu, pci=None, fetch_fw=None)
exec(compile(src, "tinygrad-2026-08/ip.py", "exec"), ip.__dict__)
if not hasattr(nv, "struct_pte_desc_pte_pde"): nv.struct_pte_desc_pte_pde = nv.union_pte_desc_0  # renamed in newer autogen
tg_system.System.memory_barrier = lambda *a: None
for missing in ("NVB0CC_CTRL_CMD_POWER_REQUEST_FEATURES", "NVB0CC_CTRL_CMD_ALLOC_PMA_STREAM"):  # only compared against
  if not hasattr(nv_gpu, missing): setattr(nv_gpu, missing, -1)

_keep = []
def mem(size):
  buf = (ctypes.c_uint8 * size)(); _keep.append(buf)
  return MMIOInterface(ctypes.addressof(buf), size)

class Reg:
  """A register: records writes, reads return what `reads` says (default 0)."""
  def __init__(self, dev, name): self.dev, self.name = dev, name
  def __getitem__(self, i): return self
  def with_base(self, b): return self
  def write(self, v=0, **kw): self.dev.writes.append((self.name, v, kw))
  def read(self): return self.dev.reads.get(self.name, 0)
  def read_bitfields(self): return collections.defaultdict(int)
  def update(self, **kw): pass

class FakeDev:
  """Stands in for NVDev: boot memory with synthetic, deliberately scattered bus addresses."""
  def __init__(self, vram_size, fmc_boot, chip_name):
    self.vram_size, self.fmc_boot, self.chip_name, self.devfmt = vram_size, fmc_boot, chip_name, "0000:01:00.0"
    self.writes, self.reads, self.next_page, self.is_err_state = [], {}, 0, False
  def __getattr__(self, name):
    if name.startswith("NV_"): return Reg(self, name)
    raise AttributeError(name)
  def page_addr(self):
    # page k of all boot memory -> 0x1_0000_0000 + (k ^ 0x2a5) * 4K: 4K aligned, not contiguous
    a = 0x1_0000_0000 + (self.next_page ^ 0x2a5) * 0x1000; self.next_page += 1; return a
  def _alloc_boot_mem(self, size, data=None, contiguous=False, sysmem=None):
    sz = (size + 0xfff) & ~0xfff
    view = mem(sz)
    if data is not None: view[:size] = data
    return view, None, [self.page_addr() for _ in range(sz // 0x1000)]

written = []
def out(name, data):
  with open(os.path.join(OUT, name + ".hex"), "w") as f:
    h = bytes(data).hex()
    f.write("\n".join(h[i:i + 128] for i in range(0, len(h), 128)) + "\n")
  written.append(name)

def pattern(n, mul, add): return bytes((i * mul + add) & 0xff for i in range(n))

def make_gsp(dev):
  gsp = ip.NV_GSP(dev); dev.gsp = gsp
  gsp.handle_gen = itertools.count(0xcf000000)
  gsp.chan_runlists, gsp.priv_root = {}, 0xc1e00004
  gsp.gpfifo_class, gsp.compute_class, gsp.dma_class, gsp.viddec_class = 0xc86f, 0xcbc0, 0xc8b5, None
  return gsp

os.makedirs(OUT, exist_ok=True)

# --- 1. queues, element headers, checksums: init_rm_args + NVRpcQueue -----------------------
# A fresh 256 KiB + 256 KiB queue block. Fixtures: the page table page, GSP_ARGUMENTS_CACHED,
# the command queue's msgqTxHeader.
dev = FakeDev(24 << 30, False, "AD102"); gsp = make_gsp(dev)
gsp.init_rm_args()
queues_buf, args_buf = _keep[-2], _keep[-1]  # pages 0..0x80: queue block; page 0x81: RMARGS
out("queue_page_table", ctypes.string_at(queues_buf, 0x1000))
out("gsp_arguments_cached", ctypes.string_at(args_buf, ctypes.sizeof(nv.GSP_ARGUMENTS_CACHED)))
out("cmd_queue_tx_header", bytes(gsp.cmd_q_view[:32]))

# SET_REGISTRY (tinygrad's two keys) as the first message of the fresh command queue: the
# whole first element (element header + checksum + RPC header + packed table).
gsp.rpc_set_registry_table()
out("element_set_registry", bytes(gsp.cmd_q.queue_mv[0:0x1000]))
out("rpc_header_set_registry", bytes(gsp.cmd_q.queue_mv[0x30:0x50]))
reg_len = int.from_bytes(bytes(gsp.cmd_q.queue_mv[0x38:0x3c]), "little") - 0x20
out("registry_table", bytes(gsp.cmd_q.queue_mv[0x50:0x50 + reg_len]))

# Wrap: writePtr 62 (last element), seq 7, GSP_RM_CONTROL (76) with 5000 bytes (i*7+3): the
# message occupies element 62 and element 0. Fixture: element 62 followed by element 0.
q = gsp.cmd_q
q.queue_mv[:] = b"\0" * len(q.queue_mv)  # tx_view[4] is msgqTxHeader.writePtr
q.tx_view[4], q.seq = 62, 7
q.send_rpc(76, pattern(5000, 7, 3))
assert q.tx_view[4] == 1
out("element_wrap", bytes(q.queue_mv[62 * 0x1000:63 * 0x1000]) + bytes(q.queue_mv[0:0x1000]))

# Continuation: writePtr 0, seq 0, GSP_RM_ALLOC (103) with 0x20000 bytes (i*13+1): one record
# of 16 elements, one of 16 (CONTINUATION_RECORD) and one of 1. Fixture: elements 0..33.
q.queue_mv[:] = b"\0" * len(q.queue_mv); q.tx_view[4], q.seq = 0, 0
q.send_rpc(103, pattern(0x20000, 13, 1))
assert q.tx_view[4] == 33
out("elements_continuation", bytes(q.queue_mv[0:33 * 0x1000]))

# --- 2. RPC payloads: capture what each rpc_* sends ----------------------------------------
sent = []
class Capture:
  def send_rpc(self, func, msg): sent.append((func, bytes(msg)))
class Replies:
  def wait_resp(self, cmd): return sent[-1][1]
gsp.cmd_q, gsp.stat_q = Capture(), Replies()

gsp.rpc_rm_alloc(hParent=0xcf000001, hClass=nv_gpu.NV20_SUBDEVICE_0, params=nv_gpu.NV2080_ALLOC_PARAMETERS(subDeviceId=0))
out("rpc_rm_alloc_subdevice", sent[-1][1])  # hObject 0xcf000000, hClient 0xc1e00004
gsp.rpc_rm_control(hObject=0xcf000002, cmd=0x20800110, params=(ctypes.c_uint8 * 24)(*range(24)))
out("rpc_rm_control", sent[-1][1])
gsp.nvdev.mm = types.SimpleNamespace(pte_cnt=[512], root_page_table=types.SimpleNamespace(paddr=0x2345000))
gsp.rpc_set_page_directory(device=0xcf000001, hVASpace=0xcf000003, pdir_paddr=0x2345000, client=0xc1e00010)
out("rpc_set_page_directory", sent[-1][1])
gsp.rpc_unloading_guest_driver()
out("rpc_unloading_guest_driver", sent[-1][1])
gsp.rpc_alloc_memory(hDevice=0xcf000001, hClass=0x3e, paddrs=[(0x1_2345_6000, 0x1000), (0x7000, 0x1000), (0x20_0000_0000, 0x1000)],
                     length=0x3000, flags=0x40000020, client=0xc1e00010)
out("rpc_alloc_memory", sent[-1][1])  # hMemory 0xcf000001 (rm_alloc took 0xcf000000)

class PciDev:
  def bar_info(self, i): return {0: (0xfa000000, 0), 1: (0x38000000000, 0), 3: (0x39000000000, 0)}[i]
  def read_config(self, reg, size): return {0x00: 0x233510de, 0x2c: 0x18c910de, 0x08: 0xa1}[reg] & ((1 << (8 * size)) - 1)
for fmc in (False, True):
  dev2 = FakeDev(141 << 30, fmc, "GH100"); dev2.pci_dev, dev2.devfmt = PciDev(), "0000:41:00.0"
  g2 = make_gsp(dev2); g2.cmd_q = Capture()
  ip.pci = types.SimpleNamespace(PCI_VENDOR_ID=0x00, PCI_SUBSYSTEM_VENDOR_ID=0x2c, PCI_REVISION_ID=0x08)
  g2.rpc_set_gsp_system_info()
  out("rpc_system_info_fmc" if fmc else "rpc_system_info", sent[-1][1])

# --- 3. boot structures --------------------------------------------------------------------
# libos args: log buffers INIT/INTR/RM/MNOC/KRNL 64 KiB each from the first page of a 2 MiB
# allocation, RMARGS 4 KiB at rm_args_sysmem.
dev = FakeDev(24 << 30, False, "AD102"); gsp = make_gsp(dev)
gsp.rm_args_sysmem = 0x5_0000_0000
gsp.init_libos_args()
out("libos_init_args", bytes(ctypes.string_at(_keep[-1], 0x1000)))

# radix3 over a 600-page + 123-byte image (bytes i*3+5) with the scattered page addresses.
class Sec:
  def __init__(self, name, content): self.name, self.content = name, content
image = pattern(600 * 4096 + 123, 3, 5)
ip.elf_loader = lambda blob: (None, [Sec(".fwimage", image), Sec(".fwsignature_ad10x", b"\x11" * 4096)], None)
ip.fetch_fw = lambda *a: b""
dev = FakeDev(24 << 30, False, "AD102"); gsp = make_gsp(dev)
gsp.init_gsp_image()
npages = [1, 1, 2, 601]
radix_buf = _keep[-2]
out("radix3_tables", bytes(ctypes.string_at(radix_buf, 4 * 0x1000)))
out("radix3_page_addrs", b"".join(a.to_bytes(8, "little") for a in gsp.gsp_radix3_addrs))
assert bytes(ctypes.string_at(ctypes.addressof(radix_buf) + 4 * 0x1000, len(image))) == image

# WPR meta: ad102 (24 GiB; booter path; FRTS at vram - 2 MiB) with a 4K-multiple and with an
# odd boot loader size, gb202 (32 GiB; FMC path). Image/boot loader/signature addresses as
# set below.
def wpr(chip, vram, fmc, boot_size):
  dev = FakeDev(vram, fmc, chip); gsp = make_gsp(dev)
  dev.flcn = types.SimpleNamespace(frts_offset=vram - 0x200000)
  def gsp_image(self=gsp):
    self.gsp_image, self.gsp_radix3_addrs, self.gsp_signature_bar1 = b"\0" * 0x2a01234, [0x1_0000_0000], 0x2_0000_0000
  def boot_image(self=gsp):
    self.booter_image, self.booter_bar1 = b"\0" * boot_size, 0x3_0000_0000
    self.booter_desc = nv.RM_RISCV_UCODE_DESC(monitorCodeOffset=0x100, monitorDataOffset=0x4200, manifestOffset=0x8000)
  gsp.init_gsp_image, gsp.init_boot_binary_image = gsp_image, boot_image
  gsp.init_wpr_meta()
  return bytes(ctypes.string_at(_keep[-1], 256))
out("wpr_meta_ad102", wpr("AD102", 24 << 30, False, 0xd000))
out("wpr_meta_ad102_odd_boot", wpr("AD102", 24 << 30, False, 0xd123))
out("wpr_meta_gb202", wpr("GB202", 32 << 30, True, 0xd123))

# COT payload + FSP message + GSP_FMC_BOOT_PARAMS for gb202: FMC image at 0x6_0000_0000,
# boot params at 0x7_0000_0000, WPR meta at 0x8_0000_0000, libos args at 0x9_0000_0000;
# hash bytes i+1 (48), signature i*5+2 (96 B, ECDSA-384), public key i*11+7 (97 B, + 3 zero).
dev = FakeDev(32 << 30, True, "GB202"); gsp = make_gsp(dev)
dev.reads["NV_PFSP_MSGQ_HEAD"] = 1
gsp.wpr_meta_sysmem, gsp.libos_args_sysmem = 0x8_0000_0000, 0x9_0000_0000
cot = ip.NV_FLCN_COT(dev)
cot.fmc_boot_args_view, cot.fmc_boot_args_sysmem = mem(0x1000), 0x7_0000_0000
cot.fmc_booter_bar1 = 0x6_0000_0000
cot.fmc_booter_hash = memoryview(bytes(range(1, 49))).cast("I")
cot.fmc_booter_sig = memoryview(pattern(96, 5, 2)).cast("I")
cot.fmc_booter_pkey = memoryview(pattern(97, 11, 7) + b"\0" * 3).cast("I")
cot.init_hw()
out("fmc_boot_params_gb202", bytes(cot.fmc_boot_args_view[:ctypes.sizeof(nv.GSP_FMC_BOOT_PARAMS)]))
emem = b"".join(v.to_bytes(4, "little") for (n, v, kw) in dev.writes if n == "NV_PFSP_EMEMD")
out("fsp_cot_message_gb202", emem)
out("cot_payload_gb202", emem[8:8 + 860])

with open(os.path.join(OUT, "MANIFEST"), "w") as f: f.write("\n".join(written) + "\n")
print(f"wrote {len(written)} fixtures to {os.path.normpath(OUT)}")
