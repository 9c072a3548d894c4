//! Framebuffer registers: WPR2 bounds, usable FB size, GFW boot progress, the sysmem flush
//! buffer (per architecture), BAR1 instance block (pre-Hopper) and the PRAMIN window (Hopper, Blackwell).

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

    /// `NV_PFB_FBHUB_PCIE_FLUSH_SYSMEM_ADDR_LO`: Hopper's sysmem flush buffer, bus address
    /// bits 31:0 as they are (`kmemsysProgramSysmemFlushBuffer_GH100` writes
    /// `NvU64_LO32(sysmemFlushBuffer)`, no shift; the hardware ignores bits 7:0).
    pub struct PfbFbhubPcieFlushSysmemAddrLo @ [match arch {
        Arch::Hopper => 0x0010_0a34,
    }] hwref("NV_PFB_FBHUB_PCIE_FLUSH_SYSMEM_ADDR_LO") {
        /// Address bits 31:0.
        adr / with_adr: u32 = 31:0, hwref("ADR");
    }

    /// `NV_PFB_FBHUB_PCIE_FLUSH_SYSMEM_ADDR_HI`: address bits 51:32 (`_ADR_MASK` 0xfffff),
    /// written before the low word.
    pub struct PfbFbhubPcieFlushSysmemAddrHi @ [match arch {
        Arch::Hopper => 0x0010_0a38,
    }] hwref("NV_PFB_FBHUB_PCIE_FLUSH_SYSMEM_ADDR_HI") {
        /// Address bits 51:32.
        adr / with_adr: u32 = 31:0, hwref("ADR");
    }

    /// `NV_PFB_HSHUB_PCIE_FLUSH_SYSMEM_ADDR_LO` in HSHUB0 (GB10x): bus address bits 31:0
    /// (`_ADR_MASK` 0xffffff00). `dev_hshub_base.h` gives the offset inside an HSHUB;
    /// `_kmemsysInitHshub0Aperture_GB100` puts HSHUB0 at [`HSHUB0`].
    pub struct PfbHshubPcieFlushSysmemAddrLo @ [0x0e50 in HSHUB0]
        hwref("NV_PFB_HSHUB_PCIE_FLUSH_SYSMEM_ADDR_LO", only Arch::BlackwellGb10x)
    {
        /// Address bits 31:0.
        adr / with_adr: u32 = 31:0, hwref("ADR");
    }

    /// `NV_PFB_HSHUB_PCIE_FLUSH_SYSMEM_ADDR_HI` in HSHUB0 (GB10x): address bits 51:32.
    pub struct PfbHshubPcieFlushSysmemAddrHi @ [0x0e54 in HSHUB0]
        hwref("NV_PFB_HSHUB_PCIE_FLUSH_SYSMEM_ADDR_HI", only Arch::BlackwellGb10x)
    {
        /// Address bits 51:32.
        adr / with_adr: u32 = 31:0, hwref("ADR");
    }

    /// `NV_PFB_HSHUB_EG_PCIE_FLUSH_SYSMEM_ADDR_LO` in HSHUB0 (GB10x): the egress copy, which
    /// must hold the same address ("See bug 4503681", `kmemsysProgramSysmemFlushBuffer_GB100`).
    pub struct PfbHshubEgPcieFlushSysmemAddrLo @ [0x06c0 in HSHUB0]
        hwref("NV_PFB_HSHUB_EG_PCIE_FLUSH_SYSMEM_ADDR_LO", only Arch::BlackwellGb10x)
    {
        /// Address bits 31:0.
        adr / with_adr: u32 = 31:0, hwref("ADR");
    }

    /// `NV_PFB_HSHUB_EG_PCIE_FLUSH_SYSMEM_ADDR_HI` in HSHUB0 (GB10x): address bits 51:32.
    pub struct PfbHshubEgPcieFlushSysmemAddrHi @ [0x06c4 in HSHUB0]
        hwref("NV_PFB_HSHUB_EG_PCIE_FLUSH_SYSMEM_ADDR_HI", only Arch::BlackwellGb10x)
    {
        /// Address bits 51:32.
        adr / with_adr: u32 = 31:0, hwref("ADR");
    }

    /// `NV_PFB_FBHUB0_PCIE_FLUSH_SYSMEM_ADDR_LO` (GB20x): bus address bits 31:0. OpenRM
    /// 570.144 publishes no header for it (`kmemsysProgramSysmemFlushBuffer_GB10B` uses it);
    /// the address is nouveau's `nvhw/ref/gb10b/dev_fbhub.h` (0x008a1d58), which
    /// `gb202_fb_sysmem_flush_page_init` writes, as nova-core's `fb/hal/gb202.rs` does.
    pub struct PfbFbhub0PcieFlushSysmemAddrLo @ [match arch {
        Arch::BlackwellGb20x => 0x008a_1d58,
    }] hwref("NV_PFB_FBHUB0_PCIE_FLUSH_SYSMEM_ADDR_LO"; absent [GB202]) {
        /// Address bits 31:0.
        adr / with_adr: u32 = 31:0, hwref("ADR"; absent [GB202]);
    }

    /// `NV_PFB_FBHUB0_PCIE_FLUSH_SYSMEM_ADDR_HI` (GB20x): address bits 51:32 (nouveau's
    /// `dev_fbhub.h`: 0x008a1d5c).
    pub struct PfbFbhub0PcieFlushSysmemAddrHi @ [match arch {
        Arch::BlackwellGb20x => 0x008a_1d5c,
    }] hwref("NV_PFB_FBHUB0_PCIE_FLUSH_SYSMEM_ADDR_HI"; absent [GB202]) {
        /// Address bits 51:32.
        adr / with_adr: u32 = 31:0, hwref("ADR"; absent [GB202]);
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

    /// `NV_PBUS_BIND_STATUS`: BAR1/BAR2 binds in flight, Turing to Ada. The published
    /// headers (tu102 `dev_bus.h`) define its fields but not its address; 0x1710 follows
    /// nouveau (`tu102_bar_bar1_wait` polls 0x001710 bits 1:0) and OpenRM's
    /// `kbusBar1InstBlkBind` waits on the same two fields.
    pub struct PbusBindStatus @ [0x0000_1710]
        hwref("NV_PBUS_BIND_STATUS"; absent [TU102, GA100, GA102, AD102],
              only Arch::Turing | Arch::Ampere | Arch::Ada)
    {
        /// A BAR1 bind waits to be sent.
        bar1_pending / with_bar1_pending: bool = 0:0, hwref("BAR1_PENDING");
        /// A BAR1 bind is outstanding to FB.
        bar1_outstanding / with_bar1_outstanding: bool = 1:1, hwref("BAR1_OUTSTANDING");
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

/// `NV_PFB_HSHUB0` = 0x870fff:0x870000: where GB10x's HSHUB0 registers sit in BAR0
/// (`_kmemsysInitHshub0Aperture_GB100`, kern_mem_sys_gb100.c; nova-core's `fb/hal/gb100.rs`
/// uses the same base).
pub const HSHUB0: u32 = 0x0087_0000;

/// The widest bus address the Hopper and Blackwell flush registers hold: `_HI_ADR_MASK`
/// 0xfffff over bits 51:32 ("Assert when Sysmem Flush buffer has more than 52-bit address").
pub const SYSMEM_FLUSH_ADDRESS_BITS: u32 = 52;

/// Why a sysmem flush buffer address cannot be programmed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SysmemFlushError {
    /// The chip's registers cannot hold the address (unaligned, or too wide).
    Unencodable {
        /// The bus address.
        address: u64,
        /// The bits the registers hold.
        bits: u32,
    },
    /// The registers do not exist on this architecture.
    Register(RegisterError),
}

impl core::fmt::Display for SysmemFlushError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SysmemFlushError::Unencodable { address, bits } => write!(
                f,
                "the sysmem flush buffer's bus address {address:#x} is not 256-byte aligned \
                 below 2^{bits}, which the flush registers require"
            ),
            SysmemFlushError::Register(e) => e.fmt(f),
        }
    }
}

impl core::error::Error for SysmemFlushError {}

impl From<RegisterError> for SysmemFlushError {
    fn from(e: RegisterError) -> Self {
        SysmemFlushError::Register(e)
    }
}

/// Programs the sysmem flush buffer (the page every sysmembar reads, `kern_mem_sys_ga100.c`:
/// "The actual memory does have to be valid and allocated at all times") at bus address
/// `address`, with `arch`'s registers, high word first ("the hardware will trigger the flush
/// on the LO write", nova-core). Turing to Ada take the address >> 8
/// (`NV_PFB_NISO_FLUSH_SYSMEM_ADDR_SHIFT`, `kmemsysProgramSysmemFlushBuffer_GA100`); Hopper
/// and Blackwell take it as it is (`kmemsysProgramSysmemFlushBuffer_GH100`, `_GB100` into
/// both HSHUB0 pairs, `_GB10B` for GB20x).
pub fn write_sysmem_flush_address(
    bar: &impl Bar0,
    arch: Arch,
    address: u64,
) -> Result<(), SysmemFlushError> {
    let bits = match arch {
        Arch::Turing | Arch::Ampere | Arch::Ada => 64,
        _ => SYSMEM_FLUSH_ADDRESS_BITS,
    };
    if !address.is_multiple_of(256) || (bits < 64 && address >> bits != 0) {
        return Err(SysmemFlushError::Unencodable { address, bits });
    }
    // CAST: the halves of the (shifted) address.
    let halves = |a: u64| ((a >> 32) as u32, a as u32);
    match arch {
        Arch::Turing | Arch::Ampere | Arch::Ada => {
            let (high, low) = halves(address >> 8);
            PfbNisoFlushSysmemAddrHi::default()
                .with_adr_63_40(high)
                .write(bar, arch)?;
            PfbNisoFlushSysmemAddr::default()
                .with_adr_39_08(low)
                .write(bar, arch)?;
        }
        Arch::Hopper => {
            let (high, low) = halves(address);
            PfbFbhubPcieFlushSysmemAddrHi::default()
                .with_adr(high)
                .write(bar, arch)?;
            PfbFbhubPcieFlushSysmemAddrLo::default()
                .with_adr(low)
                .write(bar, arch)?;
        }
        Arch::BlackwellGb10x => {
            let (high, low) = halves(address);
            PfbHshubPcieFlushSysmemAddrHi::default()
                .with_adr(high)
                .write(bar);
            PfbHshubPcieFlushSysmemAddrLo::default()
                .with_adr(low)
                .write(bar);
            PfbHshubEgPcieFlushSysmemAddrHi::default()
                .with_adr(high)
                .write(bar);
            PfbHshubEgPcieFlushSysmemAddrLo::default()
                .with_adr(low)
                .write(bar);
        }
        Arch::BlackwellGb20x => {
            let (high, low) = halves(address);
            PfbFbhub0PcieFlushSysmemAddrHi::default()
                .with_adr(high)
                .write(bar, arch)?;
            PfbFbhub0PcieFlushSysmemAddrLo::default()
                .with_adr(low)
                .write(bar, arch)?;
        }
    }
    Ok(())
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
        let addr = 0x0123_4567_8900;
        let writes = |arch| {
            bar.0.borrow_mut().clear();
            write_sysmem_flush_address(&bar, arch, addr).unwrap();
            bar.0.borrow().clone()
        };
        // Hopper and Blackwell: the address as it is (nova-core, nouveau, OpenRM).
        assert_eq!(
            writes(Arch::Hopper),
            [(0x100a38, 0x123), (0x100a34, 0x4567_8900)]
        );
        assert_eq!(
            writes(Arch::BlackwellGb10x),
            [
                (0x870e54, 0x123),
                (0x870e50, 0x4567_8900),
                (0x8706c4, 0x123),
                (0x8706c0, 0x4567_8900)
            ]
        );
        assert_eq!(
            writes(Arch::BlackwellGb20x),
            [(0x8a1d5c, 0x123), (0x8a1d58, 0x4567_8900)]
        );
        // Turing to Ada: address >> 8.
        assert_eq!(
            writes(Arch::Ada),
            [(0x100c40, 0x1), (0x100c10, 0x2345_6789)]
        );
    }

    #[test]
    fn sysmem_flush_refuses_what_the_registers_cannot_hold() {
        let bar = Writes::default();
        for (arch, addr) in [
            (Arch::Hopper, 1u64 << 52),
            (Arch::BlackwellGb20x, 0x1080),
            (Arch::BlackwellGb10x, (1 << 52) + 0x1000),
        ] {
            assert!(matches!(
                write_sysmem_flush_address(&bar, arch, addr),
                Err(SysmemFlushError::Unencodable { .. })
            ));
        }
        assert!(bar.0.borrow().is_empty());
    }

    #[test]
    fn fb_size_in_bytes() {
        assert_eq!(UsableFbSizeInMb::from_raw(143_771).bytes(), 143_771 << 20);
    }
}
