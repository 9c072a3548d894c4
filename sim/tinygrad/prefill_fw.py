"""Pre-fills tinygrad 0.14.0's firmware download cache, offline, with our verified files.

tinygrad's `fetch_fw(path, name, sha256)` (tinygrad/helpers.py) downloads
`https://gitlab.com/kernel-firmware/linux-firmware/-/raw/<commit>/<path>/<name>` into
`<downloads dir>/fw/<md5 of that URL>` and reuses a cached file whose sha256 matches. This
script computes those names the way 0.14.0 does and links our files (the verified GSP-RM
570.144 set `nvbare firmware fetch` makes) there. Nothing in tinygrad is patched: it finds
the files where it looks for them.

usage: prefill_fw.py FIRMWARE_DIR CHIP      (FIRMWARE_DIR holds nvidia/<chip>/gsp/<name>)
The downloads dir follows XDG_CACHE_HOME, as tinygrad's does; set it before running this.
"""
import hashlib, inspect, os, pathlib, sys

from tinygrad import helpers
import tinygrad.runtime.support.nv.ip as nv_ip

# The linux-firmware commit tinygrad 0.14.0 pins in fetch_fw.
BASE = "https://gitlab.com/kernel-firmware/linux-firmware/-/raw/0a6871b19abf5d6e024b5d208b101ae53e7fa0de"

# What tinygrad 0.14.0 fetches per chip (runtime/support/nv/ip.py): for GB20x (FSP path) the
# FMC and bootloader of gb202 and GSP-RM from ga102's directory; for AD10x and GA10x (booter
# path) the chip's booter_load and bootloader, and GSP-RM from ga102's directory.
FILES = {
  "gb202": [("nvidia/gb202/gsp", "fmc-570.144.bin"), ("nvidia/gb202/gsp", "bootloader-570.144.bin"),
            ("nvidia/ga102/gsp", "gsp-570.144.bin")],
  "ad102": [("nvidia/ad102/gsp", "booter_load-570.144.bin"), ("nvidia/ad102/gsp", "bootloader-570.144.bin"),
            ("nvidia/ga102/gsp", "gsp-570.144.bin")],
  "ga102": [("nvidia/ga102/gsp", "booter_load-570.144.bin"), ("nvidia/ga102/gsp", "bootloader-570.144.bin"),
            ("nvidia/ga102/gsp", "gsp-570.144.bin")],
}

def main() -> int:
  fw_dir, chip = pathlib.Path(sys.argv[1]), sys.argv[2]
  # Refuse to guess if the installed tinygrad fetches from anywhere else.
  if BASE not in inspect.getsource(helpers.fetch_fw):
    print(f"prefill_fw: tinygrad {helpers.__file__} does not fetch firmware from {BASE}; "
          "this script knows tinygrad 0.14.0", file=sys.stderr)
    return 2
  ip_source = inspect.getsource(nv_ip)
  downloads = helpers._ensure_downloads_dir() / "fw"
  downloads.mkdir(parents=True, exist_ok=True)
  for path, name in FILES[chip]:
    src = fw_dir / path / name
    if not src.is_file():
      print(f"prefill_fw: {src} is missing; run `nvbare firmware fetch --chip all`", file=sys.stderr)
      return 3
    sha = hashlib.sha256(src.read_bytes()).hexdigest()
    # tinygrad pins each file's sha256 in ip.py; a file it would not accept is an error here.
    if sha not in ip_source:
      print(f"prefill_fw: {src} has sha256 {sha}, which tinygrad 0.14.0 does not expect", file=sys.stderr)
      return 4
    url = f"{BASE}/{path}/{name}"
    dst = downloads / hashlib.md5(url.encode("utf-8")).hexdigest()
    if dst.is_symlink() or dst.exists(): dst.unlink()
    dst.symlink_to(src.resolve())
    print(f"prefill_fw: {path}/{name} -> {dst.name}")
  return 0

if __name__ == "__main__": sys.exit(main())
