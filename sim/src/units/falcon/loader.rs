//! The falcon generic bootloader (`gen_bootloader-570.144.bin`) as Turing's GSP falcon runs it
//! for a version-2 FWSEC (`kgspExecuteFwsec_TU102` with `KGSP_FLCN_UCODE_BOOT_WITH_LOADER`).
//!
//! What `s_prepareHsFalconWithLoader` (kernel_gsp_falcon_tu102.c) sets up, and so what the
//! simulator checks before the loader "runs":
//! - the loader's code at the top of IMEM (`imemDstBlk = IMEM_SIZE - blSize / 256`), as
//!   non-secure code tagged `blStartTag`, and BOOTVEC = `blStartTag << 8`;
//! - `RM_FLCN_BL_DMEM_DESC` (rmflcnbl.h) at DMEM 0: signature zero, `ctxDma` 4, the code
//!   buffer's DMA base with the non-secure and secure parts' offsets and sizes, entry point 0,
//!   the data buffer's DMA base and size;
//! - `FBIF_TRANSCFG(4)` physical (`MEM_TYPE` 2) and sysmem (`TARGET` coherent 1; the
//!   simulator takes non-coherent 2 too), and `FBIF_CTL.ALLOW_PHYS_NO_CTX` (7) set by
//!   `kflcnDisableCtxReq_HAL` so the loader may DMA physically without a context.
//!
//! The loader then copies both code parts into IMEM and the data into DMEM 0 by DMA through
//! context 4: the simulator reads them from bus memory, which is what FWSEC then runs on.

use nvbare_gsp::firmware::GenericBootloader;

use super::{BLOCK, FBIF_CTL, FalconCore};
use crate::device::Cx;
use crate::memory::Target;

/// The DMA context the loader uses (`blDmemDesc.ctxDma = 4`, "PHYS_SYS_NCOH").
pub const LOADER_CTX_DMA: usize = 4;
/// Bytes of `RM_FLCN_BL_DMEM_DESC`.
const DESC_BYTES: usize = 84;

/// `RM_FLCN_BL_DMEM_DESC` as the driver left it in DMEM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoaderDesc {
    /// `codeDmaBase`.
    pub code_base: u64,
    /// `nonSecureCodeOff`, `nonSecureCodeSize`.
    pub non_secure: (u32, u32),
    /// `secureCodeOff`, `secureCodeSize`.
    pub secure: (u32, u32),
    /// `dataDmaBase`.
    pub data_base: u64,
    /// `dataSize`.
    pub data_size: u32,
}

/// What the loader fetched: the code buffer's bytes up to the end of the secure part, and
/// the data it copied to DMEM 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loaded {
    /// The descriptor.
    pub desc: LoaderDesc,
    /// The code buffer from its start (what lies outside both parts is zero).
    pub code: Vec<u8>,
    /// The data.
    pub data: Vec<u8>,
}

/// Checks the loader's setup in `core` against `gen_bootloader-570.144.bin` of the chip and
/// runs it: the code and data it fetched.
pub fn run(cx: &Cx, core: &FalconCore) -> Result<Loaded, String> {
    let file = crate::firmware::load(cx.firmware_dir, cx.spec.name, "gen_bootloader")
        .map_err(|e| e.to_string())?;
    let bl = GenericBootloader::parse(&file.bytes)
        .map_err(|e| format!("{}: {e:?}", file.path.display()))?;
    let code = bl.code();
    let size = code.len().next_multiple_of(BLOCK);
    let tag = bl.desc.start_tag << 8;
    if core.bootvec != tag {
        return Err(format!(
            "BOOTVEC {:#x}: the generic bootloader starts at its start tag {tag:#x} \
             (s_prepareHsFalconWithLoader)",
            core.bootvec
        ));
    }
    let Some(top) = core.imem.len().checked_sub(size) else {
        return Err("the generic bootloader is larger than IMEM".into());
    };
    let mut want = code.to_vec();
    want.resize(size, 0);
    let blocks = &core.imem_blocks[top / BLOCK..];
    let tagged = blocks
        .iter()
        .enumerate()
        .all(|(i, b)| b.is_some_and(|b| b.tag == bl.desc.start_tag + i as u32 && !b.secure));
    if core.imem[top..] != want[..] || !tagged {
        return Err(format!(
            "the top {size:#x} bytes of IMEM do not hold the generic bootloader as non-secure \
             code tagged from {tag:#x} (s_prepareHsFalconWithLoader copies it there)"
        ));
    }
    let desc = read_desc(&core.dmem)?;
    let cfg = core.transcfg(LOADER_CTX_DMA);
    // TRANSCFG TARGET 1:0 (1 coherent, 2 non-coherent sysmem), MEM_TYPE 2 (physical).
    if cfg & (1 << 2) == 0 || !matches!(cfg & 3, 1 | 2) {
        return Err(format!(
            "FBIF_TRANSCFG(4) is {cfg:#x}: the loader DMAs from physical sysmem \
             (s_prepareHsFalconWithLoader sets TARGET COHERENT_SYSMEM, MEM_TYPE PHYSICAL)"
        ));
    }
    if core.held(FBIF_CTL) & (1 << 7) == 0 {
        return Err(
            "FBIF_CTL.ALLOW_PHYS_NO_CTX is clear: kflcnDisableCtxReq_HAL sets it before the \
             loader's physical DMA"
                .into(),
        );
    }
    let fetch = |at: u64, len: usize, what: &str| {
        let mut v = vec![0u8; len];
        cx.bus
            .read(Target::Bus(at), &mut v)
            .map_err(|e| format!("the loader's DMA of the {what} at {at:#x}: {e}"))?;
        Ok::<_, String>(v)
    };
    let (ns, sec) = (desc.non_secure, desc.secure);
    let end = (ns.0 + ns.1).max(sec.0 + sec.1) as usize;
    let mut code = vec![0u8; end];
    for ((off, len), what) in [(ns, "non-secure code"), (sec, "secure code")] {
        let part = fetch(desc.code_base + u64::from(off), len as usize, what)?;
        code[off as usize..(off + len) as usize].copy_from_slice(&part);
    }
    let data = fetch(desc.data_base, desc.data_size as usize, "data")?;
    Ok(Loaded { desc, code, data })
}

fn read_desc(dmem: &[u8]) -> Result<LoaderDesc, String> {
    let Some(d) = dmem.get(..DESC_BYTES) else {
        return Err("DMEM is smaller than RM_FLCN_BL_DMEM_DESC".into());
    };
    let w = |i: usize| u32::from_le_bytes([d[4 * i], d[4 * i + 1], d[4 * i + 2], d[4 * i + 3]]);
    // reserved[4], signature[4], ctxDma, codeDmaBase (lo, hi), nonSecureCodeOff/Size,
    // secureCodeOff/Size, codeEntryPoint, dataDmaBase (lo, hi), dataSize, argc, argv.
    if (4..8).any(|i| w(i) != 0) || w(8) != LOADER_CTX_DMA as u32 || w(15) != 0 {
        return Err(format!(
            "RM_FLCN_BL_DMEM_DESC at DMEM 0 has signature {:#x?}, ctxDma {}, codeEntryPoint \
             {:#x}: s_prepareHsFalconWithLoader writes a zero signature, ctxDma 4, entry 0",
            [w(4), w(5), w(6), w(7)],
            w(8),
            w(15)
        ));
    }
    Ok(LoaderDesc {
        code_base: u64::from(w(10)) << 32 | u64::from(w(9)),
        non_secure: (w(11), w(12)),
        secure: (w(13), w(14)),
        data_base: u64::from(w(17)) << 32 | u64::from(w(16)),
        data_size: w(18),
    })
}
