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
