//! The two messages the CPU queues before GSP-RM boots (`kgspQueueAsyncInitRpcs`):
//! `GSP_SET_SYSTEM_INFO` (a `GspSystemInfo`, checked against the PCI function) and
//! `SET_REGISTRY` (a `PACKED_REGISTRY_TABLE`, g_os_nvoc.h). Neither gets a reply; after both,
//! GSP-RM sends `GSP_INIT_DONE`.

use nvbare_gsp::abi::{GspSystemInfo, PackedRegistryEntry, PackedRegistryTable, RpcEvent};
use nvbare_gsp::sequencer::{SequencerStep, encode_sequencer};
use zerocopy::FromBytes;

use super::{Init, Rm};
use crate::chip::BootModel;
use crate::device::Cx;
use crate::units::gsp::libos_log::LogMessage;

impl Rm {
    /// `GSP_SET_SYSTEM_INFO`: the payload is a `GspSystemInfo`, checked against the PCI
    /// function the model is.
    pub(super) fn system_info(&mut self, cx: &mut Cx, payload: &[u8]) {
        let Ok((s, _)) = GspSystemInfo::read_from_prefix(payload) else {
            cx.log.warn(
                "gsp",
                "GSP_SET_SYSTEM_INFO shorter than GspSystemInfo; GSP-RM cannot init",
            );
            return;
        };
        let cfg = |o: u32| u64::from(cx.config.read(o, 4).unwrap_or(0));
        let bar0 = cfg(0x10) & !0xf;
        let bar1 = (cfg(0x14) & !0xf) | cfg(0x18) << 32;
        let bar3 = (cfg(0x1c) & !0xf) | cfg(0x20) << 32;
        let checks = [
            ("gpuPhysAddr (BAR0)", s.gpu_phys_addr, bar0),
            ("gpuPhysFbAddr (BAR1)", s.gpu_phys_fb_addr, bar1),
            ("gpuPhysInstAddr (BAR3)", s.gpu_phys_inst_addr, bar3),
            ("PCIDeviceID", u64::from(s.pci_device_id), cfg(0)),
            ("PCISubDeviceID", u64::from(s.pci_sub_device_id), cfg(0x2c)),
            (
                "PCIRevisionID",
                u64::from(s.pci_revision_id),
                cfg(0x08) & 0xff,
            ),
            (
                "pciConfigMirrorBase",
                u64::from(s.pci_config_mirror_base),
                u64::from(cx.spec.pci_config_mirror),
            ),
            (
                "pciConfigMirrorSize",
                u64::from(s.pci_config_mirror_size),
                0x1000,
            ),
        ];
        let wrong: Vec<String> = checks
            .iter()
            .filter(|(_, got, want)| got != want)
            .map(|(n, got, want)| format!("{n} {got:#x} (the function has {want:#x})"))
            .collect();
        if !wrong.is_empty() || s.max_user_va == 0 {
            cx.log.warn(
                "gsp",
                format!(
                    "GSP_SET_SYSTEM_INFO does not describe this PCI function: {}{}; GSP-RM init stops",
                    wrong.join(", "),
                    if s.max_user_va == 0 { " maxUserVa 0" } else { "" }
                ),
            );
            self.init = Init::Failed;
            return;
        }
        cx.log
            .info("gsp", "GSP_SET_SYSTEM_INFO matches the PCI function");
        self.init = Init::Registry;
    }

    /// `SET_REGISTRY`: a `PACKED_REGISTRY_TABLE` whose entries and names lie inside it.
    pub(super) fn set_registry(&mut self, cx: &mut Cx, t: &[u8]) {
        match parse_registry(t) {
            Ok(keys) => {
                cx.log.info("gsp", format!("SET_REGISTRY: {keys:?}"));
                self.registry = keys;
                // GSP-RM's first status-queue write (the INIT_DONE event) is a sysmem write
                // its hub flushes: an unprogrammed or unmapped flush buffer faults there.
                if let Err(why) = crate::units::flush::membar(cx, "GSP-RM's first queue write") {
                    cx.log
                        .warn("gsp", format!("{why}; GSP-RM hangs: no GSP_INIT_DONE"));
                    self.init = Init::Failed;
                    return;
                }
                if cx.spec.boot == BootModel::Booter {
                    self.init = Init::Sequencer;
                    cx.log.info(
                        "gsp",
                        "GSP-RM: GSP_RUN_CPU_SEQUENCER sent; GSP_INIT_DONE waits for the CPU to run it",
                    );
                    self.event(
                        RpcEvent::GspRunCpuSequencer,
                        encode_sequencer(&boot_sequencer(), SEQUENCER_CAPACITY),
                    );
                    return;
                }
                self.init_done(cx);
            }
            Err(why) => cx.log.warn(
                "gsp",
                format!("SET_REGISTRY malformed: {why}; GSP-RM init stops"),
            ),
        }
    }
}

/// `NV_PGSP_MAILBOX(2)` and `(3)` (ga102 `dev_gsp.h`: `(0x110804 + i * 4)`, 4 of them): the
/// registers the simulated boot sequencer writes.
pub const SEQ_MAILBOX2: u32 = 0x0011_080c;
/// `NV_PGSP_MAILBOX(3)`.
pub const SEQ_MAILBOX3: u32 = 0x0011_0810;
/// What the boot sequencer writes to `NV_PGSP_MAILBOX(2)`.
pub const SEQ_TOKEN: u32 = 0x5e9_0001;
/// `bufferSizeDWord` of the sequencer GSP-RM sends (its command buffer's capacity; the
/// value is the simulator's).
const SEQUENCER_CAPACITY: u32 = 0x400;

/// The simulated GSP-RM's boot sequencer: one of each register opcode
/// (`GSP_SEQ_BUF_OPCODE_REG_WRITE`, `_REG_MODIFY`, `_REG_POLL`, `_DELAY_US`, `_REG_STORE`,
/// rmgspseq.h) on GSP mailbox registers, whose effect GSP-RM then checks before
/// `GSP_INIT_DONE`. Real GSP-RM's boot sequence is not published; this one makes the round
/// trip observable. REG_MODIFY's value equals its mask: OpenRM's payload order is {addr,
/// mask, val} and tinygrad 0.14.0 reads {addr, val, mask}, so only such a modify means the
/// same to both.
pub fn boot_sequencer() -> Vec<SequencerStep> {
    vec![
        SequencerStep::RegWrite {
            addr: SEQ_MAILBOX2,
            val: SEQ_TOKEN,
        },
        SequencerStep::RegModify {
            addr: SEQ_MAILBOX3,
            mask: 1,
            val: 1,
        },
        SequencerStep::RegPoll {
            addr: SEQ_MAILBOX2,
            mask: u32::MAX,
            val: SEQ_TOKEN,
            timeout_us: 0,
            error: 0,
        },
        SequencerStep::DelayUs(10),
        SequencerStep::RegStore {
            addr: SEQ_MAILBOX2,
            index: 0,
        },
    ]
}

impl Rm {
    /// `GSP_INIT_DONE`: init is over.
    pub(super) fn init_done(&mut self, cx: &mut Cx) {
        self.init = Init::Ready;
        self.log(cx, "LOGINIT", LogMessage::InitDone, &[]);
        cx.log.info("gsp", "GSP-RM init done: GSP_INIT_DONE sent");
        // rpc_init_done_v17_00 { not_used }.
        self.event(RpcEvent::GspInitDone, vec![0; 4]);
    }
}

/// The keys of a packed registry table (name, DWORD value or byte length).
pub fn parse_registry(t: &[u8]) -> Result<Vec<(String, u32)>, String> {
    let (hdr, _) = PackedRegistryTable::read_from_prefix(t)
        .map_err(|_| "shorter than PACKED_REGISTRY_TABLE".to_string())?;
    if hdr.size as usize != t.len() {
        return Err(format!(
            "size {} but the message holds {} bytes",
            hdr.size,
            t.len()
        ));
    }
    let entry = core::mem::size_of::<PackedRegistryEntry>();
    let head = core::mem::size_of::<PackedRegistryTable>();
    let n = hdr.num_entries as usize;
    if head + n * entry > t.len() {
        return Err(format!("{n} entries do not fit"));
    }
    let mut keys = Vec::with_capacity(n);
    for i in 0..n {
        let e = PackedRegistryEntry::read_from_bytes(&t[head + i * entry..head + (i + 1) * entry])
            .map_err(|_| "entry")?;
        let name_at = e.name_offset as usize;
        let name = t
            .get(name_at..)
            .and_then(|s| s.iter().position(|&b| b == 0).map(|z| &s[..z]));
        let Some(name) = name.filter(|nm| !nm.is_empty() && name_at >= head + n * entry) else {
            return Err(format!(
                "entry {i}: nameOffset {name_at:#x} is no NUL-terminated name inside the table"
            ));
        };
        let name = String::from_utf8_lossy(name).into_owned();
        let value = match e.entry_type {
            1 if e.length == 4 => e.data,
            2 | 3
                if (e.data as usize)
                    .checked_add(e.length as usize)
                    .is_some_and(|end| end <= t.len()) =>
            {
                e.length
            }
            ty => {
                return Err(format!(
                    "entry {name}: type {ty} with data {:#x} length {}",
                    e.data, e.length
                ));
            }
        };
        keys.push((name, value));
    }
    Ok(keys)
}
