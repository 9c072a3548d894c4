//! Memory placement: video memory (2 MiB pages for large buffers) and pinned
//! host memory, each an RM object mapped into the GPU VA space at a chosen
//! address through UVM, and into the CPU at the same address when asked.

use std::os::fd::AsRawFd;
use std::ptr::NonNull;

use nvbare_gsp::rm::alloc::MemoryAllocParams;
use nvbare_gsp::rm::alloc_flags::nvos32_type;
use nvbare_gsp::rm::classes as cls;

use super::{Device, HUGE_PAGE, SMALL_PAGE, open_gpu_file, va_alloc, va_free};
use crate::nvk::NvkError;
use crate::nvk::flags;
use crate::nvk::mem::{Buffer, Placement, mmap_fixed, munmap};
use crate::nvk::rm::Handle;

impl Device {
    /// Allocates `size` bytes at `placement`, mapped into the GPU VA space, and into
    /// the CPU at the same address when `cpu_access` (host memory always is).
    /// Video memory of 8 MiB and more uses 2 MiB pages.
    pub fn alloc(
        &mut self,
        size: u64,
        placement: Placement,
        cpu_access: bool,
    ) -> Result<Buffer, NvkError> {
        let page = if placement == Placement::Vram && size >= (8 << 20) {
            HUGE_PAGE
        } else {
            SMALL_PAGE
        };
        let size = size.div_ceil(page) * page;
        let cpu_access = cpu_access || placement == Placement::Host;
        let va = va_alloc(cpu_access, size, page)?;
        let r = match placement {
            Placement::Vram => self.alloc_vram_at(va, size, page, cpu_access, false),
            Placement::Host => self.alloc_host_at(va, size),
        };
        if r.is_err() {
            va_free(cpu_access, va, size);
        }
        r
    }

    pub(super) fn alloc_vram_at(
        &mut self,
        va: u64,
        size: u64,
        page: u64,
        cpu_access: bool,
        contiguous: bool,
    ) -> Result<Buffer, NvkError> {
        let huge = page > SMALL_PAGE;
        let (attr, attr2, flags) = flags::vram_alloc(contiguous, huge);
        let mut p = MemoryAllocParams {
            owner: self.rm.root(),
            type_: nvos32_type::IMAGE,
            flags,
            attr,
            attr2,
            format: 6,
            size,
            alignment: page,
            limit: size - 1,
            ..Default::default()
        };
        let handle = self
            .rm
            .alloc(self.device, cls::NV1_MEMORY_USER, Some(&mut p))?;
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
        let buf = Buffer {
            gpu_va: va,
            size,
            placement: Placement::Vram,
            cpu,
            handle,
        };
        if let Err(e) = self.map_to_gpu(&buf, huge) {
            self.release_objects(&buf);
            return Err(e);
        }
        Ok(buf)
    }

    fn alloc_host_at(&mut self, va: u64, size: u64) -> Result<Buffer, NvkError> {
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
        let buf = Buffer {
            gpu_va: va,
            size,
            placement: Placement::Host,
            cpu: Some(cpu),
            handle,
        };
        if let Err(e) = self.map_to_gpu(&buf, false) {
            self.release_objects(&buf);
            return Err(e);
        }
        Ok(buf)
    }

    /// Maps an RM memory object at `va` in the CPU (through a fresh GPU file, as the
    /// kernel driver ties one mapping to one file).
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
        let p = mmap_fixed(va, size, file.as_raw_fd(), "video memory through BAR1")?;
        Ok(p)
    }

    /// Places `buf` at `buf.gpu_va`: a UVM external range, RM's own record of the
    /// mapping, and UVM's page-table mapping; `huge` when it was allocated with
    /// 2 MiB pages (it maps with them too).
    pub(super) fn map_to_gpu(&self, buf: &Buffer, huge: bool) -> Result<(), NvkError> {
        self.uvm.create_external_range(buf.gpu_va, buf.size)?;
        let flags = flags::gpu_map_fixed(huge);
        let r = self
            .rm
            .map_dma(
                self.device,
                self.virtmem,
                buf.handle,
                buf.size,
                flags,
                buf.gpu_va,
            )
            .and_then(|got| {
                if got == buf.gpu_va {
                    Ok(())
                } else {
                    Err(NvkError::Submit(format!(
                        "RM mapped at {got:#x}, wanted {:#x}",
                        buf.gpu_va
                    )))
                }
            })
            .and_then(|()| {
                self.uvm.map_external(
                    self.uuid,
                    self.rm.ctl_fd(),
                    self.rm.root(),
                    buf.handle,
                    buf.gpu_va,
                    buf.size,
                )
            });
        if r.is_err() {
            let _ = self.uvm.free(buf.gpu_va, buf.size);
        }
        r
    }

    /// Undoes the GPU mapping, CPU mapping and RM object of an allocation, leaving
    /// its VA range to whoever reserved it; errors are ignored (used on failure
    /// paths and in `free`).
    fn release_objects(&mut self, buf: &Buffer) {
        let _ = self.uvm.free(buf.gpu_va, buf.size);
        if let Some(p) = buf.cpu {
            munmap(p, buf.size);
            self.cpu_maps.remove(&(p.as_ptr() as u64));
        }
        let _ = self.rm.free(self.device, buf.handle);
    }

    /// Frees a buffer: GPU mapping, CPU mapping, RM object, VA range.
    pub fn free(&mut self, buf: Buffer) {
        self.release_objects(&buf);
        va_free(buf.cpu.is_some(), buf.gpu_va, buf.size);
    }
}
