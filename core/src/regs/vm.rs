//! The virtual-function register window in the physical function's BAR0 (hwref
//! `dev_vm.h`, whose defines are relative to the window): MMU TLB invalidation, the Hopper
//! BAR1 instance block, and the usermode doorbell (class `*_USERMODE_A`, e.g. NVC661).

use super::macros::register;
use crate::chip::Arch;

/// `NV_VIRTUAL_FUNCTION_FULL_PHYS_OFFSET` = 0xbbffff:0xb80000: where the VF register window
/// appears in the physical function's BAR0.
pub const VF_WINDOW: u32 = 0x00b8_0000;
/// `NV_VIRTUAL_FUNCTION` = 0x3ffff:0x30000: the usermode region inside the window.
pub const USERMODE_OFFSET: u32 = 0x0003_0000;
/// BAR0 address of the usermode region (0xbb0000).
pub const USERMODE_BASE: u32 = VF_WINDOW + USERMODE_OFFSET;

register! {
    /// `NV_VIRTUAL_FUNCTION_PRIV_MMU_INVALIDATE_PDB`: page directory base of the address
    /// space to invalidate (low part).
    pub struct VfMmuInvalidatePdb @ [0x30a0 in VF_WINDOW]
        hwref("NV_VIRTUAL_FUNCTION_PRIV_MMU_INVALIDATE_PDB";
              absent [GA100, GA102, AD102, GH100, GB202])
    {
        /// 0 VRAM, 1 sysmem.
        aperture / with_aperture: bool = 1:1, hwref("APERTURE");
        /// PDB address bits 39:12 (`_ADDR_ALIGNMENT` 12).
        addr / with_addr: u32 = 31:4, hwref("ADDR");
    }

    /// `NV_VIRTUAL_FUNCTION_PRIV_MMU_INVALIDATE_UPPER_PDB`: PDB address bits 59:40.
    pub struct VfMmuInvalidateUpperPdb @ [0x30a4 in VF_WINDOW]
        hwref("NV_VIRTUAL_FUNCTION_PRIV_MMU_INVALIDATE_UPPER_PDB";
              absent [GA100, GA102, AD102, GH100, GB202])
    {
        /// PDB address bits 59:40.
        addr / with_addr: u32 = 19:0, hwref("ADDR");
    }

    /// `NV_VIRTUAL_FUNCTION_PRIV_MMU_INVALIDATE`: triggers a TLB invalidate.
    pub struct VfMmuInvalidate @ [0x30b0 in VF_WINDOW]
        hwref("NV_VIRTUAL_FUNCTION_PRIV_MMU_INVALIDATE"; absent [GA102, AD102, GH100, GB202])
    {
        /// Invalidate every virtual address.
        all_va / with_all_va: bool = 0:0, hwref("ALL_VA");
        /// Invalidate every address space (ignore the PDB registers).
        all_pdb / with_all_pdb: bool = 1:1, hwref("ALL_PDB");
        /// Only the hub TLB.
        hubtlb_only / with_hubtlb_only: bool = 2:2, hwref("HUBTLB_ONLY");
        /// Replay control for faulting accesses.
        replay / with_replay: u8 = 5:3, hwref("REPLAY");
        /// Issue a system membar.
        sys_membar / with_sys_membar: bool = 6:6, hwref("SYS_MEMBAR");
        /// Acknowledgement kind.
        ack / with_ack: u8 = 8:7, hwref("ACK");
        /// Which page-table levels to drop: 0 all.
        cache_level / with_cache_level: u8 = 26:24, hwref("CACHE_LEVEL");
        /// Start the invalidate.
        trigger / with_trigger: bool = 31:31, hwref("TRIGGER");
    }

    /// `NV_VIRTUAL_FUNCTION_PRIV_FUNC_BAR1_BLOCK_LOW_ADDR`: BAR1 instance block, Hopper+.
    pub struct VfBar1BlockLowAddr @ [0x0f60 in VF_WINDOW]
        hwref("NV_VIRTUAL_FUNCTION_PRIV_FUNC_BAR1_BLOCK_LOW_ADDR"; absent [GB100, GB202],
              only Arch::Hopper | Arch::BlackwellGb10x | Arch::BlackwellGb20x)
    {
        /// A bind is pending.
        bar1_pending / with_bar1_pending: bool = 0:0, hwref("BAR1_PENDING");
        /// Accesses are outstanding.
        bar1_outstanding / with_bar1_outstanding: bool = 1:1, hwref("BAR1_OUTSTANDING");
        /// 0 physical, 1 virtual.
        mode / with_mode: bool = 9:9, hwref("MODE");
        /// Aperture: 0 VRAM, 2 coherent sysmem, 3 non-coherent sysmem.
        target / with_target: u8 = 11:10, hwref("TARGET");
        /// Instance block address bits 31:12 (`_PTR_SHIFT` 12).
        ptr / with_ptr: u32 = 31:12, hwref("PTR");
    }

    /// `NV_VIRTUAL_FUNCTION_PRIV_FUNC_BAR1_BLOCK_HIGH_ADDR`: instance block address bits
    /// 63:32, Hopper+.
    pub struct VfBar1BlockHighAddr @ [0x0f64 in VF_WINDOW]
        hwref("NV_VIRTUAL_FUNCTION_PRIV_FUNC_BAR1_BLOCK_HIGH_ADDR"; absent [GB100, GB202],
              only Arch::Hopper | Arch::BlackwellGb10x | Arch::BlackwellGb20x)
    {
        /// Address bits 63:32.
        ptr / with_ptr: u32 = 31:0, hwref("PTR");
    }

    /// `NV_VIRTUAL_FUNCTION_DOORBELL`: the usermode doorbell (usermode base + 0x90,
    /// `NVC661_NOTIFY_CHANNEL_PENDING`); write a channel's work-submit token to it. Where
    /// the run-list doorbell enable sits differs (bit 30 on GB202, 22 on GB100, none on
    /// GH100), so it is not a field: tokens from GSP-RM are written as they come.
    pub struct UsermodeDoorbell @ [0x30090 in VF_WINDOW]
        hwref("NV_VIRTUAL_FUNCTION_DOORBELL"; absent [GA100, GA102, AD102, GH100])
    {
        /// Channel id (the doorbell vector).
        vector / with_vector: u16 = 11:0, hwref("VECTOR"; absent [TU102]);
        /// Run list of the channel.
        runlist_id / with_runlist_id: u8 = 22:16, hwref("RUNLIST_ID"; absent [TU102]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_addresses() {
        assert_eq!(VfMmuInvalidate::ADDRESS, 0xb830b0);
        assert_eq!(VfBar1BlockLowAddr::ADDRESS, 0xb80f60);
        assert_eq!(UsermodeDoorbell::ADDRESS, USERMODE_BASE + 0x90);
        assert_eq!(UsermodeDoorbell::ADDRESS, 0xbb0090);
    }

    #[test]
    fn tlb_invalidate_all() {
        let reg = VfMmuInvalidate::default()
            .with_all_va(true)
            .with_all_pdb(true)
            .with_sys_membar(true)
            .with_trigger(true);
        assert_eq!(reg.raw(), (1 << 0) | (1 << 1) | (1 << 6) | (1 << 31));
    }

    #[test]
    fn doorbell_token_layout() {
        let token = UsermodeDoorbell::default()
            .with_runlist_id(3)
            .with_vector(17);
        assert_eq!(token.raw(), 3 << 16 | 17);
    }
}
