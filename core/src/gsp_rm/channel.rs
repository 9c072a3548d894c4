//! GPFIFO channels on the VFIO path: the memory GSP-RM wants described in the allocation
//! parameters (instance block and RAMFC, USERD, method buffer: physical descriptors of VRAM
//! we allocated, as tinygrad's `rpc_rm_alloc` passes them), which channel group each
//! channel is in and so which runlist, and the doorbell token (GSP-RM returns the channel id
//! only: the driver adds `runlist << 16`, and on GB20x `RUNLIST_DOORBELL`, bit 30).

use alloc::collections::BTreeMap;

use nvbare_gsp::rm::alloc::{ChannelAllocParams, ChannelGroupAllocParams, MemoryDescParams};
use nvbare_gsp::rm::ctrl::subdevice::{FifoDeviceEntry, engine_data_index};
use zerocopy::FromBytes;

use super::error::{GspRmError, MemoryError};
use super::handles::Object;
use super::memory::{GspMemory, MemoryManager};
use crate::chip::Arch;
use crate::gpfifo::USERD_SIZE;
use crate::gpu::Buffer;
use crate::rm::Handle;

/// RM's `ADDR_SYSMEM` (`NV_MEMORY_DESC_PARAMS.addressSpace`, `gpu/mem_mgr/mem_desc.h`).
const ADDR_SYSMEM: u32 = 1;
/// RM's `ADDR_FBMEM`.
const ADDR_FBMEM: u32 = 2;
/// The instance block: one 4 KiB page, RAMFC its first 512 bytes (`dev_ram.h`), as tinygrad
/// describes both.
const INSTANCE_BYTES: u64 = 0x1000;
/// RAMFC inside the instance block.
const RAMFC_BYTES: u64 = 0x200;
/// The method buffer for faulting methods: tinygrad's 0x5000 (20 KiB).
const METHOD_BUFFER_BYTES: u64 = 0x5000;

/// The VRAM GSP-RM keeps for one channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChannelMemory {
    /// Instance block (and RAMFC).
    pub instance: u64,
    /// Method buffer.
    pub method_buffer: u64,
}

/// One channel: its engine (which picks its runlist) and its memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChannelRecord {
    /// `NV2080_ENGINE_TYPE_*` of its group (or its own).
    pub engine_type: u32,
    /// Its memory.
    pub memory: ChannelMemory,
}

/// The channels, channel groups and runlists the RM emulation knows.
#[derive(Debug, Default)]
pub struct Channels {
    /// Memory described by the last `channel_params`, for the next GPFIFO allocation.
    pending: Option<(ChannelMemory, u32)>,
    channels: BTreeMap<Handle, ChannelRecord>,
    groups: BTreeMap<Handle, u32>,
    runlists: BTreeMap<u32, u32>,
    /// `(channel id, runlist)` of each channel whose doorbell token was made: how GSP-RM's
    /// error events name it.
    ids: BTreeMap<Handle, (u32, u32)>,
}

/// Whether `class` is a GPFIFO channel class (`*_CHANNEL_GPFIFO_A`: xx6f, Volta and later).
pub fn is_gpfifo(class: u32) -> bool {
    class & 0xff == 0x6f && class >= nvbare_gsp::rm::classes::VOLTA_CHANNEL_GPFIFO_A
}

/// Whether `class` is a compute class (`*_COMPUTE_*`: xxc0).
pub fn is_compute(class: u32) -> bool {
    class & 0xff == 0xc0
}

/// What the doorbell needs besides runlist and channel id on `arch`:
/// `NV_VIRTUAL_FUNCTION_DOORBELL_RUNLIST_DOORBELL_ENABLE` (30:30) on GB20x only (gb202
/// dev_vm.h; GH100 and GB10x have no such field in the token).
pub fn doorbell_bits(arch: Arch) -> u32 {
    match arch {
        Arch::BlackwellGb20x => 1 << 30,
        _ => 0,
    }
}

impl Channels {
    /// Learns the runlist of each engine from `NV2080_CTRL_CMD_FIFO_GET_DEVICE_INFO_TABLE`
    /// entries (`engineData[RM_ENGINE_TYPE]` → `engineData[RUNLIST]`, as tinygrad maps them;
    /// the RM engine types of graphics and copy engines equal their `NV2080_ENGINE_TYPE`s).
    pub fn learn_runlists(&mut self, entries: &[FifoDeviceEntry]) {
        for e in entries {
            self.runlists.insert(
                e.engine_data[engine_data_index::RM_ENGINE_TYPE],
                e.engine_data[engine_data_index::RUNLIST],
            );
        }
    }

    /// The runlist of engine type `engine_type`, if the device info table listed it.
    pub fn runlist_of(&self, engine_type: u32) -> Option<u32> {
        self.runlists.get(&engine_type).copied()
    }

    /// Fills what GSP-RM needs of the kernel side in a channel's allocation parameters:
    /// USERD at `userd_offset` of `area` (physical), and a fresh instance block, RAMFC and
    /// method buffer in VRAM. The memory is kept for the next GPFIFO allocation.
    pub fn fill_params(
        &mut self,
        mm: &mut MemoryManager,
        p: &mut ChannelAllocParams,
        area: &Buffer<GspMemory>,
        userd_offset: u64,
    ) -> Result<(), GspRmError> {
        let m = area.memory();
        let userd = match (m.vram_addr(userd_offset), m.bus_addr(userd_offset)) {
            (Some(pa), _) => desc(pa, USERD_SIZE as u64, ADDR_FBMEM),
            (None, Some(bus)) => desc(bus, USERD_SIZE as u64, ADDR_SYSMEM),
            (None, None) => {
                return Err(MemoryError::UserdOutsideBuffer {
                    offset: userd_offset,
                    buffer: m.size,
                }
                .into());
            }
        };
        if let Some((old, _)) = self.pending.take() {
            free_memory(mm, old);
        }
        let instance = mm.alloc_phys(INSTANCE_BYTES, INSTANCE_BYTES)?;
        let method_buffer = match mm.alloc_phys(METHOD_BUFFER_BYTES, 0x1000) {
            Ok(pa) => pa,
            Err(e) => {
                mm.free_phys(instance, INSTANCE_BYTES);
                return Err(e.into());
            }
        };
        p.userd_mem = userd;
        p.instance_mem = desc(instance, INSTANCE_BYTES, ADDR_FBMEM);
        p.ramfc_mem = desc(instance, RAMFC_BYTES, ADDR_FBMEM);
        p.mthdbuf_mem = desc(method_buffer, METHOD_BUFFER_BYTES, ADDR_FBMEM);
        let memory = ChannelMemory {
            instance,
            method_buffer,
        };
        self.pending = Some((memory, p.engine_type));
        Ok(())
    }

    /// After an allocation of `class` under `parent` with parameters `params` (`made`: it
    /// succeeded as `h`): a channel group's engine is noted, a GPFIFO channel takes the
    /// pending memory (a failed one gives it back).
    pub fn allocated(
        &mut self,
        mm: &mut MemoryManager,
        h: Option<Handle>,
        parent: Handle,
        class: u32,
        params: &[u8],
    ) {
        if class == nvbare_gsp::rm::classes::KEPLER_CHANNEL_GROUP_A
            && let (Some(h), Ok((g, _))) = (h, ChannelGroupAllocParams::read_from_prefix(params))
        {
            self.groups.insert(h, g.engine_type);
        }
        if !is_gpfifo(class) {
            return;
        }
        let Some((memory, own_engine)) = self.pending.take() else {
            return;
        };
        match h {
            Some(h) => {
                let engine_type = self.groups.get(&parent).copied().unwrap_or(own_engine);
                self.channels.insert(
                    h,
                    ChannelRecord {
                        engine_type,
                        memory,
                    },
                );
            }
            None => free_memory(mm, memory),
        }
    }

    /// Forgets objects RM freed; their channels' memory goes back.
    pub fn freed(&mut self, mm: &mut MemoryManager, gone: &[(Handle, Object)]) {
        for (h, _) in gone {
            self.groups.remove(h);
            self.ids.remove(h);
            if let Some(c) = self.channels.remove(h) {
                free_memory(mm, c.memory);
            }
        }
    }

    /// The channel `h`.
    pub fn get(&self, h: Handle) -> Option<ChannelRecord> {
        self.channels.get(&h).copied()
    }

    /// The doorbell token of channel `h` from GSP-RM's work-submit token (its channel id).
    /// The channel is known by that id (with its runlist) in GSP-RM's error events from now.
    pub fn token(&mut self, h: Handle, rm_token: u32, arch: Arch) -> Result<u32, GspRmError> {
        let c = self.get(h).ok_or(GspRmError::UnknownChannel(h))?;
        let runlist = self
            .runlist_of(c.engine_type)
            .ok_or(GspRmError::UnknownRunlist {
                channel: h,
                engine_type: c.engine_type,
            })?;
        self.ids.insert(h, (rm_token & 0xffff, runlist));
        Ok((rm_token & 0xffff) | runlist << 16 | doorbell_bits(arch))
    }

    /// Whether an error event naming channel id `chid` (on `runlist`, or on the runlist of
    /// `engine_type`, where the event says) is about one of our channels.
    pub fn owns(&self, chid: u32, runlist: Option<u32>, engine_type: Option<u32>) -> bool {
        let runlist = runlist.or_else(|| engine_type.and_then(|t| self.runlist_of(t)));
        self.ids
            .values()
            .any(|&(id, rl)| id == chid && runlist.is_none_or(|r| r == rl))
    }

    /// Gives back every channel's memory (their client was freed).
    pub fn clear(&mut self, mm: &mut MemoryManager) {
        if let Some((m, _)) = self.pending.take() {
            free_memory(mm, m);
        }
        for (_, c) in core::mem::take(&mut self.channels) {
            free_memory(mm, c.memory);
        }
        self.groups.clear();
        self.ids.clear();
    }

    /// Channels known.
    pub fn len(&self) -> usize {
        self.channels.len()
    }

    /// Whether no channel is known.
    pub fn is_empty(&self) -> bool {
        self.channels.is_empty()
    }
}

fn desc(base: u64, size: u64, address_space: u32) -> MemoryDescParams {
    MemoryDescParams {
        base,
        size,
        address_space,
        cache_attrib: 0,
    }
}

fn free_memory(mm: &mut MemoryManager, m: ChannelMemory) {
    mm.free_phys(m.instance, INSTANCE_BYTES);
    mm.free_phys(m.method_buffer, METHOD_BUFFER_BYTES);
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvbare_gsp::rm::classes as cls;

    #[test]
    fn tokens_carry_the_runlist_and_gb20x_doorbell_bit() {
        let mut c = Channels::default();
        let mut e = FifoDeviceEntry::default();
        e.engine_data[engine_data_index::RM_ENGINE_TYPE] = 0x0b; // COPY2
        e.engine_data[engine_data_index::RUNLIST] = 3;
        c.learn_runlists(&[e]);
        c.groups.insert(0x10, 0x0b);
        let memory = ChannelMemory {
            instance: 0x1000,
            method_buffer: 0x2000,
        };
        c.channels.insert(
            0x11,
            ChannelRecord {
                engine_type: 0x0b,
                memory,
            },
        );
        assert_eq!(c.token(0x11, 5, Arch::Hopper).unwrap(), 3 << 16 | 5);
        assert_eq!(
            c.token(0x11, 5, Arch::BlackwellGb20x).unwrap(),
            1 << 30 | 3 << 16 | 5
        );
        assert!(c.token(0x12, 5, Arch::Hopper).is_err());
        assert!(c.owns(5, Some(3), None), "channel id 5 on runlist 3");
        assert!(c.owns(5, None, Some(0x0b)), "by its engine's runlist");
        assert!(!c.owns(5, Some(0), None), "id 5 of another runlist");
        assert!(!c.owns(6, None, None));
        // A channel on an engine the device info table did not list has no token.
        c.channels.insert(
            0x13,
            ChannelRecord {
                engine_type: 0x0c,
                memory,
            },
        );
        let e = c.token(0x13, 5, Arch::Hopper).unwrap_err();
        assert!(
            matches!(
                e,
                GspRmError::UnknownRunlist {
                    channel: 0x13,
                    engine_type: 0x0c
                }
            ),
            "{e:?}"
        );
        assert!(is_gpfifo(cls::HOPPER_CHANNEL_GPFIFO_A));
        assert!(!is_gpfifo(cls::KEPLER_CHANNEL_GPFIFO_A));
        assert!(is_compute(cls::BLACKWELL_COMPUTE_B));
    }
}
