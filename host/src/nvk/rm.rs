//! The RM API over `/dev/nvidiactl`: alloc, free, control and CPU mapping of
//! RM objects (mirrors what `rmapi` calls through the `NV_ESC_RM_*` escapes).

use std::fs::File;
use std::os::fd::{AsRawFd, RawFd};

use nvbare_gsp::rm::nvos::{
    AllocParams, ControlParams, FreeParams, MapMemoryDmaParamsV580, escape,
};
use nvbare_gsp::rm::status::NvStatus;
use zerocopy::{FromBytes, IntoBytes};

use super::NvkError;
use super::sys::{self, NvIoctlNvos02ParametersWithFd, NvIoctlNvos33ParametersWithFd};

pub use nvbare_core::rm::Handle;

/// One RM client: the root object every other object of this process hangs off.
pub struct RmClient {
    ctl: File,
    root: Handle,
    /// Objects this client allocated minus those it freed by handle (children freed with a
    /// parent are not subtracted): the soak's "RM objects held".
    live: std::sync::atomic::AtomicI64,
}

fn rm_error(op: &'static str, status: u32) -> NvkError {
    NvkError::Rm {
        op,
        status: NvStatus(status),
    }
}

impl RmClient {
    /// Opens `/dev/nvidiactl` and allocates the root client (`NV01_ROOT_CLIENT`).
    pub fn open() -> Result<Self, NvkError> {
        let ctl = super::open_dev("/dev/nvidiactl")?;
        let mut client = Self {
            ctl,
            root: 0,
            live: std::sync::atomic::AtomicI64::new(0),
        };
        let mut p = AllocParams {
            h_class: nvbare_gsp::rm::classes::NV01_ROOT_CLIENT,
            ..Default::default()
        };
        client.ioctl(escape::RM_ALLOC, &mut p, "alloc root client")?;
        if p.status != 0 {
            return Err(rm_error("alloc root client", p.status));
        }
        client.root = p.h_object_new;
        Ok(client)
    }

    /// Objects allocated minus objects freed by handle since the client opened.
    pub fn objects_held(&self) -> i64 {
        self.live.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The root client handle.
    pub fn root(&self) -> Handle {
        self.root
    }

    /// The control file descriptor (UVM wants it to resolve our handles).
    pub fn ctl_fd(&self) -> RawFd {
        self.ctl.as_raw_fd()
    }

    fn ioctl<T: IntoBytes + FromBytes>(
        &self,
        nr: u32,
        arg: &mut T,
        op: &'static str,
    ) -> Result<(), NvkError> {
        sys::ioctl(self.ctl_fd(), sys::iowr(nr, size_of::<T>()), arg)
            .map_err(|source| NvkError::Ioctl { op, source })
    }

    /// Allocates an object of `class` under `parent` (`NV_ESC_RM_ALLOC`,
    /// `NVOS21_PARAMETERS`), passing `params` (empty for none) as the class's allocation
    /// parameters.
    pub fn alloc_raw(
        &self,
        parent: Handle,
        class: u32,
        params: &mut [u8],
    ) -> Result<Handle, NvkError> {
        let mut p = AllocParams {
            h_root: self.root,
            h_object_parent: parent,
            h_class: class,
            ..Default::default()
        };
        if !params.is_empty() {
            p.p_alloc_parms = params.as_mut_ptr() as u64;
            // CAST: parameter blocks are a few KiB.
            p.params_size = params.len() as u32;
        }
        self.ioctl(escape::RM_ALLOC, &mut p, "alloc")?;
        if p.status != 0 {
            return Err(NvkError::RmAlloc {
                class,
                status: NvStatus(p.status),
            });
        }
        self.live.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(p.h_object_new)
    }

    /// [`Self::alloc_raw`] with a typed parameter block.
    pub fn alloc<P: IntoBytes + FromBytes>(
        &self,
        parent: Handle,
        class: u32,
        params: &mut P,
    ) -> Result<Handle, NvkError> {
        self.alloc_raw(parent, class, params.as_mut_bytes())
    }

    /// Frees `object` (`escape::RM_FREE`, `NVOS00_PARAMETERS`).
    pub fn free(&self, parent: Handle, object: Handle) -> Result<(), NvkError> {
        let mut p = FreeParams {
            h_root: self.root,
            h_object_parent: parent,
            h_object_old: object,
            ..Default::default()
        };
        self.ioctl(escape::RM_FREE, &mut p, "free")?;
        if p.status != 0 {
            return Err(rm_error("free", p.status));
        }
        self.live.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    /// Runs control `cmd` on `object` (`escape::RM_CONTROL`, `NVOS54_PARAMETERS`). The kernel
    /// reads and writes the block in place, so a block with embedded pointers (GR info) works.
    pub fn control_raw(&self, object: Handle, cmd: u32, params: &mut [u8]) -> Result<(), NvkError> {
        let mut p = ControlParams {
            h_client: self.root,
            h_object: object,
            cmd,
            params: params.as_mut_ptr() as u64,
            // CAST: parameter blocks are at most a few KiB.
            params_size: params.len() as u32,
            ..Default::default()
        };
        self.ioctl(escape::RM_CONTROL, &mut p, "control")?;
        if p.status != 0 {
            return Err(NvkError::RmControl {
                cmd,
                status: NvStatus(p.status),
            });
        }
        Ok(())
    }

    /// [`Self::control_raw`] with a typed parameter block.
    pub fn control<P: IntoBytes + FromBytes>(
        &self,
        object: Handle,
        cmd: u32,
        params: &mut P,
    ) -> Result<(), NvkError> {
        self.control_raw(object, cmd, params.as_mut_bytes())
    }

    /// Describes caller-owned host memory to RM as an OS-descriptor memory object
    /// (`escape::RM_ALLOC_MEMORY` with `NV01_MEMORY_SYSTEM_OS_DESCRIPTOR`), issued on
    /// the device file `dev_fd`. `handle` is chosen by the caller.
    pub fn alloc_os_descriptor(
        &self,
        dev_fd: RawFd,
        parent: Handle,
        handle: Handle,
        flags: u32,
        cpu: *mut u8,
        len: u64,
    ) -> Result<Handle, NvkError> {
        let mut w = NvIoctlNvos02ParametersWithFd {
            fd: -1,
            ..Default::default()
        };
        w.params.h_root = self.root;
        w.params.h_object_parent = parent;
        w.params.h_object_new = handle;
        w.params.h_class = nvbare_gsp::rm::classes::NV01_MEMORY_SYSTEM_OS_DESCRIPTOR;
        w.params.flags = flags;
        w.params.p_memory = cpu as u64;
        w.params.limit = len - 1;
        sys::ioctl(
            dev_fd,
            sys::iowr(escape::RM_ALLOC_MEMORY, size_of_val(&w)),
            &mut w,
        )
        .map_err(|source| NvkError::Ioctl {
            op: "alloc os descriptor",
            source,
        })?;
        if w.params.status != 0 {
            return Err(rm_error("register host memory", w.params.status));
        }
        self.live.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(w.params.h_object_new)
    }

    /// Asks RM to make `memory` mappable through `dev_fd` (`NV_ESC_RM_MAP_MEMORY`,
    /// `NVOS33`); the caller then `mmap`s `dev_fd`.
    pub fn map_memory(
        &self,
        dev_fd: RawFd,
        device: Handle,
        memory: Handle,
        len: u64,
        flags: u32,
    ) -> Result<(), NvkError> {
        let mut w = NvIoctlNvos33ParametersWithFd {
            fd: dev_fd,
            ..Default::default()
        };
        w.params.h_client = self.root;
        w.params.h_device = device;
        w.params.h_memory = memory;
        w.params.length = len;
        w.params.flags = flags;
        self.ioctl(escape::RM_MAP_MEMORY, &mut w, "map memory")?;
        if w.params.status != 0 {
            return Err(rm_error("map memory to CPU", w.params.status));
        }
        Ok(())
    }

    /// Maps `memory` into the GPU virtual address space `dma` at a fixed
    /// `gpu_va` (`escape::RM_MAP_MEMORY_DMA`, `NVOS46`).
    pub fn map_dma(
        &self,
        device: Handle,
        dma: Handle,
        memory: Handle,
        len: u64,
        flags: u32,
        gpu_va: u64,
    ) -> Result<u64, NvkError> {
        let mut p = MapMemoryDmaParamsV580 {
            h_client: self.root,
            h_device: device,
            h_dma: dma,
            h_memory: memory,
            length: len,
            flags,
            dma_offset: gpu_va,
            ..Default::default()
        };
        self.ioctl(escape::RM_MAP_MEMORY_DMA, &mut p, "map memory dma")?;
        if p.status != 0 {
            return Err(rm_error("map memory into GPU VA", p.status));
        }
        Ok(p.dma_offset)
    }
}

impl Drop for RmClient {
    fn drop(&mut self) {
        // Freeing the root client frees every object under it.
        let mut p = FreeParams {
            h_root: self.root,
            h_object_parent: self.root,
            h_object_old: self.root,
            ..Default::default()
        };
        let _ = self.ioctl(escape::RM_FREE, &mut p, "free root client");
    }
}
