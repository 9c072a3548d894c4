//! `/dev/nvidia-uvm`: the unified-memory driver that owns the process's GPU
//! virtual address space on the kernel-driver path. We use it only to place RM
//! memory at GPU virtual addresses we choose (external ranges), as CUDA does.

use std::fs::File;
use std::os::fd::{AsRawFd, RawFd};

use nvbare_gsp::rm::status::NvStatus;

use super::NvkError;
use super::sys::{self, NvProcessorUuid, UvmParams};

/// An open, initialised UVM file.
pub struct Uvm {
    file: File,
    /// The descriptor `UVM_MM_INITIALIZE` ran on: it must stay open as long as the
    /// first one, for the process's memory manager to stay attached.
    _mm: File,
}

impl Uvm {
    /// Opens `/dev/nvidia-uvm` and runs `UVM_INITIALIZE` (and `UVM_MM_INITIALIZE`
    /// from a second descriptor, as CUDA does; its failure is tolerated, as CUDA
    /// tolerates it).
    pub fn open() -> Result<Self, NvkError> {
        let file = super::open_dev("/dev/nvidia-uvm")?;
        call_on(
            file.as_raw_fd(),
            &mut sys::UvmInitializeParams::default(),
            "UVM_INITIALIZE",
        )?;
        let second = super::open_dev("/dev/nvidia-uvm")?;
        let mut mm = sys::UvmMmInitializeParams {
            uvm_fd: file.as_raw_fd(),
            rm_status: 0,
        };
        let _ = sys::ioctl(second.as_raw_fd(), sys::UvmMmInitializeParams::CMD, &mut mm);
        Ok(Self { file, _mm: second })
    }

    /// The file descriptor.
    pub fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    /// Issues one UVM ioctl and turns a non-zero `rmStatus` into an error.
    pub fn call<P: UvmParams>(&self, params: &mut P, op: &'static str) -> Result<(), NvkError> {
        call_on(self.fd(), params, op)
    }

    /// Reserves `[base, base+length)` of the GPU VA space for RM allocations.
    pub fn create_external_range(&self, base: u64, length: u64) -> Result<(), NvkError> {
        let mut p = sys::UvmCreateExternalRangeParams {
            base,
            length,
            ..Default::default()
        };
        self.call(&mut p, "UVM_CREATE_EXTERNAL_RANGE")
    }

    /// Maps RM memory `memory` of client `client` at `base` on GPU `uuid`.
    pub fn map_external(
        &self,
        uuid: NvProcessorUuid,
        ctl_fd: RawFd,
        client: u32,
        memory: u32,
        base: u64,
        length: u64,
    ) -> Result<(), NvkError> {
        let mut p = sys::UvmMapExternalAllocationParams {
            base,
            length,
            gpu_attributes_count: 1,
            rm_ctrl_fd: ctl_fd,
            h_client: client,
            h_memory: memory,
            ..Default::default()
        };
        p.per_gpu_attributes[0] = sys::UvmGpuMappingAttributes {
            gpu_uuid: uuid,
            gpu_mapping_type: sys::UVM_GPU_MAPPING_TYPE_READ_WRITE_ATOMIC,
            ..Default::default()
        };
        self.call(&mut p, "UVM_MAP_EXTERNAL_ALLOCATION")
    }

    /// Unmaps and releases the external range at `base`.
    pub fn free(&self, base: u64, length: u64) -> Result<(), NvkError> {
        let mut p = sys::UvmFreeParams {
            base,
            length,
            ..Default::default()
        };
        self.call(&mut p, "UVM_FREE")
    }
}

/// One UVM ioctl on `fd`; a non-zero `rmStatus` is an error.
fn call_on<P: UvmParams>(fd: RawFd, params: &mut P, op: &'static str) -> Result<(), NvkError> {
    sys::ioctl(fd, P::CMD, params).map_err(|source| NvkError::Ioctl { op, source })?;
    match params.rm_status() {
        0 => Ok(()),
        s => Err(NvkError::Rm {
            op,
            status: NvStatus(s),
        }),
    }
}
