//! Every system call of the VFIO platform, behind [`VfioSys`]: the kernel's ([`LinuxSys`],
//! ioctls through `nix` with `vfio-bindings`' structures) or a test twin (`twin.rs`), so the
//! platform's logic runs in tests without a GPU or `/dev/vfio`.
//!
//! Ioctl numbers are `_IO(';', 100 + n)` for VFIO (`linux/vfio.h`) and `_IO(';', 0x80 + n)`
//! for iommufd (`linux/iommufd.h`); the structures carry bindgen's layout assertions.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::ptr::NonNull;

/// `VFIO_DEVICE_GET_INFO`'s answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// `VFIO_DEVICE_FLAGS_*`.
    pub flags: u32,
    /// Number of regions (BARs 0-5, ROM, config, VGA, device-specific).
    pub num_regions: u32,
}

/// The system calls the VFIO platform makes.
pub trait VfioSys: Send + Sync + fmt::Debug + 'static {
    /// An open file (container, group, device, iommufd).
    type Fd: fmt::Debug + Send + Sync + 'static;

    /// Opens `path` read-write.
    fn open(&self, path: &Path) -> io::Result<Self::Fd>;
    /// `VFIO_GET_API_VERSION`.
    fn api_version(&self, container: &Self::Fd) -> io::Result<i32>;
    /// `VFIO_CHECK_EXTENSION`.
    fn check_extension(&self, container: &Self::Fd, ext: u32) -> io::Result<bool>;
    /// `VFIO_SET_IOMMU`.
    fn set_iommu(&self, container: &Self::Fd, kind: u32) -> io::Result<()>;
    /// `VFIO_GROUP_GET_STATUS`: the group's flags.
    fn group_flags(&self, group: &Self::Fd) -> io::Result<u32>;
    /// `VFIO_GROUP_SET_CONTAINER`.
    fn group_set_container(&self, group: &Self::Fd, container: &Self::Fd) -> io::Result<()>;
    /// `VFIO_GROUP_UNSET_CONTAINER`.
    fn group_unset_container(&self, group: &Self::Fd) -> io::Result<()>;
    /// `VFIO_GROUP_GET_DEVICE_FD`.
    fn group_device(&self, group: &Self::Fd, name: &str) -> io::Result<Self::Fd>;
    /// `VFIO_DEVICE_GET_INFO`.
    fn device_info(&self, device: &Self::Fd) -> io::Result<DeviceInfo>;
    /// `VFIO_DEVICE_GET_REGION_INFO` with room for every capability: the raw
    /// `vfio_region_info` and its capability chain.
    fn region_info(&self, device: &Self::Fd, index: u32) -> io::Result<Vec<u8>>;
    /// `VFIO_DEVICE_RESET`.
    fn device_reset(&self, device: &Self::Fd) -> io::Result<()>;
    /// Reads all of `buf` at file offset `offset` of the device.
    fn pread(&self, device: &Self::Fd, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Writes all of `buf` at file offset `offset` of the device.
    fn pwrite(&self, device: &Self::Fd, buf: &[u8], offset: u64) -> io::Result<()>;
    /// Maps `len` bytes of the device at file offset `offset`, shared, read-write.
    fn mmap_device(&self, device: &Self::Fd, offset: u64, len: usize) -> io::Result<NonNull<u8>>;
    /// Anonymous memory of `len` bytes (a multiple of 2 MiB) from 2 MiB hugepages, locked in
    /// memory (mlock), not inherited by children (MADV_DONTFORK), zeroed.
    fn alloc_hugepages(&self, len: usize) -> io::Result<NonNull<u8>>;
    /// Unmaps a mapping made by `mmap_device` or `alloc_hugepages`.
    ///
    /// # Safety
    /// `ptr`/`len` is exactly one such mapping, and nothing uses it afterwards.
    unsafe fn munmap(&self, ptr: NonNull<u8>, len: usize) -> io::Result<()>;
    /// `VFIO_IOMMU_GET_INFO` with room for every capability: the raw `vfio_iommu_type1_info`
    /// and its capability chain.
    fn iommu_info(&self, container: &Self::Fd) -> io::Result<Vec<u8>>;
    /// `VFIO_IOMMU_MAP_DMA`: the device may read and write `[vaddr, vaddr + len)` at `iova`.
    ///
    /// # Safety
    /// The memory must stay mapped until `dma_unmap` of the same range, and be accessed only
    /// through raw pointers (volatile) meanwhile: the device writes it at any time.
    unsafe fn dma_map(
        &self,
        container: &Self::Fd,
        vaddr: NonNull<u8>,
        iova: u64,
        len: usize,
    ) -> io::Result<()>;
    /// `VFIO_IOMMU_UNMAP_DMA`: returns the bytes unmapped.
    fn dma_unmap(&self, container: &Self::Fd, iova: u64, len: usize) -> io::Result<u64>;
    /// The `/proc/self/pagemap` entry of the page holding `vaddr`.
    fn pagemap_entry(&self, vaddr: usize) -> io::Result<u64>;

    /// `IOMMU_IOAS_ALLOC`: a new I/O address space.
    #[cfg(feature = "iommufd")]
    fn ioas_alloc(&self, iommufd: &Self::Fd) -> io::Result<u32>;
    /// `VFIO_DEVICE_BIND_IOMMUFD` then `VFIO_DEVICE_ATTACH_IOMMUFD_PT` to `ioas`.
    #[cfg(feature = "iommufd")]
    fn bind_and_attach(&self, device: &Self::Fd, iommufd: &Self::Fd, ioas: u32) -> io::Result<()>;
    /// `IOMMU_IOAS_MAP` at the fixed `iova`, readable and writable.
    ///
    /// # Safety
    /// As for [`VfioSys::dma_map`].
    #[cfg(feature = "iommufd")]
    unsafe fn ioas_map(
        &self,
        iommufd: &Self::Fd,
        ioas: u32,
        vaddr: NonNull<u8>,
        iova: u64,
        len: usize,
    ) -> io::Result<()>;
    /// `IOMMU_IOAS_UNMAP`: returns the bytes unmapped.
    #[cfg(feature = "iommufd")]
    fn ioas_unmap(&self, iommufd: &Self::Fd, ioas: u32, iova: u64, len: usize) -> io::Result<u64>;
    /// `IOMMU_IOAS_IOVA_RANGES`: the IOVAs `ioas` allows, `(start, last)` each, `last`
    /// inclusive.
    #[cfg(feature = "iommufd")]
    fn ioas_iova_ranges(&self, iommufd: &Self::Fd, ioas: u32) -> io::Result<Vec<(u64, u64)>>;
}

/// The running kernel.
#[derive(Clone, Copy, Debug, Default)]
pub struct LinuxSys;

mod ioctls {
    use nix::{
        ioctl_none_bad, ioctl_readwrite_bad, ioctl_write_int_bad, ioctl_write_ptr_bad,
        request_code_none,
    };
    use vfio_bindings::bindings::vfio::{
        VFIO_BASE, VFIO_TYPE, vfio_device_info, vfio_group_status, vfio_iommu_type1_dma_map,
        vfio_iommu_type1_dma_unmap, vfio_iommu_type1_info, vfio_region_info,
    };

    ioctl_none_bad!(get_api_version, request_code_none!(VFIO_TYPE, VFIO_BASE));
    ioctl_write_int_bad!(
        check_extension,
        request_code_none!(VFIO_TYPE, VFIO_BASE + 1)
    );
    ioctl_write_int_bad!(set_iommu, request_code_none!(VFIO_TYPE, VFIO_BASE + 2));
    ioctl_readwrite_bad!(
        group_get_status,
        request_code_none!(VFIO_TYPE, VFIO_BASE + 3),
        vfio_group_status
    );
    ioctl_write_ptr_bad!(
        group_set_container,
        request_code_none!(VFIO_TYPE, VFIO_BASE + 4),
        libc::c_int
    );
    ioctl_none_bad!(
        group_unset_container,
        request_code_none!(VFIO_TYPE, VFIO_BASE + 5)
    );
    ioctl_write_ptr_bad!(
        group_get_device_fd,
        request_code_none!(VFIO_TYPE, VFIO_BASE + 6),
        libc::c_char
    );
    ioctl_readwrite_bad!(
        device_get_info,
        request_code_none!(VFIO_TYPE, VFIO_BASE + 7),
        vfio_device_info
    );
    ioctl_readwrite_bad!(
        device_get_region_info,
        request_code_none!(VFIO_TYPE, VFIO_BASE + 8),
        vfio_region_info
    );
    ioctl_none_bad!(device_reset, request_code_none!(VFIO_TYPE, VFIO_BASE + 11));
    ioctl_readwrite_bad!(
        iommu_get_info,
        request_code_none!(VFIO_TYPE, VFIO_BASE + 12),
        vfio_iommu_type1_info
    );
    ioctl_write_ptr_bad!(
        iommu_map_dma,
        request_code_none!(VFIO_TYPE, VFIO_BASE + 13),
        vfio_iommu_type1_dma_map
    );
    ioctl_readwrite_bad!(
        iommu_unmap_dma,
        request_code_none!(VFIO_TYPE, VFIO_BASE + 14),
        vfio_iommu_type1_dma_unmap
    );

    #[cfg(feature = "iommufd")]
    pub use self::iommufd::*;
    #[cfg(feature = "iommufd")]
    mod iommufd {
        use iommufd_bindings::iommufd::{
            IOMMUFD_CMD_IOAS_ALLOC, IOMMUFD_CMD_IOAS_IOVA_RANGES, IOMMUFD_CMD_IOAS_MAP,
            IOMMUFD_CMD_IOAS_UNMAP, IOMMUFD_TYPE, iommu_ioas_alloc, iommu_ioas_iova_ranges,
            iommu_ioas_map, iommu_ioas_unmap,
        };
        use nix::{ioctl_readwrite_bad, request_code_none};
        use vfio_bindings::bindings::vfio::{
            VFIO_BASE, VFIO_TYPE, vfio_device_attach_iommufd_pt, vfio_device_bind_iommufd,
        };

        ioctl_readwrite_bad!(
            device_bind_iommufd,
            request_code_none!(VFIO_TYPE, VFIO_BASE + 18),
            vfio_device_bind_iommufd
        );
        ioctl_readwrite_bad!(
            device_attach_pt,
            request_code_none!(VFIO_TYPE, VFIO_BASE + 19),
            vfio_device_attach_iommufd_pt
        );
        ioctl_readwrite_bad!(
            ioas_alloc,
            request_code_none!(IOMMUFD_TYPE, IOMMUFD_CMD_IOAS_ALLOC),
            iommu_ioas_alloc
        );
        ioctl_readwrite_bad!(
            ioas_map,
            request_code_none!(IOMMUFD_TYPE, IOMMUFD_CMD_IOAS_MAP),
            iommu_ioas_map
        );
        ioctl_readwrite_bad!(
            ioas_unmap,
            request_code_none!(IOMMUFD_TYPE, IOMMUFD_CMD_IOAS_UNMAP),
            iommu_ioas_unmap
        );
        ioctl_readwrite_bad!(
            ioas_iova_ranges,
            request_code_none!(IOMMUFD_TYPE, IOMMUFD_CMD_IOAS_IOVA_RANGES),
            iommu_ioas_iova_ranges
        );
    }
}

use vfio_bindings::bindings::vfio as b;

/// `argsz` of a structure (all VFIO structures are far below 4 GiB).
fn argsz<T>() -> u32 {
    // CAST: kernel ABI structures are a few dozen bytes.
    std::mem::size_of::<T>() as u32
}

impl VfioSys for LinuxSys {
    type Fd = File;

    fn open(&self, path: &Path) -> io::Result<File> {
        OpenOptions::new().read(true).write(true).open(path)
    }

    fn api_version(&self, container: &File) -> io::Result<i32> {
        // SAFETY: VFIO_GET_API_VERSION takes no argument.
        Ok(unsafe { ioctls::get_api_version(container.as_raw_fd()) }?)
    }

    fn check_extension(&self, container: &File, ext: u32) -> io::Result<bool> {
        // CAST: extension numbers are small constants.
        // SAFETY: VFIO_CHECK_EXTENSION takes an integer argument.
        let r = unsafe { ioctls::check_extension(container.as_raw_fd(), ext as libc::c_int) }?;
        Ok(r > 0)
    }

    fn set_iommu(&self, container: &File, kind: u32) -> io::Result<()> {
        // CAST: IOMMU types are small constants.
        // SAFETY: VFIO_SET_IOMMU takes an integer argument.
        unsafe { ioctls::set_iommu(container.as_raw_fd(), kind as libc::c_int) }?;
        Ok(())
    }

    fn group_flags(&self, group: &File) -> io::Result<u32> {
        let mut s = b::vfio_group_status {
            argsz: argsz::<b::vfio_group_status>(),
            flags: 0,
        };
        // SAFETY: `s` is a valid vfio_group_status the kernel fills.
        unsafe { ioctls::group_get_status(group.as_raw_fd(), &mut s) }?;
        Ok(s.flags)
    }

    fn group_set_container(&self, group: &File, container: &File) -> io::Result<()> {
        let fd = container.as_raw_fd();
        // SAFETY: the argument points to the container's fd, as the ioctl wants.
        unsafe { ioctls::group_set_container(group.as_raw_fd(), &fd) }?;
        Ok(())
    }

    fn group_unset_container(&self, group: &File) -> io::Result<()> {
        // SAFETY: no argument.
        unsafe { ioctls::group_unset_container(group.as_raw_fd()) }?;
        Ok(())
    }

    fn group_device(&self, group: &File, name: &str) -> io::Result<File> {
        let name = std::ffi::CString::new(name)
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: a NUL-terminated device name, as the ioctl wants.
        let fd = unsafe { ioctls::group_get_device_fd(group.as_raw_fd(), name.as_ptr()) }?;
        // SAFETY: the kernel returned a new fd that nothing else owns.
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    fn device_info(&self, device: &File) -> io::Result<DeviceInfo> {
        let mut i = b::vfio_device_info {
            argsz: argsz::<b::vfio_device_info>(),
            flags: 0,
            num_regions: 0,
            num_irqs: 0,
            cap_offset: 0,
            pad: 0,
        };
        // SAFETY: `i` is a valid vfio_device_info the kernel fills.
        unsafe { ioctls::device_get_info(device.as_raw_fd(), &mut i) }?;
        Ok(DeviceInfo {
            flags: i.flags,
            num_regions: i.num_regions,
        })
    }

    fn region_info(&self, device: &File, index: u32) -> io::Result<Vec<u8>> {
        let base = argsz::<b::vfio_region_info>();
        let mut want = base;
        // Twice at most: the first answer says how much room the capabilities need.
        for _ in 0..2 {
            // u64 words keep the buffer aligned for the structure's u64 fields.
            let words = (want as usize).div_ceil(8);
            let mut buf = vec![0u64; words];
            let info = buf.as_mut_ptr().cast::<b::vfio_region_info>();
            // SAFETY: `buf` holds at least `want` >= sizeof(vfio_region_info) bytes, aligned
            // for it; argsz tells the kernel how much it may write.
            unsafe {
                (*info).argsz = want;
                (*info).index = index;
                ioctls::device_get_region_info(device.as_raw_fd(), info)?;
            }
            // SAFETY: the kernel filled the header.
            let got = unsafe { (*info).argsz };
            if got <= want {
                let bytes: Vec<u8> = buf.iter().flat_map(|w| w.to_ne_bytes()).collect();
                return Ok(bytes[..want as usize].to_vec());
            }
            want = got;
        }
        Err(io::Error::other("region info kept growing"))
    }

    fn device_reset(&self, device: &File) -> io::Result<()> {
        // SAFETY: no argument.
        unsafe { ioctls::device_reset(device.as_raw_fd()) }?;
        Ok(())
    }

    fn pread(&self, device: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
        device.read_exact_at(buf, offset)
    }

    fn pwrite(&self, device: &File, buf: &[u8], offset: u64) -> io::Result<()> {
        device.write_all_at(buf, offset)
    }

    fn mmap_device(&self, device: &File, offset: u64, len: usize) -> io::Result<NonNull<u8>> {
        use nix::sys::mman::{MapFlags, ProtFlags, mmap};
        let len = std::num::NonZeroUsize::new(len).ok_or(io::ErrorKind::InvalidInput)?;
        let offset = i64::try_from(offset).map_err(|_| io::ErrorKind::InvalidInput)?;
        // SAFETY: a new shared mapping chosen by the kernel; it aliases nothing of ours.
        let p = unsafe {
            mmap(
                None,
                len,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
                device,
                offset,
            )
        }?;
        Ok(p.cast())
    }

    fn alloc_hugepages(&self, len: usize) -> io::Result<NonNull<u8>> {
        use nix::sys::mman::{MapFlags, MmapAdvise, ProtFlags, madvise, mlock, mmap_anonymous};
        let n = std::num::NonZeroUsize::new(len).ok_or(io::ErrorKind::InvalidInput)?;
        // SAFETY: a new private anonymous mapping; it aliases nothing.
        let p = unsafe {
            mmap_anonymous(
                None,
                n,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_PRIVATE
                    | MapFlags::MAP_HUGETLB
                    | MapFlags::MAP_HUGE_2MB
                    | MapFlags::MAP_POPULATE,
            )
        }?;
        // SAFETY: `p`/`len` is the mapping just made.
        let pinned =
            unsafe { mlock(p, len).and_then(|()| madvise(p, len, MmapAdvise::MADV_DONTFORK)) };
        if let Err(e) = pinned {
            // SAFETY: the mapping just made, used by nothing.
            let _ = unsafe { nix::sys::mman::munmap(p, len) };
            return Err(e.into());
        }
        Ok(p.cast())
    }

    unsafe fn munmap(&self, ptr: NonNull<u8>, len: usize) -> io::Result<()> {
        // SAFETY: the caller's contract: exactly one mapping of ours, unused from now on.
        unsafe { nix::sys::mman::munmap(ptr.cast(), len) }?;
        Ok(())
    }

    fn iommu_info(&self, container: &File) -> io::Result<Vec<u8>> {
        let mut want = argsz::<b::vfio_iommu_type1_info>();
        // Twice at most: the first answer says how much room the capabilities need.
        for _ in 0..2 {
            // u64 words keep the buffer aligned for the structure's u64 field.
            let words = (want as usize).div_ceil(8);
            let mut buf = vec![0u64; words];
            let info = buf.as_mut_ptr().cast::<b::vfio_iommu_type1_info>();
            // SAFETY: `buf` holds at least `want` >= sizeof(vfio_iommu_type1_info) bytes,
            // aligned for it; argsz tells the kernel how much it may write.
            unsafe {
                (*info).argsz = want;
                ioctls::iommu_get_info(container.as_raw_fd(), info)?;
            }
            // SAFETY: the kernel filled the header.
            let got = unsafe { (*info).argsz };
            if got <= want {
                let bytes: Vec<u8> = buf.iter().flat_map(|w| w.to_ne_bytes()).collect();
                return Ok(bytes[..want as usize].to_vec());
            }
            want = got;
        }
        Err(io::Error::other("IOMMU info kept growing"))
    }

    unsafe fn dma_map(
        &self,
        container: &File,
        vaddr: NonNull<u8>,
        iova: u64,
        len: usize,
    ) -> io::Result<()> {
        let m = b::vfio_iommu_type1_dma_map {
            argsz: argsz::<b::vfio_iommu_type1_dma_map>(),
            flags: b::VFIO_DMA_MAP_FLAG_READ | b::VFIO_DMA_MAP_FLAG_WRITE,
            vaddr: vaddr.as_ptr() as u64,
            iova,
            size: len as u64,
        };
        // SAFETY: a valid map request; the caller keeps the memory mapped while it is in the
        // IOMMU.
        unsafe { ioctls::iommu_map_dma(container.as_raw_fd(), &m) }?;
        Ok(())
    }

    fn dma_unmap(&self, container: &File, iova: u64, len: usize) -> io::Result<u64> {
        let mut u = b::vfio_iommu_type1_dma_unmap {
            argsz: argsz::<b::vfio_iommu_type1_dma_unmap>(),
            flags: 0,
            iova,
            size: len as u64,
            data: Default::default(),
        };
        // SAFETY: a valid unmap request the kernel updates with the size unmapped.
        unsafe { ioctls::iommu_unmap_dma(container.as_raw_fd(), &mut u) }?;
        Ok(u.size)
    }

    fn pagemap_entry(&self, vaddr: usize) -> io::Result<u64> {
        let f = File::open("/proc/self/pagemap")?;
        let mut e = [0u8; 8];
        f.read_exact_at(&mut e, (vaddr / 4096 * 8) as u64)?;
        Ok(u64::from_ne_bytes(e))
    }

    #[cfg(feature = "iommufd")]
    fn ioas_alloc(&self, iommufd: &File) -> io::Result<u32> {
        let mut a = iommufd_bindings::iommufd::iommu_ioas_alloc {
            size: argsz::<iommufd_bindings::iommufd::iommu_ioas_alloc>(),
            flags: 0,
            out_ioas_id: 0,
        };
        // SAFETY: a valid request the kernel fills.
        unsafe { ioctls::ioas_alloc(iommufd.as_raw_fd(), &mut a) }?;
        Ok(a.out_ioas_id)
    }

    #[cfg(feature = "iommufd")]
    fn bind_and_attach(&self, device: &File, iommufd: &File, ioas: u32) -> io::Result<()> {
        let mut bind = b::vfio_device_bind_iommufd {
            argsz: argsz::<b::vfio_device_bind_iommufd>(),
            flags: 0,
            iommufd: iommufd.as_raw_fd(),
            out_devid: 0,
            token_uuid_ptr: 0,
        };
        // SAFETY: a valid request naming our iommufd.
        unsafe { ioctls::device_bind_iommufd(device.as_raw_fd(), &mut bind) }?;
        let mut attach = b::vfio_device_attach_iommufd_pt {
            argsz: argsz::<b::vfio_device_attach_iommufd_pt>(),
            flags: 0,
            pt_id: ioas,
            pasid: 0,
        };
        // SAFETY: a valid request naming our IOAS.
        unsafe { ioctls::device_attach_pt(device.as_raw_fd(), &mut attach) }?;
        Ok(())
    }

    #[cfg(feature = "iommufd")]
    unsafe fn ioas_map(
        &self,
        iommufd: &File,
        ioas: u32,
        vaddr: NonNull<u8>,
        iova: u64,
        len: usize,
    ) -> io::Result<()> {
        use iommufd_bindings::iommufd as i;
        let mut m = i::iommu_ioas_map {
            size: argsz::<i::iommu_ioas_map>(),
            flags: i::iommufd_ioas_map_flags_IOMMU_IOAS_MAP_FIXED_IOVA
                | i::iommufd_ioas_map_flags_IOMMU_IOAS_MAP_READABLE
                | i::iommufd_ioas_map_flags_IOMMU_IOAS_MAP_WRITEABLE,
            ioas_id: ioas,
            __reserved: 0,
            user_va: vaddr.as_ptr() as u64,
            length: len as u64,
            iova,
        };
        // SAFETY: a valid map request; the caller keeps the memory mapped meanwhile.
        unsafe { ioctls::ioas_map(iommufd.as_raw_fd(), &mut m) }?;
        Ok(())
    }

    #[cfg(feature = "iommufd")]
    fn ioas_unmap(&self, iommufd: &File, ioas: u32, iova: u64, len: usize) -> io::Result<u64> {
        use iommufd_bindings::iommufd as i;
        let mut u = i::iommu_ioas_unmap {
            size: argsz::<i::iommu_ioas_unmap>(),
            ioas_id: ioas,
            iova,
            length: len as u64,
        };
        // SAFETY: a valid unmap request the kernel updates.
        unsafe { ioctls::ioas_unmap(iommufd.as_raw_fd(), &mut u) }?;
        Ok(u.length)
    }

    #[cfg(feature = "iommufd")]
    fn ioas_iova_ranges(&self, iommufd: &File, ioas: u32) -> io::Result<Vec<(u64, u64)>> {
        use iommufd_bindings::iommufd as i;
        let mut ranges: Vec<i::iommu_iova_range> = Vec::new();
        // Twice at most: the first answer says how many ranges there are (EMSGSIZE when the
        // room given is too small).
        for _ in 0..2 {
            let mut q = i::iommu_ioas_iova_ranges {
                size: argsz::<i::iommu_ioas_iova_ranges>(),
                ioas_id: ioas,
                // CAST: the room allocated, a count the kernel gave (or 0).
                num_iovas: ranges.len() as u32,
                __reserved: 0,
                allowed_iovas: ranges.as_mut_ptr() as u64,
                out_iova_alignment: 0,
            };
            // SAFETY: `allowed_iovas` points to room for `num_iovas` ranges the kernel fills.
            // CAST (below): range counts are small; u32 fits usize.
            match unsafe { ioctls::ioas_iova_ranges(iommufd.as_raw_fd(), &mut q) } {
                Ok(_) if q.num_iovas as usize <= ranges.len() => {
                    ranges.truncate(q.num_iovas as usize);
                    return Ok(ranges.iter().map(|r| (r.start, r.last)).collect());
                }
                Ok(_) | Err(nix::errno::Errno::EMSGSIZE) => {
                    ranges = vec![i::iommu_iova_range { start: 0, last: 0 }; q.num_iovas as usize];
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(io::Error::other("IOAS IOVA ranges kept growing"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ioctl numbers, against the installed `linux/vfio.h` (when gcc and the header are
    /// there; they are on the development machine and CI).
    #[test]
    fn ioctl_numbers_match_linux_vfio_h() {
        let header = Path::new("/usr/include/linux/vfio.h");
        if !header.exists()
            || std::process::Command::new("cc")
                .arg("--version")
                .output()
                .is_err()
        {
            eprintln!("skipped: no /usr/include/linux/vfio.h or no cc");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("n.c");
        std::fs::write(
            &src,
            "#include <stdio.h>\n#include <linux/vfio.h>\nint main(void){printf(\"%lu %lu %lu \
             %lu %lu %lu %lu\\n\",(unsigned long)VFIO_GET_API_VERSION,(unsigned \
             long)VFIO_GROUP_GET_DEVICE_FD,(unsigned long)VFIO_DEVICE_GET_REGION_INFO,(unsigned \
             long)VFIO_DEVICE_RESET,(unsigned long)VFIO_IOMMU_MAP_DMA,(unsigned \
             long)VFIO_IOMMU_UNMAP_DMA,(unsigned long)VFIO_IOMMU_GET_INFO);return 0;}\n",
        )
        .unwrap();
        let exe = dir.path().join("n");
        let ok = std::process::Command::new("cc")
            .arg(&src)
            .arg("-o")
            .arg(&exe)
            .status()
            .unwrap();
        assert!(ok.success());
        let out = std::process::Command::new(&exe).output().unwrap();
        let got: Vec<u64> = String::from_utf8(out.stdout)
            .unwrap()
            .split_whitespace()
            .map(|w| w.parse().unwrap())
            .collect();
        let ours = |n: u32| -> u64 { nix::request_code_none!(b::VFIO_TYPE, b::VFIO_BASE + n) };
        assert_eq!(
            got,
            [
                ours(0),
                ours(6),
                ours(8),
                ours(11),
                ours(13),
                ours(14),
                ours(12)
            ]
        );
    }

    #[test]
    fn structure_sizes_are_the_kernels() {
        assert_eq!(argsz::<b::vfio_region_info>(), 32);
        assert_eq!(argsz::<b::vfio_iommu_type1_dma_map>(), 32);
        assert_eq!(argsz::<b::vfio_iommu_type1_dma_unmap>(), 24);
        assert_eq!(argsz::<b::vfio_device_info>(), 24);
        assert_eq!(argsz::<b::vfio_iommu_type1_info>(), 24);
    }
}
