//! A twin of the kernel's VFIO, IOMMU and memory calls, for testing the platform's logic:
//! nodes that open (or fail to), a group whose viability is set, a device whose regions are
//! raw `vfio_region_info` bytes over one backing store (so a mapping and pread/pwrite see
//! the same bytes), hugepages that run out, and an IOMMU whose mappings are recorded.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::Mutex;

use vfio_bindings::bindings::vfio as b;

use super::sys::{DeviceInfo, VfioSys};

/// What an open file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Container,
    Group,
    Device,
    Iommufd,
}

/// An open file of the twin.
#[derive(Debug)]
pub struct FakeFd {
    pub kind: Kind,
}

/// Memory the twin hands out (device backing and hugepages): zeroed, 4 KiB aligned.
#[derive(Debug)]
struct Block {
    ptr: NonNull<u8>,
    layout: Layout,
}

impl Block {
    fn new(len: usize) -> Block {
        let layout = Layout::from_size_align(len.max(1), 4096).unwrap();
        // SAFETY: non-zero size.
        let ptr = NonNull::new(unsafe { alloc_zeroed(layout) }).expect("test memory");
        Block { ptr, layout }
    }
}

// SAFETY: test memory owned by the block; the twin's mutex serialises every access.
unsafe impl Send for Block {}

impl Drop for Block {
    fn drop(&mut self) {
        // SAFETY: allocated by `Block::new` with this layout.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// One region of the fake device.
#[derive(Debug)]
pub struct FakeRegion {
    pub index: u32,
    pub flags: u32,
    pub size: u64,
    pub offset: u64,
    pub sparse: Option<Vec<(u64, u64)>>,
}

/// The twin's state, for tests to set up and inspect.
#[derive(Debug)]
pub struct State {
    /// Paths that open; others fail with ENOENT.
    pub nodes: HashMap<PathBuf, Kind>,
    /// Paths that fail to open with this errno.
    pub open_errors: HashMap<PathBuf, i32>,
    pub api_version: i32,
    pub extensions: Vec<u32>,
    pub group_flags: u32,
    pub iommu_set: Option<u32>,
    /// `VFIO_SET_IOMMU` fails with EPERM, as vfio_iommu_type1 refuses an IOMMU without
    /// interrupt remapping (virtio-iommu in a QEMU guest) unless `allow_unsafe_interrupts=1`.
    pub no_interrupt_remapping: bool,
    pub container_set: bool,
    pub device_flags: u32,
    pub regions: Vec<FakeRegion>,
    backing: BTreeMap<u64, Block>,
    /// Live device mappings: address -> (file offset, length).
    pub mmaps: HashMap<usize, (u64, usize)>,
    /// Free 2 MiB hugepages.
    pub hugepages_free: usize,
    hugepages: BTreeMap<usize, Block>,
    /// The IOVA ranges `VFIO_IOMMU_GET_INFO` reports, `[start, end]` each (`None`: no such
    /// capability, as from a kernel before 5.4).
    pub iova_ranges: Option<Vec<(u64, u64)>>,
    /// IOMMU mappings: iova -> (vaddr, length).
    pub dma: BTreeMap<u64, (usize, usize)>,
    /// Most IOMMU mappings at once, as type1's `dma_entry_limit` (65535 by default): a map
    /// beyond it fails with ENOSPC, as the kernel's does.
    pub dma_limit: usize,
    /// IOMMU map calls made (successful or not).
    pub dma_maps: usize,
    pub fail_unmap: bool,
    /// Physical address base of hugepage memory in the fake pagemap (0: no PFNs, as for a
    /// process without CAP_SYS_ADMIN).
    pub phys_base: u64,
    pub resets: u32,
    /// The device fell off the bus ([`Twin::unplug`]).
    pub gone: bool,
    /// Every call, by name.
    pub calls: Vec<String>,
}

/// The twin.
#[derive(Debug)]
pub struct Twin(pub Mutex<State>);

/// File offset of region `index` (as vfio-pci lays them out: index << 40).
pub fn region_offset(index: u32) -> u64 {
    u64::from(index) << 40
}

impl Twin {
    /// A device at `bdf` in group `group`: BAR0 16 MiB (mappable), BAR1 `bar1` bytes
    /// (mappable, sparse areas if given), BAR3 32 MiB, a 4 KiB config region, 8 hugepages.
    pub fn gpu(group: u32, bdf: &str, bar1: u64, bar1_sparse: Option<Vec<(u64, u64)>>) -> Twin {
        let rw = b::VFIO_REGION_INFO_FLAG_READ | b::VFIO_REGION_INFO_FLAG_WRITE;
        let mmap = rw | b::VFIO_REGION_INFO_FLAG_MMAP;
        let mut regions = vec![
            FakeRegion {
                index: 0,
                flags: mmap,
                size: 16 << 20,
                offset: region_offset(0),
                sparse: None,
            },
            FakeRegion {
                index: 1,
                flags: mmap
                    | if bar1_sparse.is_some() {
                        b::VFIO_REGION_INFO_FLAG_CAPS
                    } else {
                        0
                    },
                size: bar1,
                offset: region_offset(1),
                sparse: bar1_sparse,
            },
            FakeRegion {
                index: 3,
                flags: mmap,
                size: 32 << 20,
                offset: region_offset(3),
                sparse: None,
            },
            FakeRegion {
                index: 7,
                flags: rw,
                size: 4096,
                offset: region_offset(7),
                sparse: None,
            },
        ];
        regions.sort_by_key(|r| r.index);
        let mut backing = BTreeMap::new();
        for r in &regions {
            backing.insert(r.offset, Block::new(r.size as usize));
        }
        let mut nodes = HashMap::new();
        nodes.insert(PathBuf::from("dev/vfio/vfio"), Kind::Container);
        nodes.insert(PathBuf::from("dev/iommu"), Kind::Iommufd);
        nodes.insert(PathBuf::from("dev/vfio/devices/vfio0"), Kind::Device);
        nodes.insert(PathBuf::from(format!("dev/vfio/{group}")), Kind::Group);
        nodes.insert(
            PathBuf::from(format!("dev/vfio/noiommu-{group}")),
            Kind::Group,
        );
        let twin = Twin(Mutex::new(State {
            nodes,
            open_errors: HashMap::new(),
            api_version: 0,
            extensions: vec![b::VFIO_TYPE1v2_IOMMU, b::VFIO_NOIOMMU_IOMMU],
            group_flags: b::VFIO_GROUP_FLAGS_VIABLE,
            iommu_set: None,
            no_interrupt_remapping: false,
            container_set: false,
            device_flags: b::VFIO_DEVICE_FLAGS_PCI | b::VFIO_DEVICE_FLAGS_RESET,
            regions,
            backing,
            mmaps: HashMap::new(),
            hugepages_free: 8,
            hugepages: BTreeMap::new(),
            // What an x86 IOMMU reports: the MSI window left out, 48 bits.
            iova_ranges: Some(vec![(0, 0xfedf_ffff), (0xfef0_0000, (1 << 48) - 1)]),
            dma: BTreeMap::new(),
            dma_limit: 65535,
            dma_maps: 0,
            fail_unmap: false,
            phys_base: 0x40_0000_0000,
            resets: 0,
            gone: false,
            calls: Vec::new(),
        }));
        let _ = bdf;
        twin
    }

    /// Bytes of region `index` at `offset`, read from the backing store.
    pub fn peek(&self, index: u32, offset: u64, len: usize) -> Vec<u8> {
        let s = self.0.lock().unwrap();
        let block = &s.backing[&region_offset(index)];
        let mut out = vec![0u8; len];
        // SAFETY: test memory, inside the block (tests stay in range).
        unsafe {
            std::ptr::copy(
                block.ptr.as_ptr().add(offset as usize),
                out.as_mut_ptr(),
                len,
            )
        };
        out
    }

    /// The device falls off the bus, as the guest kernel saw it in tests/vm/run: every BAR and
    /// config read gives all ones (a read of an absent device completes with all ones) except
    /// the vendor and device ids, which vfio-pci serves from its virtualized copy of config
    /// space (`init_pci_cap_basic_perm`), so they keep reading NVIDIA's; writes go nowhere;
    /// `VFIO_DEVICE_RESET` fails with ENOTTY (the kernel's FLR waits for config space to
    /// answer, `pci_dev_wait`, and gives up: "not ready after FLR; giving up"). Writes through
    /// an existing mapping still land in the twin's memory: a test reads through `pread` or
    /// before such writes.
    pub fn unplug(&self) {
        let mut s = self.0.lock().unwrap();
        s.gone = true;
        let config = region_offset(7);
        for (&at, block) in &s.backing {
            // The virtualized ids: the first 4 bytes of config space stay.
            let keep = if at == config { 4 } else { 0 };
            // SAFETY: test memory, inside the block.
            unsafe {
                std::ptr::write_bytes(
                    block.ptr.as_ptr().add(keep),
                    0xff,
                    block.layout.size() - keep,
                )
            };
        }
    }

    /// Writes bytes into region `index` at `offset` (what the device shows).
    pub fn poke(&self, index: u32, offset: u64, data: &[u8]) {
        let s = self.0.lock().unwrap();
        let block = &s.backing[&region_offset(index)];
        // SAFETY: test memory, inside the block.
        unsafe {
            std::ptr::copy(
                data.as_ptr(),
                block.ptr.as_ptr().add(offset as usize),
                data.len(),
            )
        };
    }

    fn rel(path: &Path) -> PathBuf {
        // The fake sysfs root is a temporary directory: keep what follows `dev/`.
        let s = path.to_string_lossy();
        PathBuf::from(&s[s.find("dev/").unwrap_or(0)..])
    }

    fn find(s: &State, offset: u64, len: usize) -> io::Result<*mut u8> {
        let (&base, block) = s
            .backing
            .range(..=offset)
            .next_back()
            .ok_or(io::Error::from_raw_os_error(libc::EINVAL))?;
        let rel = (offset - base) as usize;
        if rel + len > block.layout.size() {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: inside the block.
        Ok(unsafe { block.ptr.as_ptr().add(rel) })
    }
}

fn region_info_bytes(r: &FakeRegion) -> Vec<u8> {
    let mut v = Vec::new();
    let cap_offset = if r.sparse.is_some() { 32u32 } else { 0 };
    let areas = r.sparse.as_deref().unwrap_or(&[]);
    let argsz = 32
        + if r.sparse.is_some() {
            16 + 16 * areas.len()
        } else {
            0
        };
    v.extend_from_slice(&(argsz as u32).to_ne_bytes());
    v.extend_from_slice(&r.flags.to_ne_bytes());
    v.extend_from_slice(&r.index.to_ne_bytes());
    v.extend_from_slice(&cap_offset.to_ne_bytes());
    v.extend_from_slice(&r.size.to_ne_bytes());
    v.extend_from_slice(&r.offset.to_ne_bytes());
    if r.sparse.is_some() {
        v.extend_from_slice(&(b::VFIO_REGION_INFO_CAP_SPARSE_MMAP as u16).to_ne_bytes());
        v.extend_from_slice(&1u16.to_ne_bytes());
        v.extend_from_slice(&0u32.to_ne_bytes());
        v.extend_from_slice(&(areas.len() as u32).to_ne_bytes());
        v.extend_from_slice(&0u32.to_ne_bytes());
        for (o, s) in areas {
            v.extend_from_slice(&o.to_ne_bytes());
            v.extend_from_slice(&s.to_ne_bytes());
        }
    }
    v
}

/// `vfio_iommu_type1_info` with the IOVA-range capability when there are ranges.
fn iommu_info_bytes(ranges: Option<&[(u64, u64)]>) -> Vec<u8> {
    let mut v = Vec::new();
    let caps = ranges.map_or(0, |r| 16 + 16 * r.len());
    let mut flags = b::VFIO_IOMMU_INFO_PGSIZES;
    if ranges.is_some() {
        flags |= b::VFIO_IOMMU_INFO_CAPS;
    }
    v.extend_from_slice(&((24 + caps) as u32).to_ne_bytes());
    v.extend_from_slice(&flags.to_ne_bytes());
    v.extend_from_slice(&(4096u64 | 2 << 20 | 1 << 30).to_ne_bytes());
    v.extend_from_slice(&(if ranges.is_some() { 24u32 } else { 0 }).to_ne_bytes());
    v.extend_from_slice(&0u32.to_ne_bytes());
    if let Some(ranges) = ranges {
        v.extend_from_slice(&(b::VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE as u16).to_ne_bytes());
        v.extend_from_slice(&1u16.to_ne_bytes());
        v.extend_from_slice(&0u32.to_ne_bytes());
        v.extend_from_slice(&(ranges.len() as u32).to_ne_bytes());
        v.extend_from_slice(&0u32.to_ne_bytes());
        for (start, end) in ranges {
            v.extend_from_slice(&start.to_ne_bytes());
            v.extend_from_slice(&end.to_ne_bytes());
        }
    }
    v
}

fn err(errno: i32) -> io::Error {
    io::Error::from_raw_os_error(errno)
}

impl VfioSys for Twin {
    type Fd = FakeFd;

    fn open(&self, path: &Path) -> io::Result<FakeFd> {
        let mut s = self.0.lock().unwrap();
        let rel = Self::rel(path);
        s.calls.push(format!("open {}", rel.display()));
        if let Some(&e) = s.open_errors.get(&rel) {
            return Err(err(e));
        }
        let kind = *s.nodes.get(&rel).ok_or(err(libc::ENOENT))?;
        Ok(FakeFd { kind })
    }

    fn api_version(&self, c: &FakeFd) -> io::Result<i32> {
        assert_eq!(c.kind, Kind::Container);
        Ok(self.0.lock().unwrap().api_version)
    }

    fn check_extension(&self, _: &FakeFd, ext: u32) -> io::Result<bool> {
        Ok(self.0.lock().unwrap().extensions.contains(&ext))
    }

    fn set_iommu(&self, _: &FakeFd, kind: u32) -> io::Result<()> {
        let mut s = self.0.lock().unwrap();
        assert!(
            s.container_set,
            "VFIO_SET_IOMMU needs a group in the container"
        );
        s.calls.push(format!("set_iommu {kind}"));
        if s.no_interrupt_remapping && kind != b::VFIO_NOIOMMU_IOMMU {
            return Err(io::Error::from_raw_os_error(libc::EPERM));
        }
        s.iommu_set = Some(kind);
        Ok(())
    }

    fn group_flags(&self, g: &FakeFd) -> io::Result<u32> {
        assert_eq!(g.kind, Kind::Group);
        Ok(self.0.lock().unwrap().group_flags)
    }

    fn group_set_container(&self, _: &FakeFd, _: &FakeFd) -> io::Result<()> {
        self.0.lock().unwrap().container_set = true;
        Ok(())
    }

    fn group_unset_container(&self, _: &FakeFd) -> io::Result<()> {
        self.0.lock().unwrap().container_set = false;
        Ok(())
    }

    fn group_device(&self, g: &FakeFd, name: &str) -> io::Result<FakeFd> {
        assert_eq!(g.kind, Kind::Group);
        let mut s = self.0.lock().unwrap();
        s.calls.push(format!("get_device {name}"));
        if s.iommu_set.is_none() {
            return Err(err(libc::EINVAL));
        }
        Ok(FakeFd { kind: Kind::Device })
    }

    fn device_info(&self, _: &FakeFd) -> io::Result<DeviceInfo> {
        let s = self.0.lock().unwrap();
        Ok(DeviceInfo {
            flags: s.device_flags,
            num_regions: 9,
        })
    }

    fn region_info(&self, _: &FakeFd, index: u32) -> io::Result<Vec<u8>> {
        let s = self.0.lock().unwrap();
        Ok(match s.regions.iter().find(|r| r.index == index) {
            Some(r) => region_info_bytes(r),
            None => region_info_bytes(&FakeRegion {
                index,
                flags: 0,
                size: 0,
                offset: region_offset(index),
                sparse: None,
            }),
        })
    }

    fn device_reset(&self, _: &FakeFd) -> io::Result<()> {
        let mut s = self.0.lock().unwrap();
        s.resets += 1;
        s.calls.push("reset".into());
        if s.gone {
            return Err(err(libc::ENOTTY));
        }
        Ok(())
    }

    fn pread(&self, _: &FakeFd, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let s = self.0.lock().unwrap();
        let p = Self::find(&s, offset, buf.len())?;
        // SAFETY: inside a block (checked by `find`).
        unsafe { std::ptr::copy(p, buf.as_mut_ptr(), buf.len()) };
        Ok(())
    }

    fn pwrite(&self, _: &FakeFd, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut s = self.0.lock().unwrap();
        if offset == region_offset(7) + 4 {
            s.calls.push(format!(
                "command {:#x}",
                u16::from_le_bytes([buf[0], buf[1]])
            ));
        }
        let p = Self::find(&s, offset, buf.len())?;
        if s.gone {
            return Ok(());
        }
        // SAFETY: inside a block.
        unsafe { std::ptr::copy(buf.as_ptr(), p, buf.len()) };
        Ok(())
    }

    fn mmap_device(&self, _: &FakeFd, offset: u64, len: usize) -> io::Result<NonNull<u8>> {
        let mut s = self.0.lock().unwrap();
        let r = s
            .regions
            .iter()
            .find(|r| offset >= r.offset && offset < r.offset + r.size.max(1))
            .ok_or(err(libc::EINVAL))?;
        if r.flags & b::VFIO_REGION_INFO_FLAG_MMAP == 0 {
            return Err(err(libc::EINVAL));
        }
        if let Some(areas) = &r.sparse {
            let rel = offset - r.offset;
            if !areas
                .iter()
                .any(|&(o, sz)| rel >= o && rel + len as u64 <= o + sz)
            {
                return Err(err(libc::EINVAL));
            }
        }
        let p = Self::find(&s, offset, len)?;
        s.mmaps.insert(p as usize, (offset, len));
        Ok(NonNull::new(p).unwrap())
    }

    fn alloc_hugepages(&self, len: usize) -> io::Result<NonNull<u8>> {
        let mut s = self.0.lock().unwrap();
        assert!(len.is_multiple_of(2 << 20), "hugepage multiple");
        let n = len / (2 << 20);
        if n > s.hugepages_free {
            return Err(err(libc::ENOMEM));
        }
        s.hugepages_free -= n;
        let block = Block::new(len);
        let p = block.ptr;
        s.hugepages.insert(p.as_ptr() as usize, block);
        Ok(p)
    }

    unsafe fn munmap(&self, ptr: NonNull<u8>, len: usize) -> io::Result<()> {
        let mut s = self.0.lock().unwrap();
        let key = ptr.as_ptr() as usize;
        if s.mmaps.remove(&key).is_some() {
            return Ok(());
        }
        let block = s.hugepages.remove(&key).ok_or(err(libc::EINVAL))?;
        assert_eq!(block.layout.size(), len);
        assert!(
            !s.dma
                .values()
                .any(|&(va, l)| va < key + len && key < va + l),
            "hugepages unmapped while still in the IOMMU"
        );
        s.hugepages_free += len / (2 << 20);
        Ok(())
    }

    fn iommu_info(&self, c: &FakeFd) -> io::Result<Vec<u8>> {
        assert_eq!(c.kind, Kind::Container);
        let mut s = self.0.lock().unwrap();
        assert!(
            s.iommu_set.is_some(),
            "VFIO_IOMMU_GET_INFO needs VFIO_SET_IOMMU"
        );
        s.calls.push("iommu_info".into());
        Ok(iommu_info_bytes(s.iova_ranges.as_deref()))
    }

    unsafe fn dma_map(
        &self,
        _: &FakeFd,
        vaddr: NonNull<u8>,
        iova: u64,
        len: usize,
    ) -> io::Result<()> {
        let mut s = self.0.lock().unwrap();
        s.dma_maps += 1;
        if s.dma.len() >= s.dma_limit {
            return Err(err(libc::ENOSPC));
        }
        if s.dma
            .range(..iova + len as u64)
            .next_back()
            .is_some_and(|(&i, &(_, l))| i + l as u64 > iova)
        {
            return Err(err(libc::EEXIST));
        }
        s.dma.insert(iova, (vaddr.as_ptr() as usize, len));
        Ok(())
    }

    fn dma_unmap(&self, _: &FakeFd, iova: u64, len: usize) -> io::Result<u64> {
        let mut s = self.0.lock().unwrap();
        if s.fail_unmap {
            return Err(err(libc::EINVAL));
        }
        match s.dma.remove(&iova) {
            Some((_, l)) if l == len => Ok(len as u64),
            _ => Ok(0),
        }
    }

    fn pagemap_entry(&self, vaddr: usize) -> io::Result<u64> {
        let s = self.0.lock().unwrap();
        if s.phys_base == 0 {
            // Present, but no PFN: what an unprivileged process reads.
            return Ok(1 << 63);
        }
        // Each block sits at its own 64 MiB physical range; inside it the 2 MiB hugepages lie
        // in reverse order, so a 4 KiB page run is contiguous only within one hugepage.
        let (&base, block) = s
            .hugepages
            .range(..=vaddr)
            .next_back()
            .filter(|(b, blk)| vaddr < *b + blk.layout.size())
            .ok_or(err(libc::EFAULT))?;
        let nth = s.hugepages.keys().filter(|&&k| k < base).count() as u64;
        let rel = vaddr - base;
        let huge = (block.layout.size() / (2 << 20) - 1 - rel / (2 << 20)) as u64;
        let phys = s.phys_base - nth * (64 << 20) + huge * (2 << 20) + (rel % (2 << 20)) as u64;
        Ok((1 << 63) | (phys / 4096))
    }

    #[cfg(feature = "iommufd")]
    fn ioas_alloc(&self, fd: &FakeFd) -> io::Result<u32> {
        assert_eq!(fd.kind, Kind::Iommufd);
        self.0.lock().unwrap().calls.push("ioas_alloc".into());
        Ok(1)
    }

    #[cfg(feature = "iommufd")]
    fn bind_and_attach(&self, dev: &FakeFd, fd: &FakeFd, ioas: u32) -> io::Result<()> {
        assert_eq!((dev.kind, fd.kind, ioas), (Kind::Device, Kind::Iommufd, 1));
        self.0.lock().unwrap().calls.push("bind_and_attach".into());
        Ok(())
    }

    #[cfg(feature = "iommufd")]
    unsafe fn ioas_map(
        &self,
        c: &FakeFd,
        _: u32,
        vaddr: NonNull<u8>,
        iova: u64,
        len: usize,
    ) -> io::Result<()> {
        // SAFETY: forwarded contract.
        unsafe { self.dma_map(c, vaddr, iova, len) }
    }

    #[cfg(feature = "iommufd")]
    fn ioas_unmap(&self, c: &FakeFd, _: u32, iova: u64, len: usize) -> io::Result<u64> {
        self.dma_unmap(c, iova, len)
    }

    #[cfg(feature = "iommufd")]
    fn ioas_iova_ranges(&self, fd: &FakeFd, ioas: u32) -> io::Result<Vec<(u64, u64)>> {
        assert_eq!((fd.kind, ioas), (Kind::Iommufd, 1));
        let mut s = self.0.lock().unwrap();
        s.calls.push("ioas_iova_ranges".into());
        // iommufd always answers; an IOAS without limits allows everything.
        Ok(s.iova_ranges.clone().unwrap_or(vec![(0, u64::MAX)]))
    }
}
