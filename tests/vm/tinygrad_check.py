"""tinygrad 0.14.0, unmodified, through its own PCI path (DEV=PCI+NV, no REMOTE): boots the GPU
and round-trips a tensor (4 KiB of uint8, host -> GPU -> host, compared).

Run inside tests/vm/run's guest without an IOMMU (tinygrad maps the BARs from sysfs and gives
the GPU the physical addresses /proc/self/pagemap reports). Prints `TINYGRAD ok <iface>
<json of seconds>` on success; any failure raises (non-zero exit status). No numpy: a list
goes in, `.tolist()` comes out.
"""
import json, sys, time
t0 = time.perf_counter()
from tinygrad import Device, Tensor, dtypes
times = {"import": round(time.perf_counter() - t0, 1)}
t = time.perf_counter()
dev = Device["NV"]
times["init NV"] = round(time.perf_counter() - t, 1)
iface = getattr(dev, "iface", None)
pci = getattr(iface, "pci_dev", None)
where = f"{type(iface).__name__} {type(pci).__name__} {getattr(pci, 'pcibus', '?')}"
data = [(i * 37 + 11) & 0xff for i in range(4096)]
t = time.perf_counter()
out = Tensor(data, dtype=dtypes.uint8, device="NV").realize().tolist()
times["4 KiB round trip"] = round(time.perf_counter() - t, 1)
if out != data:
  bad = next(i for i, (a, b) in enumerate(zip(out, data)) if a != b) if len(out) == len(data) else -1
  raise AssertionError(f"the tensor came back different (length {len(out)}, first difference at {bad})")
print(f"TINYGRAD ok {where} " + json.dumps(times), flush=True)
