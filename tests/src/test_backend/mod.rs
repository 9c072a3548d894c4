//! A backend without a GPU, for testing `nvbare_core::gpu` in CI: memory comes from the heap
//! (at GPU VAs of its own choosing, CPU views that do *not* sit at those VAs), every RM call
//! is recorded with its parameter bytes, and the "GPU" ([`executor`]) runs the pushbuffers of
//! a channel when its doorbell rings, so waits complete. Channel setup follows the VFIO
//! path's shape: the backend fills the instance/USERD memory descriptors itself, as GSP-RM
//! wants them; it speaks the 570.144 ABI unless told otherwise.
//!
//! Failures are injected per call ([`TestBackend::refuse`]), faults per wait
//! ([`TestBackend::inject_mmu_fault`], [`TestBackend::inject_event`]).

pub mod executor;

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use nvbare_core::gpu::{Backend, Buffer, CardInfo, MemoryRequest, Placement};
use nvbare_core::hal::{Bar0, Clock};
use nvbare_core::rm::{Classes, FaultReport, GrInfo, Handle, RmAbi, RmApi};
use nvbare_core::shared::SharedMem;
use nvbare_gsp::rm::alloc::{
    ChannelAllocParams, DeviceAllocParams, MemoryDescParams, VaSpaceAllocParamsV570,
};
use nvbare_gsp::rm::classes as cls;
use nvbare_gsp::rm::ctrl::ce::CePceMaskParams;
use nvbare_gsp::rm::ctrl::channel::WorkSubmitTokenParams;
use nvbare_gsp::rm::ctrl::cmd;
use nvbare_gsp::rm::ctrl::debugger::{MmuFaultInfoEntry, ReadMmuFaultInfoParams};
use nvbare_gsp::rm::ctrl::root::{ClassListV2ParamsV570, ClassListV2ParamsV580};
use zerocopy::{FromBytes, IntoBytes};

pub use executor::{FakeGpu, Launch};

/// One recorded RM call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RmCall {
    /// `alloc(parent, class, params)` that returned `handle` (0 when refused).
    Alloc {
        /// Parent.
        parent: Handle,
        /// Class.
        class: u32,
        /// The new object.
        handle: Handle,
        /// The parameter bytes as passed.
        params: Vec<u8>,
    },
    /// `control(object, cmd, params)`.
    Control {
        /// Object.
        object: Handle,
        /// Command.
        cmd: u32,
        /// The parameter bytes as passed.
        params: Vec<u8>,
    },
    /// `free(parent, object)`.
    Free {
        /// Parent.
        parent: Handle,
        /// Object.
        object: Handle,
    },
}

impl RmCall {
    /// The class of an allocation.
    pub fn class(&self) -> Option<u32> {
        match self {
            Self::Alloc { class, .. } => Some(*class),
            _ => None,
        }
    }

    /// The command of a control.
    pub fn cmd(&self) -> Option<u32> {
        match self {
            Self::Control { cmd, .. } => Some(*cmd),
            _ => None,
        }
    }

    /// The parameter block, read as `P`.
    pub fn params<P: FromBytes>(&self) -> Option<P> {
        match self {
            Self::Alloc { params, .. } | Self::Control { params, .. } => {
                P::read_from_prefix(params).ok().map(|(p, _)| p)
            }
            Self::Free { .. } => None,
        }
    }
}

/// What the test backend refuses: `NV_ERR_NOT_SUPPORTED` as RM would.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TestError {
    /// RM refused the call (injected).
    #[error("RM refused {0}")]
    Refused(&'static str),
    /// A control the test RM does not know.
    #[error("unknown control {0:#x}")]
    UnknownControl(u32),
    /// The test backend's memory is exhausted.
    #[error("no VA left")]
    NoVa,
}

type Refusal = Box<dyn FnMut(&RmCall) -> bool + Send>;

/// The GPU timer and doorbell: writes ring the executor.
#[derive(Debug)]
pub struct TestUsermode(Arc<Mutex<FakeGpu>>);

impl Bar0 for TestUsermode {
    fn read32(&self, offset: u32) -> u32 {
        let t = self.0.lock().unwrap_or_else(|p| p.into_inner()).time_ns;
        match offset {
            0x80 => t as u32,
            0x84 => (t >> 32) as u32,
            _ => 0,
        }
    }
    fn write32(&self, offset: u32, value: u32) {
        assert_eq!(offset, 0x90, "only the doorbell is written");
        self.0.lock().unwrap_or_else(|p| p.into_inner()).ring(value);
    }
}

/// Wall-clock time.
#[derive(Debug)]
pub struct TestClock(Instant);

impl Clock for TestClock {
    fn now_ns(&self) -> u64 {
        self.0.elapsed().as_nanos() as u64
    }
    fn delay_ns(&self, ns: u64) {
        std::thread::sleep(std::time::Duration::from_nanos(ns));
    }
}

/// A channel whose parameters were filled but whose object is not allocated yet.
#[derive(Clone, Copy, Debug)]
struct PendingChannel {
    ring_va: u64,
    userd_va: u64,
    entries: u32,
}

/// The backend's record of one allocation.
#[derive(Debug)]
pub struct TestMemory {
    /// A fake physical address (what a VFIO backend would put in a descriptor).
    pub phys: u64,
}

/// The test backend.
pub struct TestBackend {
    /// Every RM call, in order.
    pub calls: Vec<RmCall>,
    /// The classes the GPU offers.
    pub class_list: Vec<u32>,
    /// The ABI spoken.
    pub abi: RmAbi,
    /// Graphics facts returned.
    pub gr: GrInfo,
    gpu: Arc<Mutex<FakeGpu>>,
    usermode: TestUsermode,
    clock: TestClock,
    next_handle: Handle,
    next_va: u64,
    next_phys: u64,
    next_token: u32,
    refusals: Vec<Refusal>,
    pending: Option<PendingChannel>,
    channel_labels: Vec<(Handle, &'static str)>,
    mmu_fault: Option<MmuFaultInfoEntry>,
    event: Option<FaultReport>,
    /// What [`Backend::faults_by_event`] answers (true: the test backend's events, as the
    /// VFIO path's; false: a backend without an event source, as nvk).
    pub fault_events: bool,
    /// Memory allocations made and freed: (va, size, placement).
    pub allocations: Vec<(u64, u64, Placement)>,
    /// Frees, by VA.
    pub frees: Vec<u64>,
    /// What `NV2080_CTRL_CMD_CE_GET_CE_PCE_MASK` answers: (engine type, PCE mask); an engine
    /// not listed is refused as an unknown control.
    pub pce_masks: Vec<(u32, u32)>,
}

/// The H200's classes (the ones `Classes::choose` picks there) plus older ones it also lists.
pub const HOPPER_CLASSES: &[u32] = &[
    cls::HOPPER_CHANNEL_GPFIFO_A,
    cls::AMPERE_CHANNEL_GPFIFO_A,
    cls::HOPPER_COMPUTE_A,
    cls::HOPPER_DMA_COPY_A,
    cls::HOPPER_USERMODE_A,
    cls::TURING_USERMODE_A,
];

/// Where the test backend's VAs start (CPU views are heap memory elsewhere).
pub const VA_BASE: u64 = 0x40_0000_0000;

impl Default for TestBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl TestBackend {
    /// A Hopper-like GPU (sm_90, 2 GPCs x 2 TPCs x 2 SMs) speaking the 570.144 ABI.
    pub fn new() -> Self {
        let mut model = FakeGpu::default();
        model.running = true;
        let gpu = Arc::new(Mutex::new(model));
        Self {
            calls: Vec::new(),
            class_list: HOPPER_CLASSES.to_vec(),
            abi: RmAbi::R570,
            gr: GrInfo {
                gpcs: 2,
                tpcs_per_gpc: 2,
                sms_per_tpc: 2,
                max_warps_per_sm: 64,
                sm_version: 0x900,
                sm_count: 8,
            },
            usermode: TestUsermode(gpu.clone()),
            gpu,
            clock: TestClock(Instant::now()),
            next_handle: 0xcaf0_0000,
            next_va: VA_BASE,
            next_phys: 0x1_0000_0000,
            next_token: 0x10,
            refusals: Vec::new(),
            pending: None,
            channel_labels: Vec::new(),
            mmu_fault: None,
            event: None,
            fault_events: true,
            allocations: Vec::new(),
            frees: Vec::new(),
            pce_masks: Vec::new(),
        }
    }

    /// The GPU model (memory, channels, what ran).
    pub fn gpu(&self) -> MutexGuard<'_, FakeGpu> {
        self.gpu.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A handle on the GPU model that outlives borrows of the backend.
    pub fn gpu_handle(&self) -> Arc<Mutex<FakeGpu>> {
        self.gpu.clone()
    }

    /// Refuses every RM call `pred` matches.
    pub fn refuse(&mut self, pred: impl FnMut(&RmCall) -> bool + Send + 'static) {
        self.refusals.push(Box::new(pred));
    }

    /// The debugger will report an MMU fault at `address`.
    pub fn inject_mmu_fault(&mut self, address: u64, fault_type: u32, access_type: u32) {
        self.mmu_fault = Some(MmuFaultInfoEntry {
            fault_address: address,
            fault_type,
            access_type,
        });
    }

    /// The event source (a GSP status queue on the VFIO path) will report `r`.
    pub fn inject_event(&mut self, r: FaultReport) {
        self.event = Some(r);
    }

    fn handle(&mut self) -> Handle {
        self.next_handle += 1;
        self.next_handle
    }

    fn refused(&mut self, call: &RmCall) -> bool {
        self.refusals.iter_mut().any(|r| r(call))
    }

    /// The handles of the channels, compute first, as the test RM numbered them.
    pub fn channel_handles(&self) -> Vec<(Handle, &'static str)> {
        self.channel_labels.clone()
    }
}

impl RmApi for TestBackend {
    type Error = TestError;

    fn client(&self) -> Handle {
        0xc1d0_0001
    }

    fn abi(&self) -> RmAbi {
        self.abi
    }

    fn alloc_raw(
        &mut self,
        parent: Handle,
        class: u32,
        params: &mut [u8],
    ) -> Result<Handle, TestError> {
        let mut call = RmCall::Alloc {
            parent,
            class,
            handle: 0,
            params: params.to_vec(),
        };
        if self.refused(&call) {
            self.calls.push(call);
            return Err(TestError::Refused("an allocation"));
        }
        let h = self.handle();
        if let RmCall::Alloc { handle, .. } = &mut call {
            *handle = h;
        }
        self.calls.push(call);
        if class == cls::HOPPER_CHANNEL_GPFIFO_A || class == cls::BLACKWELL_CHANNEL_GPFIFO_A {
            let label = if self.channel_labels.is_empty() {
                "compute"
            } else {
                "copy"
            };
            self.channel_labels.push((h, label));
        }
        Ok(h)
    }

    fn control_raw(
        &mut self,
        object: Handle,
        cmd: u32,
        params: &mut [u8],
    ) -> Result<(), TestError> {
        let call = RmCall::Control {
            object,
            cmd,
            params: params.to_vec(),
        };
        let refused = self.refused(&call);
        self.calls.push(call);
        if refused {
            return Err(TestError::Refused("a control"));
        }
        match cmd {
            cmd::NV2080_CE_GET_CE_PCE_MASK => {
                let (p, _) = CePceMaskParams::mut_from_prefix(params)
                    .map_err(|_| TestError::UnknownControl(cmd))?;
                let et = p.ce_engine_type;
                p.pce_mask = self
                    .pce_masks
                    .iter()
                    .find(|(e, _)| *e == et)
                    .map(|&(_, m)| m)
                    .ok_or(TestError::UnknownControl(cmd))?;
            }
            cmd::NV0080_GPU_GET_CLASSLIST_V2 => match self.abi {
                RmAbi::R570 => {
                    let (p, _) = ClassListV2ParamsV570::mut_from_prefix(params)
                        .map_err(|_| TestError::UnknownControl(cmd))?;
                    p.num_classes = self.class_list.len() as u32;
                    p.class_list[..self.class_list.len()].copy_from_slice(&self.class_list);
                }
                RmAbi::R580 => {
                    let (p, _) = ClassListV2ParamsV580::mut_from_prefix(params)
                        .map_err(|_| TestError::UnknownControl(cmd))?;
                    p.num_classes = self.class_list.len() as u32;
                    p.class_list[..self.class_list.len()].copy_from_slice(&self.class_list);
                }
            },
            cmd::NVC36F_GPFIFO_GET_WORK_SUBMIT_TOKEN => {
                let token = self.next_token;
                self.next_token += 1;
                let (p, _) = WorkSubmitTokenParams::mut_from_prefix(params)
                    .map_err(|_| TestError::UnknownControl(cmd))?;
                p.work_submit_token = token;
                let label = self
                    .channel_labels
                    .iter()
                    .find(|(h, _)| *h == object)
                    .map_or("?", |(_, l)| *l);
                if let Some(ch) = self.pending.take() {
                    self.gpu()
                        .add_channel(token, ch.ring_va, ch.userd_va, ch.entries, label);
                }
            }
            cmd::NVA06C_GPFIFO_SCHEDULE => {
                let want = match self.abi {
                    RmAbi::R570 => 2,
                    RmAbi::R580 => 3,
                };
                assert_eq!(params.len(), want, "schedule block of the RM's ABI");
            }
            cmd::NV83DE_DEBUG_READ_ALL_SM_ERROR_STATES => {}
            cmd::NV83DE_DEBUG_READ_MMU_FAULT_INFO => {
                if let Some(f) = self.mmu_fault {
                    let (p, _) = ReadMmuFaultInfoParams::mut_from_prefix(params)
                        .map_err(|_| TestError::UnknownControl(cmd))?;
                    p.mmu_fault_info_list[0] = f;
                    p.count = 1;
                }
            }
            _ => return Err(TestError::UnknownControl(cmd)),
        }
        Ok(())
    }

    fn free(&mut self, parent: Handle, object: Handle) -> Result<(), TestError> {
        self.calls.push(RmCall::Free { parent, object });
        Ok(())
    }
}

impl Backend for TestBackend {
    type Clock = TestClock;
    type Usermode = TestUsermode;
    type Memory = TestMemory;
    type VaSpaceParams = VaSpaceAllocParamsV570;

    fn clock(&self) -> &TestClock {
        &self.clock
    }

    fn usermode(&self) -> &TestUsermode {
        &self.usermode
    }

    fn usermode_base(&self) -> u32 {
        0
    }

    fn alloc_memory(&mut self, req: &MemoryRequest) -> Result<Buffer<TestMemory>, TestError> {
        let page = if req.size >= (8 << 20) {
            2 << 20
        } else {
            4 << 10
        };
        let size = req.size.div_ceil(page) * page;
        let align = page.max(req.align);
        let va = self.next_va.next_multiple_of(align);
        self.next_va = va.checked_add(size).ok_or(TestError::NoVa)?;
        let region = self.gpu().map(va, size);
        let cpu_access = req.cpu_access || req.placement == Placement::Host;
        let cpu = cpu_access.then(|| SharedMem::from_io(region, size as usize, va));
        let phys = self.next_phys;
        self.next_phys += size;
        self.allocations.push((va, size, req.placement));
        Ok(Buffer::new(
            va,
            size,
            req.placement,
            cpu,
            TestMemory { phys },
        ))
    }

    fn free_memory(&mut self, buf: Buffer<TestMemory>) {
        self.gpu().unmap(buf.gpu_va());
        self.frees.push(buf.gpu_va());
    }

    fn device_params(&mut self) -> Result<DeviceAllocParams, TestError> {
        Ok(DeviceAllocParams {
            device_id: 0,
            h_client_share: self.client(),
            ..Default::default()
        })
    }

    fn attach(&mut self, _: Handle, _: Handle, _: &Classes) -> Result<(), TestError> {
        Ok(())
    }

    fn vaspace_params(&self) -> VaSpaceAllocParamsV570 {
        VaSpaceAllocParamsV570 {
            va_base: 0x1000,
            va_size: 1 << 47,
            ..Default::default()
        }
    }

    fn bind_vaspace(&mut self, _: Handle, _: Handle, _: Handle) -> Result<(), TestError> {
        Ok(())
    }

    fn gr_info(&mut self, _: Handle) -> Result<GrInfo, TestError> {
        Ok(self.gr)
    }

    fn card_info(&mut self, _: Handle) -> CardInfo {
        CardInfo {
            name: "test GPU".into(),
            rm: "recorded RM".into(),
            vram_bytes: 1 << 30,
            pci: None,
            device_id: 0x2335,
        }
    }

    fn channel_params(
        &mut self,
        p: &mut ChannelAllocParams,
        area: &Buffer<TestMemory>,
        ring_offset: u64,
        userd_offset: u64,
    ) -> Result<(), TestError> {
        // As a VFIO backend does: physical descriptors of memory it allocated itself.
        let phys = area.memory().phys;
        p.userd_mem = MemoryDescParams {
            base: phys + userd_offset,
            size: 0x200,
            address_space: 2,
            cache_attrib: 0,
        };
        p.instance_mem = MemoryDescParams {
            base: phys + ring_offset + 0x8000,
            size: 0x1000,
            address_space: 2,
            cache_attrib: 0,
        };
        self.pending = Some(PendingChannel {
            ring_va: area.gpu_va() + ring_offset,
            userd_va: area.gpu_va() + userd_offset,
            entries: p.gp_fifo_entries,
        });
        Ok(())
    }

    fn faults_by_event(&self) -> bool {
        self.fault_events
    }

    fn service_events(&mut self) -> Result<Option<FaultReport>, TestError> {
        Ok(self.event.take())
    }
}

/// Reads the bytes of a call's parameter block back as `P` (for asserting on them).
pub fn params_of<P: FromBytes + IntoBytes>(call: &RmCall) -> P {
    call.params::<P>()
        .expect("parameter block of the expected size")
}
