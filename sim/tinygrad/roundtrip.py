"""tinygrad 0.14.0 against the simulated GPUs (REMOTE=host:port DEV=PCI+NV), unmodified.

usage: roundtrip.py one|two
  one: NVDevice init completes; Tensor(data, device="NV").numpy() returns the data for a few
       bytes and for 64 MiB of random bytes.
  two: as one on NV:0, and a tensor copied from NV:0 to NV:1 arrives intact.
Prints `ROUNDTRIP ok <json>` on success; any failure raises (non-zero exit status).
"""
import json, sys, time

import numpy as np
from tinygrad import Device, Tensor

def timed(what, f, times):
  t = time.perf_counter()
  r = f()
  times[what] = round(time.perf_counter() - t, 3)
  return r

def round_trip(data, device):
  out = Tensor(data, device=device).numpy()
  if out.shape != data.shape or not np.array_equal(out, data):
    bad = int(np.argmax(out.reshape(-1) != data.reshape(-1))) if out.shape == data.shape else -1
    raise AssertionError(f"{data.nbytes} bytes came back different from {device} (first difference at byte {bad})")

def main() -> int:
  mode = sys.argv[1]
  times = {}
  timed("init NV:0", lambda: Device["NV"], times)
  small = np.array([0x11, 0x22, 0x33, 0x44, 0x55], dtype=np.uint8)
  timed("5 bytes", lambda: round_trip(small, "NV"), times)
  big = np.random.default_rng(12).integers(0, 256, 64 << 20, dtype=np.uint8)
  timed("64 MiB", lambda: round_trip(big, "NV"), times)
  if mode == "two":
    timed("init NV:1", lambda: Device["NV:1"], times)
    data = np.random.default_rng(34).integers(0, 256, 4 << 20, dtype=np.uint8)
    def across():
      b = Tensor(data, device="NV:0").realize().to("NV:1").realize()
      if b.device != "NV:1": raise AssertionError(f"the copy landed on {b.device}")
      out = b.numpy()
      if not np.array_equal(out, data): raise AssertionError("the tensor copied from NV:0 to NV:1 arrived different")
    timed("4 MiB NV:0 -> NV:1", across, times)
  print("ROUNDTRIP ok " + json.dumps(times), flush=True)
  return 0

if __name__ == "__main__": sys.exit(main())
