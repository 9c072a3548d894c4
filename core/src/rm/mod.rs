//! The resource manager's API as nvbare uses it, over either way of reaching RM.
//!
//! [`RmApi`] is the three calls every RM client makes: allocate an object of a class under a
//! parent (with the class's parameter block), run a control command on an object, free an
//! object. The kernel-driver backend (`host::nvk`) issues them as ioctls on
//! `/dev/nvidiactl`; the VFIO path (`core::gsp_rm`) as RPCs to the GSP-RM we boot. The
//! parameter blocks are `nvbare_gsp::rm`'s layout-checked structures, passed as bytes.
//!
//! Over it, once for both backends: the class choice ([`Classes`]), the object tree a GPU is
//! driven through ([`tree`]: device, subdevice, VA space, channel groups, context share,
//! GPFIFO channels, compute and copy objects, debugger, work-submit tokens) and the typed
//! fault report read through the debugger ([`fault`]).

pub mod classes;
pub mod copy_engines;
pub mod fault;
pub mod fault_text;
pub mod tree;

use zerocopy::{FromBytes, IntoBytes};

pub use classes::{Classes, NoClass};
pub use fault::{
    ACCESS_TYPE_UNKNOWN, ChannelError, FaultReport, MmuFault, SmError, access_type_name,
    fault_type_name, xid_name,
};
pub use fault_text::{KernelCode, NamedFaults};
pub use tree::{ChannelObjects, CopyEngineRefusal, DeviceObjects, Engine, GrInfo, Step};

/// An RM object handle (`NvHandle`).
pub type Handle = u32;

/// The RM release whose ABI the parameter blocks follow, where the branches differ
/// (`nvbare_gsp::rm`'s `…V570` / `…V580` blocks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RmAbi {
    /// GSP-RM 570.144 (the firmware nvbare boots on the VFIO path).
    R570,
    /// The 580.x kernel driver (the nvk path on our machines).
    R580,
}

/// The three calls of the RM API.
///
/// Parameter blocks travel as their bytes; RM may write results back into them (a control's
/// outputs, an allocation's returned fields). Errors are the backend's own: one variant per
/// failed step (the ioctl, the RPC, the status RM returned).
pub trait RmApi {
    /// What can go wrong reaching RM, or RM refusing.
    type Error: core::error::Error + 'static;

    /// The client handle every object of this GPU hangs off (`NV01_ROOT_CLIENT`).
    fn client(&self) -> Handle;

    /// Which release's parameter layouts this RM takes.
    fn abi(&self) -> RmAbi;

    /// Allocates an object of `class` under `parent` with the class's allocation parameters
    /// `params` (empty for a class that takes none); returns the new handle.
    fn alloc_raw(
        &mut self,
        parent: Handle,
        class: u32,
        params: &mut [u8],
    ) -> Result<Handle, Self::Error>;

    /// Runs control `cmd` on `object` with its parameter block `params`.
    fn control_raw(
        &mut self,
        object: Handle,
        cmd: u32,
        params: &mut [u8],
    ) -> Result<(), Self::Error>;

    /// Frees `object` (and everything under it) from `parent`.
    fn free(&mut self, parent: Handle, object: Handle) -> Result<(), Self::Error>;

    /// [`Self::alloc_raw`] with a typed parameter block.
    fn alloc<P: IntoBytes + FromBytes>(
        &mut self,
        parent: Handle,
        class: u32,
        params: &mut P,
    ) -> Result<Handle, Self::Error>
    where
        Self: Sized,
    {
        self.alloc_raw(parent, class, params.as_mut_bytes())
    }

    /// [`Self::alloc_raw`] of a class that takes no parameters.
    fn alloc_bare(&mut self, parent: Handle, class: u32) -> Result<Handle, Self::Error>
    where
        Self: Sized,
    {
        self.alloc_raw(parent, class, &mut [])
    }

    /// [`Self::control_raw`] with a typed parameter block.
    fn control<P: IntoBytes + FromBytes>(
        &mut self,
        object: Handle,
        cmd: u32,
        params: &mut P,
    ) -> Result<(), Self::Error>
    where
        Self: Sized,
    {
        self.control_raw(object, cmd, params.as_mut_bytes())
    }
}
