//! RM class ids (the `hClass` of an allocation), from the `class/clXXXX.h` headers of
//! `src/common/sdk/nvidia/inc`. Every id here has the same value in 570.144 and 580.142;
//! [`ALL`] lists each with its C name and header so a test can compare them.

/// `NV01_ROOT` (`class/cl0000.h`): a client, legacy id.
pub const NV01_ROOT: u32 = 0x0000;
/// `NV01_ROOT_NON_PRIV` (`class/cl0001.h`).
pub const NV01_ROOT_NON_PRIV: u32 = 0x0001;
/// `NV01_ROOT_CLIENT` (`nvos.h`): a client; what new code allocates.
pub const NV01_ROOT_CLIENT: u32 = 0x0041;
/// `NV01_EVENT` (`class/cl0005.h`).
pub const NV01_EVENT: u32 = 0x0005;
/// `NV01_EVENT_OS_EVENT` (`nvos.h`): an event signalled to an OS event (fd).
pub const NV01_EVENT_OS_EVENT: u32 = 0x0079;
/// `NV01_EVENT_KERNEL_CALLBACK_EX` (`nvos.h`).
pub const NV01_EVENT_KERNEL_CALLBACK_EX: u32 = 0x007e;
/// `NV01_DEVICE_0` (`class/cl0080.h`): a device, params [`super::alloc::DeviceAllocParams`].
pub const NV01_DEVICE_0: u32 = 0x0080;
/// `NV20_SUBDEVICE_0` (`class/cl2080.h`): a subdevice, params
/// [`super::alloc::SubdeviceAllocParams`].
pub const NV20_SUBDEVICE_0: u32 = 0x2080;
/// `NV01_MEMORY_SYSTEM` (`class/cl003e.h`): system memory, params
/// [`super::alloc::MemoryAllocParams`].
pub const NV01_MEMORY_SYSTEM: u32 = 0x003e;
/// `NV01_MEMORY_LOCAL_PRIVILEGED` (`class/cl003f.h`).
pub const NV01_MEMORY_LOCAL_PRIVILEGED: u32 = 0x003f;
/// `NV01_MEMORY_LOCAL_USER` (`class/cl0040.h`): video memory, params
/// [`super::alloc::MemoryAllocParams`].
pub const NV01_MEMORY_LOCAL_USER: u32 = 0x0040;
/// `NV1_MEMORY_USER` (`class/cl0040.h`): alias of [`NV01_MEMORY_LOCAL_USER`].
pub const NV1_MEMORY_USER: u32 = 0x0040;
/// `NV01_MEMORY_VIRTUAL` (`class/cl0070.h`): a virtual range, params
/// [`super::alloc::MemoryVirtualAllocParams`].
pub const NV01_MEMORY_VIRTUAL: u32 = 0x0070;
/// `NV01_MEMORY_SYSTEM_OS_DESCRIPTOR` (`class/cl0071.h`): user memory described by its
/// CPU address, params [`super::alloc::OsDescMemoryAllocParams`] or NVOS02.
pub const NV01_MEMORY_SYSTEM_OS_DESCRIPTOR: u32 = 0x0071;
/// `NV50_MEMORY_VIRTUAL` (`class/cl50a0.h`).
pub const NV50_MEMORY_VIRTUAL: u32 = 0x50a0;
/// `NV50_DEFERRED_API_CLASS` (`class/cl5080.h`).
pub const NV50_DEFERRED_API_CLASS: u32 = 0x5080;
/// `GT200_DEBUGGER` (`class/cl83de.h`): the debugger object, params
/// [`super::alloc::DebuggerAllocParams`].
pub const GT200_DEBUGGER: u32 = 0x83de;
/// `FERMI_CONTEXT_SHARE_A` (`class/cl9067.h`): a subcontext, params
/// [`super::alloc::CtxShareAllocParams`].
pub const FERMI_CONTEXT_SHARE_A: u32 = 0x9067;
/// `FERMI_VASPACE_A` (`class/cl90f1.h`): a GPU VA space.
pub const FERMI_VASPACE_A: u32 = 0x90f1;
/// `KEPLER_CHANNEL_GROUP_A` (`class/cla06c.h`): a TSG, params
/// [`super::alloc::ChannelGroupAllocParams`].
pub const KEPLER_CHANNEL_GROUP_A: u32 = 0xa06c;
/// `MAXWELL_PROFILER_DEVICE` (`class/clb2cc.h`).
pub const MAXWELL_PROFILER_DEVICE: u32 = 0xb2cc;

/// `KEPLER_CHANNEL_GPFIFO_A` (`class/cla06f.h`).
pub const KEPLER_CHANNEL_GPFIFO_A: u32 = 0xa06f;
/// `VOLTA_CHANNEL_GPFIFO_A` (`class/clc36f.h`).
pub const VOLTA_CHANNEL_GPFIFO_A: u32 = 0xc36f;
/// `TURING_CHANNEL_GPFIFO_A` (`class/clc46f.h`).
pub const TURING_CHANNEL_GPFIFO_A: u32 = 0xc46f;
/// `AMPERE_CHANNEL_GPFIFO_A` (`class/clc56f.h`).
pub const AMPERE_CHANNEL_GPFIFO_A: u32 = 0xc56f;
/// `HOPPER_CHANNEL_GPFIFO_A` (`class/clc86f.h`).
pub const HOPPER_CHANNEL_GPFIFO_A: u32 = 0xc86f;
/// `BLACKWELL_CHANNEL_GPFIFO_A` (`class/clc96f.h`).
pub const BLACKWELL_CHANNEL_GPFIFO_A: u32 = 0xc96f;
/// `BLACKWELL_CHANNEL_GPFIFO_B` (`class/clca6f.h`).
pub const BLACKWELL_CHANNEL_GPFIFO_B: u32 = 0xca6f;

/// `VOLTA_USERMODE_A` (`class/clc361.h`): the doorbell page.
pub const VOLTA_USERMODE_A: u32 = 0xc361;
/// `TURING_USERMODE_A` (`class/clc461.h`).
pub const TURING_USERMODE_A: u32 = 0xc461;
/// `AMPERE_USERMODE_A` (`class/clc561.h`).
pub const AMPERE_USERMODE_A: u32 = 0xc561;
/// `HOPPER_USERMODE_A` (`class/clc661.h`).
pub const HOPPER_USERMODE_A: u32 = 0xc661;
/// `BLACKWELL_USERMODE_A` (`class/clc761.h`).
pub const BLACKWELL_USERMODE_A: u32 = 0xc761;

/// `VOLTA_COMPUTE_A` (`class/clc3c0.h`).
pub const VOLTA_COMPUTE_A: u32 = 0xc3c0;
/// `TURING_COMPUTE_A` (`class/clc5c0.h`).
pub const TURING_COMPUTE_A: u32 = 0xc5c0;
/// `AMPERE_COMPUTE_A` (`class/clc6c0.h`): GA100.
pub const AMPERE_COMPUTE_A: u32 = 0xc6c0;
/// `AMPERE_COMPUTE_B` (`class/clc7c0.h`): GA10x.
pub const AMPERE_COMPUTE_B: u32 = 0xc7c0;
/// `ADA_COMPUTE_A` (`class/clc9c0.h`).
pub const ADA_COMPUTE_A: u32 = 0xc9c0;
/// `HOPPER_COMPUTE_A` (`class/clcbc0.h`).
pub const HOPPER_COMPUTE_A: u32 = 0xcbc0;
/// `BLACKWELL_COMPUTE_A` (`class/clcdc0.h`).
pub const BLACKWELL_COMPUTE_A: u32 = 0xcdc0;
/// `BLACKWELL_COMPUTE_B` (`class/clcec0.h`).
pub const BLACKWELL_COMPUTE_B: u32 = 0xcec0;

/// `VOLTA_DMA_COPY_A` (`class/clc3b5.h`).
pub const VOLTA_DMA_COPY_A: u32 = 0xc3b5;
/// `TURING_DMA_COPY_A` (`class/clc5b5.h`).
pub const TURING_DMA_COPY_A: u32 = 0xc5b5;
/// `AMPERE_DMA_COPY_A` (`class/clc6b5.h`).
pub const AMPERE_DMA_COPY_A: u32 = 0xc6b5;
/// `AMPERE_DMA_COPY_B` (`class/clc7b5.h`).
pub const AMPERE_DMA_COPY_B: u32 = 0xc7b5;
/// `HOPPER_DMA_COPY_A` (`class/clc8b5.h`).
pub const HOPPER_DMA_COPY_A: u32 = 0xc8b5;
/// `BLACKWELL_DMA_COPY_A` (`class/clc9b5.h`).
pub const BLACKWELL_DMA_COPY_A: u32 = 0xc9b5;
/// `BLACKWELL_DMA_COPY_B` (`class/clcab5.h`).
pub const BLACKWELL_DMA_COPY_B: u32 = 0xcab5;

/// `HOPPER_SEC2_WORK_LAUNCH_A` (`class/clcba2.h`).
pub const HOPPER_SEC2_WORK_LAUNCH_A: u32 = 0xcba2;

/// One class id with where NVIDIA defines it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClassId {
    /// The C macro name.
    pub name: &'static str,
    /// The header, relative to `src/common/sdk/nvidia/inc`.
    pub header: &'static str,
    /// The id.
    pub id: u32,
}

macro_rules! class_table {
    ($($name:ident in $header:literal),* $(,)?) => {
        /// Every class id of this module, with its C name and defining header.
        pub const ALL: &[ClassId] = &[$(ClassId { name: stringify!($name), header: $header, id: $name }),*];
    };
}

class_table! {
    NV01_ROOT in "class/cl0000.h",
    NV01_ROOT_NON_PRIV in "class/cl0001.h",
    NV01_ROOT_CLIENT in "nvos.h",
    NV01_EVENT in "class/cl0005.h",
    NV01_EVENT_OS_EVENT in "nvos.h",
    NV01_EVENT_KERNEL_CALLBACK_EX in "nvos.h",
    NV01_DEVICE_0 in "class/cl0080.h",
    NV20_SUBDEVICE_0 in "class/cl2080.h",
    NV01_MEMORY_SYSTEM in "class/cl003e.h",
    NV01_MEMORY_LOCAL_PRIVILEGED in "class/cl003f.h",
    NV01_MEMORY_LOCAL_USER in "class/cl0040.h",
    NV1_MEMORY_USER in "class/cl0040.h",
    NV01_MEMORY_VIRTUAL in "class/cl0070.h",
    NV01_MEMORY_SYSTEM_OS_DESCRIPTOR in "class/cl0071.h",
    NV50_MEMORY_VIRTUAL in "class/cl50a0.h",
    NV50_DEFERRED_API_CLASS in "class/cl5080.h",
    GT200_DEBUGGER in "class/cl83de.h",
    FERMI_CONTEXT_SHARE_A in "class/cl9067.h",
    FERMI_VASPACE_A in "class/cl90f1.h",
    KEPLER_CHANNEL_GROUP_A in "class/cla06c.h",
    MAXWELL_PROFILER_DEVICE in "class/clb2cc.h",
    KEPLER_CHANNEL_GPFIFO_A in "class/cla06f.h",
    VOLTA_CHANNEL_GPFIFO_A in "class/clc36f.h",
    TURING_CHANNEL_GPFIFO_A in "class/clc46f.h",
    AMPERE_CHANNEL_GPFIFO_A in "class/clc56f.h",
    HOPPER_CHANNEL_GPFIFO_A in "class/clc86f.h",
    BLACKWELL_CHANNEL_GPFIFO_A in "class/clc96f.h",
    BLACKWELL_CHANNEL_GPFIFO_B in "class/clca6f.h",
    VOLTA_USERMODE_A in "class/clc361.h",
    TURING_USERMODE_A in "class/clc461.h",
    AMPERE_USERMODE_A in "class/clc561.h",
    HOPPER_USERMODE_A in "class/clc661.h",
    BLACKWELL_USERMODE_A in "class/clc761.h",
    VOLTA_COMPUTE_A in "class/clc3c0.h",
    TURING_COMPUTE_A in "class/clc5c0.h",
    AMPERE_COMPUTE_A in "class/clc6c0.h",
    AMPERE_COMPUTE_B in "class/clc7c0.h",
    ADA_COMPUTE_A in "class/clc9c0.h",
    HOPPER_COMPUTE_A in "class/clcbc0.h",
    BLACKWELL_COMPUTE_A in "class/clcdc0.h",
    BLACKWELL_COMPUTE_B in "class/clcec0.h",
    VOLTA_DMA_COPY_A in "class/clc3b5.h",
    TURING_DMA_COPY_A in "class/clc5b5.h",
    AMPERE_DMA_COPY_A in "class/clc6b5.h",
    AMPERE_DMA_COPY_B in "class/clc7b5.h",
    HOPPER_DMA_COPY_A in "class/clc8b5.h",
    BLACKWELL_DMA_COPY_A in "class/clc9b5.h",
    BLACKWELL_DMA_COPY_B in "class/clcab5.h",
    HOPPER_SEC2_WORK_LAUNCH_A in "class/clcba2.h",
}

/// The C name of a class id, where this module knows it (aliases give the first name).
pub fn name_of(id: u32) -> Option<&'static str> {
    ALL.iter().find(|c| c.id == id).map(|c| c.name)
}
