//! The IOVA window DMA chunks are mapped in: our preferred `[IOVA_BASE, IOVA_END)` cut to the
//! ranges the IOMMU reports usable (`VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE` in the capability
//! chain of `VFIO_IOMMU_GET_INFO`'s answer; the kernel leaves out reserved regions such as the
//! x86 MSI window and ranges beyond the IOMMU's address width; iommufd gives the same through
//! `IOMMU_IOAS_IOVA_RANGES`). Without the capability (an old kernel) the preferred window is
//! used whole.

use std::io;

use nvbare_core::hal::PciAddress;
use nvbare_mmu::VaAllocator;
use vfio_bindings::bindings::vfio as b;

use super::VfioError;
use super::dma::{HUGEPAGE, IOVA_BASE, IOVA_END, Iommu};
use super::region::{u32_at, u64_at};
use super::sys::VfioSys;

/// Size of `struct vfio_iommu_type1_info`.
const IOMMU_INFO_LEN: usize = 24;
/// Longest capability chain followed (the kernel's are 1-3 long).
const MAX_CAPS: usize = 16;

/// A range of IOVAs the IOMMU allows: `[start, end]`, `end` inclusive as the kernel gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IovaRange {
    /// First usable IOVA.
    pub start: u64,
    /// Last usable IOVA.
    pub end: u64,
}

/// Why no IOVA window could be had.
#[derive(Debug, thiserror::Error)]
pub enum IovaWindowError {
    /// The kernel's answer does not decode.
    #[error("VFIO_IOMMU_GET_INFO's answer makes no sense: {0}")]
    Malformed(String),
    /// No usable range meets the window in a whole 2 MiB.
    #[error(
        "the IOMMU allows IOVAs only in {ranges}, and none of that holds a 2 MiB-aligned 2 MiB \
         inside nvbare's DMA window [{IOVA_BASE:#x}, {IOVA_END:#x})"
    )]
    NoUsableRange {
        /// The ranges reported, `[start, end]` each.
        ranges: String,
    },
}

/// Decodes `vfio_iommu_type1_info` and its capability chain: the IOVA ranges, or `None`
/// without that capability. Every offset is checked against the bytes given.
pub fn parse_iova_ranges(bytes: &[u8]) -> Result<Option<Vec<IovaRange>>, IovaWindowError> {
    let bad = |what: String| IovaWindowError::Malformed(what);
    if bytes.len() < IOMMU_INFO_LEN {
        return Err(bad(format!("IOMMU info of {} bytes", bytes.len())));
    }
    let field = |o| u32_at(bytes, o).ok_or_else(|| bad("truncated".into()));
    let flags = field(4)?;
    // CAST: a u32 offset fits usize on every target with VFIO.
    let cap_offset = field(16)? as usize;
    if flags & b::VFIO_IOMMU_INFO_CAPS == 0 || cap_offset == 0 {
        return Ok(None);
    }
    let mut at = cap_offset;
    for _ in 0..MAX_CAPS {
        if at < IOMMU_INFO_LEN || at + 8 > bytes.len() {
            return Err(bad(format!(
                "capability at {at:#x} outside {} bytes",
                bytes.len()
            )));
        }
        // struct vfio_info_cap_header { u16 id, u16 version, u32 next }
        let id = u32::from(u16::from_ne_bytes([bytes[at], bytes[at + 1]]));
        // CAST: as above.
        let next = field(at + 4)? as usize;
        if id == b::VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE {
            // header, u32 nr_iovas, u32 reserved, then { u64 start, u64 end } each
            // CAST: as above.
            let n = field(at + 8)? as usize;
            let mut ranges = Vec::with_capacity(n.min(64));
            for i in 0..n {
                let o = at + 16 + 16 * i;
                let (Some(start), Some(end)) = (u64_at(bytes, o), u64_at(bytes, o + 8)) else {
                    return Err(bad(format!("IOVA range {i} of {n} truncated")));
                };
                if end < start {
                    return Err(bad(format!("IOVA range {i} ends before it starts")));
                }
                ranges.push(IovaRange { start, end });
            }
            return Ok(Some(ranges));
        }
        if next == 0 {
            return Ok(None);
        }
        if next <= at {
            return Err(bad(format!("capability chain loops back to {next:#x}")));
        }
        at = next;
    }
    Err(bad(format!("capability chain longer than {MAX_CAPS}")))
}

/// The parts of the preferred window inside the reported ranges, 2 MiB aligned (chunks are
/// mapped at 2 MiB-aligned IOVAs), sorted and merged: `[start, end)` each.
pub fn usable_pieces(reported: Option<&[IovaRange]>) -> Vec<(u64, u64)> {
    let whole = [IovaRange {
        start: IOVA_BASE,
        end: IOVA_END - 1,
    }];
    let hp = HUGEPAGE as u64;
    let mut pieces: Vec<(u64, u64)> = reported
        .unwrap_or(&whole)
        .iter()
        .filter_map(|r| {
            let lo = r.start.max(IOVA_BASE).checked_next_multiple_of(hp)?;
            let hi = r.end.saturating_add(1).min(IOVA_END) / hp * hp;
            (hi > lo).then_some((lo, hi))
        })
        .collect();
    pieces.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(pieces.len());
    for (lo, hi) in pieces {
        match merged.last_mut() {
            Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
            _ => merged.push((lo, hi)),
        }
    }
    merged
}

/// The IOVA allocator for chunks: the preferred window cut to the reported ranges.
pub fn window(reported: Option<&[IovaRange]>) -> Result<VaAllocator, IovaWindowError> {
    let pieces = usable_pieces(reported);
    let (Some(first), Some(last)) = (pieces.first(), pieces.last()) else {
        let ranges = reported
            .unwrap_or(&[])
            .iter()
            .map(|r| format!("[{:#x}, {:#x}]", r.start, r.end))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(IovaWindowError::NoUsableRange {
            ranges: if ranges.is_empty() {
                "no range".into()
            } else {
                ranges
            },
        });
    };
    // PANIC: pieces are non-empty, 2 MiB aligned, sorted and disjoint, so the span is aligned
    // and non-empty and every gap lies inside it, free.
    let mut alloc = VaAllocator::new(first.0, last.1 - first.0).expect("aligned span");
    for gap in pieces.windows(2) {
        let (end, next) = (gap[0].1, gap[1].0);
        alloc.reserve(end, next - end).expect("gap inside the span");
    }
    Ok(alloc)
}

/// The IOVAs DMA chunks of the device at `addr` may use: the preferred window cut to the
/// ranges the IOMMU reports usable (type1's `VFIO_IOMMU_GET_INFO`, iommufd's
/// `IOMMU_IOAS_IOVA_RANGES` of the IOAS the device is attached to; no-IOMMU mode uses no
/// IOVAs and gets the window whole).
///
/// A window with no room is reported as the `... (usable IOVA ranges)` step, the cause
/// ([`IovaWindowError`]) as its source.
pub fn for_iommu<S: VfioSys>(
    sys: &S,
    iommu: &Iommu<S::Fd>,
    addr: PciAddress,
) -> Result<VaAllocator, VfioError> {
    let step_err = |step, remedy, kind, e: IovaWindowError| VfioError::Ioctl {
        step,
        addr,
        remedy,
        source: io::Error::new(kind, e),
    };
    let reported = match iommu {
        Iommu::Type1 { container } => {
            let raw = sys
                .iommu_info(container)
                .map_err(|source| VfioError::Ioctl {
                    step: "VFIO_IOMMU_GET_INFO",
                    addr,
                    remedy: "see dmesg",
                    source,
                })?;
            parse_iova_ranges(&raw).map_err(|e| {
                step_err(
                    "VFIO_IOMMU_GET_INFO",
                    "see dmesg; the kernel's answer may be of a newer layout than nvbare reads",
                    io::ErrorKind::InvalidData,
                    e,
                )
            })?
        }
        #[cfg(feature = "iommufd")]
        Iommu::Iommufd { iommufd, ioas } => {
            let ranges =
                sys.ioas_iova_ranges(iommufd, *ioas)
                    .map_err(|source| VfioError::Ioctl {
                        step: "IOMMU_IOAS_IOVA_RANGES",
                        addr,
                        remedy: "see dmesg",
                        source,
                    })?;
            Some(
                ranges
                    .into_iter()
                    .map(|(start, end)| IovaRange { start, end })
                    .collect(),
            )
        }
        Iommu::NoIommuUnsafe => None,
    };
    window(reported.as_deref()).map_err(|e| {
        step_err(
            if matches!(iommu, Iommu::Type1 { .. }) {
                "VFIO_IOMMU_GET_INFO (usable IOVA ranges)"
            } else {
                "IOMMU_IOAS_IOVA_RANGES (usable IOVA ranges)"
            },
            "the IOMMU's reserved regions (/sys/kernel/iommu_groups/*/reserved_regions) or its \
             address width leave no room for DMA memory",
            io::ErrorKind::Unsupported,
            e,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: u64 = 1 << 30;
    const M: u64 = 1 << 20;

    fn r(start: u64, end: u64) -> IovaRange {
        IovaRange { start, end }
    }

    #[test]
    fn the_window_is_cut_to_the_reported_ranges_on_2mib_boundaries() {
        assert_eq!(usable_pieces(None), [(IOVA_BASE, IOVA_END)]);
        // x86 as the kernel reports it: the MSI window out, 48 bits.
        let x86 = [r(0, 0xfedf_ffff), r(0xfef0_0000, (1 << 48) - 1)];
        assert_eq!(usable_pieces(Some(&x86)), [(IOVA_BASE, IOVA_END)]);
        // Unaligned, overlapping, unsorted, and one ending at the top of the address space.
        let odd = [
            r(8 * G + 4096, 9 * G - 1),
            r(6 * G, 7 * G + M - 1),
            r(6 * G + 10 * M, 6 * G + 20 * M),
            r(600 * G, u64::MAX),
            r(500 * G, u64::MAX),
        ];
        assert_eq!(
            usable_pieces(Some(&odd)),
            [(6 * G, 7 * G), (8 * G + 2 * M, 9 * G), (500 * G, IOVA_END)]
        );
        let mut w = window(Some(&odd)).unwrap();
        assert_eq!(w.free_bytes(), G + (G - 2 * M) + (IOVA_END - 500 * G));
        assert_eq!(w.alloc(G, 2 * M).unwrap(), 6 * G);
        assert_eq!(
            w.alloc(2 * M, 2 * M).unwrap(),
            8 * G + 2 * M,
            "the gap is skipped"
        );
    }

    #[test]
    fn no_usable_range_is_an_error_naming_the_ranges() {
        let low = [r(0, IOVA_BASE - 1), r(IOVA_END, u64::MAX)];
        let e = window(Some(&low)).unwrap_err().to_string();
        assert!(
            e.contains("[0x0, 0xffffffff]") && e.contains("[0x100000000"),
            "{e}"
        );
        // A range inside the window but under 2 MiB once aligned.
        let small = [r(5 * G + 4096, 5 * G + 3 * M)];
        assert!(window(Some(&small)).is_err());
        let e = window(Some(&[])).unwrap_err().to_string();
        assert!(e.contains("no range"), "{e}");
    }

    fn info(ranges: &[(u64, u64)], caps_flag: bool) -> Vec<u8> {
        let mut v = Vec::new();
        let argsz = 24 + 16 + 16 * ranges.len();
        v.extend_from_slice(&(argsz as u32).to_ne_bytes());
        let flags = b::VFIO_IOMMU_INFO_PGSIZES
            | if caps_flag {
                b::VFIO_IOMMU_INFO_CAPS
            } else {
                0
            };
        v.extend_from_slice(&flags.to_ne_bytes());
        v.extend_from_slice(&(4096u64 | 2 << 20).to_ne_bytes());
        v.extend_from_slice(&24u32.to_ne_bytes());
        v.extend_from_slice(&0u32.to_ne_bytes());
        v.extend_from_slice(&(b::VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE as u16).to_ne_bytes());
        v.extend_from_slice(&1u16.to_ne_bytes());
        v.extend_from_slice(&0u32.to_ne_bytes());
        v.extend_from_slice(&(ranges.len() as u32).to_ne_bytes());
        v.extend_from_slice(&0u32.to_ne_bytes());
        for (s, e) in ranges {
            v.extend_from_slice(&s.to_ne_bytes());
            v.extend_from_slice(&e.to_ne_bytes());
        }
        v
    }

    #[test]
    fn iommu_info_parses_the_iova_range_capability_and_rejects_broken_chains() {
        assert_eq!(
            std::mem::size_of::<b::vfio_iommu_type1_info>(),
            IOMMU_INFO_LEN
        );
        assert_eq!(
            std::mem::size_of::<b::vfio_iommu_type1_info_cap_iova_range>(),
            16
        );
        let bytes = info(&[(0, 0xfedf_ffff), (0xfef0_0000, u64::MAX)], true);
        assert_eq!(
            parse_iova_ranges(&bytes).unwrap(),
            Some(vec![r(0, 0xfedf_ffff), r(0xfef0_0000, u64::MAX)])
        );
        assert_eq!(parse_iova_ranges(&info(&[(0, 1)], false)).unwrap(), None);
        assert!(parse_iova_ranges(&bytes[..24]).is_err());
        let mut truncated = bytes.clone();
        truncated.truncate(bytes.len() - 8);
        assert!(parse_iova_ranges(&truncated).is_err());
        let mut backwards = info(&[(10, 5)], true);
        assert!(parse_iova_ranges(&backwards).is_err());
        // A chain pointing back at itself.
        backwards = info(&[(0, 5)], true);
        backwards[24..26].copy_from_slice(&7u16.to_ne_bytes());
        backwards[28..32].copy_from_slice(&24u32.to_ne_bytes());
        let e = parse_iova_ranges(&backwards).unwrap_err().to_string();
        assert!(e.contains("loops"), "{e}");
        assert!(parse_iova_ranges(&[0; 8]).is_err());
    }
}
