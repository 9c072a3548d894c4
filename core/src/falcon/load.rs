//! Getting ucode into a falcon's IMEM and DMEM: by PIO through the `IMEMC/IMEMD/IMEMT` and
//! `DMEMC/DMEMD` ports (`s_imemCopyTo_TU102`, `s_dmemCopyTo_TU102`), or by DMA through the
//! FBIF from sysmem in 256-byte blocks (`s_dmaTransfer_GA102`); and the boot ROM's
//! parameters for an HS ucode (`kgspExecuteHsFalcon_GA102`).

use super::{Falcon, FalconError};
use crate::regs::falcon::{
    FalconDmatrfbase, FalconDmatrfbase1, FalconDmatrfcmd, FalconDmatrffboffs, FalconDmatrfmoffs,
    FalconDmemc, FalconDmemd, FalconImemc, FalconImemd, FalconImemt,
};
use crate::regs::falcon_hs::{
    Falcon2BromCurrUcodeId, Falcon2BromEngidmask, Falcon2BromParaaddr, Falcon2ModSel, FbifCtl,
    FbifTranscfg,
};

/// `FLCN_BLK_ALIGNMENT`: IMEM blocks, DMA transfers and IMEM tags are 256 bytes.
pub const BLOCK: u32 = 256;

/// Which falcon memory a DMA transfer fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DmaTarget {
    /// IMEM, as secure (HS) code (`DMATRFCMD.IMEM`, `SEC` = 1).
    ImemSecure,
    /// DMEM (`SEC` = 0), with `SET_DMTAG` when the ucode names a DMEM virtual address.
    Dmem {
        /// Set the DMEM tag (`dmemVa != FLCN_DMEM_VA_INVALID`).
        set_dmtag: bool,
    },
}

/// One DMA load: `size` bytes from bus address `src + mem_offset` into falcon memory at
/// `dest`, `mem_offset` going into `DMATRFFBOFFS` (the IMEM tag a secure block carries).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemLoad {
    /// Falcon IMEM/DMEM address.
    pub dest: u32,
    /// Offset from `src` of the first byte (`DMATRFFBOFFS`).
    pub mem_offset: u32,
    /// Bus address `DMATRFBASE` points at (256-byte aligned).
    pub src: u64,
    /// Bytes (a multiple of 256).
    pub size: u32,
}

impl Falcon<'_> {
    fn bad(&self, what: &'static str, value: u64) -> FalconError {
        FalconError::BadLoad {
            engine: self.engine(),
            what,
            value,
        }
    }

    /// Lets the falcon DMA to physical addresses without a context and points DMA context
    /// `ctx` at physical coherent sysmem (`kflcnDisableCtxReq_TU102`, then `FBIF_TRANSCFG`
    /// as `kgspExecuteHsFalcon_GA102` and `s_prepareHsFalconWithLoader` set it).
    pub fn use_physical_sysmem(&self, ctx: u32) {
        let fbif = self.engine().fbif();
        FbifCtl::read(self.bar(), fbif)
            .with_allow_phys_no_ctx(true)
            .write(self.bar(), fbif);
        let transcfg = FbifTranscfg::address(fbif) + 4 * ctx;
        let v = FbifTranscfg::from_raw(self.read(transcfg))
            .with_target(FbifTranscfg::TARGET_COHERENT_SYSMEM)
            .with_mem_type(true);
        self.write(transcfg, v.raw());
    }

    /// Allows physical DMA without a context (`kflcnDisableCtxReq_TU102`), alone: what the
    /// sequencer's `CORE_RESET` does after the reset.
    pub fn disable_ctx_required(&self) {
        let fbif = self.engine().fbif();
        FbifCtl::read(self.bar(), fbif)
            .with_allow_phys_no_ctx(true)
            .write(self.bar(), fbif);
    }

    /// Copies `words` into DMEM at `dest` through port 0 with write auto-increment
    /// (`s_dmemCopyTo_TU102`; `dest` 4-byte aligned).
    pub fn dmem_pio(&self, dest: u32, words: &[u8]) -> Result<(), FalconError> {
        if !dest.is_multiple_of(4) {
            return Err(self.bad("a DMEM destination", dest.into()));
        }
        if !words.len().is_multiple_of(4) {
            return Err(self.bad("a DMEM load of size", words.len() as u64));
        }
        let base = self.engine().base();
        // kflcnMaskDmemAddr_TU102 keeps OFFS and BLK: the low 24 bits, word aligned.
        let c = FalconDmemc::from_raw(dest & 0x00ff_fffc).with_aincw(true);
        c.write(self.bar(), base);
        let port = FalconDmemd::address(base);
        for w in words.chunks_exact(4) {
            // PANIC: chunks_exact(4) yields 4-byte slices.
            self.write(port, u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
        }
        Ok(())
    }

    /// Copies `words` into IMEM at `dest` (256-byte aligned) through port 0, `secure` marking
    /// HS code, with the IMEM tag starting at `tag >> 8` and advancing every 256 bytes
    /// (`s_imemCopyTo_TU102`).
    pub fn imem_pio(
        &self,
        dest: u32,
        words: &[u8],
        secure: bool,
        tag: u32,
    ) -> Result<(), FalconError> {
        if !dest.is_multiple_of(BLOCK) {
            return Err(self.bad("an IMEM destination", dest.into()));
        }
        if !words.len().is_multiple_of(4) {
            return Err(self.bad("an IMEM load of size", words.len() as u64));
        }
        let base = self.engine().base();
        FalconImemc::from_raw(dest & 0x00ff_fffc)
            .with_aincw(true)
            .with_secure(secure)
            .write(self.bar(), base);
        let (data, tag_reg) = (FalconImemd::address(base), FalconImemt::address(base));
        let mut tag = tag >> 8;
        for (i, w) in words.chunks_exact(4).enumerate() {
            // One tag per 256-byte block: 64 words.
            if i % 64 == 0 {
                // CAST: IMEMT's TAG field is 16 bits; tags come from 32-bit IMEM offsets >> 8.
                self.write(tag_reg, FalconImemt::default().with_tag(tag as u16).raw());
                tag += 1;
            }
            // PANIC: chunks_exact(4) yields 4-byte slices.
            self.write(data, u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
        }
        Ok(())
    }

    fn dma_poll(&self, what: &'static str, idle: bool) -> Result<(), FalconError> {
        let base = self.engine().base();
        self.wait(what, self.timeout_ns(), |f| {
            let c = FalconDmatrfcmd::read(f.bar(), base);
            if idle { c.idle() } else { !c.full() }
        })
    }

    /// Loads by DMA through context 0 (`s_dmaTransfer_GA102`): `DMATRFBASE`/`BASE1` =
    /// `src >> 8`, then per 256-byte block `DMATRFMOFFS` = dest, `DMATRFFBOFFS` = offset,
    /// `DMATRFCMD` (waiting for queue room before each), then for the engine to go idle.
    pub fn dma_load(&self, target: DmaTarget, load: MemLoad) -> Result<(), FalconError> {
        if !load.src.is_multiple_of(u64::from(BLOCK)) {
            return Err(self.bad("a DMA source address", load.src));
        }
        if !load.size.is_multiple_of(BLOCK) || !load.dest.is_multiple_of(BLOCK) {
            return Err(self.bad("a DMA load of size", load.size.into()));
        }
        let base = self.engine().base();
        let cmd = FalconDmatrfcmd::default()
            .with_external_write(false)
            .with_size(6)
            .with_ctxdma(0);
        let cmd = match target {
            DmaTarget::ImemSecure => cmd.with_imem(true).with_sec(1),
            DmaTarget::Dmem { set_dmtag } => {
                cmd.with_imem(false).with_sec(0).with_set_dmtag(set_dmtag)
            }
        };
        self.dma_poll("the falcon DMA queue to have room (DMATRFCMD.FULL)", false)?;
        let shifted = load.src >> 8;
        // CAST: DMATRFBASE takes address bits 39:8, DMATRFBASE1 bits 48:40 (masked to 9 bits).
        FalconDmatrfbase::default()
            .with_base(shifted as u32)
            .write(self.bar(), base);
        FalconDmatrfbase1::default()
            .with_base(((shifted >> 32) & 0x1ff) as u16)
            .write(self.bar(), base);
        let mut done = 0;
        while done < load.size {
            self.dma_poll("the falcon DMA queue to have room (DMATRFCMD.FULL)", false)?;
            FalconDmatrfmoffs::default()
                .with_offs(load.dest + done)
                .write(self.bar(), base);
            FalconDmatrffboffs::default()
                .with_offs(load.mem_offset + done)
                .write(self.bar(), base);
            cmd.write(self.bar(), base);
            done += BLOCK;
        }
        self.dma_poll("the falcon DMA engine to go idle (DMATRFCMD.IDLE)", true)
    }

    /// Tells the boot ROM where the HS signature sits in DMEM and which ucode it verifies
    /// (`BROM_PARAADDR(0)`, `BROM_ENGIDMASK`, `BROM_CURR_UCODE_ID`, `MOD_SEL` = RSA-3K).
    pub fn set_brom_params(&self, params: BromParams) {
        let riscv = self.engine().riscv();
        self.write(
            Falcon2BromParaaddr::address(riscv),
            params.signature_dmem_offset,
        );
        self.write(Falcon2BromEngidmask::address(riscv), params.engine_id_mask);
        // CAST: BROM_CURR_UCODE_ID.VAL is 8 bits; ucode ids are small (1..16).
        Falcon2BromCurrUcodeId::default()
            .with_val(params.ucode_id as u8)
            .write(self.bar(), riscv);
        Falcon2ModSel::default()
            .with_algo(Falcon2ModSel::ALGO_RSA3K)
            .write(self.bar(), riscv);
    }
}

/// What the boot ROM needs to verify an HS ucode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BromParams {
    /// DMEM offset of the patched signature (`hsSigDmemAddr`: the image's patch location
    /// minus its data offset; the "PKC data offset").
    pub signature_dmem_offset: u32,
    /// The image's engine-id mask.
    pub engine_id_mask: u32,
    /// The image's ucode id.
    pub ucode_id: u32,
}
