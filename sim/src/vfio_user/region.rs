//! The device's regions as a vfio-user client reaches them: BAR0 (registers), BAR1 (VRAM,
//! physical mode), BAR3 (listed, not reachable), config space.
//!
//! Region indexes are `linux/vfio.h`'s `VFIO_PCI_*_REGION_INDEX`: BAR0..BAR5 = 0..5, ROM 6,
//! CONFIG 7, VGA 8; a region the device does not have has size 0.

use crate::config::{PCIE_CAP, PCIE_DEVCTL_BCR_FLR};
use crate::device::SimGpu;

use super::protocol::{REGION_READ, REGION_WRITE};

/// `VFIO_PCI_NUM_REGIONS`.
pub const COUNT: u32 = 9;
/// `VFIO_PCI_CONFIG_REGION_INDEX`.
pub const CONFIG: u32 = 7;
/// PCIe config space: 4 KiB.
const CONFIG_SIZE: u64 = 4096;

type Refusal = (i32, String);

/// Size and `vfio_region_info` flags of region `index` (`bar1_size`: what the guest gets of
/// BAR1).
pub fn info(gpu: &SimGpu, bar1_size: u64, index: u32) -> (u64, u32) {
    let rw = REGION_READ | REGION_WRITE;
    match index {
        0 | 3 => (gpu.bar(index).map_or(0, |(_, s)| s), rw),
        1 => (bar1_size, rw),
        CONFIG => (CONFIG_SIZE, rw),
        _ => (0, 0),
    }
}

fn range(
    gpu: &SimGpu,
    bar1_size: u64,
    region: u32,
    offset: u64,
    count: usize,
) -> Result<(), Refusal> {
    let (size, _) = info(gpu, bar1_size, region);
    if size == 0 {
        return Err((libc::EINVAL, format!("region {region} does not exist")));
    }
    // CAST: counts are at most MAX_DATA_XFER.
    if offset
        .checked_add(count as u64)
        .is_none_or(|end| end > size)
    {
        return Err((
            libc::EINVAL,
            format!("{count} bytes at {offset:#x} run past region {region} ({size:#x} bytes)"),
        ));
    }
    if region == 3 {
        return Err((
            libc::EINVAL,
            "BAR3 (instance memory) is not reachable in this simulator; use BAR0 or BAR1".into(),
        ));
    }
    Ok(())
}

/// The naturally aligned pieces (offset, size 1/2/4) an access of `count` bytes at `offset`
/// falls into, as a CPU's config accesses are.
fn pieces(offset: u64, count: usize) -> impl Iterator<Item = (u64, usize)> {
    let end = offset + count as u64;
    let mut at = offset;
    std::iter::from_fn(move || {
        (at < end).then(|| {
            let left = end - at;
            let n = if at.is_multiple_of(4) && left >= 4 {
                4
            } else if at.is_multiple_of(2) && left >= 2 {
                2
            } else {
                1
            };
            let piece = (at, n);
            at += n as u64;
            piece
        })
    })
}

/// Where the client placed the BARs (the six BAR registers as it last wrote them). QEMU
/// virtualizes the BARs: after a reset the guest's view of them is QEMU's, unchanged, and
/// Linux restores only registers that read back differently, so the device must keep the
/// placement across its own resets for GSP-RM to see the addresses the driver reports.
#[derive(Debug, Default)]
pub struct BarPlacement(std::sync::Mutex<Option<[u32; 6]>>);

impl BarPlacement {
    fn remember(&self, gpu: &SimGpu) {
        let mut regs = [0u32; 6];
        for (i, r) in regs.iter_mut().enumerate() {
            // CAST: i < 6.
            *r = gpu.config_read(0x10 + 4 * i as u32, 4);
        }
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(regs);
    }

    /// Writes the remembered placement back (after a reset).
    pub fn restore(&self, gpu: &SimGpu) {
        if let Some(regs) = *self.0.lock().unwrap_or_else(|p| p.into_inner()) {
            for (i, r) in regs.iter().enumerate() {
                // CAST: i < 6.
                gpu.config_write(0x10 + 4 * i as u32, 4, *r);
            }
        }
    }
}

/// Moves the device's BAR1 window on the simulated bus to where the guest placed BAR1 (config
/// 0x14/0x18, a 64-bit memory BAR), so a bus address inside the guest's BAR1 reaches VRAM, as
/// on a real bus (tinygrad gives the FSP and GSP-RM BAR1 bus addresses of boot structures it
/// keeps in VRAM, `_alloc_boot_mem` with a large BAR1). Sizing writes (all ones) and addresses
/// that would overlap host memory leave the window where it was.
fn follow_bar1(gpu: &SimGpu, bar1_size: u64) {
    let lo = u64::from(gpu.config_read(0x14, 4) & !0xf);
    let hi = u64::from(gpu.config_read(0x18, 4));
    let base = hi << 32 | lo;
    if base == 0 || !base.is_multiple_of(bar1_size.max(1)) || base.checked_add(bar1_size).is_none()
    {
        return;
    }
    let bus = gpu.bus();
    if let Err(why) = bus.sysmem.move_bar(base, bar1_size, &bus.vram) {
        gpu.log().warn(
            "vfio-user",
            format!("BAR1 placed at {base:#x}: not followed: {why}"),
        );
    }
}

/// Reads `count` bytes of `region` at `offset`.
pub fn read(
    gpu: &SimGpu,
    bar1_size: u64,
    region: u32,
    offset: u64,
    count: u32,
) -> Result<Vec<u8>, Refusal> {
    // CAST: count is at most MAX_DATA_XFER.
    let count = count as usize;
    range(gpu, bar1_size, region, offset, count)?;
    let mut out = vec![0u8; count];
    match region {
        0 => {
            let aligned = offset.is_multiple_of(4) && count.is_multiple_of(4);
            let within = (offset % 4) as usize + count <= 4;
            if aligned {
                for (i, chunk) in out.chunks_exact_mut(4).enumerate() {
                    // CAST: BAR0 offsets are below its size (at most 64 MiB).
                    let v = gpu.bar0_read((offset + 4 * i as u64) as u32);
                    chunk.copy_from_slice(&v.to_le_bytes());
                }
            } else if within {
                // A narrower read of one register: the register read, the bytes asked for.
                // CAST: as above.
                let v = gpu.bar0_read((offset & !3) as u32).to_le_bytes();
                let at = (offset % 4) as usize;
                out.copy_from_slice(&v[at..at + count]);
            } else {
                return Err((
                    libc::EINVAL,
                    format!("BAR0: {count} bytes at {offset:#x} straddle registers"),
                ));
            }
        }
        1 => gpu
            .bar1_read(offset, &mut out)
            .map_err(|e| (libc::EFAULT, format!("BAR1: {e}")))?,
        _ => {
            for (at, n) in pieces(offset, count) {
                // CAST: config offsets are below 4096, sizes 1/2/4.
                let v = gpu.config_read(at as u32, n as u32).to_le_bytes();
                let i = (at - offset) as usize;
                out[i..i + n].copy_from_slice(&v[..n]);
            }
        }
    }
    Ok(out)
}

/// Writes `data` to `region` at `offset`.
pub fn write(
    gpu: &SimGpu,
    placed: &BarPlacement,
    bar1_size: u64,
    region: u32,
    offset: u64,
    data: &[u8],
) -> Result<(), Refusal> {
    range(gpu, bar1_size, region, offset, data.len())?;
    match region {
        0 => {
            if !offset.is_multiple_of(4) || !data.len().is_multiple_of(4) {
                return Err((
                    libc::EINVAL,
                    format!(
                        "BAR0 is written in aligned 32-bit registers, not {} bytes at {offset:#x}",
                        data.len()
                    ),
                ));
            }
            for (i, chunk) in data.chunks_exact(4).enumerate() {
                // PANIC: chunks_exact(4) yields 4-byte chunks.
                let v = u32::from_le_bytes(chunk.try_into().expect("4 bytes"));
                // CAST: as in read.
                gpu.bar0_write((offset + 4 * i as u64) as u32, v);
            }
        }
        1 => gpu
            .bar1_write(offset, data)
            .map_err(|e| (libc::EFAULT, format!("BAR1: {e}")))?,
        // A config write to a device that fell off the bus goes nowhere, silently, as a read
        // completes with all ones: surprise removal, not an error the client must handle.
        _ if gpu.is_gone() => {}
        _ => {
            let mut flr = false;
            for (at, n) in pieces(offset, data.len()) {
                let i = (at - offset) as usize;
                let mut v = [0u8; 4];
                v[..n].copy_from_slice(&data[i..i + n]);
                let value = u32::from_le_bytes(v);
                // CAST: as in read.
                if !gpu.config_write(at as u32, n as u32, value) {
                    return Err((libc::ENODEV, "the device is gone".into()));
                }
                // PCIe Device Control (capability + 8), bit 15: Initiate Function Level
                // Reset (PCIe Base Specification 7.5.3.4); the cap advertises it (DevCap
                // bit 28).
                // Bit 15 is bit 7 of the register's second byte.
                let flr_byte = u64::from(PCIE_CAP + 8 + 1);
                if (at..at + n as u64).contains(&flr_byte) {
                    let byte = value >> (8 * (flr_byte - at));
                    flr |= byte & u32::from(PCIE_DEVCTL_BCR_FLR >> 8) != 0;
                }
            }
            // CAST: data lengths are bounded by MAX_DATA_XFER.
            if offset < 0x28 && offset + data.len() as u64 > 0x10 {
                placed.remember(gpu);
                follow_bar1(gpu, bar1_size);
            }
            if flr {
                gpu.reset();
                placed.restore(gpu);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::pieces;

    #[test]
    fn config_accesses_split_into_natural_pieces() {
        let p: Vec<_> = pieces(0, 8).collect();
        assert_eq!(p, [(0, 4), (4, 4)]);
        let p: Vec<_> = pieces(1, 6).collect();
        assert_eq!(p, [(1, 1), (2, 2), (4, 2), (6, 1)]);
        assert_eq!(pieces(3, 0).count(), 0);
    }
}
