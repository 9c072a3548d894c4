//! Running one heavy-secure ucode on a falcon and collecting its mailboxes
//! (`kgspExecuteHsFalcon_TU102` for [`HsBoot::Direct`], `kgspExecuteHsFalcon_GA102` for
//! [`HsBoot::FromHs`]). The caller resets the falcon first and patched the signature.

use super::load::{BLOCK, BromParams, DmaTarget, MemLoad};
use super::{Falcon, FalconError};

/// How an HS ucode gets into the falcon.
#[derive(Clone, Copy, Debug)]
pub enum HsBoot<'a> {
    /// GA10x/AD10x (`KGSP_FLCN_UCODE_BOOT_FROM_HS`): the image sits in DMA memory at
    /// `image_bus`; IMEM gets its code and DMEM its data by DMA, the boot ROM verifies it.
    FromHs {
        /// Bus address of byte 0 of the image.
        image_bus: u64,
        /// Offset in the image of the code (`codeOffset`).
        code_offset: u32,
        /// Bytes of code (`imemSize`).
        imem_size: u32,
        /// IMEM physical address the code goes to (`imemPa`).
        imem_pa: u32,
        /// IMEM virtual address of the code (`imemVa`; also the boot vector).
        imem_va: u32,
        /// Offset in the image of the data (`dataOffset`).
        data_offset: u32,
        /// Bytes of data (`dmemSize`).
        dmem_size: u32,
        /// DMEM physical address the data goes to (`dmemPa`).
        dmem_pa: u32,
        /// DMEM virtual address, if the ucode has one (`dmemVa`).
        dmem_va: Option<u32>,
        /// Signature location, engine mask and ucode id for the boot ROM.
        brom: BromParams,
    },
    /// TU10x/GA100 FWSEC (`KGSP_FLCN_UCODE_BOOT_WITH_LOADER`): the generic bootloader is
    /// copied to the top of IMEM by PIO with its `RM_FLCN_BL_DMEM_DESC` at DMEM 0; it DMAs
    /// the code and data from sysmem itself (`s_prepareHsFalconWithLoader`).
    WithLoader {
        /// Bus address of the code buffer.
        code_bus: u64,
        /// Bus address of the data buffer.
        data_bus: u64,
        /// Offset and size of the non-secure code in the code buffer.
        imem_ns: (u32, u32),
        /// Offset and size of the secure code in the code buffer.
        imem_sec: (u32, u32),
        /// Bytes of data.
        data_size: u32,
        /// The bootloader's code.
        loader: &'a [u8],
        /// The bootloader's IMEM start tag (`blStartTag`).
        loader_start_tag: u32,
    },
    /// TU10x/GA100 (`KGSP_FLCN_UCODE_BOOT_DIRECT`): the image is copied by PIO: the
    /// non-secure code to IMEM 0, the secure code after it, the data to DMEM 0.
    Direct {
        /// The image (signature patched).
        image: &'a [u8],
        /// Offset and size of the non-secure code (`imemNsPa`, `imemNsSize`).
        imem_ns: (u32, u32),
        /// Offset and size of the secure code (`imemSecPa`, `imemSecSize`).
        imem_sec: (u32, u32),
        /// Offset and size of the data (`dataOffset`, `dmemSize`).
        data: (u32, u32),
    },
}

/// Loads `boot` into `f`, writes the mailboxes (if given: FWSEC takes none), starts the
/// CPU, waits (at most `halt_ns`) for it to halt and returns `(MAILBOX0, MAILBOX1)` as the
/// ucode left them.
pub fn execute(
    f: &Falcon<'_>,
    boot: &HsBoot<'_>,
    mailboxes: Option<(u32, u32)>,
    halt_ns: u64,
) -> Result<(u32, u32), FalconError> {
    match *boot {
        HsBoot::FromHs {
            image_bus,
            code_offset,
            imem_size,
            imem_pa,
            imem_va,
            data_offset,
            dmem_size,
            dmem_pa,
            dmem_va,
            brom,
        } => {
            f.use_physical_sysmem(0);
            f.dma_load(
                DmaTarget::ImemSecure,
                MemLoad {
                    dest: imem_pa,
                    mem_offset: imem_va,
                    src: image_bus + u64::from(code_offset) - u64::from(imem_va),
                    size: imem_size.next_multiple_of(BLOCK),
                },
            )?;
            let (src, mem_offset) = match dmem_va {
                Some(va) => (image_bus + u64::from(data_offset) - u64::from(va), va),
                None => (image_bus + u64::from(data_offset), 0),
            };
            f.dma_load(
                DmaTarget::Dmem {
                    set_dmtag: dmem_va.is_some(),
                },
                MemLoad {
                    dest: dmem_pa,
                    mem_offset,
                    src,
                    size: dmem_size.next_multiple_of(BLOCK),
                },
            )?;
            f.set_brom_params(brom);
            f.set_boot_vector(imem_va);
        }
        HsBoot::WithLoader {
            code_bus,
            data_bus,
            imem_ns,
            imem_sec,
            data_size,
            loader,
            loader_start_tag,
        } => {
            f.use_physical_sysmem(LOADER_CTX_DMA);
            f.dmem_pio(
                0,
                &loader_dmem_desc(code_bus, data_bus, imem_ns, imem_sec, data_size),
            )?;
            let size = (loader.len() as u32).next_multiple_of(BLOCK);
            let mut code = loader.to_vec();
            code.resize(size as usize, 0);
            let imem_blocks = u32::from(
                crate::regs::falcon::FalconHwcfg::read(f.bar(), f.engine().base()).imem_size(),
            );
            let dst = imem_blocks
                .checked_sub(size / BLOCK)
                .ok_or(FalconError::BadLoad {
                    engine: f.engine(),
                    what: "a bootloader larger than IMEM, bytes",
                    value: size.into(),
                })?;
            let tag = loader_start_tag << 8;
            f.imem_pio(dst * BLOCK, &code, false, tag)?;
            f.set_boot_vector(tag);
        }
        HsBoot::Direct {
            image,
            imem_ns,
            imem_sec,
            data,
        } => {
            f.disable_ctx_required();
            let part = |(offset, size): (u32, u32), what| {
                let (o, s) = (offset as usize, size as usize);
                image.get(o..o + s).ok_or(FalconError::BadLoad {
                    engine: f.engine(),
                    what,
                    value: u64::from(offset) + u64::from(size),
                })
            };
            f.imem_pio(
                0,
                part(imem_ns, "non-secure code ending at")?,
                false,
                imem_ns.0,
            )?;
            f.imem_pio(
                imem_ns.1.next_multiple_of(BLOCK),
                part(imem_sec, "secure code ending at")?,
                true,
                imem_sec.0,
            )?;
            f.dmem_pio(0, part(data, "data ending at")?)?;
            f.set_boot_vector(0);
        }
    }
    if let Some((m0, m1)) = mailboxes {
        f.set_mailboxes(m0, m1);
    }
    f.start_cpu();
    let halted = f.wait_halted(halt_ns);
    let out = f.mailboxes();
    halted.map(|()| out)
}

/// The DMA context the generic bootloader uses (`PHYS_SYS_NCOH` by its numbering; OpenRM
/// points `FBIF_TRANSCFG(4)` at physical coherent sysmem).
const LOADER_CTX_DMA: u32 = 4;

/// `RM_FLCN_BL_DMEM_DESC` (rmflcnbl.h, 84 bytes): `reserved[4]`, `signature[4]` (zero),
/// `ctxDma`, `codeDmaBase` (lo, hi), the non-secure and secure code's offset and size,
/// `codeEntryPoint` 0, `dataDmaBase` (lo, hi), `dataSize`, `argc` 0, `argv` 0.
pub fn loader_dmem_desc(
    code_bus: u64,
    data_bus: u64,
    imem_ns: (u32, u32),
    imem_sec: (u32, u32),
    data_size: u32,
) -> alloc::vec::Vec<u8> {
    // CAST: the halves of the bus addresses.
    let words = [
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        LOADER_CTX_DMA,
        code_bus as u32,
        (code_bus >> 32) as u32,
        imem_ns.0,
        imem_ns.1,
        imem_sec.0,
        imem_sec.1,
        0,
        data_bus as u32,
        (data_bus >> 32) as u32,
        data_size,
        0,
        0,
    ];
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}
