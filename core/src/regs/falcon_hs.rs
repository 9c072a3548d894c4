//! Registers for running heavy-secure (HS) ucode on a falcon from the CPU (FWSEC and booter,
//! Turing to Ada; Hopper and Blackwell leave that to the FSP): the FBIF DMA aperture (hwref
//! `dev_fbif_v4.h`), the second-block ("FALCON2") boot-ROM parameters (hwref
//! `dev_falcon_second_pri.h`) and the `RM` scratch.

use super::macros::register;
use super::{FalconBase, RegisterBase, RiscvBase};
use crate::chip::Arch;

/// The BAR0 base of a falcon's FBIF (memory interface) block: falcon base + 0x600
/// (`NV_PGSP_FBIF_BASE` = 0x110600, `NV_PSEC_FBIF_BASE` = 0x840600).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FbifBase(pub u32);

impl FbifBase {
    /// `NV_PGSP_FBIF_BASE`.
    pub const GSP: FbifBase = FalconBase::GSP.fbif();
    /// `NV_PSEC_FBIF_BASE`.
    pub const SEC2: FbifBase = FalconBase::SEC2.fbif();
}

impl FalconBase {
    /// The base of this falcon's FBIF block.
    pub const fn fbif(self) -> FbifBase {
        FbifBase(self.0 + 0x600)
    }
}

impl RegisterBase for FbifBase {
    fn base_address(self) -> u32 {
        self.0
    }
}

register! {
    /// `NV_PFALCON_FALCON_RM`: scratch the driver fills with `NV_PMC_BOOT_0` before HS boot.
    pub struct FalconRm @ [FalconBase + 0x084]
        hwref("NV_PFALCON_FALCON_RM"; absent [AD102],
              only Arch::Turing | Arch::Ampere | Arch::Ada)
    {}

    /// `NV_PFALCON_FBIF_TRANSCFG(0)`: aperture of DMA context 0 (the context
    /// `DMATRFCMD.CTXDMA` = 0 selects).
    pub struct FbifTranscfg @ [FbifBase + 0x000]
        hwref("NV_PFALCON_FBIF_TRANSCFG"[0]; absent [AD102],
              only Arch::Turing | Arch::Ampere | Arch::Ada)
    {
        /// 0 local FB, 1 coherent sysmem (`_TARGET_COHERENT_SYSMEM`), 2 non-coherent sysmem.
        target / with_target: u8 = 1:0, hwref("TARGET");
        /// 1 physical addresses (`_MEM_TYPE_PHYSICAL`), 0 virtual.
        mem_type / with_mem_type: bool = 2:2, hwref("MEM_TYPE");
    }

    /// `NV_PFALCON_FBIF_CTL`: FBIF control.
    pub struct FbifCtl @ [FbifBase + 0x024]
        hwref("NV_PFALCON_FBIF_CTL"; absent [AD102],
              only Arch::Turing | Arch::Ampere | Arch::Ada)
    {
        /// Allow physical DMA without a context (`_ALLOW_PHYS_NO_CTX_ALLOW`).
        allow_phys_no_ctx / with_allow_phys_no_ctx: bool = 7:7, hwref("ALLOW_PHYS_NO_CTX");
    }

    /// `NV_PFALCON2_FALCON_MOD_SEL`: signature algorithm the boot ROM verifies with.
    pub struct Falcon2ModSel @ [RiscvBase + 0x180]
        hwref("NV_PFALCON2_FALCON_MOD_SEL"; absent [TU102, GA100, AD102],
              only Arch::Turing | Arch::Ampere | Arch::Ada)
    {
        /// 1 = RSA-3K (`_ALGO_RSA3K`).
        algo / with_algo: u8 = 7:0, hwref("ALGO");
    }

    /// `NV_PFALCON2_FALCON_BROM_CURR_UCODE_ID`: id of the HS ucode being loaded.
    pub struct Falcon2BromCurrUcodeId @ [RiscvBase + 0x198]
        hwref("NV_PFALCON2_FALCON_BROM_CURR_UCODE_ID"; absent [TU102, GA100, AD102],
              only Arch::Turing | Arch::Ampere | Arch::Ada)
    {
        /// The ucode id.
        val / with_val: u8 = 7:0, hwref("VAL");
    }

    /// `NV_PFALCON2_FALCON_BROM_ENGIDMASK`: engine-id mask of the HS ucode.
    pub struct Falcon2BromEngidmask @ [RiscvBase + 0x19c]
        hwref("NV_PFALCON2_FALCON_BROM_ENGIDMASK"; absent [TU102, GA100, AD102],
              only Arch::Turing | Arch::Ampere | Arch::Ada)
    {}

    /// `NV_PFALCON2_FALCON_BROM_PARAADDR(0)`: DMEM offset of the signature parameters.
    pub struct Falcon2BromParaaddr @ [RiscvBase + 0x210]
        hwref("NV_PFALCON2_FALCON_BROM_PARAADDR"[0]; absent [TU102, GA100, AD102],
              only Arch::Turing | Arch::Ampere | Arch::Ada)
    {}
}

impl FbifTranscfg {
    /// `NV_PFALCON_FBIF_TRANSCFG_TARGET_COHERENT_SYSMEM`.
    pub const TARGET_COHERENT_SYSMEM: u8 = 1;
}

impl Falcon2ModSel {
    /// `NV_PFALCON2_FALCON_MOD_SEL_ALGO_RSA3K`.
    pub const ALGO_RSA3K: u8 = 1;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hs_registers_sit_in_their_blocks() {
        assert_eq!(FbifBase::GSP.0, 0x110600);
        assert_eq!(FbifCtl::address(FbifBase::SEC2), 0x840624);
        assert_eq!(FbifTranscfg::address(FalconBase::SEC2.fbif()), 0x840600);
        assert_eq!(Falcon2BromParaaddr::address(RiscvBase::SEC2), 0x841210);
        assert_eq!(Falcon2ModSel::address(RiscvBase::GSP), 0x111180);
        assert_eq!(FalconRm::address(FalconBase::GSP), 0x110084);
    }

    #[test]
    fn transcfg_physical_sysmem() {
        let reg = FbifTranscfg::default()
            .with_target(FbifTranscfg::TARGET_COHERENT_SYSMEM)
            .with_mem_type(true);
        assert_eq!(reg.raw(), 0b101);
    }
}
