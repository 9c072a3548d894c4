//! The size of every RM struct mirrored here, pinned at compile time (also in `no_std`
//! builds and without the reference headers). The numbers are what gcc reports for the C
//! types of the matching header branch; `nvbare-tests`' `abi_layout` check compares every
//! field and keeps these honest. A failed pin is a build error naming the type.

/// Fails the build when `T` is not `size` bytes.
const fn pin<T>(size: usize) {
    assert!(
        core::mem::size_of::<T>() == size,
        "an RM struct changed size"
    );
}

const _: () = {
    pin::<super::nvos::MapMemoryDmaParamsV570>(56);
    pin::<super::nvos::MapMemoryDmaParamsV580>(64);
    pin::<super::nvos::FreeParams>(16);
    pin::<super::nvos::AllocMemoryParams>(48);
    pin::<super::nvos::AllocParams>(32);
    pin::<super::nvos::MapMemoryParams>(48);
    pin::<super::nvos::UnmapMemoryParams>(32);
    pin::<super::nvos::UnmapMemoryDmaParams>(48);
    pin::<super::nvos::ControlParams>(32);
    pin::<super::alloc::VaSpaceAllocParamsV570>(48);
    pin::<super::alloc::VaSpaceAllocParamsV580>(56);
    pin::<super::alloc::RootClientAllocParams>(120);
    pin::<super::alloc::DeviceAllocParams>(56);
    pin::<super::alloc::SubdeviceAllocParams>(4);
    pin::<super::alloc::MemoryVirtualAllocParams>(24);
    pin::<super::alloc::ChannelGroupAllocParams>(20);
    pin::<super::alloc::MemoryDescParams>(24);
    pin::<super::alloc::ChannelAllocParams>(368);
    pin::<super::alloc::CtxShareAllocParams>(12);
    pin::<super::alloc::MemoryAllocParams>(128);
    pin::<super::alloc::OsDescMemoryAllocParams>(40);
    pin::<super::alloc::DebuggerAllocParams>(12);
    pin::<super::alloc::HopperUsermodeAllocParams>(2);
    pin::<super::ctrl::InfoEntry>(8);
    pin::<super::ctrl::root::ClassListV2ParamsV570>(404);
    pin::<super::ctrl::root::ClassListV2ParamsV580>(804);
    pin::<super::ctrl::root::BuildVersionParams>(40);
    pin::<super::ctrl::root::BuildVersionV2Params>(1032);
    pin::<super::ctrl::root::GpuIdInfoV2Params>(32);
    pin::<super::ctrl::root::ClassListParams>(16);
    pin::<super::ctrl::gr::GrRouteInfo>(16);
    pin::<super::ctrl::gr::GrGetInfoParams>(32);
    pin::<super::ctrl::gr::InternalStaticGrInfo>(464);
    pin::<super::ctrl::gr::InternalStaticGrGetInfoParams>(3712);
    pin::<super::ctrl::gr::EngineContextBufferInfo>(8);
    pin::<super::ctrl::gr::GrContextBuffersInfo>(208);
    pin::<super::ctrl::gr::GrGetContextBuffersInfoParams>(1664);
    pin::<super::ctrl::gr::PromoteCtxBufferEntry>(32);
    pin::<super::ctrl::gr::PromoteCtxParams>(560);
    pin::<super::ctrl::subdevice::GpuNameStringParams>(132);
    pin::<super::ctrl::subdevice::GidInfoParams>(268);
    pin::<super::ctrl::subdevice::PciInfoParams>(16);
    pin::<super::ctrl::subdevice::FifoDeviceEntry>(100);
    pin::<super::ctrl::subdevice::FifoDeviceInfoTableParams>(3212);
    pin::<super::ctrl::fb::FbGetInfoV2ParamsV570>(460);
    pin::<super::ctrl::fb::FbGetInfoV2ParamsV580>(1028);
    pin::<super::ctrl::fb::FbFlushGpuCacheParams>(4024);
    pin::<super::ctrl::channel::GpfifoScheduleParamsV570>(2);
    pin::<super::ctrl::channel::GpfifoScheduleParamsV580>(3);
    pin::<super::ctrl::channel::BindParams>(4);
    pin::<super::ctrl::channel::WorkSubmitTokenParams>(4);
    pin::<super::ctrl::channel::CopyServerReservedPdesParams>(184);
    pin::<super::ctrl::channel::ReservedPdeLevel>(24);
    pin::<super::ctrl::debugger::SmErrorStateRegisters>(48);
    pin::<super::ctrl::debugger::MmuFaultInfo>(8);
    pin::<super::ctrl::debugger::ReadAllSmErrorStatesParams>(4824);
    pin::<super::ctrl::debugger::MmuFaultInfoEntry>(16);
    pin::<super::ctrl::debugger::ReadMmuFaultInfoParams>(72);
};
