//! The GSP-RM 570.144 ABI: `#[repr(C)]` mirrors of the structures the CPU and GSP-RM
//! exchange, each named after its C type and laid out byte for byte like it.
//!
//! Every struct here is checked against NVIDIA's headers by the `abi_layout` test in
//! `nvbare-tests` (size, alignment, and the offset and size of every field), and every
//! RPC/event number against `rpc_global_enums.h` by this crate's tests.
//!
//! Explicit `_padN` fields stand where the C compiler inserts padding, so that every
//! type is [`IntoBytes`](zerocopy::IntoBytes) with no hidden bytes.
//!
//! | module | mirrors |
//! |---|---|
//! | [`rpc`] | RPC message header and the RPC payloads we send (`g_rpc-structures.h`) |
//! | [`events`] | fixed parts of the event payloads GSP-RM sends (`g_rpc-structures.h`) |
//! | [`msgq`] | shared-memory queue headers and elements (`msgq_priv.h`, `message_queue_priv.h`) |
//! | [`boot`] | boot arguments: init args, libos regions, WPR metadata, FMC boot params |
//! | [`fw`] | firmware image headers (`rmRiscvUcode.h`, nouveau's `nvfw/fw.h`, `nvfw/hs.h`) |
//! | [`fsp`] | FSP chain-of-trust payload (`kern_fsp_cot_payload.h`) |
//! | [`registry`] | the packed registry table of `SET_REGISTRY` |
//! | [`sequencer`] | the CPU sequencer buffer commands (`rmgspseq.h`) |
//! | [`system_info`] | `GspSystemInfo`, pushed to GSP-RM at boot |
//! | [`static_info`] | `GspStaticConfigInfo`, fetched from GSP-RM after boot |
//! | [`functions`] | `NV_VGPU_MSG_FUNCTION_*` and `NV_VGPU_MSG_EVENT_*` |

pub mod boot;
pub mod events;
pub mod fsp;
pub mod functions;
pub mod fw;
pub mod msgq;
pub mod registry;
pub mod rpc;
pub mod sequencer;
pub mod static_info;
pub mod system_info;

pub use boot::*;
pub use events::*;
pub use fsp::*;
pub use functions::*;
pub use fw::*;
pub use msgq::*;
pub use registry::*;
pub use rpc::*;
pub use sequencer::*;
pub use static_info::*;
pub use system_info::*;

#[cfg(test)]
mod tests;
