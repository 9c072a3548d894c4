//! The falcon generic bootloader (`gen_bootloader-570.144.bin`) as TU10x/GA100 run a
//! version-2 FWSEC through it (`kgspExecuteFwsec_TU102` with
//! `KGSP_FLCN_UCODE_BOOT_WITH_LOADER`). What `s_prepareHsFalconWithLoader`
//! (kernel_gsp_falcon_tu102.c) sets up, and so what the simulator checks before the loader
//! "runs":
//! - the loader's code by PIO at the top of IMEM (`imemDstBlk = IMEM_SIZE - blSize / 256`),
//!   as non-secure code tagged from `blStartTag`, and BOOTVEC = `blStartTag << 8`;
//! - `RM_FLCN_BL_DMEM_DESC` (rmflcnbl.h, 84 bytes) at DMEM 0: signature zero, `ctxDma` 4
//!   ("dmaIdx for PHYS_SYS_NCOH"), the code buffer's DMA base with the non-secure and secure
//!   parts' offsets and sizes, `codeEntryPoint` 0, the data buffer's DMA base and size;
//! - `FBIF_TRANSCFG(4)` physical (`MEM_TYPE` 2) and sysmem (`TARGET` coherent 1; the
//!   simulator takes non-coherent 2 too), and `FBIF_CTL.ALLOW_PHYS_NO_CTX` (7) set by
//!   `kflcnDisableCtxReq_HAL` so the loader may DMA physically without a context.
//!
//! What the bootloader then does is the simulator's reading of that descriptor (the code is
//! NVIDIA's and is not executed; unconfirmed on silicon): it DMAs `nonSecureCodeSize` bytes
//! from `codeDmaBase + nonSecureCodeOff` to IMEM 0 tagged from `nonSecureCodeOff`, then
//! `secureCodeSize` bytes from `codeDmaBase + secureCodeOff` as secure code to the next
//! 256-byte block tagged from `secureCodeOff`, `dataSize` bytes from `dataDmaBase` to DMEM 0,
//! through DMA context `ctxDma`, and jumps to `codeEntryPoint`.

use nvbare_gsp::firmware::GenericBootloader;

use super::{BLOCK, FBIF_CTL, FalconCore, ImemBlock};
use crate::device::Cx;
use crate::firmware;
use crate::memory::Target;

/// `sizeof(RM_FLCN_BL_DMEM_DESC)`.
pub const DESC_SIZE: usize = 84;
/// The DMA context the loader uses (`blDmemDesc.ctxDma = 4`, "PHYS_SYS_NCOH").
pub const LOADER_CTX_DMA: u32 = 4;

/// `RM_FLCN_BL_DMEM_DESC` as the driver left it in DMEM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlDmemDesc {
    /// `signature[4]`.
    pub signature: [u32; 4],
    /// `ctxDma`.
    pub ctx_dma: u32,
    /// `codeDmaBase`.
    pub code_base: u64,
    /// `nonSecureCodeOff`, `nonSecureCodeSize`.
    pub non_secure: (u32, u32),
    /// `secureCodeOff`, `secureCodeSize`.
    pub secure: (u32, u32),
    /// `codeEntryPoint`.
    pub entry: u32,
    /// `dataDmaBase`.
    pub data_base: u64,
    /// `dataSize`.
    pub data_size: u32,
}

impl BlDmemDesc {
    /// The descriptor in the first [`DESC_SIZE`] bytes of `dmem`.
    pub fn read(dmem: &[u8]) -> Option<BlDmemDesc> {
        let w = |i: usize| {
            let b = dmem.get(i * 4..i * 4 + 4)?;
            Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        };
        let u64_at = |i: usize| Some(u64::from(w(i + 1)?) << 32 | u64::from(w(i)?));
        // reserved[4], signature[4], then ctxDma at word 8.
        Some(BlDmemDesc {
            signature: [w(4)?, w(5)?, w(6)?, w(7)?],
            ctx_dma: w(8)?,
            code_base: u64_at(9)?,
            non_secure: (w(11)?, w(12)?),
            secure: (w(13)?, w(14)?),
            entry: w(15)?,
            data_base: u64_at(16)?,
            data_size: w(18)?,
        })
    }
}

/// Checks the generic bootloader the driver loaded into `core` and runs it: IMEM and DMEM
/// then hold what it fetched. Returns the descriptor it ran (its `entry` is where it jumps),
/// or why it cannot run.
pub fn run(cx: &Cx, core: &mut FalconCore) -> Result<BlDmemDesc, String> {
    if let Some(e) = &core.dma_error {
        return Err(format!("a DMA into the falcon failed: {e}"));
    }
    let file = firmware::load(cx.firmware_dir, cx.spec.name, "gen_bootloader")
        .map_err(|e| e.to_string())?;
    let bl = GenericBootloader::parse(&file.bytes)
        .map_err(|e| format!("{}: {e:?}", file.path.display()))?;
    let code = bl.code();
    let tag = bl.desc.start_tag;
    let loaded = core.imem_virtual(tag << 8, code.len(), false)?;
    if loaded != code {
        return Err(format!(
            "IMEM tagged {:#x} does not hold the generic bootloader's code",
            tag << 8
        ));
    }
    // "Copy bootloader to top of IMEM" (s_prepareHsFalconWithLoader).
    let top = core
        .imem_blocks
        .len()
        .checked_sub(code.len().div_ceil(BLOCK))
        .ok_or("the generic bootloader is larger than IMEM")?;
    // PANIC: `top` is at most the block count (checked_sub above). CAST: block counts of a
    // 64 KiB IMEM.
    let tagged = core.imem_blocks[top..]
        .iter()
        .enumerate()
        .all(|(i, b)| b.is_some_and(|b| b.tag == tag + i as u32 && !b.secure));
    if !tagged {
        return Err(format!(
            "the generic bootloader is not in IMEM's top blocks (block {top:#x} onwards) as \
             non-secure code tagged from {:#x} (s_prepareHsFalconWithLoader copies it there)",
            tag << 8
        ));
    }
    if core.bootvec != tag << 8 {
        return Err(format!(
            "BOOTVEC {:#x}; the generic bootloader starts at blStartTag << 8 = {:#x}",
            core.bootvec,
            tag << 8
        ));
    }
    let d = BlDmemDesc::read(&core.dmem).ok_or("DMEM cannot hold RM_FLCN_BL_DMEM_DESC")?;
    if d.signature != [0; 4] || d.ctx_dma != LOADER_CTX_DMA || d.entry != 0 {
        return Err(format!(
            "RM_FLCN_BL_DMEM_DESC at DMEM 0 has signature {:x?}, ctxDma {}, codeEntryPoint \
             {:#x}: s_prepareHsFalconWithLoader writes a zero signature, ctxDma 4, entry 0",
            d.signature, d.ctx_dma, d.entry
        ));
    }
    let cfg = core.transcfg(d.ctx_dma)?;
    // TRANSCFG TARGET 1:0 (1 coherent, 2 non-coherent sysmem), MEM_TYPE 2 (physical).
    if cfg & (1 << 2) == 0 || !matches!(cfg & 3, 1 | 2) {
        return Err(format!(
            "FBIF_TRANSCFG(4) is {cfg:#x}: the generic bootloader DMAs from physical sysmem \
             (s_prepareHsFalconWithLoader sets TARGET COHERENT_SYSMEM, MEM_TYPE PHYSICAL)"
        ));
    }
    if core.held(FBIF_CTL) & (1 << 7) == 0 {
        return Err(
            "FBIF_CTL.ALLOW_PHYS_NO_CTX is clear: kflcnDisableCtxReq_HAL sets it before the \
             generic bootloader's physical DMA"
                .into(),
        );
    }
    // Nothing the bootloader fetches may exceed the memory below it (IMEM) or DMEM.
    let room = top * BLOCK;
    let fetch = |from: u64, len: u32, what: &str| {
        if len as usize > room.max(core.dmem.len()) {
            return Err(format!(
                "the generic bootloader's {what} of {len:#x} bytes does not fit IMEM below it \
                 ({room:#x} bytes) or DMEM"
            ));
        }
        let mut out = vec![0u8; len as usize];
        cx.bus
            .read(Target::Bus(from), &mut out)
            .map(|()| out)
            .map_err(|e| format!("the generic bootloader's fetch of {what} at {from:#x}: {e}"))
    };
    let ns = fetch(
        d.code_base + u64::from(d.non_secure.0),
        d.non_secure.1,
        "non-secure code",
    )?;
    let sec = fetch(
        d.code_base + u64::from(d.secure.0),
        d.secure.1,
        "secure code",
    )?;
    let data = fetch(d.data_base, d.data_size, "data")?;
    let sec_at = ns.len().next_multiple_of(BLOCK);
    if sec_at + sec.len() > room || data.len() > core.dmem.len() {
        return Err(format!(
            "{:#x} bytes of code and {:#x} of data do not fit below the bootloader in IMEM \
             ({:#x} bytes) and in DMEM",
            sec_at + sec.len(),
            data.len(),
            room
        ));
    }
    place(core, 0, &ns, d.non_secure.0, false);
    place(core, sec_at, &sec, d.secure.0, true);
    core.dmem[..data.len()].copy_from_slice(&data);
    Ok(d)
}

/// Copies `code` to IMEM at `at`, tagging its blocks from `offset >> 8`.
fn place(core: &mut FalconCore, at: usize, code: &[u8], offset: u32, secure: bool) {
    core.imem[at..at + code.len()].copy_from_slice(code);
    for (i, b) in core.imem_blocks[at / BLOCK..(at + code.len()).div_ceil(BLOCK)]
        .iter_mut()
        .enumerate()
    {
        // CAST: block counts of a 64 KiB IMEM.
        *b = Some(ImemBlock {
            tag: (offset >> 8) + i as u32,
            secure,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `RM_FLCN_BL_DMEM_DESC` (rmflcnbl.h): `reserved[4]` and `signature[4]` (32 bytes), then
    /// `ctxDma` at 32, `codeDmaBase` (lo, hi) at 36, the non-secure and secure code's offset
    /// and size at 44..60, `codeEntryPoint` at 60, `dataDmaBase` at 64, `dataSize` at 72,
    /// `argc`, `argv`: 84 bytes.
    #[test]
    fn the_descriptor_is_read_at_rmflcnbl_h_offsets() {
        let mut b = [0u8; DESC_SIZE];
        for (at, v) in [
            (16, 0xaa),
            (32, 4u32),
            (36, 0x1000),
            (40, 0x2),
            (44, 0x10),
            (48, 0x20),
            (52, 0x30),
            (56, 0x40),
            (60, 0x50),
            (64, 0x3000),
            (68, 0x4),
            (72, 0x600),
        ] {
            b[at..at + 4].copy_from_slice(&v.to_le_bytes());
        }
        let d = BlDmemDesc::read(&b).unwrap();
        assert_eq!(
            d,
            BlDmemDesc {
                signature: [0xaa, 0, 0, 0],
                ctx_dma: 4,
                code_base: 0x2_0000_1000,
                non_secure: (0x10, 0x20),
                secure: (0x30, 0x40),
                entry: 0x50,
                data_base: 0x4_0000_3000,
                data_size: 0x600,
            }
        );
        assert_eq!(BlDmemDesc::read(&b[..72]), None, "dataSize lies at 72..76");
    }
}
