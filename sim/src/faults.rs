//! Fault injection: what a test can make the simulated GPU do wrong.
//!
//! A [`FaultPlan`] is set when the GPU is made ([`crate::SimGpu::with_faults`]) or changed
//! while it runs ([`crate::SimGpu::inject`]). Every injected fault is logged by the unit that
//! acts on it, so a test can tell an injected failure from a modelling bug.

/// Faults to inject; the default injects none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FaultPlan {
    /// GSP-RM never answers: no GSP_INIT_DONE, no RPC replies (the queues stay silent).
    pub gsp_silent: bool,
    /// Corrupt the checksum of GSP-RM's reply to this RPC function (`NV_VGPU_MSG_FUNCTION_*`).
    pub corrupt_reply_to: Option<u32>,
    /// GSP-RM answers this RPC function with this `NV_STATUS` instead of doing it:
    /// `(function, status)`.
    pub rpc_failure: Option<(u32, u32)>,
    /// GSP-RM does this RPC function, and its reply is lost (never sent).
    pub lose_reply_to: Option<u32>,
    /// GSP-RM's reply to this RPC function (`GSP_RM_ALLOC` or `GSP_RM_CONTROL`) carries a
    /// parameter block 4 bytes shorter than the one it was sent.
    pub short_reply_to: Option<u32>,
    /// The FSP answers the chain-of-trust command with this errorCode.
    pub fsp_error: Option<u32>,
    /// The FSP's reply is malformed (a wrong NVDM type in its header), and the FSP did not
    /// process the command (the GSP-FMC is not started).
    pub fsp_corrupt_reply: bool,
    /// WPR2 is up when the device appears, as a previous run that crashed leaves it; only a
    /// reset lowers it.
    pub wpr2_left_up: bool,
    /// Fault the first access of any engine to this GPU virtual address (as if unmapped).
    pub mmu_fault_at: Option<u64>,
    /// Channels stop being fetched: doorbells are accepted and ignored.
    pub channel_stall: bool,
    /// The copy engine is switched off: copies never run and never complete.
    pub copy_engine_off: bool,
    /// GSP-RM's device info table never ends: every `GET_DEVICE_INFO_TABLE` answers a full
    /// page of entries with `bMore` set.
    pub endless_device_info: bool,
    /// How long the GPU reboots after a reset (BAR0 all ones, GB20x's firewall engaged);
    /// `None`: [`crate::device::REBOOT_NS`].
    pub reboot_ns: Option<u64>,
    /// Booter path: how long devinit's FWSEC runs on after GFW boot reads complete, after a
    /// reset; `None`: [`crate::device::DEVINIT_TAIL_NS`].
    pub devinit_tail_ns: Option<u64>,
    /// Not a fault: the host has no IOMMU (tinygrad's remote protocol, which hands out
    /// physical addresses as its PCI driver does in VFIO's no-IOMMU mode). The flush read of
    /// a bus address outside the simulated host memory then reads physical RAM (address 0
    /// of an unprogrammed flush buffer is RAM; silicon-review.md: "tinygrad skips it but
    /// hands the GPU physical addresses, where address 0 is RAM") instead of faulting.
    pub no_iommu: bool,
    /// Booter path: the GSP ucode-version fuse for FWSEC reads one version lower (a board
    /// fused for the older signature): the boot ROM then wants FWSEC's first signature, which
    /// a driver that reads the fuse (OpenRM, `kgspReadUcodeFuseVersion_GA100`) picks and one
    /// that always takes the last (tinygrad 0.14.0's `signature[-0x180:]`) does not.
    pub older_fwsec_fuse: bool,
}
