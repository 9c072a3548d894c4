//! Framebuffer registers: WPR2 bounds, usable FB size, GFW boot progress, the sysmem flush
//! buffer, BAR1 instance block (pre-Hopper) and the PRAMIN window (Hopper, Blackwell).

use super::macros::register;
use crate::chip::Arch;
use crate::hal::Bar0;
use crate::regs::RegisterError;

/// `NV_PRAMIN` = 0x7fffff:0x700000: the 1 MiB BAR0 window onto VRAM.
pub const PRAMIN: u32 = 0x0070_0000;
/// Size of the PRAMIN window in bytes.
pub const PRAMIN_SIZE: u32 = 0x0010_0000;

register! {
    /// `NV_PFB_PRI_MMU_WPR2_ADDR_LO`: start of the WPR2 secure region (address >> 12 in
    /// bits 31:4). The published headers have it only for TU102; Ampere to Blackwell keep the
    /// address (as the notes and tinygrad use it).
    pub struct PfbWpr2AddrLo @ [0x001f_a824]
        hwref("NV_PFB_PRI_MMU_WPR2_ADDR_LO"; absent [GA100, GA102, AD102, GH100, GB100, GB202])
    {
        /// Address bits 43:12 (`_ALIGNMENT` 12).
        val / with_val: u32 = 31:4, hwref("VAL");
    }

    /// `NV_PFB_PRI_MMU_WPR2_ADDR_HI`: end of WPR2; non-zero means a previous boot left
    /// secure state behind (reset before booting again).
    pub struct PfbWpr2AddrHi @ [0x001f_a828]
        hwref("NV_PFB_PRI_MMU_WPR2_ADDR_HI"; absent [GA100, GA102, AD102, GH100, GB100, GB202])
    {
        /// Address bits 43:12 (`_ALIGNMENT` 12).
        val / with_val: u32 = 31:4, hwref("VAL");
    }

    /// `NV_USABLE_FB_SIZE_IN_MB` (= `NV_PGC6_AON_SECURE_SCRATCH_GROUP_42`): VRAM size in MiB.
    pub struct UsableFbSizeInMb @ [0x0011_83a4]
        hwref("NV_USABLE_FB_SIZE_IN_MB"; absent [TU102, GA100, AD102, GH100, GB100, GB202])
    {
        /// Size in MiB.
        value / with_value: u32 = 31:0, hwref("VALUE");
    }

    /// `NV_PGC6_AON_SECURE_SCRATCH_GROUP_05_0_GFW_BOOT` (= `..._GROUP_05(0)`): VBIOS
    /// devinit progress; 0xff when the GPU finished its own boot after reset.
    pub struct GfwBootProgress @ [0x0011_8234]
        hwref("NV_PGC6_AON_SECURE_SCRATCH_GROUP_05_0_GFW_BOOT"; absent [GA100, AD102],
              only Arch::Turing | Arch::Ampere | Arch::Ada)
    {
        /// Progress; `_PROGRESS_COMPLETED` = 0xff.
        progress / with_progress: u8 = 7:0, hwref("PROGRESS");
    }

    /// `NV_PFB_NISO_FLUSH_SYSMEM_ADDR`: sysmem flush buffer, address bits 39:8 (Turing to
    /// Ada; the published header is GA100's).
    pub struct PfbNisoFlushSysmemAddr @ [match arch {
        Arch::Turing | Arch::Ampere | Arch::Ada => 0x0010_0c10,
    }] hwref("NV_PFB_NISO_FLUSH_SYSMEM_ADDR"; absent [TU102, GA102, AD102]) {
        /// Address bits 39:8.
        adr_39_08 / with_adr_39_08: u32 = 31:0, hwref("ADR_39_08");
    }

    /// `NV_PFB_NISO_FLUSH_SYSMEM_ADDR_HI`: sysmem flush buffer, address bits 63:40.
    pub struct PfbNisoFlushSysmemAddrHi @ [match arch {
        Arch::Turing | Arch::Ampere | Arch::Ada => 0x0010_0c40,
    }] hwref("NV_PFB_NISO_FLUSH_SYSMEM_ADDR_HI"; absent [TU102, GA102, AD102]) {
        /// Address bits 63:40.
        adr_63_40 / with_adr_63_40: u32 = 23:0, hwref("ADR_63_40");
    }

    /// `NV_PFB_FBHUB_PCIE_FLUSH_SYSMEM_ADDR_LO`: Hopper's sysmem flush buffer, address >> 8
    /// (`NV_PFB_NISO_FLUSH_SYSMEM_ADDR_SHIFT`), low word.
    pub struct PfbFbhubPcieFlushSysmemAddrLo @ [match arch {
        Arch::Hopper => 0x0010_0a34,
    }] hwref("NV_PFB_FBHUB_PCIE_FLUSH_SYSMEM_ADDR_LO") {
        /// Low 32 bits of address >> 8.
        adr / with_adr: u32 = 31:0, hwref("ADR");
    }

    /// `NV_PFB_FBHUB_PCIE_FLUSH_SYSMEM_ADDR_HI`: high word (written first).
    pub struct PfbFbhubPcieFlushSysmemAddrHi @ [match arch {
        Arch::Hopper => 0x0010_0a38,
    }] hwref("NV_PFB_FBHUB_PCIE_FLUSH_SYSMEM_ADDR_HI") {
        /// High bits of address >> 8 (`_ADR_MASK` 0xfffff).
        adr / with_adr: u32 = 31:0, hwref("ADR");
    }

    /// `NV_PBUS_BAR1_BLOCK`: BAR1 instance block, Turing to Ada (Hopper moved it to
    /// [`VfBar1BlockLowAddr`](super::vm::VfBar1BlockLowAddr)).
    pub struct PbusBar1Block @ [0x0000_1704]
        hwref("NV_PBUS_BAR1_BLOCK"; absent [GA102], only Arch::Turing | Arch::Ampere | Arch::Ada)
    {
        /// Instance block address >> 12 (`_PTR_SHIFT`).
        ptr / with_ptr: u32 = 27:0, hwref("PTR");
        /// Aperture: 0 VRAM, 2 coherent sysmem, 3 non-coherent sysmem.
        target / with_target: u8 = 29:28, hwref("TARGET");
        /// 0 physical, 1 virtual.
        mode / with_mode: bool = 31:31, hwref("MODE");
    }

    /// `NV_PBUS_BAR0_WINDOW`: where PRAMIN points in VRAM, Turing to Ada. No published
    /// header defines it; the address and the base field follow nouveau (which writes
    /// VRAM address >> 16 to 0x1700).
    pub struct PbusBar0Window @ [0x0000_1700]
        hwref("NV_PBUS_BAR0_WINDOW"; absent [TU102, GA100, GA102, AD102],
              only Arch::Turing | Arch::Ampere | Arch::Ada)
    {
        /// VRAM address >> 16.
        base / with_base: u32 = 23:0, hwref("BASE");
    }

    /// `NV_XAL_EP_BAR0_WINDOW`: where PRAMIN points in VRAM, Hopper and Blackwell (GH100's
    /// `BASE` is 21:0, GB100's 22:0; GB202's header names the register only).
    pub struct XalEpBar0Window @ [0x0010_fd40]
        hwref("NV_XAL_EP_BAR0_WINDOW",
              only Arch::Hopper | Arch::BlackwellGb10x | Arch::BlackwellGb20x)
    {
        /// VRAM address >> 16 (`_BASE_SHIFT`).
        base / with_base: u32 = 22:0, hwref("BASE"; absent [GB202]; narrower_in [GH100]);
    }
}

impl GfwBootProgress {
    /// `NV_PGC6_AON_SECURE_SCRATCH_GROUP_05_0_GFW_BOOT_PROGRESS_COMPLETED`.
    pub const COMPLETED: u8 = 0xff;
}

impl UsableFbSizeInMb {
    /// VRAM size in bytes.
    pub fn bytes(self) -> u64 {
        u64::from(self.value()) << 20
    }
}

/// Programs the sysmem flush buffer at bus address `address` (256-byte aligned), choosing
/// the registers of `arch` (high word first).
pub fn write_sysmem_flush_address(
    bar: &impl Bar0,
    arch: Arch,
    address: u64,
) -> Result<(), RegisterError> {
    let shifted = address >> 8;
    let (low, high) = (shifted as u32, (shifted >> 32) as u32);
    match arch {
        Arch::Turing | Arch::Ampere | Arch::Ada => {
            PfbNisoFlushSysmemAddrHi::default()
                .with_adr_63_40(high)
                .write(bar, arch)?;
            PfbNisoFlushSysmemAddr::default()
                .with_adr_39_08(low)
                .write(bar, arch)
        }
        Arch::Hopper => {
            PfbFbhubPcieFlushSysmemAddrHi::default()
                .with_adr(high)
                .write(bar, arch)?;
            PfbFbhubPcieFlushSysmemAddrLo::default()
                .with_adr(low)
                .write(bar, arch)
        }
        Arch::BlackwellGb10x | Arch::BlackwellGb20x => Err(RegisterError::NotOnArch {
            register: "NV_PFB_FBHUB_PCIE_FLUSH_SYSMEM_ADDR_LO",
            arch,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::cell::RefCell;

    #[derive(Default)]
    struct Writes(RefCell<alloc::vec::Vec<(u32, u32)>>);

    impl Bar0 for Writes {
        fn read32(&self, _offset: u32) -> u32 {
            0
        }
        fn write32(&self, offset: u32, value: u32) {
            self.0.borrow_mut().push((offset, value));
        }
    }

    #[test]
    fn sysmem_flush_writes_high_then_low_per_arch() {
        let bar = Writes::default();
        write_sysmem_flush_address(&bar, Arch::Hopper, 0x0123_4567_8900).unwrap();
        assert_eq!(
            bar.0.borrow().as_slice(),
            &[(0x100a38, 0x1), (0x100a34, 0x2345_6789)]
        );
        bar.0.borrow_mut().clear();
        write_sysmem_flush_address(&bar, Arch::Ada, 0x0123_4567_8900).unwrap();
        assert_eq!(
            bar.0.borrow().as_slice(),
            &[(0x100c40, 0x1), (0x100c10, 0x2345_6789)]
        );
        bar.0.borrow_mut().clear();
        assert!(write_sysmem_flush_address(&bar, Arch::BlackwellGb20x, 0).is_err());
        assert!(bar.0.borrow().is_empty());
    }

    #[test]
    fn fb_size_in_bytes() {
        assert_eq!(UsableFbSizeInMb::from_raw(143_771).bytes(), 143_771 << 20);
    }
}
