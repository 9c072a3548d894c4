//! VFIO regions: the region information and its capability chain decoded from the kernel's
//! bytes, BARs mapped as the kernel allows (whole, or the sparse-mmap areas only), and access
//! that goes through the mapping where there is one and through pread/pwrite elsewhere.

use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;

use nvbare_core::shared::MemIo;
use vfio_bindings::bindings::vfio as b;

use super::sys::VfioSys;

/// Size of `struct vfio_region_info`.
const REGION_INFO_LEN: usize = 32;
/// Longest capability chain followed (the kernel's are 1-3 long).
const MAX_CAPS: usize = 16;

/// A region as `VFIO_DEVICE_GET_REGION_INFO` describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegionInfo {
    /// `VFIO_REGION_INFO_FLAG_*`.
    pub flags: u32,
    /// Size in bytes.
    pub size: u64,
    /// Offset of the region in the device file.
    pub offset: u64,
    /// The areas that may be mapped (`VFIO_REGION_INFO_CAP_SPARSE_MMAP`), if the region has
    /// that capability.
    pub sparse: Option<Vec<Area>>,
}

/// A part of a region: `[offset, offset + size)` within it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Area {
    /// Offset within the region.
    pub offset: u64,
    /// Size in bytes.
    pub size: u64,
}

pub(super) fn u32_at(b: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(o..o + 4)?.try_into().ok()?))
}

pub(super) fn u64_at(b: &[u8], o: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(o..o + 8)?.try_into().ok()?))
}

/// Decodes `vfio_region_info` and its capability chain; every offset is checked against the
/// bytes given.
pub fn parse_region_info(bytes: &[u8]) -> Result<RegionInfo, String> {
    if bytes.len() < REGION_INFO_LEN {
        return Err(format!("region info of {} bytes", bytes.len()));
    }
    let field = |o| u32_at(bytes, o).ok_or("truncated");
    let flags = field(4)?;
    let cap_offset = field(12)? as usize;
    // PANIC: the length was checked above.
    let size = u64_at(bytes, 16).expect("checked");
    let offset = u64_at(bytes, 24).expect("checked");
    let mut sparse = None;
    if flags & b::VFIO_REGION_INFO_FLAG_CAPS != 0 && cap_offset != 0 {
        let mut at = cap_offset;
        for _ in 0..MAX_CAPS {
            if at < REGION_INFO_LEN || at + 8 > bytes.len() {
                return Err(format!(
                    "capability at {at:#x} outside {} bytes",
                    bytes.len()
                ));
            }
            // struct vfio_info_cap_header { u16 id, u16 version, u32 next }
            let id = u32::from(u16::from_ne_bytes([bytes[at], bytes[at + 1]]));
            let next = field(at + 4)? as usize;
            if id == b::VFIO_REGION_INFO_CAP_SPARSE_MMAP {
                // header, u32 nr_areas, u32 reserved, then { u64 offset, u64 size } each
                let n = field(at + 8)? as usize;
                let mut areas = Vec::with_capacity(n.min(64));
                for i in 0..n {
                    let o = at + 16 + 16 * i;
                    let (Some(offset), Some(size)) = (u64_at(bytes, o), u64_at(bytes, o + 8))
                    else {
                        return Err(format!("sparse mmap area {i} of {n} truncated"));
                    };
                    areas.push(Area { offset, size });
                }
                sparse = Some(areas);
            }
            if next == 0 {
                break;
            }
            if next <= at {
                return Err(format!("capability chain loops back to {next:#x}"));
            }
            at = next;
        }
    }
    Ok(RegionInfo {
        flags,
        size,
        offset,
        sparse,
    })
}

/// The areas of a region to map: none without `FLAG_MMAP`, the sparse areas (those inside
/// the region and page aligned) with the capability, else the whole region.
pub fn mmap_plan(info: &RegionInfo) -> Vec<Area> {
    if info.flags & b::VFIO_REGION_INFO_FLAG_MMAP == 0 || info.size == 0 {
        return Vec::new();
    }
    match &info.sparse {
        None => vec![Area {
            offset: 0,
            size: info.size,
        }],
        Some(areas) => areas
            .iter()
            .copied()
            .filter(|a| {
                a.size > 0
                    && a.offset.is_multiple_of(4096)
                    && a.offset.checked_add(a.size).is_some_and(|e| e <= info.size)
            })
            .collect(),
    }
}

/// One mapped area.
struct Mapping {
    offset: u64,
    len: usize,
    ptr: NonNull<u8>,
}

/// A region of an open device, with its mappings.
pub struct Region<S: VfioSys> {
    sys: Arc<S>,
    device: Arc<S::Fd>,
    /// The region's index.
    pub index: u32,
    /// What the kernel said of it.
    pub info: RegionInfo,
    maps: Vec<Mapping>,
}

impl<S: VfioSys> fmt::Debug for Region<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Region")
            .field("index", &self.index)
            .field("info", &self.info)
            .field(
                "mapped",
                &self
                    .maps
                    .iter()
                    .map(|m| (m.offset, m.len))
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

// SAFETY: the mappings are device memory shared with the GPU, touched only through volatile
// accesses and pread/pwrite; the region owns them and unmaps them once, on drop.
unsafe impl<S: VfioSys> Send for Region<S> {}
// SAFETY: as for Send: no method hands out references into the mappings.
unsafe impl<S: VfioSys> Sync for Region<S> {}

impl<S: VfioSys> Region<S> {
    /// The region with the areas of `plan` mapped.
    pub fn map(
        sys: Arc<S>,
        device: Arc<S::Fd>,
        index: u32,
        info: RegionInfo,
        plan: &[Area],
    ) -> Result<Self, (Area, std::io::Error)> {
        let mut region = Region {
            sys,
            device,
            index,
            info,
            maps: Vec::new(),
        };
        for a in plan {
            let len = usize::try_from(a.size)
                .map_err(|_| (*a, std::io::Error::from(std::io::ErrorKind::InvalidInput)))?;
            let ptr = region
                .sys
                .mmap_device(&region.device, region.info.offset + a.offset, len)
                .map_err(|e| (*a, e))?;
            region.maps.push(Mapping {
                offset: a.offset,
                len,
                ptr,
            });
        }
        Ok(region)
    }

    /// The mapping that holds `[offset, offset + len)`, as a pointer to `offset`.
    fn mapped(&self, offset: u64, len: usize) -> Option<*mut u8> {
        self.maps.iter().find_map(|m| {
            let rel = offset.checked_sub(m.offset)?;
            let end = rel.checked_add(len as u64)?;
            // SAFETY: `rel + len <= m.len`, so the pointer stays inside the mapping.
            (end <= m.len as u64).then(|| unsafe { m.ptr.as_ptr().add(rel as usize) })
        })
    }

    /// The whole region as one mapping, if it is mapped that way.
    pub fn whole_mapping(&self) -> Option<NonNull<u8>> {
        match self.maps.as_slice() {
            [m] if m.offset == 0 && m.len as u64 == self.info.size => Some(m.ptr),
            _ => None,
        }
    }

    /// Whether `[offset, offset + len)` lies inside the region.
    fn inside(&self, offset: u64, len: usize) -> bool {
        offset
            .checked_add(len as u64)
            .is_some_and(|e| e <= self.info.size)
    }

    /// Reads `out.len()` bytes at `offset` of the region.
    pub fn read(&self, offset: u64, out: &mut [u8]) -> std::io::Result<()> {
        if !self.inside(offset, out.len()) {
            return Err(std::io::ErrorKind::InvalidInput.into());
        }
        if let Some(p) = self.mapped(offset, out.len()) {
            for (i, o) in out.iter_mut().enumerate() {
                // SAFETY: inside a live mapping (checked by `mapped`); device memory is read
                // byte by byte with volatile loads.
                *o = unsafe { p.add(i).read_volatile() };
            }
            return Ok(());
        }
        self.sys.pread(&self.device, out, self.info.offset + offset)
    }

    /// Writes `data` at `offset` of the region.
    pub fn write(&self, offset: u64, data: &[u8]) -> std::io::Result<()> {
        if !self.inside(offset, data.len()) {
            return Err(std::io::ErrorKind::InvalidInput.into());
        }
        if let Some(p) = self.mapped(offset, data.len()) {
            for (i, d) in data.iter().enumerate() {
                // SAFETY: inside a live mapping (checked by `mapped`).
                unsafe { p.add(i).write_volatile(*d) };
            }
            return Ok(());
        }
        self.sys
            .pwrite(&self.device, data, self.info.offset + offset)
    }

    /// A 32-bit read at `offset`: one volatile load through the mapping, else a 4-byte pread.
    pub fn read32(&self, offset: u64) -> std::io::Result<u32> {
        if offset.is_multiple_of(4)
            && let Some(p) = self.mapped(offset, 4)
        {
            // SAFETY: inside a live mapping, 4-byte aligned (mappings are page aligned).
            return Ok(unsafe { p.cast::<u32>().read_volatile() });
        }
        let mut b = [0u8; 4];
        self.read(offset, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    /// A 32-bit write at `offset`: one volatile store through the mapping, else a pwrite.
    pub fn write32(&self, offset: u64, value: u32) -> std::io::Result<()> {
        if offset.is_multiple_of(4)
            && let Some(p) = self.mapped(offset, 4)
        {
            // SAFETY: inside a live mapping, 4-byte aligned.
            unsafe { p.cast::<u32>().write_volatile(value) };
            return Ok(());
        }
        self.write(offset, &value.to_le_bytes())
    }
}

impl<S: VfioSys> Drop for Region<S> {
    fn drop(&mut self) {
        for m in self.maps.drain(..) {
            // SAFETY: each mapping was made by `map`, once, and nothing uses it after the
            // region is gone.
            if let Err(e) = unsafe { self.sys.munmap(m.ptr, m.len) } {
                log::error!("munmap of region {} failed: {e}", self.index);
            }
        }
    }
}

/// A region as the memory behind a [`SharedMem`](nvbare_core::shared::SharedMem), for a BAR1
/// that is not one whole mapping (sparse, or not mappable). Failed accesses read 0xff, as a
/// vanished device does.
pub struct RegionIo<S: VfioSys>(pub Arc<Region<S>>);

impl<S: VfioSys> fmt::Debug for RegionIo<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<S: VfioSys> MemIo for RegionIo<S> {
    fn read(&self, offset: u64, out: &mut [u8]) {
        if let Err(e) = self.0.read(offset, out) {
            log::error!("BAR{} read at {offset:#x}: {e}", self.0.index);
            out.fill(0xff);
        }
    }

    fn write(&self, offset: u64, data: &[u8]) {
        if let Err(e) = self.0.write(offset, data) {
            log::error!("BAR{} write at {offset:#x}: {e}", self.0.index);
        }
    }
}
