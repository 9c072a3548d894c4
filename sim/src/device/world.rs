//! What the units of a simulated GPU share: the [`Signal`]s they send each other, the
//! [`World`] several of them read (channels, address spaces, faults), the [`Cx`] a unit runs
//! with, and the [`Unit`] trait every block of the GPU implements (see the parent module).

use std::collections::{BTreeMap, VecDeque};

use crate::chip::ChipSpec;
use crate::config::ConfigSpace;
use crate::faults::FaultPlan;
use crate::log::SimLog;
use crate::memory::{Access, Bus, Target};
use crate::units;

/// Something one unit tells the others (delivered on the device thread, in order, to every
/// unit's [`Unit::signal`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Signal {
    /// The device was reset (function-level reset).
    Reset,
    /// A channel stopped with an error (an MMU fault, a bad method, a bad QMD): the GSP unit
    /// tells the driver (an RC / MMU-fault event), the FIFO unit stops fetching it.
    ChannelError {
        /// The channel's work-submit token.
        token: u32,
        /// What went wrong, for the log and the event.
        reason: String,
    },
    /// The FSP verified the GSP-FMC (chain of trust) and started it on the GSP: the GSP unit
    /// runs the FMC with the `GSP_FMC_BOOT_PARAMS` at bus address `boot_params`. Raised by
    /// the FSP unit; handled by the GSP unit.
    GspFmcStarted {
        /// `gspBootArgsSysmemOffset` of the COT message.
        boot_params: u64,
        /// Where the FSP put FRTS: `frtsVidmemOffset` (from the end of FB) and size.
        frts_vidmem: (u64, u64),
    },
    /// GSP-RM unloaded and the GSP's RISC-V core halted: the FSP may boot it again with a
    /// new chain-of-trust command (WPR2 permitting). Raised by the GSP unit; handled by the
    /// FSP unit.
    GspHalted,
    /// `booter_load` on SEC2 accepted the WPR meta, raised WPR2 over `wpr` and started the
    /// GSP's RISC-V core: the GSP unit starts GSP-RM with the libos arguments in its mailboxes
    /// (booter path). Raised by the SEC2 unit; handled by the GSP unit.
    BooterStartedGsp {
        /// WPR2 as the WPR meta lays it out.
        wpr: units::gsp::fmc::WprLayout,
    },
}

/// An engine a channel runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Engine {
    /// The graphics/compute engine (runlist of GR0).
    Graphics,
    /// Copy engine `n` (`NV2080_ENGINE_TYPE_COPY(n)`).
    Copy(u32),
}

/// A GPFIFO channel as GSP-RM set it up. Owner: the GSP unit (its RM object database writes
/// it when a channel is allocated, scheduled or freed). Readers: the host/FIFO unit (doorbells,
/// GPFIFO fetch), the copy and compute units.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelRecord {
    /// Channel id.
    pub chid: u32,
    /// Runlist id.
    pub runlist: u32,
    /// The engine it runs on.
    pub engine: Engine,
    /// Where the instance block (with RAMFC) is.
    pub instance: Option<Target>,
    /// Where USERD is (GPPut at +0x8c, GPGet at +0x88).
    pub userd: Target,
    /// GPU virtual address of the GPFIFO ring.
    pub gpfifo_va: u64,
    /// Entries in the ring.
    pub gpfifo_entries: u32,
    /// The VA space (key of [`World::vaspaces`]).
    pub vaspace: u32,
    /// Engine classes allocated on this channel (what SET_OBJECT may bind).
    pub classes: Vec<u32>,
    /// Scheduled (`NVA06C_CTRL_CMD_GPFIFO_SCHEDULE` / `NVA06F_CTRL_CMD_GPFIFO_SCHEDULE`).
    pub enabled: bool,
    /// Set when the channel stopped with an error; a stopped channel fetches nothing more.
    pub error: Option<String>,
    /// Which allocation this is ([`World::new_channel_generation`]): a token freed and
    /// allocated again is a new channel, whatever its parameters.
    pub generation: u64,
}

/// A GPU virtual address space. Owner: the GSP unit (FERMI_VASPACE_A allocs,
/// SET_PAGE_DIRECTORY). Readers: every engine that translates addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VaSpaceRecord {
    /// Root page directory, once SET_PAGE_DIRECTORY named it.
    pub page_dir: Option<Target>,
}

/// One recorded MMU fault. Writer: the MMU unit (on behalf of the engine that faulted).
/// Reader: the GSP unit, which reports it to the driver as GSP-RM does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MmuFaultRecord {
    /// Faulting virtual address.
    pub va: u64,
    /// Read or write.
    pub access: Access,
    /// `NV_PFAULT_FAULT_TYPE_*` (dev_fault.h).
    pub fault_type: u32,
    /// The faulting channel's work-submit token.
    pub token: u32,
    /// The engine that faulted.
    pub engine: Engine,
    /// GPU timer at the fault.
    pub at_ns: u64,
}

/// State several units read or write. Each field names its owner.
#[derive(Debug, Default)]
pub struct World {
    /// Signals raised during the current step, delivered after it.
    pub signals: VecDeque<Signal>,
    /// `NV_PFB_PRI_MMU_WPR2_ADDR_LO` / `_HI` (owner: the identity unit reads it; the boot
    /// units raise it when GSP-RM's WPR2 is set up; lowered only by reset or a clean unload).
    pub wpr2: (u32, u32),
    /// Channels by work-submit token (owner: GSP unit). The key is the doorbell's
    /// `runlist << 16 | chid` (`NV_VIRTUAL_FUNCTION_DOORBELL` RUNLIST_ID and VECTOR); GSP-RM
    /// itself returns only the chid from GET_WORK_SUBMIT_TOKEN and drivers add the runlist
    /// (and, on GB20x, the RUNLIST_DOORBELL bit 30, which is not part of the key).
    pub channels: BTreeMap<u32, ChannelRecord>,
    /// VA spaces by id (owner: GSP unit).
    pub vaspaces: BTreeMap<u32, VaSpaceRecord>,
    /// MMU faults not yet reported (writer: MMU unit; reader: GSP unit).
    pub mmu_faults: VecDeque<MmuFaultRecord>,
    /// Cached translations (owner: the MMU unit; the engines fill it as they translate).
    pub tlb: units::mmu::Tlb,
    /// What the engines did (owner: the FIFO unit and the engines it runs).
    pub engines: units::fifo::EngineCounters,
    /// Clients and objects in GSP-RM's database, as of GSP-RM's last step (owner: GSP unit;
    /// zero while GSP-RM does not run).
    pub rm_objects: units::gsp::rm::RmObjectCount,
    /// The last channel generation handed out.
    pub(super) channel_generation: u64,
    /// Channels whose copies wrote memory since their last `LAUNCH_DMA` with
    /// `FLUSH_ENABLE` (owner: the copy engine).
    pub copies_unflushed: std::collections::BTreeSet<u32>,
    /// The sysmem flush buffer's bus address, once its registers hold one (owner: the flush
    /// unit; read by every unit that makes a system membar, `units::flush::membar`).
    pub sysmem_flush: Option<u64>,
    /// System membars whose flush read faulted (writer: `units::flush::membar`).
    pub flush_faults: u64,
    /// `NV_PBUS_VBIOS_SCRATCH(i)` by index (owner: the GFW unit; FWSEC writes its statuses).
    pub vbios_scratch: BTreeMap<u32, u32>,
    /// `NV_PGC6_BSI_SECURE_SCRATCH_14.BOOT_STAGE_3_HANDOFF` (writer: the booter).
    pub boot_stage_3_handoff: bool,
    /// Booter path: when devinit (GFW) finishes after the last reset, on the GPU timer
    /// (owner: the device's reset; read by the GFW unit).
    pub gfw_boot_done_ns: u64,
    /// Booter path: when devinit's FWSEC halts on the GSP falcon after the last reset
    /// (owner: the device's reset; read by the GSP unit, which keeps the falcon devinit's
    /// until then).
    pub devinit_halt_ns: u64,
}

impl World {
    /// A number no channel allocated since power-on or reset has had.
    pub fn new_channel_generation(&mut self) -> u64 {
        self.channel_generation += 1;
        self.channel_generation
    }
}

/// What a unit sees when it runs.
pub struct Cx<'a> {
    /// The chip.
    pub spec: &'static ChipSpec,
    /// Memory as the device reaches it.
    pub bus: &'a Bus,
    /// The device's log.
    pub log: &'a SimLog,
    /// Injected faults.
    pub faults: &'a FaultPlan,
    /// PCI config space.
    pub config: &'a mut ConfigSpace,
    /// Shared state.
    pub world: &'a mut World,
    /// The GPU timer, ns since the device was made.
    pub now_ns: u64,
    /// Where the firmware files are ([`crate::firmware`]; `None`: the default places).
    pub firmware_dir: Option<&'a std::path::Path>,
}

impl Cx<'_> {
    /// Raises `s` for every unit (after the current step).
    pub fn signal(&mut self, s: Signal) {
        self.world.signals.push_back(s);
    }
}

/// One block of the GPU: the BAR0 registers it decodes and the work it does.
pub trait Unit: Send {
    /// Short name for the log ("fsp").
    fn name(&self) -> &'static str;
    /// Whether this unit decodes BAR0 offset `offset` (on this chip).
    fn claims(&self, spec: &ChipSpec, offset: u32) -> bool;
    /// A BAR0 read of a claimed offset.
    fn read(&mut self, cx: &mut Cx, offset: u32) -> u32;
    /// A BAR0 write of a claimed offset.
    fn write(&mut self, cx: &mut Cx, offset: u32, value: u32);
    /// Device-thread work: do what is pending; true if anything happened (the thread steps
    /// again before it sleeps).
    fn step(&mut self, _cx: &mut Cx) -> bool {
        false
    }
    /// A signal from another unit (or from the device itself).
    fn signal(&mut self, _cx: &mut Cx, _signal: &Signal) {}
}
