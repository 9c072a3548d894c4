//! FWSEC, the VBIOS's heavy-secure ucode, as the GSP falcon runs it on GA10x/AD10x: what the
//! boot ROM checks before it runs, and what the FRTS and SB commands do.
//!
//! The simulated chip's VBIOS is built from the documented structures
//! (`nvbare_gsp::vbios::build`); FWSEC is its production entry (descriptor v3). The checks,
//! each from the driver-side code that has to satisfy them:
//! - IMEM holds FWSEC's code at `IMEMVirtBase` as secure code, BOOTVEC is `IMEMVirtBase`, and
//!   DMEM holds its data (`kgspExecuteHsFalcon_GA102` / `s_prepareHsFalconDirect` load
//!   `IMEMLoadSize` bytes to `IMEMPhysBase` and `DMEMLoadSize` bytes to `DMEMPhysBase`).
//! - The boot ROM's parameters match the descriptor: `BROM_PARAADDR(0)` = `PKCDataOffset`,
//!   `BROM_ENGIDMASK` = `EngineIdMask`, `BROM_CURR_UCODE_ID` = `UcodeId`, `MOD_SEL` = RSA3K
//!   (`kflcnSetBromParams`-style writes in `s_executeHsFalcon`, kernel_gsp_falcon_ga102.c;
//!   dev_falcon_second_pri.h `MOD_SEL_ALGO_RSA3K` 1).
//! - The signature at `PKCDataOffset` is the one the fuse version selects:
//!   `kgspReadUcodeFuseVersion_GA100` (highest set bit of `NV_FUSE_OPT_FPF_GSP_UCODE<id>_VERSION`
//!   plus one) and the walk over `SignatureVersions` in `kgspPrepareForFwsecFrts`'s helper
//!   (kernel_gsp_frts_tu102.c, lines 357-380).
//! - DMEM outside the patched places (the DMEM mapper's `init_cmd`, the command buffer, the
//!   signature) is FWSEC's own data.
//! - FRTS (`init_cmd` 0x15): the command buffer holds `FWSECLIC_FRTS_CMD`: a read-VBIOS
//!   descriptor (version 1, size 24, flags 2) and an FRTS region (version 1, size 20, size
//!   0x100 4 KiB blocks, media type FB 2) (kernel_gsp_frts_tu102.c lines 104-131, 311-328).
//!   FWSEC carves the 1 MiB FRTS region out and raises WPR2 over it; OpenRM then checks
//!   `NV_PBUS_VBIOS_SCRATCH(0xe)` 31:16 is 0 and WPR2's LO is the FRTS offset (lines 494-520).
//! - SB (`init_cmd` 0x19): run at teardown before the booter unloader ("to put back
//!   PreOsApps", `kgspTeardown_TU102`); its status is `NV_PBUS_VBIOS_SCRATCH(0x15)` 15:0.
//!
//! A version-2 FWSEC (GA100 here; TU10x) comes in through the generic bootloader
//! ([`super::loader`]), laid out as `s_vbiosFillFlcnUcodeFromDescV2` lays it: the IMEM image
//! at `IMEMPhysBase` of a code buffer, its non-secure part (`IMEMLoadSize - IMEMSecSize` at
//! `IMEMPhysBase`) and secure part (`IMEMSecSize` at `IMEMSecBase - IMEMVirtBase +
//! IMEMPhysBase`), the DMEM image at `DMEMPhysBase`, `codeEntryPoint` 0. It carries no
//! signature (the descriptor has none; RM patches only the DMEM mapper, kernel_gsp_frts_tu102.c
//! lines 411-430), so no fuse is consulted.

use nvbare_gsp::vbios::build::{Built, Spec as BuildSpec, build};
use nvbare_gsp::vbios::falcon_ucode::{CMD_FRTS, CMD_SB, DMEM_MAPPER_INIT_CMD, SIGNATURE_SIZE};
use nvbare_gsp::vbios::{FwsecDesc, FwsecInfo, parse};

use super::loader::BlDmemDesc;
use super::{BLOCK, FalconCore, MOD_SEL_RSA3K};
use crate::chip::ChipSpec;

/// `NV_PBUS_VBIOS_SCRATCH(0xe)`: FWSEC-FRTS's status (31:16).
pub const SCRATCH_FRTS: u32 = 0x0e;
/// `NV_PBUS_VBIOS_SCRATCH(0x15)`: FWSEC-SB's status (15:0).
pub const SCRATCH_SB: u32 = 0x15;
/// `FWSECLIC_FRTS_REGION_SIZE_1MB_IN_4K`.
const FRTS_BLOCKS: u32 = 0x100;
/// `FWSECLIC_FRTS_REGION_MEDIA_FB`.
const MEDIA_FB: u32 = 2;
/// `FWSECLIC_READ_VBIOS_STRUCT_FLAGS`.
const READ_VBIOS_FLAGS: u32 = 2;

/// The simulated chip's VBIOS and the FWSEC it holds.
#[derive(Debug, Clone)]
pub struct Fwsec {
    /// The VBIOS image (what BAR0's PROM window shows).
    pub vbios: Built,
    info: FwsecInfo,
}

/// What an FWSEC run asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FwsecCommand {
    /// Carve out FRTS at `offset` (bytes) of `size` bytes and raise WPR2 over it.
    Frts {
        /// FB offset.
        offset: u64,
        /// Bytes.
        size: u64,
    },
    /// Secure boot of the pre-OS apps.
    Sb,
}

/// The VBIOS builder's description of `spec`'s image.
pub fn build_spec(spec: &ChipSpec) -> BuildSpec {
    let b = spec.booter.as_ref();
    BuildSpec {
        device_id: spec.device_id,
        desc_version: b.map_or(3, |b| b.fwsec_desc_version),
        signature_count: b.map_or(2, |b| b.fwsec_signature_count),
        ..Default::default()
    }
}

impl Fwsec {
    /// `spec`'s VBIOS and FWSEC; `None` if the builder's image does not parse (a bug the
    /// unit tests catch).
    pub fn of(spec: &ChipSpec) -> Option<Fwsec> {
        let vbios = build(&build_spec(spec));
        let info = parse(&vbios.bytes).ok()?.fwsec?;
        Some(Fwsec { vbios, info })
    }

    fn v3(&self) -> Result<&nvbare_gsp::vbios::FwsecDescV3, String> {
        match &self.info.desc {
            FwsecDesc::V3(d) => Ok(d),
            FwsecDesc::V2(_) => Err(
                "FWSEC's descriptor is version 2: it runs through the generic bootloader, not \
                 from the boot ROM"
                    .into(),
            ),
        }
    }

    /// Whether FWSEC's descriptor is version 2 (run through the generic bootloader).
    pub fn is_v2(&self) -> bool {
        matches!(self.info.desc, FwsecDesc::V2(_))
    }

    /// A version-2 FWSEC after the generic bootloader ran the descriptor `bl`: its code parts
    /// must be FWSEC's IMEM image split as `s_vbiosFillFlcnUcodeFromDescV2` splits it and its
    /// data FWSEC's `DMEMLoadSize` bytes; then IMEM and DMEM are checked against the ROM and
    /// the command read. Version 2 has no signature list and Turing no ucode fuses: the falcon
    /// authenticates the secure part itself, which the simulator takes as given once the bytes
    /// are FWSEC's.
    pub fn run_v2(
        &self,
        core: &FalconCore,
        bl: &BlDmemDesc,
        fb: u64,
    ) -> Result<FwsecCommand, String> {
        let FwsecDesc::V2(d) = &self.info.desc else {
            return Err("FWSEC's descriptor is version 3: the boot ROM runs it".into());
        };
        let ns = (
            d.imem_phys_base,
            d.imem_load_size.saturating_sub(d.imem_sec_size),
        );
        let sec = (
            d.imem_sec_base
                .wrapping_sub(d.imem_virt_base)
                .wrapping_add(d.imem_phys_base),
            d.imem_sec_size.next_multiple_of(256),
        );
        if (bl.non_secure, bl.secure) != (ns, sec) {
            return Err(format!(
                "the generic bootloader's code parts are {:#x?} and {:#x?}; FWSEC's descriptor \
                 makes them {ns:#x?} (non-secure) and {sec:#x?} (secure)",
                bl.non_secure, bl.secure
            ));
        }
        if bl.data_size as usize != self.info.dmem.1 {
            return Err(format!(
                "the generic bootloader copies {:#x} bytes of data; FWSEC's DMEMLoadSize is {:#x}",
                bl.data_size, self.info.dmem.1
            ));
        }
        let entry = bl.entry;
        let rom = &self.vbios.bytes;
        let (phys, load) = (d.imem_phys_base as usize, d.imem_load_size as usize);
        let sec_len = (d.imem_sec_size as usize).next_multiple_of(BLOCK);
        let sec_at = d
            .imem_sec_base
            .wrapping_sub(d.imem_virt_base)
            .wrapping_add(d.imem_phys_base) as usize;
        if sec_at + sec_len > core.imem.len() || phys + load > core.imem.len() {
            return Err(format!(
                "FWSEC's code ({load:#x} bytes at {phys:#x}, secure {sec_len:#x} at {sec_at:#x}) \
                 does not fit the falcon's {:#x} bytes of IMEM",
                core.imem.len()
            ));
        }
        let mut code = vec![0u8; (phys + load).max(sec_at + sec_len).next_multiple_of(BLOCK)];
        code[phys..phys + load]
            .copy_from_slice(&rom[self.info.ucode_offset..self.info.ucode_offset + load]);
        let ns_len = load.saturating_sub(d.imem_sec_size as usize);
        let parts = [
            ("non-secure", phys, ns_len, false),
            ("secure", sec_at, sec_len, true),
        ];
        for (what, at, len, secure) in parts {
            // CAST: IMEM virtual addresses are code-buffer offsets below 16 MiB.
            let loaded = core.imem_virtual(at as u32, len, secure)?;
            if loaded != code[at..at + len] {
                return Err(format!(
                    "IMEM at {at:#x} does not hold FWSEC's {len:#x} bytes of {what} code"
                ));
            }
        }
        // s_prepareHsFalconWithLoader: "blDmemDesc.codeEntryPoint = 0".
        if entry != 0 {
            return Err(format!(
                "codeEntryPoint {entry:#x}: FWSEC starts at its code's first byte (0)"
            ));
        }
        let base = d.dmem_phys_base as usize;
        let dmem = core
            .dmem
            .get(base..base + self.info.dmem.1)
            .ok_or("DMEM is smaller than FWSEC's data")?;
        self.command(dmem, None, fb)
    }

    /// The signature the fuse version selects (the walk of kernel_gsp_frts_tu102.c).
    fn signature(&self, fuse_version: u32) -> Result<&[u8], String> {
        let d = self.v3()?;
        let (at, len) = self.info.signatures.ok_or("FWSEC has no signatures")?;
        let want = 1u32.checked_shl(fuse_version).unwrap_or(0);
        if want & u32::from(d.signature_versions) == 0 {
            return Err(format!(
                "no signature for fuse version {fuse_version} (SignatureVersions {:#x})",
                d.signature_versions
            ));
        }
        let index = (u32::from(d.signature_versions) & (want - 1)).count_ones() as usize;
        let start = at + index * SIGNATURE_SIZE;
        if start + SIGNATURE_SIZE > at + len {
            return Err(format!(
                "signature {index} lies past the descriptor's signatures"
            ));
        }
        Ok(&self.vbios.bytes[start..start + SIGNATURE_SIZE])
    }

    /// Checks what the driver loaded into `core` and the boot ROM's parameters, then reads
    /// the command. `fuse_version` is what the chip's GSP ucode fuse holds for FWSEC's
    /// ucode id; `fb` the FB size.
    pub fn run(
        &self,
        core: &FalconCore,
        fuse_version: u32,
        fb: u64,
    ) -> Result<FwsecCommand, String> {
        let d = self.v3()?;
        if let Some(e) = &core.dma_error {
            return Err(format!("a DMA into the falcon failed: {e}"));
        }
        let rom = &self.vbios.bytes;
        let imem_len = d.imem_load_size as usize;
        let code = &rom[self.info.ucode_offset..self.info.ucode_offset + imem_len];
        let loaded = core.imem_virtual(d.imem_virt_base, imem_len, true)?;
        if loaded != code {
            return Err(format!(
                "IMEM at {:#x} does not hold FWSEC's {imem_len:#x} bytes of code",
                d.imem_virt_base
            ));
        }
        if core.bootvec != d.imem_virt_base {
            return Err(format!(
                "BOOTVEC {:#x}, FWSEC starts at IMEMVirtBase {:#x}",
                core.bootvec, d.imem_virt_base
            ));
        }
        for (name, got, want) in [
            ("BROM_PARAADDR(0)", core.pkc_offset(), d.pkc_data_offset),
            (
                "BROM_ENGIDMASK",
                core.engine_id_mask(),
                u32::from(d.engine_id_mask),
            ),
            ("BROM_CURR_UCODE_ID", core.ucode_id(), u32::from(d.ucode_id)),
            ("MOD_SEL", core.mod_sel(), MOD_SEL_RSA3K),
        ] {
            if got != want {
                return Err(format!(
                    "{name} is {got:#x}; FWSEC's descriptor says {want:#x}"
                ));
            }
        }
        let base = d.dmem_phys_base as usize;
        let Some(dmem) = core.dmem.get(base..base + self.info.dmem.1) else {
            return Err("DMEM is smaller than FWSEC's data".into());
        };
        let pkc = d.pkc_data_offset as usize;
        let sig = self.signature(fuse_version)?;
        if dmem.get(pkc..pkc + SIGNATURE_SIZE) != Some(sig) {
            return Err(format!(
                "the signature at PKCDataOffset {pkc:#x} is not the one for fuse version \
                 {fuse_version}: the boot ROM refuses FWSEC"
            ));
        }
        self.command(dmem, Some(pkc), fb)
    }

    /// FWSEC's DMEM image `dmem` against the ROM's, where only the DMEM mapper's init_cmd,
    /// the command buffer and the signature at `pkc` (v3) may differ; then the command.
    fn command(&self, dmem: &[u8], pkc: Option<usize>, fb: u64) -> Result<FwsecCommand, String> {
        let (dmem_at, dmem_len) = self.info.dmem;
        let want_dmem = &self.vbios.bytes[dmem_at..dmem_at + dmem_len];
        let m = &self.info.dmem_mapper;
        let init_cmd = m.dmem_offset as usize + DMEM_MAPPER_INIT_CMD;
        let cmd = (
            m.cmd_in_buffer_offset as usize,
            m.cmd_in_buffer_size as usize,
        );
        let patched = |i: usize| {
            pkc.is_some_and(|p| (p..p + SIGNATURE_SIZE).contains(&i))
                || (init_cmd..init_cmd + 4).contains(&i)
                || (cmd.0..cmd.0 + cmd.1).contains(&i)
        };
        if let Some(i) = (0..dmem_len).find(|&i| !patched(i) && dmem[i] != want_dmem[i]) {
            return Err(format!(
                "DMEM byte {i:#x} differs from FWSEC's data (only the DMEM mapper's init_cmd, the \
                 command buffer and a v3 signature are patched)"
            ));
        }
        let word =
            |at: usize| u32::from_le_bytes([dmem[at], dmem[at + 1], dmem[at + 2], dmem[at + 3]]);
        match word(init_cmd) {
            CMD_FRTS => frts(&dmem[cmd.0..cmd.0 + cmd.1], fb),
            CMD_SB => Ok(FwsecCommand::Sb),
            c => Err(format!(
                "the DMEM mapper's init_cmd is {c:#x}: FWSEC knows FRTS (0x15) and SB (0x19)"
            )),
        }
    }
}

/// `FWSECLIC_FRTS_CMD` in the command buffer.
fn frts(buf: &[u8], fb: u64) -> Result<FwsecCommand, String> {
    let word = |i: usize| {
        buf.get(i * 4..i * 4 + 4)
            .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    // readVbiosDesc: version, size, gfwImageOffset (u64), gfwImageSize, flags; then
    // frtsRegionDesc: version, size, offset4K, size (4K blocks), media type.
    let (rv_version, rv_size, rv_flags) = (word(0), word(1), word(5));
    let (version, size, offset4k, blocks, media) = (word(6), word(7), word(8), word(9), word(10));
    if (rv_version, rv_size, rv_flags) != (1, 24, READ_VBIOS_FLAGS) {
        return Err(format!(
            "FWSECLIC_READ_VBIOS_DESC version {rv_version} size {rv_size} flags {rv_flags}: \
             version 1, size 24, flags 2 expected"
        ));
    }
    if (version, size) != (1, 20) {
        return Err(format!(
            "FWSECLIC_FRTS_REGION_DESC version {version} size {size}: version 1, size 20 expected"
        ));
    }
    if blocks != FRTS_BLOCKS || media != MEDIA_FB {
        return Err(format!(
            "FRTS region of {blocks:#x} 4 KiB blocks on media {media}: 0x100 blocks (1 MiB) in FB (2) expected"
        ));
    }
    let offset = u64::from(offset4k) << 12;
    let size = u64::from(blocks) << 12;
    if offset == 0 || offset + size > fb {
        return Err(format!(
            "FRTS region {offset:#x}+{size:#x} is not inside {fb:#x} bytes of FB"
        ));
    }
    Ok(FwsecCommand::Frts { offset, size })
}
