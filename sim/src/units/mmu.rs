//! The GPU's MMU as the engines see it: a channel's virtual addresses are translated through
//! the page tables the driver built in simulated memory, read by `nvbare_mmu::walk` (the
//! independent walker, over the [`Bus`]), from the root GSP-RM was given for the channel's
//! VA space (`World::vaspaces[..].page_dir`, from SET_PAGE_DIRECTORY).
//!
//! Translations are cached per page in a small TLB ([`Tlb`], in [`World::tlb`]), as the
//! hardware's are: a driver that changes a PTE and does not invalidate keeps reaching the old
//! page, and an invalidate (`NV_VIRTUAL_FUNCTION_PRIV_MMU_INVALIDATE` with TRIGGER, dev_vm.h
//! of tu102, the same offsets on GH100 and GB202) drops the cached translations of the
//! address space its PDB registers name, or of all with `ALL_PDB`; a pushbuffer
//! MMU_TLB_INVALIDATE drops every cached translation (more than asked is never stale).
//!
//! An access that cannot be translated is an MMU fault: an [`MmuFaultRecord`] (address,
//! access type, `NV_PFAULT_FAULT_TYPE_*` of dev_fault.h) is queued in [`World::mmu_faults`]
//! for the GSP unit to report, the channel is halted ([`ChannelRecord::error`]) and
//! [`Signal::ChannelError`] is raised ([`raise`]). Fault types, from gb202/tu102 dev_fault.h:
//! not mapped → PTE (2; the walker does not say which level was invalid); beyond the VA
//! range → VA_LIMIT_VIOLATION (3); a write to a read-only page → RO_VIOLATION (6); a peer
//! aperture, which the simulator does not model → UNSUPPORTED_APERTURE (0xa); page tables
//! that cannot be read → PDE (0). PTE apertures (dev_mmu.h): video → VRAM, system
//! coherent/non-coherent → the bus (host memory, or a BAR1 window).
//!
//! [`ChannelRecord::error`]: crate::device::ChannelRecord::error

use nvbare_mmu::memory::{TableAddr, TableAperture, TableMemory};
use nvbare_mmu::{AccessError, Aperture, Format, MmuVersion, walk};

use crate::chip::ChipSpec;
use crate::device::{Cx, Engine, MmuFaultRecord, Signal, Unit, World};
use crate::memory::{Access, Bus, BusFault, Target};

/// `NV_VIRTUAL_FUNCTION_PRIV_MMU_INVALIDATE_PDB` (0xb80000 + 0x30a0).
pub const MMU_INVALIDATE_PDB: u32 = 0x00b8_30a0;
/// `NV_VIRTUAL_FUNCTION_PRIV_MMU_INVALIDATE_UPPER_PDB`.
pub const MMU_INVALIDATE_UPPER_PDB: u32 = 0x00b8_30a4;
/// `NV_VIRTUAL_FUNCTION_PRIV_MMU_INVALIDATE`.
pub const MMU_INVALIDATE: u32 = 0x00b8_30b0;
/// `NV_VIRTUAL_FUNCTION_PRIV_MMU_INVALIDATE_ALL_PDB` (bit 1).
const INVALIDATE_ALL_PDB: u32 = 1 << 1;
/// `NV_VIRTUAL_FUNCTION_PRIV_MMU_INVALIDATE_SYS_MEMBAR` (bit 6).
const INVALIDATE_SYS_MEMBAR: u32 = 1 << 6;
/// `NV_VIRTUAL_FUNCTION_PRIV_MMU_INVALIDATE_TRIGGER` (bit 31).
const INVALIDATE_TRIGGER: u32 = 1 << 31;

/// `NV_VIRTUAL_FUNCTION_PRIV_FUNC_BAR1_BLOCK_LOW_ADDR` (0xb80000 + 0xf60, gh100/gb202
/// dev_vm.h): MODE 9:9 (PHYSICAL 0, VIRTUAL 1), TARGET 11:10, PTR 31:12; BAR1_PENDING 0 and
/// BAR1_OUTSTANDING 1 read set while a bind runs ([`BIND_NS`]).
pub const BAR1_BLOCK_LOW_ADDR: u32 = 0x00b8_0f60;
/// `NV_VIRTUAL_FUNCTION_PRIV_FUNC_BAR1_BLOCK_HIGH_ADDR`.
pub const BAR1_BLOCK_HIGH_ADDR: u32 = 0x00b8_0f64;
/// `..._BAR1_BLOCK_LOW_ADDR_MODE_VIRTUAL`.
const BAR1_MODE_VIRTUAL: u32 = 1 << 9;
/// `..._BAR1_BLOCK_LOW_ADDR_BAR1_PENDING` (0:0) and `_BAR1_OUTSTANDING` (1:1).
const BAR1_BIND_BUSY: u32 = 0b11;

/// How long a TLB invalidate takes: `NV_VIRTUAL_FUNCTION_PRIV_MMU_INVALIDATE_TRIGGER` reads
/// back TRUE, and the TLBs keep their old translations, until it is done
/// (`kgmmuCheckPendingInvalidates_TU102` polls TRIGGER until FALSE before it trusts the
/// invalidate). Hardware takes microseconds; the figure is the simulator's choice.
pub const INVALIDATE_NS: u64 = 50_000;
/// How long a BAR1 bind takes: BAR1_PENDING/BAR1_OUTSTANDING read set until it is done
/// (`kbusBindBar1_GH100`: "SW must ensure that the bind has completed prior to issuing any
/// further BAR1 requests by polling"). The figure is the simulator's choice.
pub const BIND_NS: u64 = 50_000;

/// `NV_PFAULT_FAULT_TYPE_PDE`.
pub const FAULT_PDE: u32 = 0x0;
/// `NV_PFAULT_FAULT_TYPE_PTE`.
pub const FAULT_PTE: u32 = 0x2;
/// `NV_PFAULT_FAULT_TYPE_VA_LIMIT_VIOLATION`.
pub const FAULT_VA_LIMIT: u32 = 0x3;
/// `NV_PFAULT_FAULT_TYPE_RO_VIOLATION`.
pub const FAULT_RO: u32 = 0x6;
/// `NV_PFAULT_FAULT_TYPE_UNSUPPORTED_APERTURE`.
pub const FAULT_UNSUPPORTED_APERTURE: u32 = 0xa;

/// Translations kept (fully associative, replaced in turn).
const TLB_ENTRIES: usize = 64;

/// The page-table format of `spec`'s chip: ver3 on Hopper (architecture 0x18) and Blackwell
/// (0x1a, 0x1b), ver2 on Turing (0x16), Ampere (0x17) and Ada (0x19: numbered after Hopper,
/// but with Ampere's ver2 MMU; ver3 arrives with `kgmmuFmtFamiliesInit_GH100`,
/// kern_gmmu_gh100.c, and tinygrad 0.14.0 walks ver2 on every chip below 0x1a, nvdev.py
/// `mmu_ver`). Found by tinygrad's own AD102 boot, which faulted on a ver3 walk.
pub fn format(spec: &ChipSpec) -> &'static Format {
    match spec.pmc_boot_42 >> 24 & 0x3f {
        0x18 | 0x1a.. => Format::of(MmuVersion::Ver3),
        _ => Format::of(MmuVersion::Ver2),
    }
}

/// Who accesses memory: the channel whose VA space translates, and its engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Requester {
    /// The channel's key in [`World::channels`].
    pub token: u32,
    /// The engine that accesses.
    pub engine: Engine,
    /// The channel's VA space (key of [`World::vaspaces`]).
    pub vaspace: u32,
}

/// An access that did not reach memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemError {
    /// The MMU faulted.
    Mmu {
        /// Faulting virtual address.
        va: u64,
        /// Read or write.
        access: Access,
        /// `NV_PFAULT_FAULT_TYPE_*`.
        fault_type: u32,
        /// Why, for the log.
        why: String,
    },
    /// The translation led to an address nothing answers (an IOMMU fault, or past VRAM).
    Bus {
        /// The virtual address.
        va: u64,
        /// What the bus said.
        fault: BusFault,
    },
    /// An access that must leave the GPU (host memory, a peer's BAR1) while bus mastering is
    /// off in PCI_COMMAND: a device that may not master the bus performs no DMA.
    NoBusMaster {
        /// The virtual (or, for physical accesses, bus) address.
        va: u64,
        /// The bus address it led to.
        bus: u64,
    },
}

impl std::fmt::Display for MemError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MemError::Mmu {
                va,
                access,
                fault_type,
                why,
            } => write!(
                f,
                "MMU fault: {access} at GPU VA {va:#x} (fault type {fault_type:#x}): {why}"
            ),
            MemError::Bus { va, fault } => write!(f, "access at GPU VA {va:#x}: {fault}"),
            MemError::NoBusMaster { va, bus } => write!(
                f,
                "access at {va:#x} reaches bus address {bus:#x}, but bus mastering is off \
                 (PCI_COMMAND bit 2): the device performs no DMA until the driver turns it on"
            ),
        }
    }
}

/// One cached translation: a whole page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct TlbEntry {
    root: TableAddr,
    /// First VA of the page.
    va: u64,
    /// Page size in bytes.
    size: u64,
    /// Where the page's first byte is.
    base: Target,
    /// Writes allowed.
    writable: bool,
}

/// Cached translations, and the MMU's counters. Owner: the MMU (this module); dropped by
/// invalidates and by reset.
#[derive(Clone, Debug, Default)]
pub struct Tlb {
    entries: Vec<TlbEntry>,
    /// A register-triggered invalidate still in progress: when it completes, and the
    /// address space it drops (`None`: all).
    pending: Option<(u64, Option<TableAddr>)>,
    next: usize,
    /// Translations answered from the cache.
    pub hits: u64,
    /// Page-table walks.
    pub walks: u64,
    /// Invalidates received.
    pub invalidates: u64,
    /// Whether the injected fault at `FaultPlan::mmu_fault_at` has fired.
    injected_fired: bool,
}

impl Tlb {
    fn lookup(&mut self, root: TableAddr, va: u64) -> Option<TlbEntry> {
        let e = self
            .entries
            .iter()
            .find(|e| e.root == root && va.wrapping_sub(e.va) < e.size)
            .copied();
        if e.is_some() {
            self.hits += 1;
        }
        e
    }

    fn fill(&mut self, e: TlbEntry) {
        if self.entries.len() < TLB_ENTRIES {
            self.entries.push(e);
        } else {
            self.entries[self.next] = e;
            self.next = (self.next + 1) % TLB_ENTRIES;
        }
    }

    /// Starts an invalidate that completes at `due_ns` (of `root`'s translations, or all):
    /// until then lookups still find the old entries and TRIGGER reads back set.
    pub fn invalidate_at(&mut self, due_ns: u64, root: Option<TableAddr>) {
        // An invalidate still running when another starts completes first.
        if let Some((_, earlier)) = self.pending.take() {
            self.apply(earlier);
        }
        self.pending = Some((due_ns, root));
    }

    /// Completes a pending invalidate whose time has come; whether one is still running.
    pub fn settle(&mut self, now_ns: u64) -> bool {
        match self.pending {
            Some((due, root)) if now_ns >= due => {
                self.pending = None;
                self.apply(root);
                false
            }
            Some(_) => true,
            None => false,
        }
    }

    fn apply(&mut self, root: Option<TableAddr>) {
        match root {
            Some(r) => self.invalidate_root(r),
            None => self.invalidate(),
        }
    }

    /// Drops every cached translation.
    pub fn invalidate(&mut self) {
        self.entries.clear();
        self.next = 0;
        self.invalidates += 1;
    }

    /// Drops the cached translations of the address space whose page directory is `root`
    /// (in VRAM or in system memory, coherent or not: the PDB register names only which).
    pub fn invalidate_root(&mut self, root: TableAddr) {
        let is_video = |a: TableAperture| a == TableAperture::Video;
        self.entries.retain(|e| {
            !(e.root.addr == root.addr && is_video(e.root.aperture) == is_video(root.aperture))
        });
        self.next = 0;
        self.invalidates += 1;
    }

    /// Cached translations now.
    pub fn cached(&self) -> usize {
        self.entries.len()
    }
}

/// Page-table memory as the MMU reads it: VRAM and the bus.
struct BusTables<'a>(&'a Bus);

impl TableMemory for BusTables<'_> {
    fn read_u64(&self, at: TableAddr) -> Result<u64, AccessError> {
        let target = match at.aperture {
            TableAperture::Video => Target::Vram(at.addr),
            TableAperture::SystemCoherent | TableAperture::SystemNonCoherent => {
                Target::Bus(at.addr)
            }
        };
        self.0
            .read_u64(target)
            .map_err(|_| AccessError { at, len: 8 })
    }

    fn write_u64s(&mut self, at: TableAddr, values: &[u64]) -> Result<(), AccessError> {
        // The MMU never writes page tables.
        Err(AccessError {
            at,
            len: values.len() as u64 * 8,
        })
    }
}

fn root_of(world: &World, vaspace: u32) -> Option<TableAddr> {
    match world.vaspaces.get(&vaspace)?.page_dir? {
        Target::Vram(pa) => Some(TableAddr::video(pa)),
        Target::Bus(addr) => Some(TableAddr {
            aperture: TableAperture::SystemCoherent,
            addr,
        }),
    }
}

/// Whether a valid PTE allows writes (ver3 PCF bit 2 = read-only, dev_mmu.h of gh100; ver2
/// READ_ONLY bit 6, dev_mmu.h of tu102).
fn pte_writable(format: &Format, pte: u64) -> bool {
    let e = u128::from(pte);
    let ro = match (format.pte.pcf, format.pte.read_only) {
        (Some(pcf), _) => pcf.get(e) & 0b100 != 0,
        (None, Some(ro)) => ro.get(e) != 0,
        (None, None) => false,
    };
    !ro
}

/// Translates `va` for `access` by `who`: where the byte is, and how many bytes from there
/// to the end of its page.
pub fn translate(
    cx: &mut Cx,
    who: &Requester,
    va: u64,
    access: Access,
) -> Result<(Target, u64), MemError> {
    let fault = |fault_type, why: &str| MemError::Mmu {
        va,
        access,
        fault_type,
        why: why.into(),
    };
    let Some(root) = root_of(cx.world, who.vaspace) else {
        return Err(fault(
            FAULT_PDE,
            "the channel's VA space has no page directory (no SET_PAGE_DIRECTORY)",
        ));
    };
    let format = format(cx.spec);
    cx.world.tlb.settle(cx.now_ns);
    let entry = match cx.world.tlb.lookup(root, va) {
        Some(e) => e,
        None => {
            cx.world.tlb.walks += 1;
            let t = match walk::walk(format, &BusTables(cx.bus), root, va) {
                Ok(Some(t)) => t,
                Ok(None) => return Err(fault(FAULT_PTE, "not mapped")),
                Err(walk::WalkError::VaOutOfRange { .. }) => {
                    return Err(fault(FAULT_VA_LIMIT, "beyond the VA space"));
                }
                Err(e) => return Err(fault(FAULT_PDE, &e.to_string())),
            };
            let size = t.page_size.bytes();
            let page_pa = t.pa & !(size - 1);
            let base = match t.aperture {
                Aperture::Video => Target::Vram(page_pa),
                Aperture::SystemCoherent | Aperture::SystemNonCoherent => Target::Bus(page_pa),
                Aperture::Peer(id) => {
                    return Err(fault(
                        FAULT_UNSUPPORTED_APERTURE,
                        &format!("a peer-aperture PTE (peer {id}); the simulator models none"),
                    ));
                }
            };
            let e = TlbEntry {
                root,
                va: va & !(size - 1),
                size,
                base,
                writable: pte_writable(format, t.pte),
            };
            cx.world.tlb.fill(e);
            e
        }
    };
    if access == Access::Write && !entry.writable {
        return Err(fault(FAULT_RO, "a write to a read-only page"));
    }
    let off = va - entry.va;
    let at = match entry.base {
        Target::Vram(pa) => Target::Vram(pa + off),
        Target::Bus(addr) => Target::Bus(addr + off),
    };
    Ok((at, entry.size - off))
}

/// The injected fault (`FaultPlan::mmu_fault_at`), if `[va, va + len)` covers it and it has
/// not fired yet.
fn injected(cx: &mut Cx, va: u64, len: u64, access: Access) -> Result<(), MemError> {
    let Some(at) = cx.faults.mmu_fault_at else {
        return Ok(());
    };
    if cx.world.tlb.injected_fired || !(va..va.saturating_add(len)).contains(&at) {
        return Ok(());
    }
    cx.world.tlb.injected_fired = true;
    cx.log.warn(
        "mmu",
        format!("injected fault: the {access} at GPU VA {at:#x} faults as if unmapped"),
    );
    Err(MemError::Mmu {
        va: at,
        access,
        fault_type: FAULT_PTE,
        why: "injected (FaultPlan::mmu_fault_at)".into(),
    })
}

/// Whether the device may reach `at` for an access at `va`: anything off the GPU (host
/// memory, a peer's BAR1) needs bus mastering on (`PCI_COMMAND` bit 2, PCI Local Bus 6.2.2).
pub fn dma_allowed(cx: &Cx, va: u64, at: Target) -> Result<(), MemError> {
    match at {
        Target::Bus(bus) if !cx.config.bus_master() => Err(MemError::NoBusMaster { va, bus }),
        _ => Ok(()),
    }
}

/// Runs `f` on each page-sized piece of `[va, va + len)`: its target, its offset in the
/// range, its length.
fn pieces(
    cx: &mut Cx,
    who: &Requester,
    va: u64,
    len: u64,
    access: Access,
    mut f: impl FnMut(&Bus, Target, u64, u64) -> Result<(), BusFault>,
) -> Result<(), MemError> {
    injected(cx, va, len, access)?;
    let mut done = 0u64;
    while done < len {
        let at = va.checked_add(done).ok_or(MemError::Mmu {
            va,
            access,
            fault_type: FAULT_VA_LIMIT,
            why: "the access wraps around the address space".into(),
        })?;
        let (target, in_page) = translate(cx, who, at, access)?;
        dma_allowed(cx, at, target)?;
        let n = in_page.min(len - done);
        f(cx.bus, target, done, n).map_err(|fault| MemError::Bus { va: at, fault })?;
        done += n;
    }
    Ok(())
}

/// Reads `out.len()` bytes at `va` through `who`'s VA space.
pub fn read(cx: &mut Cx, who: &Requester, va: u64, out: &mut [u8]) -> Result<(), MemError> {
    let len = out.len() as u64;
    pieces(cx, who, va, len, Access::Read, |bus, at, off, n| {
        // CAST: offsets inside `out`, whose length is a usize.
        bus.read(at, &mut out[off as usize..(off + n) as usize])
    })
}

/// Writes `data` at `va` through `who`'s VA space.
pub fn write(cx: &mut Cx, who: &Requester, va: u64, data: &[u8]) -> Result<(), MemError> {
    pieces(
        cx,
        who,
        va,
        data.len() as u64,
        Access::Write,
        |bus, at, off, n| {
            // CAST: offsets inside `data`, whose length is a usize.
            bus.write(at, &data[off as usize..(off + n) as usize])
        },
    )
}

/// Reads a little-endian u32 at `va`.
pub fn read_u32(cx: &mut Cx, who: &Requester, va: u64) -> Result<u32, MemError> {
    let mut b = [0; 4];
    read(cx, who, va, &mut b)?;
    Ok(u32::from_le_bytes(b))
}

/// Reads a little-endian u64 at `va`.
pub fn read_u64(cx: &mut Cx, who: &Requester, va: u64) -> Result<u64, MemError> {
    let mut b = [0; 8];
    read(cx, who, va, &mut b)?;
    Ok(u64::from_le_bytes(b))
}

/// Reports a failed access by `who`: an MMU fault is queued for the GSP unit, the channel
/// is halted, and every unit hears [`Signal::ChannelError`].
pub fn raise(cx: &mut Cx, who: &Requester, e: &MemError) {
    if let MemError::Mmu {
        va,
        access,
        fault_type,
        ..
    } = *e
    {
        cx.world.mmu_faults.push_back(MmuFaultRecord {
            va,
            access,
            fault_type,
            token: who.token,
            engine: who.engine,
            at_ns: cx.now_ns,
        });
    }
    halt(cx, "mmu", who.token, e.to_string());
}

/// Halts channel `token` with `reason` (logged under `unit`, the one that found it) and
/// raises [`Signal::ChannelError`] (once: a halted channel stays halted until it is freed).
pub fn halt(cx: &mut Cx, unit: &'static str, token: u32, reason: String) {
    cx.log
        .warn(unit, format!("channel {token:#x} halted: {reason}"));
    if let Some(ch) = cx.world.channels.get_mut(&token) {
        if ch.error.is_some() {
            return;
        }
        ch.error = Some(reason.clone());
    }
    cx.signal(Signal::ChannelError { token, reason });
}

/// The MMU's registers: the TLB invalidate, and BAR1's binding.
#[derive(Debug, Default)]
pub struct Mmu {
    pdb: u32,
    upper_pdb: u32,
    invalidate: u32,
    bar1_block: (u32, u32),
    /// When the BAR1 bind the last `_HIGH_ADDR` write started completes.
    bind_due_ns: u64,
}

impl Mmu {
    /// Power-on state.
    pub fn new() -> Mmu {
        Mmu::default()
    }

    /// The page directory the PDB registers name (dev_vm.h: `INVALIDATE_PDB_APERTURE` 1:1,
    /// `_ADDR` 31:4 holding address bits 39:12, `INVALIDATE_UPPER_PDB_ADDR` 19:0 bits 59:40).
    fn invalidate_root(&self) -> TableAddr {
        let addr = u64::from(self.upper_pdb & 0xf_ffff) << 40 | u64::from(self.pdb >> 4) << 12;
        let aperture = if self.pdb & 0b10 != 0 {
            TableAperture::SystemCoherent
        } else {
            TableAperture::Video
        };
        TableAddr { aperture, addr }
    }
}

impl Unit for Mmu {
    fn name(&self) -> &'static str {
        "mmu"
    }

    fn claims(&self, _spec: &ChipSpec, offset: u32) -> bool {
        matches!(
            offset,
            MMU_INVALIDATE_PDB
                | MMU_INVALIDATE_UPPER_PDB
                | MMU_INVALIDATE
                | BAR1_BLOCK_LOW_ADDR
                | BAR1_BLOCK_HIGH_ADDR
        )
    }

    fn read(&mut self, cx: &mut Cx, offset: u32) -> u32 {
        match offset {
            MMU_INVALIDATE_PDB => self.pdb,
            MMU_INVALIDATE_UPPER_PDB => self.upper_pdb,
            BAR1_BLOCK_LOW_ADDR => {
                let busy = if cx.now_ns < self.bind_due_ns {
                    BAR1_BIND_BUSY
                } else {
                    0
                };
                (self.bar1_block.0 & !BAR1_BIND_BUSY) | busy
            }
            BAR1_BLOCK_HIGH_ADDR => self.bar1_block.1,
            // TRIGGER reads back set until the invalidate is done.
            _ => {
                let running = cx.world.tlb.settle(cx.now_ns);
                (self.invalidate & !INVALIDATE_TRIGGER)
                    | if running { INVALIDATE_TRIGGER } else { 0 }
            }
        }
    }

    fn write(&mut self, cx: &mut Cx, offset: u32, value: u32) {
        match offset {
            MMU_INVALIDATE_PDB => self.pdb = value,
            MMU_INVALIDATE_UPPER_PDB => self.upper_pdb = value,
            // kbusBindBar1_GH100: "Write to the HIGH register triggers the bind" (with the
            // LOW value written before it).
            BAR1_BLOCK_HIGH_ADDR => {
                self.bar1_block.1 = value;
                self.bind_due_ns = cx.now_ns + BIND_NS;
            }
            BAR1_BLOCK_LOW_ADDR => {
                self.bar1_block.0 = value;
                if value & BAR1_MODE_VIRTUAL != 0 {
                    cx.log.warn(
                        "mmu",
                        format!(
                            "BAR1 bound in virtual mode ({value:#x}); the simulator models \
                             only physical mode: BAR1 stays a 1:1 window onto VRAM"
                        ),
                    );
                }
            }
            _ => {
                self.invalidate = value;
                if value & INVALIDATE_TRIGGER == 0 {
                    return;
                }
                // SYS_MEMBAR (bit 6): the invalidate first makes a system membar, which
                // reads the sysmem flush buffer; a fault there is logged and counted (no
                // channel to stop), as a DMAR fault would be.
                if value & INVALIDATE_SYS_MEMBAR != 0 {
                    let _ = crate::units::flush::membar(cx, "a TLB invalidate's SYS_MEMBAR");
                }
                let due = cx.now_ns + INVALIDATE_NS;
                if value & INVALIDATE_ALL_PDB != 0 {
                    cx.world.tlb.invalidate_at(due, None);
                    cx.log.debug("mmu", "TLB invalidate (all PDBs)");
                    return;
                }
                let root = self.invalidate_root();
                let known = cx.world.vaspaces.values().any(|v| {
                    matches!(
                        (v.page_dir, root.aperture),
                        (Some(Target::Vram(pa)), TableAperture::Video) if pa == root.addr
                    ) || matches!(
                        (v.page_dir, root.aperture),
                        (Some(Target::Bus(a)), TableAperture::SystemCoherent) if a == root.addr
                    )
                });
                if !known {
                    cx.log.warn(
                        "mmu",
                        format!(
                            "TLB invalidate of PDB {:#x} ({:?}), which no VA space has as its \
                             page directory: nothing cached is dropped",
                            root.addr, root.aperture
                        ),
                    );
                }
                cx.world.tlb.invalidate_at(due, Some(root));
                cx.log.debug(
                    "mmu",
                    format!("TLB invalidate (PDB {:#x}, {:?})", root.addr, root.aperture),
                );
            }
        }
    }
}
