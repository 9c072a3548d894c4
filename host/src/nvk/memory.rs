//! Memory on the kernel-driver path: video memory (2 MiB pages for large buffers) and pinned
//! host memory, each an RM object mapped into the GPU VA space at an address nvk chooses
//! (through UVM), and into the CPU at the same address when asked, as CUDA's unified
//! addressing does. The GPU layer above never relies on the two being equal.

use std::collections::BTreeMap;
use std::os::fd::AsRawFd;
use std::ptr::NonNull;
use std::sync::Mutex;

use nvbare_core::gpu::{Buffer, MemoryRequest, Placement};
use nvbare_core::shared::SharedMem;
use nvbare_gsp::rm::alloc::MemoryAllocParams;
use nvbare_gsp::rm::alloc_flags::nvos32_type;
use nvbare_gsp::rm::classes as cls;
use nvbare_mmu::VaAllocator;

use super::backend::{Nvk, open_gpu_file};
use super::flags;
use super::rm::Handle;
use super::{NvkError, NvkMemory as Memory};

/// GPU VAs with a CPU mapping at the same address (below the usual heap/mmap areas of
/// x86-64 Linux): 64 GiB from 0x10_0000_0000.
const CPU_VISIBLE_VA: (u64, u64) = (0x10_0000_0000, 0x10_0000_0000);
/// GPU-only VAs: from 0x20_0000_0000 up to 2^47.
const GPU_ONLY_VA: (u64, u64) = (0x20_0000_0000, (1 << 47) - 0x20_0000_0000);

/// 2 MiB: the big page the GPU maps video memory with for large buffers.
pub const HUGE_PAGE: u64 = 2 << 20;
/// 4 KiB.
pub const SMALL_PAGE: u64 = 4 << 10;

/// How fresh allocations are made (a measurement knob, `NVBARE_ALLOC=rmmap=0|1,huge2m=0|1,rmattrs=0|1`,
/// read once): issue 20's allocation study compares the choices in one device run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocTuning {
    /// Also record each GPU-only video-memory mapping with RM (`NV_ESC_RM_MAP_MEMORY_DMA`)
    /// besides UVM's. CUDA does not (its trace: alloc, UVM external range, UVM map); UVM's
    /// mapping is the one the GPU walks.
    pub rm_map: bool,
    /// Map video memory of 2 MiB and more (a whole number of 2 MiB pages) with 2 MiB pages
    /// instead of only from 8 MiB.
    pub huge_from_2m: bool,
    /// Leave a video-memory allocation's page size, caching and ZBC to RM (attr
    /// `PAGE_SIZE_DEFAULT`, attr2 0) and ask for format 0, as CUDA 13's `cudaMalloc` asks (run
    /// 34's trace), instead of 2 MiB pages, GPU caching, no ZBC and the generic-memory kind.
    pub rm_default_attrs: bool,
}

impl AllocTuning {
    /// The default: no RM record, as CUDA does it (run 34: a fresh 2 MiB allocation + map +
    /// free 99.6 / 109.0 µs with RM's record, 44.7 / 46.6 µs without, CUDA 63.3 / 80.7 µs);
    /// 2 MiB pages from 8 MiB only, which was as fast and steadier (run 35: 44.8 / 47.6 /
    /// 45.2 µs against 43.0 / 56.5 / 59.3 µs with 2 MiB pages from 2 MiB).
    pub const DEFAULT: Self = Self {
        rm_map: false,
        huge_from_2m: false,
        rm_default_attrs: false,
    };

    /// Parses `rmmap=0|1,huge2m=0|1,rmattrs=0|1` (unknown keys are refused by name).
    pub fn parse(spec: &str) -> Result<Self, String> {
        let mut t = Self::DEFAULT;
        for kv in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| format!("{kv:?}: give KEY=0|1"))?;
            let on = match v {
                "0" => false,
                "1" => true,
                _ => return Err(format!("{kv:?}: the value is 0 or 1")),
            };
            match k {
                "rmmap" => t.rm_map = on,
                "huge2m" => t.huge_from_2m = on,
                "rmattrs" => t.rm_default_attrs = on,
                _ => return Err(format!("{k:?}: the keys are rmmap, huge2m and rmattrs")),
            }
        }
        Ok(t)
    }

    /// `NVBARE_ALLOC`, or the default (a bad value is reported once and ignored).
    pub fn from_env() -> Self {
        static T: std::sync::OnceLock<AllocTuning> = std::sync::OnceLock::new();
        *T.get_or_init(|| match std::env::var("NVBARE_ALLOC") {
            Ok(s) => Self::parse(&s).unwrap_or_else(|e| {
                log::warn!("NVBARE_ALLOC ignored: {e}");
                Self::DEFAULT
            }),
            Err(_) => Self::DEFAULT,
        })
    }

    /// The page size of a video-memory allocation of `size` bytes.
    pub fn vram_page(self, size: u64) -> u64 {
        let whole_huge = size >= HUGE_PAGE && size.is_multiple_of(HUGE_PAGE);
        if size >= (8 << 20) || (self.huge_from_2m && whole_huge) {
            HUGE_PAGE
        } else {
            SMALL_PAGE
        }
    }
}

/// nvk's record of one allocation.
#[derive(Debug)]
pub struct NvkMemory {
    /// The RM memory object.
    pub(crate) handle: Handle,
    /// The CPU mapping (at the buffer's GPU VA, or anywhere when `own`), to unmap on free.
    pub(crate) cpu: Option<NonNull<u8>>,
    /// Which VA window the address came from.
    cpu_window: bool,
    /// Mapped by nvbare's own page tables (`own_pt`), not UVM.
    own: bool,
    /// In own-page-tables mode, mapped by RM in its half of the VA space instead.
    pub(crate) rm_mapped: bool,
}

impl NvkMemory {
    /// An own-page-tables mapping of RM memory `handle`.
    pub(crate) fn own(handle: Handle, cpu: Option<NonNull<u8>>) -> Self {
        Self {
            handle,
            cpu,
            cpu_window: false,
            own: true,
            rm_mapped: false,
        }
    }

    /// An own-page-tables-mode buffer RM mapped (in its half of the VA space).
    pub(crate) fn rm_mapped(handle: Handle, cpu: Option<NonNull<u8>>) -> Self {
        Self {
            rm_mapped: true,
            ..Self::own(handle, cpu)
        }
    }
}

// SAFETY: a record of addresses and a handle; the memory is reached only through the GPU
// layer's volatile accesses.
unsafe impl Send for NvkMemory {}

/// The process's GPU virtual address windows: one per process, because UVM gives the whole
/// process one GPU address space, shared by every open device.
static VA_WINDOWS: Mutex<Option<(VaAllocator, VaAllocator)>> = Mutex::new(None);

pub(crate) fn va_alloc(cpu_visible: bool, size: u64, align: u64) -> Result<u64, NvkError> {
    let mut g = VA_WINDOWS.lock().unwrap_or_else(|p| p.into_inner());
    let (cpu, gpu) = match &mut *g {
        Some(w) => w,
        slot @ None => slot.insert((
            VaAllocator::new(CPU_VISIBLE_VA.0, CPU_VISIBLE_VA.1).map_err(NvkError::Va)?,
            VaAllocator::new(GPU_ONLY_VA.0, GPU_ONLY_VA.1).map_err(NvkError::Va)?,
        )),
    };
    if cpu_visible {
        cpu.alloc(size, align)
    } else {
        gpu.alloc(size, align)
    }
    .map_err(NvkError::Va)
}

fn va_free(cpu_visible: bool, va: u64, size: u64) {
    let mut g = VA_WINDOWS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((cpu, gpu)) = g.as_mut() {
        let _ = if cpu_visible {
            cpu.free(va, size)
        } else {
            gpu.free(va, size)
        };
    }
}

/// `mmap`s `len` bytes of `fd` (shared, read-write) wherever the kernel places them; `fd` -1
/// maps anonymous shared memory.
pub(crate) fn mmap_shared(len: u64, fd: i32, what: &'static str) -> Result<NonNull<u8>, NvkError> {
    mmap_rw(None, len, fd, what)
}

/// `mmap`s `len` bytes of `fd` at exactly `addr`, refusing to replace anything.
pub(crate) fn mmap_fixed(
    addr: u64,
    len: u64,
    fd: i32,
    what: &'static str,
) -> Result<NonNull<u8>, NvkError> {
    mmap_rw(Some(addr), len, fd, what)
}

/// The one shared read-write `mmap` of this backend: at `at` exactly (MAP_FIXED_NOREPLACE)
/// or where the kernel chooses; `fd` -1 is anonymous memory.
fn mmap_rw(
    at: Option<u64>,
    len: u64,
    fd: i32,
    what: &'static str,
) -> Result<NonNull<u8>, NvkError> {
    let mut flags = libc::MAP_SHARED | if fd < 0 { libc::MAP_ANONYMOUS } else { 0 };
    if at.is_some() {
        flags |= libc::MAP_FIXED_NOREPLACE;
    }
    let hint = at.map_or(std::ptr::null_mut(), |a| a as *mut libc::c_void);
    // SAFETY: a new mapping, where the kernel chooses or at an address we reserved for it;
    // MAP_FIXED_NOREPLACE makes the kernel fail rather than replace an existing mapping.
    let p = unsafe {
        libc::mmap(
            hint,
            // CAST: buffer sizes fit the address space.
            len as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
            fd,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(NvkError::Mmap {
            what,
            source: std::io::Error::last_os_error(),
        });
    }
    if let Some(addr) = at
        && p as u64 != addr
    {
        // An old kernel that ignores MAP_FIXED_NOREPLACE placed it elsewhere.
        // SAFETY: unmapping exactly what this call mapped.
        unsafe { libc::munmap(p, len as usize) };
        return Err(NvkError::Mmap {
            what,
            source: std::io::Error::other(format!("wanted {addr:#x}, kernel chose {p:p}")),
        });
    }
    NonNull::new(p.cast()).ok_or(NvkError::Mmap {
        what,
        source: std::io::Error::other("null"),
    })
}

/// Unmaps a mapping this module or the usermode mapping made.
pub(crate) fn munmap(p: NonNull<u8>, len: u64) {
    // SAFETY: the caller passes a mapping this backend created, once.
    unsafe { libc::munmap(p.as_ptr().cast(), len as usize) };
}

/// The CPU view of `len` bytes mapped at `p`, which the GPU reaches at `gpu_va`.
fn cpu_view(p: NonNull<u8>, len: u64, gpu_va: u64) -> SharedMem {
    // SAFETY: `p` maps `len` bytes until the buffer is freed, and the buffer owns the view
    // (the GPU layer hands out only borrowed views), so no access outlives the mapping.
    // Only volatile accesses reach it through SharedMem.
    unsafe { SharedMem::from_raw(p.as_ptr(), len as usize, gpu_va) }
}

impl Nvk {
    /// Allocates `req.size` bytes at `req.placement`, mapped into the GPU VA space, and into
    /// the CPU at the same address when `req.cpu_access` (host memory always is). Video
    /// memory of 8 MiB and more uses 2 MiB pages (see [`AllocTuning`]).
    pub(crate) fn alloc(&mut self, req: &MemoryRequest) -> Result<Buffer<Memory>, NvkError> {
        if self.own.is_some() {
            return self.alloc_own_default(req);
        }
        let tuning = AllocTuning::from_env();
        let page = if req.placement == Placement::Vram {
            tuning.vram_page(req.size)
        } else {
            SMALL_PAGE
        };
        let size = req.size.div_ceil(page) * page;
        let cpu_access = req.cpu_access || req.placement == Placement::Host;
        let va = va_alloc(cpu_access, size, page.max(req.align))?;
        let r = match req.placement {
            Placement::Vram => self.alloc_vram_at(va, size, page, cpu_access, req.contiguous),
            Placement::Host => self.alloc_host_at(va, size),
        };
        match &r {
            Ok(b) => log::trace!("nvk: {size:#x} bytes of {:?} at {va:#x}", b.placement()),
            Err(e) => {
                log::debug!("nvk: allocation of {size:#x} bytes failed: {e}");
                va_free(cpu_access, va, size);
            }
        }
        r
    }

    fn alloc_vram_at(
        &mut self,
        va: u64,
        size: u64,
        page: u64,
        cpu_access: bool,
        contiguous: bool,
    ) -> Result<Buffer<Memory>, NvkError> {
        let huge = page > SMALL_PAGE;
        let (mut attr, mut attr2, flags) = flags::vram_alloc(contiguous, huge);
        // NV_MMU_PTE_KIND_GENERIC_MEMORY (gh100 dev_mmu.h), as tinygrad asks.
        let mut format = 6;
        if AllocTuning::from_env().rm_default_attrs {
            // Only the physicality stays: RM picks page size, caching and ZBC, and the kind
            // is format 0 (PITCH), as cudaMalloc's request reads in run 34's trace.
            attr &= flags::PHYSICALITY_MASK;
            attr2 = 0;
            format = 0;
        }
        let mut p = MemoryAllocParams {
            owner: self.rm.root(),
            type_: nvos32_type::IMAGE,
            flags,
            attr,
            attr2,
            format,
            size,
            alignment: page,
            limit: size - 1,
            ..Default::default()
        };
        let handle = self.rm.alloc(self.device, cls::NV1_MEMORY_USER, &mut p)?;
        let cpu = if cpu_access {
            match self.map_to_cpu_at(handle, va, size, flags::cpu_map_write_combined()) {
                Ok(p) => {
                    self.cpu_maps.insert(va, size);
                    Some(p)
                }
                Err(e) => {
                    let _ = self.rm.free(self.device, handle);
                    return Err(e);
                }
            }
        } else {
            None
        };
        let mem = Memory {
            handle,
            cpu,
            cpu_window: cpu_access,
            own: false,
            rm_mapped: false,
        };
        // A GPU-only buffer needs no record in RM's view of the VA space: UVM maps it, as for
        // CUDA's allocations (the CPU-visible ones keep RM's record, as the channels' memory
        // always has had). The proofs' data checks pass without it (run 34).
        let rm_map = cpu_access || AllocTuning::from_env().rm_map;
        if let Err(e) = self.map_to_gpu(handle, va, size, huge, rm_map) {
            self.release_objects(&mem, va, size);
            return Err(e);
        }
        let view = cpu.map(|p| cpu_view(p, size, va));
        Ok(Buffer::new(va, size, Placement::Vram, view, mem))
    }

    fn alloc_host_at(&mut self, va: u64, size: u64) -> Result<Buffer<Memory>, NvkError> {
        let cpu = mmap_fixed(va, size, -1, "host memory")?;
        self.next_host_handle += 1;
        let flags = flags::host_descriptor();
        let handle = match self.rm.alloc_os_descriptor(
            self.dev_file.as_raw_fd(),
            self.device,
            self.next_host_handle,
            flags,
            cpu.as_ptr(),
            size,
        ) {
            Ok(h) => h,
            Err(e) => {
                munmap(cpu, size);
                return Err(e);
            }
        };
        self.cpu_maps.insert(va, size);
        let mem = Memory {
            handle,
            cpu: Some(cpu),
            cpu_window: true,
            own: false,
            rm_mapped: false,
        };
        if let Err(e) = self.map_to_gpu(handle, va, size, false, true) {
            self.release_objects(&mem, va, size);
            return Err(e);
        }
        Ok(Buffer::new(
            va,
            size,
            Placement::Host,
            Some(cpu_view(cpu, size, va)),
            mem,
        ))
    }

    /// The channels' error notifier: 48 MiB of uncached system memory (`NV01_MEMORY_SYSTEM`,
    /// `NOTIFIER`), mapped at a GPU-only VA.
    pub(crate) fn alloc_notifier(&mut self) -> Result<Buffer<Memory>, NvkError> {
        const SIZE: u64 = 48 << 20;
        let (attr, attr2, flags) = flags::sysmem_uncached_alloc();
        let mut np = MemoryAllocParams {
            owner: self.rm.root(),
            type_: nvos32_type::NOTIFIER,
            flags,
            attr,
            attr2,
            format: 6,
            size: SIZE,
            alignment: SMALL_PAGE,
            limit: SIZE - 1,
            ..Default::default()
        };
        let handle = self
            .rm
            .alloc(self.device, cls::NV01_MEMORY_SYSTEM, &mut np)?;
        let mem = Memory {
            handle,
            cpu: None,
            cpu_window: false,
            own: false,
            rm_mapped: false,
        };
        if self.own.is_some() {
            // RM writes the notifier from the CPU; no GPU mapping is needed, and a UVM one
            // does not exist in own-page-tables mode.
            return Ok(Buffer::new(0, SIZE, Placement::Host, None, mem));
        }
        let va = va_alloc(false, SIZE, SMALL_PAGE)?;
        if let Err(e) = self.map_to_gpu(handle, va, SIZE, false, true) {
            self.release_objects(&mem, va, SIZE);
            va_free(false, va, SIZE);
            return Err(e);
        }
        Ok(Buffer::new(va, SIZE, Placement::Host, None, mem))
    }

    /// Maps an RM memory object at `va` in the CPU (through a fresh GPU file, as the kernel
    /// driver ties one mapping to one file).
    fn map_to_cpu_at(
        &self,
        handle: Handle,
        va: u64,
        size: u64,
        flags: u32,
    ) -> Result<NonNull<u8>, NvkError> {
        let file = open_gpu_file(&self.rm, self.card.minor_number)?;
        self.rm
            .map_memory(file.as_raw_fd(), self.device, handle, size, flags)?;
        mmap_fixed(va, size, file.as_raw_fd(), "video memory through BAR1")
    }

    /// Places RM memory `handle` at `va`: a UVM external range, RM's own record of the
    /// mapping (when `rm_map`), and UVM's page-table mapping; `huge` when it was allocated
    /// with 2 MiB pages (it maps with them too).
    fn map_to_gpu(
        &self,
        handle: Handle,
        va: u64,
        size: u64,
        huge: bool,
        rm_map: bool,
    ) -> Result<(), NvkError> {
        self.uvm.create_external_range(va, size)?;
        let flags = flags::gpu_map_fixed(huge);
        let recorded = if rm_map {
            self.rm
                .map_dma(self.device, self.virtmem, handle, size, flags, va)
                .and_then(|got| {
                    if got == va {
                        Ok(())
                    } else {
                        Err(NvkError::MappedElsewhere { wanted: va, got })
                    }
                })
        } else {
            Ok(())
        };
        let r = recorded.and_then(|()| {
            self.uvm.map_external(
                self.uuid,
                self.rm.ctl_fd(),
                self.rm.root(),
                handle,
                va,
                size,
            )
        });
        if r.is_err() {
            let _ = self.uvm.free(va, size);
        }
        r
    }

    /// Undoes the GPU mapping, CPU mapping and RM object of an allocation, leaving its VA
    /// range to whoever reserved it; errors are ignored (failure paths and `free`).
    fn release_objects(&mut self, mem: &Memory, va: u64, size: u64) {
        let _ = self.uvm.free(va, size);
        if let Some(p) = mem.cpu {
            munmap(p, size);
            self.cpu_maps.remove(&(p.as_ptr() as u64));
        }
        let _ = self.rm.free(self.device, mem.handle);
    }

    /// Frees a buffer: GPU mapping, CPU mapping, RM object, VA range.
    pub(crate) fn free(&mut self, buf: Buffer<Memory>) {
        let (va, size) = (buf.gpu_va(), buf.size());
        let mem = buf.into_memory();
        if mem.own {
            return self.free_own(va, size, &mem);
        }
        if va == 0 {
            // The own-page-tables notifier: an RM object only.
            let _ = self.rm.free(self.device, mem.handle);
            return;
        }
        self.release_objects(&mem, va, size);
        va_free(mem.cpu_window, va, size);
    }
}

/// CPU mappings a backend made and has not unmapped yet (address → length).
pub(crate) type CpuMaps = BTreeMap<u64, u64>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alloc_tuning_parses_its_knobs_and_refuses_others_by_name() {
        assert_eq!(AllocTuning::parse("").unwrap(), AllocTuning::DEFAULT);
        let t = AllocTuning::parse("rmmap=1, huge2m=1").unwrap();
        assert!(t.rm_map && t.huge_from_2m && !t.rm_default_attrs);
        assert!(AllocTuning::parse("rmattrs=1").unwrap().rm_default_attrs);
        assert!(
            AllocTuning::parse("rmmap=2")
                .unwrap_err()
                .contains("0 or 1")
        );
        assert!(
            AllocTuning::parse("pages=1")
                .unwrap_err()
                .contains("rmmap, huge2m and rmattrs")
        );
        assert!(AllocTuning::parse("rmmap").unwrap_err().contains("KEY=0|1"));
    }

    #[test]
    fn video_memory_pages_follow_the_size() {
        let d = AllocTuning::DEFAULT;
        assert_eq!(d.vram_page(2 << 20), SMALL_PAGE);
        assert_eq!(d.vram_page(8 << 20), HUGE_PAGE);
        let h = AllocTuning {
            huge_from_2m: true,
            ..d
        };
        assert_eq!(h.vram_page(2 << 20), HUGE_PAGE);
        assert_eq!(
            h.vram_page(3 << 20),
            SMALL_PAGE,
            "not a whole number of 2 MiB pages"
        );
        assert_eq!(h.vram_page(1 << 20), SMALL_PAGE);
    }
}
