//! The GSP-FMC: what runs on the GSP once the FSP started it, up to GSP-RM.
//!
//! It reads `GSP_FMC_BOOT_PARAMS` (`gspifpub.h`, filled by `kgspSetupGspFmcArgs_GH100`), the
//! `GspFwWprMeta` it points at (`gsp_fw_wpr_meta.h`, sizes from `kgspCalculateFbLayout_GH100`;
//! on Hopper the offsets are left zero for the FMC's ACR to fill), lays WPR2 out at the top
//! of FB as that function's diagram shows, checks the GSP-RM image the radix3 tree carries,
//! the bootloader and the signature against the real `gsp` and `bootloader` files, raises
//! WPR2 and reads the libos init arguments GSP-RM boots with.
//!
//! A failure is reported as the FMC reports one: an error code in `NV_PGSP_FALCON_MAILBOX0`
//! with the RISC-V lockdown never released (`_kgspLockdownReleasedOrFmcError`,
//! kernel_gsp_gh100.c: "GSP-FMC reported errors are always fatal"; the codes "are
//! effectively 8-bit and value 0 means no error"). NVIDIA does not publish the codes; the
//! simulator's are [`FmcError::code`]'s, one per failed step.

use nvbare_gsp::abi::{
    GSP_DMA_TARGET_COHERENT_SYSTEM, GSP_DMA_TARGET_LOCAL_FB, GSP_DMA_TARGET_NONCOHERENT_SYSTEM,
    GSP_FW_FLAGS_CLOCK_BOOST, GSP_FW_FLAGS_RECOVERY_MARGIN_PRESENT, GSP_FW_WPR_META_MAGIC,
    GSP_FW_WPR_META_REVISION, GspArgumentsCached, GspFmcBootParams, GspFwWprMeta,
    LIBOS_MEMORY_REGION_CONTIGUOUS, LIBOS_MEMORY_REGION_INIT_ARGUMENTS_MAX,
    LIBOS_MEMORY_REGION_LOC_FB, LIBOS_MEMORY_REGION_LOC_SYSMEM, LibosMemoryRegionInitArgument,
    RmRiscvUcodeDesc,
};
use zerocopy::{FromBytes, IntoBytes};

use super::libos_log::LogBuffer;
use crate::chip::ChipSpec;
use crate::device::Cx;
use crate::firmware;
use crate::memory::Target;

const MIB: u64 = 1 << 20;
const PAGE: u64 = 4096;

/// A failed FMC step.
#[derive(Debug, thiserror::Error)]
#[error("GSP-FMC error {:#04x}: {why}", self.code())]
pub struct FmcError {
    /// The step.
    pub step: FmcStep,
    /// What was wrong.
    pub why: String,
}

/// The FMC's steps, each with its own mailbox code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FmcStep {
    /// Reading `GSP_FMC_BOOT_PARAMS`.
    BootParams = 0x01,
    /// The WPR meta's magic, revision and flags.
    WprMeta = 0x02,
    /// The WPR meta's sizes.
    WprSizes = 0x03,
    /// The GSP-RM image behind the radix3 tree.
    GspImage = 0x04,
    /// The bootloader.
    Bootloader = 0x05,
    /// The GSP-RM signature.
    Signature = 0x06,
    /// WPR2 does not fit FB.
    Layout = 0x07,
    /// The libos init arguments.
    LibosArgs = 0x08,
    /// The simulator could not read a firmware file to check against.
    Firmware = 0x09,
}

impl FmcError {
    /// The code the FMC leaves in `NV_PGSP_FALCON_MAILBOX0`.
    pub fn code(&self) -> u32 {
        self.step as u32
    }
}

fn fail<T>(step: FmcStep, why: impl Into<String>) -> Result<T, FmcError> {
    Err(FmcError {
        step,
        why: why.into(),
    })
}

/// The GSP firmware heap GSP-RM needs on baremetal (`_kgspCalculateFwHeapSize`,
/// kernel_gsp.c, with `gsp_fw_heap.h`): the libos3 baremetal OS carve-out (22 MiB), the
/// Hopper+ base RM size (14 MiB), 96 KiB per GiB of FB (rounded up to GiB, the sum to MiB)
/// and the client allocation size (48 KiB x 2048 channels), at least 88 MiB (the override
/// minimum, `kgspGetMinWprHeapSizeMB`). No top clamp: OpenRM limits the calculated heap only
/// by `maxScrubbedHeapSizeMB` (unlimited on GH100+, `kgspGetFwHeapSize`); 280 MiB is the cap
/// of a registry override.
pub fn gsp_fw_heap_size(fb_bytes: u64) -> u64 {
    let fb_gib = fb_bytes.div_ceil(1 << 30);
    let heap = 22 * MIB
        + 14 * MIB
        + (96 * 1024 * fb_gib).next_multiple_of(MIB)
        + (48 * 1024 * 2048u64).next_multiple_of(MIB);
    heap.max(88 * MIB)
}

/// Where a `GSP_DMA_TARGET` + offset points.
fn dma_target(step: FmcStep, what: &str, target: u32, offset: u64) -> Result<Target, FmcError> {
    match target {
        GSP_DMA_TARGET_LOCAL_FB => Ok(Target::Vram(offset)),
        GSP_DMA_TARGET_COHERENT_SYSTEM | GSP_DMA_TARGET_NONCOHERENT_SYSTEM => {
            Ok(Target::Bus(offset))
        }
        t => fail(step, format!("{what} target {t} is not a GSP_DMA_TARGET")),
    }
}

pub(crate) fn read_struct<T: FromBytes>(
    cx: &Cx,
    step: FmcStep,
    what: &str,
    at: Target,
) -> Result<T, FmcError> {
    let mut raw = vec![0u8; core::mem::size_of::<T>()];
    if let Err(e) = cx.bus.read(at, &mut raw) {
        return fail(step, format!("reading {what}: {e}"));
    }
    T::read_from_bytes(&raw).map_err(|_| FmcError {
        step,
        why: format!("{what} unreadable"),
    })
}

/// WPR2 as the FMC's ACR laid it out (byte addresses in FB).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WprLayout {
    /// `nonWprHeapOffset` (= `gspFwRsvdStart`).
    pub non_wpr_heap: u64,
    /// `gspFwWprStart`: WPR2's first byte.
    pub wpr_start: u64,
    /// `gspFwHeapOffset`.
    pub heap: u64,
    /// `gspFwOffset`.
    pub gsp_fw: u64,
    /// `bootBinOffset`.
    pub boot_bin: u64,
    /// `frtsOffset`.
    pub frts: u64,
    /// WPR2's end (exclusive): the end of FRTS.
    pub wpr_end: u64,
}

impl WprLayout {
    /// `NV_PFB_PRI_MMU_WPR2_ADDR_LO` / `_HI`: VAL (31:4) holds the 4 KiB-aligned address
    /// (`NV_PFB_PRI_MMU_WPR2_ADDR_LO_ALIGNMENT` 12, dev_fb.h; `kgspIsWpr2Up_TU102` tests
    /// HI's VAL); HI names the last 4 KiB block.
    pub fn registers(&self) -> (u32, u32) {
        // CAST: FB addresses >> 12 fit 28 bits for FB below 1 TiB.
        (
            ((self.wpr_start >> 12) as u32) << 4,
            (((self.wpr_end - PAGE) >> 12) as u32) << 4,
        )
    }
}

/// What GSP-RM boots with.
#[derive(Debug)]
pub struct RmBoot {
    /// WPR2.
    pub wpr: WprLayout,
    /// The log buffers the libos arguments name, in their order.
    pub logs: Vec<LogBuffer>,
    /// `RMARGS`.
    pub rm_args: GspArgumentsCached,
}

/// Runs the FMC for the boot params at `boot_params` and FRTS at `frts_vidmem`
/// (offset from the end of FB, size).
pub fn run(cx: &mut Cx, boot_params: u64, frts_vidmem: (u64, u64)) -> Result<RmBoot, FmcError> {
    let params: GspFmcBootParams = read_struct(
        cx,
        FmcStep::BootParams,
        "GSP_FMC_BOOT_PARAMS",
        Target::Bus(boot_params),
    )?;
    let acr = params.boot_gsp_rm_params;
    let rm = params.gsp_rm_params;
    let spdm = params.gsp_spdm_params;
    if acr.b_is_gsp_rm_boot != 1 {
        fail(
            FmcStep::BootParams,
            "bootGspRmParams.bIsGspRmBoot is not NV_TRUE",
        )?;
    }
    if acr.gsp_rm_desc_size as usize != core::mem::size_of::<GspFwWprMeta>() {
        fail(
            FmcStep::BootParams,
            format!(
                "bootGspRmParams.gspRmDescSize {} is not sizeof(GspFwWprMeta) (256)",
                acr.gsp_rm_desc_size
            ),
        )?;
    }
    if acr.wpr_carveout_offset != 0 || acr.wpr_carveout_size != 0 {
        fail(
            FmcStep::BootParams,
            "bootGspRmParams.wprCarveoutOffset/Size are set; OpenRM leaves them 0 (the FMC places WPR2)",
        )?;
    }
    if params.init_params.regkeys != 0 || spdm.target != 0 || spdm.payload_buffer_offset != 0 {
        fail(
            FmcStep::BootParams,
            "initParams.regkeys / gspSpdmParams are set: confidential computing is not modelled",
        )?;
    }
    let meta_at = dma_target(
        FmcStep::BootParams,
        "bootGspRmParams",
        acr.target,
        acr.gsp_rm_desc_offset,
    )?;
    let args_at = dma_target(
        FmcStep::BootParams,
        "gspRmParams",
        rm.target,
        rm.boot_args_offset,
    )?;
    let meta: GspFwWprMeta = read_struct(cx, FmcStep::WprMeta, "the WPR meta", meta_at)?;
    let wpr = check_wpr_meta(cx, &meta, frts_vidmem)?;
    let logs_and_args = read_libos_args(cx, args_at)?;
    Ok(RmBoot {
        wpr,
        logs: logs_and_args.0,
        rm_args: logs_and_args.1,
    })
}

/// The WPR meta's fields against the chip, the FB and the real firmware files; WPR2's layout.
fn check_wpr_meta(
    cx: &Cx,
    m: &GspFwWprMeta,
    frts_vidmem: (u64, u64),
) -> Result<WprLayout, FmcError> {
    let spec: &ChipSpec = cx.spec;
    let facts = &spec.cot;
    if m.magic != GSP_FW_WPR_META_MAGIC || m.revision != GSP_FW_WPR_META_REVISION {
        fail(
            FmcStep::WprMeta,
            format!(
                "magic {:#x} / revision {}: GSP_FW_WPR_META_MAGIC {GSP_FW_WPR_META_MAGIC:#x}, \
                 revision {GSP_FW_WPR_META_REVISION}",
                m.magic, m.revision
            ),
        )?;
    }
    let allowed_flags = GSP_FW_FLAGS_CLOCK_BOOST | GSP_FW_FLAGS_RECOVERY_MARGIN_PRESENT;
    if m.flags & !allowed_flags != 0 || m.verified != 0 || m.boot_count != 0 {
        fail(
            FmcStep::WprMeta,
            format!(
                "flags {:#x} / verified {:#x} / bootCount {}: a first boot without PPCIe has no \
                 other flag, verified 0 and bootCount 0",
                m.flags, m.verified, m.boot_count
            ),
        )?;
    }
    // On Hopper+ the offsets are the ACR's to fill ("most of the structure is
    // 0-initialized here", kgspCalculateFbLayout_GH100).
    for (name, v) in [
        ("gspFwRsvdStart", m.gsp_fw_rsvd_start),
        ("nonWprHeapOffset", m.non_wpr_heap_offset),
        ("gspFwWprStart", m.gsp_fw_wpr_start),
        ("gspFwHeapOffset", m.gsp_fw_heap_offset),
        ("gspFwOffset", m.gsp_fw_offset),
        ("bootBinOffset", m.boot_bin_offset),
        ("frtsOffset", m.frts_offset),
        ("gspFwWprEnd", m.gsp_fw_wpr_end),
        ("fbSize", m.fb_size),
        ("vgaWorkspaceOffset", m.vga_workspace_offset),
    ] {
        if v != 0 {
            fail(
                FmcStep::WprSizes,
                format!(
                    "{name} is {v:#x}; on {} the FMC places WPR2 and this is 0",
                    spec.name
                ),
            )?;
        }
    }
    let heap = gsp_fw_heap_size(spec.vram_bytes);
    for (name, got, want) in [
        ("vgaWorkspaceSize", m.vga_workspace_size, 128 * 1024),
        ("frtsSize", m.frts_size, frts_vidmem.1),
        (
            "nonWprHeapSize",
            m.non_wpr_heap_size,
            facts.non_wpr_heap_size,
        ),
        (
            "pmuReservedSize",
            u64::from(m.pmu_reserved_size),
            facts.pmu_reserved_size,
        ),
        ("gspFwHeapSize", m.gsp_fw_heap_size, heap),
        (
            "gspFwHeapVfPartitionCount",
            u64::from(m.gsp_fw_heap_vf_partition_count),
            0,
        ),
    ] {
        if got != want {
            fail(
                FmcStep::WprSizes,
                format!(
                    "{name} is {got:#x}, {} with {} MiB of FB takes {want:#x} \
                     (kgspCalculateFbLayout_GH100, _kgspCalculateFwHeapSize)",
                    spec.name,
                    spec.vram_bytes >> 20
                ),
            )?;
        }
    }
    let gsp = firmware::load(cx.firmware_dir, spec.name, "gsp").map_err(|e| FmcError {
        step: FmcStep::Firmware,
        why: e.to_string(),
    })?;
    let image = gsp.section(".fwimage").map_err(|e| FmcError {
        step: FmcStep::Firmware,
        why: e.to_string(),
    })?;
    check_radix3(cx, m, image)?;
    let boot = firmware::load(cx.firmware_dir, spec.name, "bootloader").map_err(|e| FmcError {
        step: FmcStep::Firmware,
        why: e.to_string(),
    })?;
    let (desc, boot_image) = boot.bootloader().map_err(|e| FmcError {
        step: FmcStep::Firmware,
        why: e.to_string(),
    })?;
    if let Some((name, got, want)) = bootloader_mismatch(m, &desc, boot_image) {
        fail(
            FmcStep::Bootloader,
            format!("{name} is {got:#x}, {} says {want:#x}", boot.path.display()),
        )?;
    }
    compare(
        cx,
        FmcStep::Bootloader,
        "the bootloader",
        m.sysmem_addr_of_bootloader,
        boot_image,
    )?;
    let signature = gsp
        .section(facts.gsp_signature_section)
        .map_err(|e| FmcError {
            step: FmcStep::Firmware,
            why: e.to_string(),
        })?;
    if m.size_of_signature != signature.len() as u64 {
        fail(
            FmcStep::Signature,
            format!(
                "sizeOfSignature {:#x}, section {} is {:#x} bytes",
                m.size_of_signature,
                facts.gsp_signature_section,
                signature.len()
            ),
        )?;
    }
    compare(
        cx,
        FmcStep::Signature,
        facts.gsp_signature_section,
        m.sysmem_addr_of_signature,
        signature,
    )?;
    layout(spec, m, frts_vidmem)
}

/// The WPR meta's bootloader fields against the bootloader file's descriptor and image, as
/// the GSP-FMC (Hopper) and the booter (Ampere, Ada) both check them: the first that differs,
/// as (its `GspFwWprMeta` name, the meta's value, the file's).
pub(crate) fn bootloader_mismatch(
    m: &GspFwWprMeta,
    desc: &RmRiscvUcodeDesc,
    image: &[u8],
) -> Option<(&'static str, u64, u64)> {
    [
        ("sizeOfBootloader", m.size_of_bootloader, image.len() as u64),
        (
            "bootloaderCodeOffset",
            m.bootloader_code_offset,
            u64::from(desc.monitor_code_offset),
        ),
        (
            "bootloaderDataOffset",
            m.bootloader_data_offset,
            u64::from(desc.monitor_data_offset),
        ),
        (
            "bootloaderManifestOffset",
            m.bootloader_manifest_offset,
            u64::from(desc.manifest_offset),
        ),
    ]
    .into_iter()
    .find(|(_, got, want)| got != want)
}

/// Compares `want` with the DMA memory at `addr`, a page at a time.
pub(crate) fn compare(
    cx: &Cx,
    step: FmcStep,
    what: &str,
    addr: u64,
    want: &[u8],
) -> Result<(), FmcError> {
    let mut page = [0u8; PAGE as usize];
    for (i, chunk) in want.chunks(PAGE as usize).enumerate() {
        let at = addr + i as u64 * PAGE;
        let got = &mut page[..chunk.len()];
        if let Err(e) = cx.bus.read(Target::Bus(at), got) {
            return fail(step, format!("reading {what}: {e}"));
        }
        if got != chunk {
            return fail(
                step,
                format!("{what} differs from the firmware file in its page {i}"),
            );
        }
    }
    Ok(())
}

/// Walks the radix3 tree at `sysmemAddrOfRadix3Elf` (`LIBOS_MEMORY_REGION_RADIX3`: three
/// levels of 4 KiB pages of 512 bus addresses, the last pointing at the image's pages) and
/// compares every image page with the firmware's `.fwimage`.
pub(crate) fn check_radix3(cx: &Cx, m: &GspFwWprMeta, image: &[u8]) -> Result<(), FmcError> {
    let step = FmcStep::GspImage;
    if m.size_of_radix3_elf != image.len() as u64 {
        fail(
            step,
            format!(
                "sizeOfRadix3Elf {:#x}, the firmware's .fwimage is {:#x} bytes",
                m.size_of_radix3_elf,
                image.len()
            ),
        )?;
    }
    let read_table = |addr: u64| -> Result<Vec<u64>, FmcError> {
        let mut raw = [0u8; PAGE as usize];
        if !addr.is_multiple_of(PAGE) {
            return fail(step, format!("radix3 page {addr:#x} is not page aligned"));
        }
        cx.bus
            .read(Target::Bus(addr), &mut raw)
            .map_err(|e| FmcError {
                step,
                why: format!("reading the radix3 tree: {e}"),
            })?;
        Ok(raw
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect())
    };
    let level0 = read_table(m.sysmem_addr_of_radix3_elf)?;
    let mut level1: (usize, Vec<u64>) = (usize::MAX, Vec::new());
    let mut level2: (usize, Vec<u64>) = (usize::MAX, Vec::new());
    let mut got = [0u8; PAGE as usize];
    let too_big = || FmcError {
        step,
        why: "the image is too large for a radix3 tree".into(),
    };
    for (p, want) in image.chunks(PAGE as usize).enumerate() {
        let (i1, i2) = (p / 512 / 512, p / 512);
        if level1.0 != i1 {
            level1 = (i1, read_table(*level0.get(i1).ok_or_else(too_big)?)?);
        }
        if level2.0 != i2 {
            level2 = (i2, read_table(level1.1[i2 % 512])?);
        }
        let addr = level2.1[p % 512];
        let got = &mut got[..want.len()];
        if let Err(e) = cx.bus.read(Target::Bus(addr), got) {
            return fail(
                step,
                format!("reading GSP-RM image page {p} at {addr:#x}: {e}"),
            );
        }
        if got != want {
            return fail(
                step,
                format!(
                    "GSP-RM image page {p} (at {addr:#x}) differs from the firmware's .fwimage"
                ),
            );
        }
    }
    Ok(())
}

/// WPR2 as `kgspCalculateFbLayout_GH100`'s diagram places it, from the top of FB down:
/// VGA workspace and the PMU reservation above FRTS (where the FSP put it), then the boot
/// binary, the GSP-RM ELF (64 KiB aligned), the heap (1 MiB aligned), the WPR meta page
/// (WPR2 start, 128 KiB aligned) and the non-WPR heap below WPR2.
fn layout(
    spec: &ChipSpec,
    m: &GspFwWprMeta,
    frts_vidmem: (u64, u64),
) -> Result<WprLayout, FmcError> {
    let fb = spec.vram_bytes;
    let frts = fb - frts_vidmem.0;
    let wpr_end = frts + frts_vidmem.1;
    let above = wpr_end + u64::from(m.pmu_reserved_size) + m.vga_workspace_size;
    let down = |a: u64, b: u64| a.checked_sub(b);
    let boot_bin = down(frts, m.size_of_bootloader.next_multiple_of(PAGE));
    let gsp_fw = boot_bin
        .and_then(|b| down(b, m.size_of_radix3_elf))
        .map(|v| v & !0xffff);
    let heap = gsp_fw
        .and_then(|g| down(g, m.gsp_fw_heap_size))
        .map(|v| v & !(MIB - 1));
    let wpr_start = heap.and_then(|h| down(h, PAGE)).map(|v| v & !0x1_ffff);
    let non_wpr = wpr_start
        .and_then(|w| down(w, m.non_wpr_heap_size))
        .map(|v| v & !(MIB - 1));
    match (boot_bin, gsp_fw, heap, wpr_start, non_wpr) {
        (Some(boot_bin), Some(gsp_fw), Some(heap), Some(wpr_start), Some(non_wpr_heap))
            if above <= fb && non_wpr_heap > 0 =>
        {
            Ok(WprLayout {
                non_wpr_heap,
                wpr_start,
                heap,
                gsp_fw,
                boot_bin,
                frts,
                wpr_end,
            })
        }
        _ => fail(
            FmcStep::Layout,
            format!("WPR2 does not fit {} MiB of FB with these sizes", fb >> 20),
        ),
    }
}

/// The libos init arguments: the page of `LibosMemoryRegionInitArgument`s at `at`, ended by
/// an entry with id 0 (`kgspSetupLibosInitArgs` zeroes the page and writes the log buffers,
/// `LOGINIT` first, then `RMARGS`).
pub(crate) fn read_libos_args(
    cx: &Cx,
    at: Target,
) -> Result<(Vec<LogBuffer>, GspArgumentsCached), FmcError> {
    let step = FmcStep::LibosArgs;
    let mut page = vec![0u8; LIBOS_MEMORY_REGION_INIT_ARGUMENTS_MAX];
    if let Err(e) = cx.bus.read(at, &mut page) {
        return fail(step, format!("reading the libos init arguments: {e}"));
    }
    let mut logs = Vec::new();
    let mut rm_args = None;
    let entry = core::mem::size_of::<LibosMemoryRegionInitArgument>();
    for (i, raw) in page.chunks_exact(entry).enumerate() {
        let a = LibosMemoryRegionInitArgument::read_from_bytes(raw).unwrap_or_default();
        if a.id8 == 0 {
            break;
        }
        let name: String = a
            .id8
            .to_be_bytes()
            .iter()
            .filter(|&&b| b != 0)
            .map(|&b| char::from(b))
            .collect();
        if a.kind != LIBOS_MEMORY_REGION_CONTIGUOUS {
            fail(
                step,
                format!("region {name}: kind {} is not CONTIGUOUS", a.kind),
            )?;
        }
        let target = match a.loc {
            LIBOS_MEMORY_REGION_LOC_SYSMEM => Target::Bus(a.pa),
            LIBOS_MEMORY_REGION_LOC_FB => Target::Vram(a.pa),
            l => {
                return fail(
                    step,
                    format!("region {name}: loc {l} is neither SYSMEM nor FB"),
                );
            }
        };
        let mut probe = [0u8; 8];
        let end = match target {
            Target::Bus(x) => Target::Bus(x + a.size.saturating_sub(8)),
            Target::Vram(x) => Target::Vram(x + a.size.saturating_sub(8)),
        };
        if a.size < 8
            || cx.bus.read(target, &mut probe).is_err()
            || cx.bus.read(end, &mut probe).is_err()
        {
            fail(
                step,
                format!(
                    "region {name}: {:#x} bytes at {:#x} cannot be reached",
                    a.size, a.pa
                ),
            )?;
        }
        if i == 0 && name != "LOGINIT" {
            fail(
                step,
                format!(
                    "the first region is {name}; LOGINIT must be first (kgspSetupLibosInitArgs)"
                ),
            )?;
        }
        if name == "RMARGS" {
            if a.size < core::mem::size_of::<GspArgumentsCached>() as u64 {
                fail(step, "RMARGS is smaller than GSP_ARGUMENTS_CACHED")?;
            }
            rm_args = Some(read_struct::<GspArgumentsCached>(
                cx, step, "RMARGS", target,
            )?);
        } else if name.starts_with("LOG") {
            logs.extend(LogBuffer::new(name, target, a.size));
        }
    }
    let Some(rm_args) = rm_args else {
        return fail(
            step,
            "no RMARGS region: GSP-RM cannot find its message queues",
        );
    };
    let sr = rm_args.sr_init_arguments;
    if sr.old_level != 0 || sr.flags != 0 || sr.b_in_pm_transition != 0 {
        fail(
            step,
            "RMARGS.srInitArguments describe a resume; the model boots cold",
        )?;
    }
    let _ = rm_args.as_bytes();
    Ok((logs, rm_args))
}
