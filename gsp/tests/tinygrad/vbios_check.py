"""Runs tinygrad 0.14.0's own FWSEC parser, unmodified (NV_FLCN.prep_ucode of the installed
package), on a VBIOS image nvbare built: a fake nvdev holds the image in BAR0's PROM window
(0x300000) and catches the FWSEC-FRTS image tinygrad patches. Prints what tinygrad found, one
`key=value` a line, for gsp/tests/vbios_tinygrad.rs to compare with nvbare's parser.

Usage: python vbios_check.py IMAGE   (exits 142, SIGALRM, if tinygrad loops for 5 s)
"""
import array, signal, sys

from tinygrad.runtime.support.nv import ip

rom = open(sys.argv[1], "rb").read()
words = array.array("I", rom + b"\0" * (-len(rom) % 4))


class Mmio:
    def __getitem__(self, s):
        out = array.array("I", bytes(4 * (s.stop - s.start)))
        if s.start == 0x300000 // 4:
            out[: len(words)] = words
        return out


class Dev:
    mmio = Mmio()
    vram_size = 24 << 30
    patched = None

    def _alloc_boot_mem(self, n, data=None, sysmem=False):
        Dev.patched = bytes(data)
        return None, 0x1000, None


class Flcn:
    nvdev = Dev()


signal.alarm(5)
f = Flcn()
ip.NV_FLCN.prep_ucode(f)
d = f.desc_v3
for k in ("StoredSize", "PKCDataOffset", "InterfaceOffset", "IMEMLoadSize", "DMEMLoadSize",
          "EngineIdMask", "UcodeId", "SignatureCount", "SignatureVersions"):
    print(f"{k}={getattr(d, k)}")
p = Dev.patched
print(f"patched_len={len(p)}")
# Where tinygrad wrote FRTS (0x15) into init_cmd: the DMEM mapper it found, from the ucode's start.
hits = [i - 44 for i in range(44, len(p) - 3, 4)
        if p[i - 44:i - 40] == b"DMAP" and int.from_bytes(p[i:i + 4], "little") == 0x15]
print(f"dmap_in_ucode={hits[0] if hits else -1}")
