//! RPC function and event numbers of GSP-RM 570.144.
//!
//! Mirrors the `X(UNIT, RPC, VAL)` and `E(RPC, VAL)` tables of
//! `src/nvidia/inc/kernel/vgpu/rpc_global_enums.h` (every entry, deprecated ones included;
//! the `NV_VGPU_MSG_FUNCTION_NUM_FUNCTIONS`, `NV_VGPU_MSG_EVENT_FIRST_EVENT` and
//! `NV_VGPU_MSG_EVENT_NUM_EVENTS` sentinels are the `COUNT`/`FIRST`/`END` constants).
//! A test parses that header and compares every name and number.

/// Defines a `#[repr(u32)]` enum of NVIDIA message numbers with `ALL`, `from_u32`,
/// `name` (the full NVIDIA name) and `short_name` (the name without the prefix).
macro_rules! rpc_numbers {
    (
        $(#[$meta:meta])*
        $enum_name:ident, $prefix:literal {
            $($variant:ident = $value:literal => $c_name:literal,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u32)]
        pub enum $enum_name {
            $(
                #[doc = concat!("`", $prefix, $c_name, "` = ", stringify!($value), ".")]
                $variant = $value,
            )*
        }

        impl $enum_name {
            /// Every value, in header order.
            pub const ALL: &'static [Self] = &[$(Self::$variant,)*];

            /// The value numbered `value`, or `None` for a number 570.144 does not define.
            pub const fn from_u32(value: u32) -> Option<Self> {
                match value {
                    $($value => Some(Self::$variant),)*
                    _ => None,
                }
            }

            /// The number on the wire.
            pub const fn as_u32(self) -> u32 {
                self as u32
            }

            /// The full NVIDIA name, e.g. `"NV_VGPU_MSG_FUNCTION_GSP_RM_ALLOC"`.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => concat!($prefix, $c_name),)*
                }
            }

            /// The name without the `NV_VGPU_MSG_*_` prefix, e.g. `"GSP_RM_ALLOC"`.
            pub const fn short_name(self) -> &'static str {
                match self {
                    $(Self::$variant => $c_name,)*
                }
            }
        }

        impl core::fmt::Display for $enum_name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl TryFrom<u32> for $enum_name {
            type Error = u32;
            /// Fails with the unknown number itself.
            fn try_from(value: u32) -> Result<Self, u32> {
                Self::from_u32(value).ok_or(value)
            }
        }
    };
}

impl RpcFunction {
    /// `NV_VGPU_MSG_FUNCTION_NUM_FUNCTIONS`: one past the highest function number.
    pub const COUNT: u32 = 227;
}

impl RpcEvent {
    /// `NV_VGPU_MSG_EVENT_FIRST_EVENT`: event numbers start here.
    pub const FIRST: u32 = 0x1000;
    /// `NV_VGPU_MSG_EVENT_NUM_EVENTS`: one past the highest event number.
    pub const END: u32 = 0x1023;
}

/// A message number as found in [`RpcMessageHeader::function`](crate::abi::RpcMessageHeader):
/// a function, an event, or a number 570.144 does not define.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RpcNumber {
    /// An `NV_VGPU_MSG_FUNCTION_*`.
    Function(RpcFunction),
    /// An `NV_VGPU_MSG_EVENT_*`.
    Event(RpcEvent),
    /// Neither.
    Unknown(u32),
}

impl RpcNumber {
    /// Classifies a raw `function` field.
    pub const fn from_u32(value: u32) -> Self {
        if let Some(f) = RpcFunction::from_u32(value) {
            Self::Function(f)
        } else if let Some(e) = RpcEvent::from_u32(value) {
            Self::Event(e)
        } else {
            Self::Unknown(value)
        }
    }

    /// The NVIDIA name, or `"unknown"`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Function(f) => f.name(),
            Self::Event(e) => e.name(),
            Self::Unknown(_) => "unknown",
        }
    }
}

rpc_numbers! {
    /// An RPC function number (`NV_VGPU_MSG_FUNCTION_*`), the `function` of a message
    /// the CPU sends (and of its reply).
    RpcFunction, "NV_VGPU_MSG_FUNCTION_" {
        Nop = 0 => "NOP",
        SetGuestSystemInfo = 1 => "SET_GUEST_SYSTEM_INFO",
        AllocRoot = 2 => "ALLOC_ROOT",
        AllocDevice = 3 => "ALLOC_DEVICE",
        AllocMemory = 4 => "ALLOC_MEMORY",
        AllocCtxDma = 5 => "ALLOC_CTX_DMA",
        AllocChannelDma = 6 => "ALLOC_CHANNEL_DMA",
        MapMemory = 7 => "MAP_MEMORY",
        BindCtxDma = 8 => "BIND_CTX_DMA",
        AllocObject = 9 => "ALLOC_OBJECT",
        Free = 10 => "FREE",
        Log = 11 => "LOG",
        AllocVidmem = 12 => "ALLOC_VIDMEM",
        UnmapMemory = 13 => "UNMAP_MEMORY",
        MapMemoryDma = 14 => "MAP_MEMORY_DMA",
        UnmapMemoryDma = 15 => "UNMAP_MEMORY_DMA",
        GetEdid = 16 => "GET_EDID",
        AllocDispChannel = 17 => "ALLOC_DISP_CHANNEL",
        AllocDispObject = 18 => "ALLOC_DISP_OBJECT",
        AllocSubdevice = 19 => "ALLOC_SUBDEVICE",
        AllocDynamicMemory = 20 => "ALLOC_DYNAMIC_MEMORY",
        DupObject = 21 => "DUP_OBJECT",
        IdleChannels = 22 => "IDLE_CHANNELS",
        AllocEvent = 23 => "ALLOC_EVENT",
        SendEvent = 24 => "SEND_EVENT",
        RemapperControl = 25 => "REMAPPER_CONTROL",
        DmaControl = 26 => "DMA_CONTROL",
        DmaFillPteMem = 27 => "DMA_FILL_PTE_MEM",
        ManageHwResource = 28 => "MANAGE_HW_RESOURCE",
        BindArbitraryCtxDma = 29 => "BIND_ARBITRARY_CTX_DMA",
        CreateFbSegment = 30 => "CREATE_FB_SEGMENT",
        DestroyFbSegment = 31 => "DESTROY_FB_SEGMENT",
        AllocShareDevice = 32 => "ALLOC_SHARE_DEVICE",
        DeferredApiControl = 33 => "DEFERRED_API_CONTROL",
        RemoveDeferredApi = 34 => "REMOVE_DEFERRED_API",
        SimEscapeRead = 35 => "SIM_ESCAPE_READ",
        SimEscapeWrite = 36 => "SIM_ESCAPE_WRITE",
        SimManageDisplayContextDma = 37 => "SIM_MANAGE_DISPLAY_CONTEXT_DMA",
        FreeVidmemVirt = 38 => "FREE_VIDMEM_VIRT",
        PerfGetPstateInfo = 39 => "PERF_GET_PSTATE_INFO",
        PerfGetPerfmonSample = 40 => "PERF_GET_PERFMON_SAMPLE",
        PerfGetVirtualPstateInfo = 41 => "PERF_GET_VIRTUAL_PSTATE_INFO",
        PerfGetLevelInfo = 42 => "PERF_GET_LEVEL_INFO",
        MapSemaMemory = 43 => "MAP_SEMA_MEMORY",
        UnmapSemaMemory = 44 => "UNMAP_SEMA_MEMORY",
        SetSurfaceProperties = 45 => "SET_SURFACE_PROPERTIES",
        CleanupSurface = 46 => "CLEANUP_SURFACE",
        UnloadingGuestDriver = 47 => "UNLOADING_GUEST_DRIVER",
        TdrSetTimeoutState = 48 => "TDR_SET_TIMEOUT_STATE",
        SwitchToVga = 49 => "SWITCH_TO_VGA",
        GpuExecRegOps = 50 => "GPU_EXEC_REG_OPS",
        GetStaticInfo = 51 => "GET_STATIC_INFO",
        AllocVirtmem = 52 => "ALLOC_VIRTMEM",
        UpdatePde2 = 53 => "UPDATE_PDE_2",
        SetPageDirectory = 54 => "SET_PAGE_DIRECTORY",
        GetStaticPstateInfo = 55 => "GET_STATIC_PSTATE_INFO",
        TranslateGuestGpuPtes = 56 => "TRANSLATE_GUEST_GPU_PTES",
        Reserved57 = 57 => "RESERVED_57",
        ResetCurrentGrContext = 58 => "RESET_CURRENT_GR_CONTEXT",
        SetSemaMemValidationState = 59 => "SET_SEMA_MEM_VALIDATION_STATE",
        GetEngineUtilization = 60 => "GET_ENGINE_UTILIZATION",
        UpdateGpuPdes = 61 => "UPDATE_GPU_PDES",
        GetEncoderCapacity = 62 => "GET_ENCODER_CAPACITY",
        VgpuPfRegRead32 = 63 => "VGPU_PF_REG_READ32",
        SetGuestSystemInfoExt = 64 => "SET_GUEST_SYSTEM_INFO_EXT",
        GetGspStaticInfo = 65 => "GET_GSP_STATIC_INFO",
        RmfsInit = 66 => "RMFS_INIT",
        RmfsCloseQueue = 67 => "RMFS_CLOSE_QUEUE",
        RmfsCleanup = 68 => "RMFS_CLEANUP",
        RmfsTest = 69 => "RMFS_TEST",
        UpdateBarPde = 70 => "UPDATE_BAR_PDE",
        ContinuationRecord = 71 => "CONTINUATION_RECORD",
        GspSetSystemInfo = 72 => "GSP_SET_SYSTEM_INFO",
        SetRegistry = 73 => "SET_REGISTRY",
        GspInitPostObjgpu = 74 => "GSP_INIT_POST_OBJGPU",
        SubdevEventSetNotification = 75 => "SUBDEV_EVENT_SET_NOTIFICATION",
        GspRmControl = 76 => "GSP_RM_CONTROL",
        GetStaticInfo2 = 77 => "GET_STATIC_INFO2",
        DumpProtobufComponent = 78 => "DUMP_PROTOBUF_COMPONENT",
        UnsetPageDirectory = 79 => "UNSET_PAGE_DIRECTORY",
        GetConsolidatedStaticInfo = 80 => "GET_CONSOLIDATED_STATIC_INFO",
        GmmuRegisterFaultBuffer = 81 => "GMMU_REGISTER_FAULT_BUFFER",
        GmmuUnregisterFaultBuffer = 82 => "GMMU_UNREGISTER_FAULT_BUFFER",
        GmmuRegisterClientShadowFaultBuffer = 83 => "GMMU_REGISTER_CLIENT_SHADOW_FAULT_BUFFER",
        GmmuUnregisterClientShadowFaultBuffer = 84 => "GMMU_UNREGISTER_CLIENT_SHADOW_FAULT_BUFFER",
        CtrlSetVgpuFbUsage = 85 => "CTRL_SET_VGPU_FB_USAGE",
        CtrlNvfbcSwSessionUpdateInfo = 86 => "CTRL_NVFBC_SW_SESSION_UPDATE_INFO",
        CtrlNvencSwSessionUpdateInfo = 87 => "CTRL_NVENC_SW_SESSION_UPDATE_INFO",
        CtrlResetChannel = 88 => "CTRL_RESET_CHANNEL",
        CtrlResetIsolatedChannel = 89 => "CTRL_RESET_ISOLATED_CHANNEL",
        CtrlGpuHandleVfPriFault = 90 => "CTRL_GPU_HANDLE_VF_PRI_FAULT",
        CtrlClkGetExtendedInfo = 91 => "CTRL_CLK_GET_EXTENDED_INFO",
        CtrlPerfBoost = 92 => "CTRL_PERF_BOOST",
        CtrlPerfVpstatesGetControl = 93 => "CTRL_PERF_VPSTATES_GET_CONTROL",
        CtrlGetZbcClearTable = 94 => "CTRL_GET_ZBC_CLEAR_TABLE",
        CtrlSetZbcColorClear = 95 => "CTRL_SET_ZBC_COLOR_CLEAR",
        CtrlSetZbcDepthClear = 96 => "CTRL_SET_ZBC_DEPTH_CLEAR",
        CtrlGpfifoSchedule = 97 => "CTRL_GPFIFO_SCHEDULE",
        CtrlSetTimeslice = 98 => "CTRL_SET_TIMESLICE",
        CtrlPreempt = 99 => "CTRL_PREEMPT",
        CtrlFifoDisableChannels = 100 => "CTRL_FIFO_DISABLE_CHANNELS",
        CtrlSetTsgInterleaveLevel = 101 => "CTRL_SET_TSG_INTERLEAVE_LEVEL",
        CtrlSetChannelInterleaveLevel = 102 => "CTRL_SET_CHANNEL_INTERLEAVE_LEVEL",
        GspRmAlloc = 103 => "GSP_RM_ALLOC",
        CtrlGetP2pCapsV2 = 104 => "CTRL_GET_P2P_CAPS_V2",
        CtrlCipherAesEncrypt = 105 => "CTRL_CIPHER_AES_ENCRYPT",
        CtrlCipherSessionKey = 106 => "CTRL_CIPHER_SESSION_KEY",
        CtrlCipherSessionKeyStatus = 107 => "CTRL_CIPHER_SESSION_KEY_STATUS",
        CtrlDbgClearAllSmErrorStates = 108 => "CTRL_DBG_CLEAR_ALL_SM_ERROR_STATES",
        CtrlDbgReadAllSmErrorStates = 109 => "CTRL_DBG_READ_ALL_SM_ERROR_STATES",
        CtrlDbgSetExceptionMask = 110 => "CTRL_DBG_SET_EXCEPTION_MASK",
        CtrlGpuPromoteCtx = 111 => "CTRL_GPU_PROMOTE_CTX",
        CtrlGrCtxswPreemptionBind = 112 => "CTRL_GR_CTXSW_PREEMPTION_BIND",
        CtrlGrSetCtxswPreemptionMode = 113 => "CTRL_GR_SET_CTXSW_PREEMPTION_MODE",
        CtrlGrCtxswZcullBind = 114 => "CTRL_GR_CTXSW_ZCULL_BIND",
        CtrlGpuInitializeCtx = 115 => "CTRL_GPU_INITIALIZE_CTX",
        CtrlVaspaceCopyServerReservedPdes = 116 => "CTRL_VASPACE_COPY_SERVER_RESERVED_PDES",
        CtrlFifoClearFaultedBit = 117 => "CTRL_FIFO_CLEAR_FAULTED_BIT",
        CtrlGetLatestEccAddresses = 118 => "CTRL_GET_LATEST_ECC_ADDRESSES",
        CtrlMcServiceInterrupts = 119 => "CTRL_MC_SERVICE_INTERRUPTS",
        CtrlDmaSetDefaultVaspace = 120 => "CTRL_DMA_SET_DEFAULT_VASPACE",
        CtrlGetCePceMask = 121 => "CTRL_GET_CE_PCE_MASK",
        CtrlGetZbcClearTableEntry = 122 => "CTRL_GET_ZBC_CLEAR_TABLE_ENTRY",
        CtrlGetNvlinkPeerIdMask = 123 => "CTRL_GET_NVLINK_PEER_ID_MASK",
        CtrlGetNvlinkStatus = 124 => "CTRL_GET_NVLINK_STATUS",
        CtrlGetP2pCaps = 125 => "CTRL_GET_P2P_CAPS",
        CtrlGetP2pCapsMatrix = 126 => "CTRL_GET_P2P_CAPS_MATRIX",
        Reserved0 = 127 => "RESERVED_0",
        CtrlReservePmAreaSmpc = 128 => "CTRL_RESERVE_PM_AREA_SMPC",
        CtrlReserveHwpmLegacy = 129 => "CTRL_RESERVE_HWPM_LEGACY",
        CtrlB0ccExecRegOps = 130 => "CTRL_B0CC_EXEC_REG_OPS",
        CtrlBindPmResources = 131 => "CTRL_BIND_PM_RESOURCES",
        CtrlDbgSuspendContext = 132 => "CTRL_DBG_SUSPEND_CONTEXT",
        CtrlDbgResumeContext = 133 => "CTRL_DBG_RESUME_CONTEXT",
        CtrlDbgExecRegOps = 134 => "CTRL_DBG_EXEC_REG_OPS",
        CtrlDbgSetModeMmuDebug = 135 => "CTRL_DBG_SET_MODE_MMU_DEBUG",
        CtrlDbgReadSingleSmErrorState = 136 => "CTRL_DBG_READ_SINGLE_SM_ERROR_STATE",
        CtrlDbgClearSingleSmErrorState = 137 => "CTRL_DBG_CLEAR_SINGLE_SM_ERROR_STATE",
        CtrlDbgSetModeErrbarDebug = 138 => "CTRL_DBG_SET_MODE_ERRBAR_DEBUG",
        CtrlDbgSetNextStopTriggerType = 139 => "CTRL_DBG_SET_NEXT_STOP_TRIGGER_TYPE",
        CtrlAllocPmaStream = 140 => "CTRL_ALLOC_PMA_STREAM",
        CtrlPmaStreamUpdateGetPut = 141 => "CTRL_PMA_STREAM_UPDATE_GET_PUT",
        CtrlFbGetInfoV2 = 142 => "CTRL_FB_GET_INFO_V2",
        CtrlFifoSetChannelProperties = 143 => "CTRL_FIFO_SET_CHANNEL_PROPERTIES",
        CtrlGrGetCtxBufferInfo = 144 => "CTRL_GR_GET_CTX_BUFFER_INFO",
        CtrlKgrGetCtxBufferPtes = 145 => "CTRL_KGR_GET_CTX_BUFFER_PTES",
        CtrlGpuEvictCtx = 146 => "CTRL_GPU_EVICT_CTX",
        CtrlFbGetFsInfo = 147 => "CTRL_FB_GET_FS_INFO",
        CtrlGrmgrGetGrFsInfo = 148 => "CTRL_GRMGR_GET_GR_FS_INFO",
        CtrlStopChannel = 149 => "CTRL_STOP_CHANNEL",
        CtrlGrPcSamplingMode = 150 => "CTRL_GR_PC_SAMPLING_MODE",
        CtrlPerfRatedTdpGetStatus = 151 => "CTRL_PERF_RATED_TDP_GET_STATUS",
        CtrlPerfRatedTdpSetControl = 152 => "CTRL_PERF_RATED_TDP_SET_CONTROL",
        CtrlFreePmaStream = 153 => "CTRL_FREE_PMA_STREAM",
        CtrlTimerSetGrTickFreq = 154 => "CTRL_TIMER_SET_GR_TICK_FREQ",
        CtrlFifoSetupVfZombieSubctxPdb = 155 => "CTRL_FIFO_SETUP_VF_ZOMBIE_SUBCTX_PDB",
        GetConsolidatedGrStaticInfo = 156 => "GET_CONSOLIDATED_GR_STATIC_INFO",
        CtrlDbgSetSingleSmSingleStep = 157 => "CTRL_DBG_SET_SINGLE_SM_SINGLE_STEP",
        CtrlGrGetTpcPartitionMode = 158 => "CTRL_GR_GET_TPC_PARTITION_MODE",
        CtrlGrSetTpcPartitionMode = 159 => "CTRL_GR_SET_TPC_PARTITION_MODE",
        UvmPagingChannelAllocate = 160 => "UVM_PAGING_CHANNEL_ALLOCATE",
        UvmPagingChannelDestroy = 161 => "UVM_PAGING_CHANNEL_DESTROY",
        UvmPagingChannelMap = 162 => "UVM_PAGING_CHANNEL_MAP",
        UvmPagingChannelUnmap = 163 => "UVM_PAGING_CHANNEL_UNMAP",
        UvmPagingChannelPushStream = 164 => "UVM_PAGING_CHANNEL_PUSH_STREAM",
        UvmPagingChannelSetHandles = 165 => "UVM_PAGING_CHANNEL_SET_HANDLES",
        UvmMethodStreamGuestPagesOperation = 166 => "UVM_METHOD_STREAM_GUEST_PAGES_OPERATION",
        CtrlInternalQuiescePmaChannel = 167 => "CTRL_INTERNAL_QUIESCE_PMA_CHANNEL",
        DceRmInit = 168 => "DCE_RM_INIT",
        RegisterVirtualEventBuffer = 169 => "REGISTER_VIRTUAL_EVENT_BUFFER",
        CtrlEventBufferUpdateGet = 170 => "CTRL_EVENT_BUFFER_UPDATE_GET",
        GetPlcableAddressKind = 171 => "GET_PLCABLE_ADDRESS_KIND",
        CtrlPerfLimitsSetStatusV2 = 172 => "CTRL_PERF_LIMITS_SET_STATUS_V2",
        CtrlInternalSriovPromotePmaStream = 173 => "CTRL_INTERNAL_SRIOV_PROMOTE_PMA_STREAM",
        CtrlGetMmuDebugMode = 174 => "CTRL_GET_MMU_DEBUG_MODE",
        CtrlInternalPromoteFaultMethodBuffers = 175 => "CTRL_INTERNAL_PROMOTE_FAULT_METHOD_BUFFERS",
        CtrlFlcnGetCtxBufferSize = 176 => "CTRL_FLCN_GET_CTX_BUFFER_SIZE",
        CtrlFlcnGetCtxBufferInfo = 177 => "CTRL_FLCN_GET_CTX_BUFFER_INFO",
        DisableChannels = 178 => "DISABLE_CHANNELS",
        CtrlFabricMemoryDescribe = 179 => "CTRL_FABRIC_MEMORY_DESCRIBE",
        CtrlFabricMemStats = 180 => "CTRL_FABRIC_MEM_STATS",
        SaveHibernationData = 181 => "SAVE_HIBERNATION_DATA",
        RestoreHibernationData = 182 => "RESTORE_HIBERNATION_DATA",
        CtrlInternalMemsysSetZbcReferenced = 183 => "CTRL_INTERNAL_MEMSYS_SET_ZBC_REFERENCED",
        CtrlExecPartitionsCreate = 184 => "CTRL_EXEC_PARTITIONS_CREATE",
        CtrlExecPartitionsDelete = 185 => "CTRL_EXEC_PARTITIONS_DELETE",
        CtrlGpfifoGetWorkSubmitToken = 186 => "CTRL_GPFIFO_GET_WORK_SUBMIT_TOKEN",
        CtrlGpfifoSetWorkSubmitTokenNotifIndex = 187 => "CTRL_GPFIFO_SET_WORK_SUBMIT_TOKEN_NOTIF_INDEX",
        PmaScrubberSharedBufferGuestPagesOperation = 188 => "PMA_SCRUBBER_SHARED_BUFFER_GUEST_PAGES_OPERATION",
        CtrlMasterGetVirtualFunctionErrorContIntrMask = 189 => "CTRL_MASTER_GET_VIRTUAL_FUNCTION_ERROR_CONT_INTR_MASK",
        SetSysmemDirtyPageTrackingBuffer = 190 => "SET_SYSMEM_DIRTY_PAGE_TRACKING_BUFFER",
        CtrlSubdeviceGetP2pCaps = 191 => "CTRL_SUBDEVICE_GET_P2P_CAPS",
        CtrlBusSetP2pMapping = 192 => "CTRL_BUS_SET_P2P_MAPPING",
        CtrlBusUnsetP2pMapping = 193 => "CTRL_BUS_UNSET_P2P_MAPPING",
        CtrlFlaSetupInstanceMemBlock = 194 => "CTRL_FLA_SETUP_INSTANCE_MEM_BLOCK",
        CtrlGpuMigratableOps = 195 => "CTRL_GPU_MIGRATABLE_OPS",
        CtrlGetTotalHsCredits = 196 => "CTRL_GET_TOTAL_HS_CREDITS",
        CtrlGetHsCredits = 197 => "CTRL_GET_HS_CREDITS",
        CtrlSetHsCredits = 198 => "CTRL_SET_HS_CREDITS",
        CtrlPmAreaPcSampler = 199 => "CTRL_PM_AREA_PC_SAMPLER",
        InvalidateTlb = 200 => "INVALIDATE_TLB",
        CtrlGpuQueryEccStatus = 201 => "CTRL_GPU_QUERY_ECC_STATUS",
        EccNotifierWriteAck = 202 => "ECC_NOTIFIER_WRITE_ACK",
        CtrlDbgGetModeMmuDebug = 203 => "CTRL_DBG_GET_MODE_MMU_DEBUG",
        RmApiControl = 204 => "RM_API_CONTROL",
        CtrlCmdInternalGpuStartFabricProbe = 205 => "CTRL_CMD_INTERNAL_GPU_START_FABRIC_PROBE",
        CtrlNvlinkGetInbandReceivedData = 206 => "CTRL_NVLINK_GET_INBAND_RECEIVED_DATA",
        GetStaticData = 207 => "GET_STATIC_DATA",
        Reserved208 = 208 => "RESERVED_208",
        CtrlGpuGetInfoV2 = 209 => "CTRL_GPU_GET_INFO_V2",
        GetBrandCaps = 210 => "GET_BRAND_CAPS",
        CtrlCmdNvlinkInbandSendData = 211 => "CTRL_CMD_NVLINK_INBAND_SEND_DATA",
        UpdateGpmGuestBufferInfo = 212 => "UPDATE_GPM_GUEST_BUFFER_INFO",
        CtrlCmdInternalControlGspTrace = 213 => "CTRL_CMD_INTERNAL_CONTROL_GSP_TRACE",
        CtrlSetZbcStencilClear = 214 => "CTRL_SET_ZBC_STENCIL_CLEAR",
        CtrlSubdeviceGetVgpuHeapStats = 215 => "CTRL_SUBDEVICE_GET_VGPU_HEAP_STATS",
        CtrlSubdeviceGetLibosHeapStats = 216 => "CTRL_SUBDEVICE_GET_LIBOS_HEAP_STATS",
        CtrlDbgSetModeMmuGccDebug = 217 => "CTRL_DBG_SET_MODE_MMU_GCC_DEBUG",
        CtrlDbgGetModeMmuGccDebug = 218 => "CTRL_DBG_GET_MODE_MMU_GCC_DEBUG",
        CtrlReserveHes = 219 => "CTRL_RESERVE_HES",
        CtrlReleaseHes = 220 => "CTRL_RELEASE_HES",
        CtrlReserveCcuProf = 221 => "CTRL_RESERVE_CCU_PROF",
        CtrlReleaseCcuProf = 222 => "CTRL_RELEASE_CCU_PROF",
        Reserved = 223 => "RESERVED",
        CtrlCmdGetChipletHsCreditPool = 224 => "CTRL_CMD_GET_CHIPLET_HS_CREDIT_POOL",
        CtrlCmdGetHsCreditsMapping = 225 => "CTRL_CMD_GET_HS_CREDITS_MAPPING",
        CtrlExecPartitionsExport = 226 => "CTRL_EXEC_PARTITIONS_EXPORT",
    }
}

rpc_numbers! {
    /// An RPC event number (`NV_VGPU_MSG_EVENT_*`), the `function` of a message GSP-RM
    /// sends unprompted.
    RpcEvent, "NV_VGPU_MSG_EVENT_" {
        GspInitDone = 0x1001 => "GSP_INIT_DONE",
        GspRunCpuSequencer = 0x1002 => "GSP_RUN_CPU_SEQUENCER",
        PostEvent = 0x1003 => "POST_EVENT",
        RcTriggered = 0x1004 => "RC_TRIGGERED",
        MmuFaultQueued = 0x1005 => "MMU_FAULT_QUEUED",
        OsErrorLog = 0x1006 => "OS_ERROR_LOG",
        RgLineIntr = 0x1007 => "RG_LINE_INTR",
        GpuacctPerfmonUtilSamples = 0x1008 => "GPUACCT_PERFMON_UTIL_SAMPLES",
        SimRead = 0x1009 => "SIM_READ",
        SimWrite = 0x100a => "SIM_WRITE",
        SemaphoreScheduleCallback = 0x100b => "SEMAPHORE_SCHEDULE_CALLBACK",
        UcodeLibosPrint = 0x100c => "UCODE_LIBOS_PRINT",
        VgpuGspPluginTriggered = 0x100d => "VGPU_GSP_PLUGIN_TRIGGERED",
        PerfGpuBoostSyncLimitsCallback = 0x100e => "PERF_GPU_BOOST_SYNC_LIMITS_CALLBACK",
        PerfBridgelessInfoUpdate = 0x100f => "PERF_BRIDGELESS_INFO_UPDATE",
        VgpuConfig = 0x1010 => "VGPU_CONFIG",
        DisplayModeset = 0x1011 => "DISPLAY_MODESET",
        ExtdevIntrService = 0x1012 => "EXTDEV_INTR_SERVICE",
        NvlinkInbandReceivedData256 = 0x1013 => "NVLINK_INBAND_RECEIVED_DATA_256",
        NvlinkInbandReceivedData512 = 0x1014 => "NVLINK_INBAND_RECEIVED_DATA_512",
        NvlinkInbandReceivedData1024 = 0x1015 => "NVLINK_INBAND_RECEIVED_DATA_1024",
        NvlinkInbandReceivedData2048 = 0x1016 => "NVLINK_INBAND_RECEIVED_DATA_2048",
        NvlinkInbandReceivedData4096 = 0x1017 => "NVLINK_INBAND_RECEIVED_DATA_4096",
        TimedSemaphoreRelease = 0x1018 => "TIMED_SEMAPHORE_RELEASE",
        NvlinkIsGpuDegraded = 0x1019 => "NVLINK_IS_GPU_DEGRADED",
        PfmReqHndlrStateSyncCallback = 0x101a => "PFM_REQ_HNDLR_STATE_SYNC_CALLBACK",
        NvlinkFaultUp = 0x101b => "NVLINK_FAULT_UP",
        GspLockdownNotice = 0x101c => "GSP_LOCKDOWN_NOTICE",
        MigCiConfigUpdate = 0x101d => "MIG_CI_CONFIG_UPDATE",
        UpdateGspTrace = 0x101e => "UPDATE_GSP_TRACE",
        NvlinkFatalErrorRecovery = 0x101f => "NVLINK_FATAL_ERROR_RECOVERY",
        GspPostNocatRecord = 0x1020 => "GSP_POST_NOCAT_RECORD",
        FecsError = 0x1021 => "FECS_ERROR",
        RecoveryAction = 0x1022 => "RECOVERY_ACTION",
    }
}
