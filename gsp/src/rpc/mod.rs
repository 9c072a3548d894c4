//! RPCs to and from GSP-RM: function and event numbers with their names, `NV_STATUS`
//! names, the RPC message header, typed commands ([`commands`]) and typed replies and
//! events ([`events`]).
//!
//! Mirrors `rpcSendMessage`/`rpcRecvPoll` framing in `src/nvidia/src/kernel/vgpu/rpc.c` and
//! the `rpc_message_header_v` of `g_rpc-message-header.h`.

pub mod commands;
pub mod events;

use crate::rm::status::NvStatus;
use core::fmt;

use crate::abi::{
    NV_VGPU_MSG_SIGNATURE_VALID, RPC_HEADER_VERSION, RpcEvent, RpcFunction, RpcMessageHeader,
    RpcNumber,
};
use zerocopy::{FromBytes, IntoBytes};

/// `sizeof(rpc_message_header_v)`.
pub const RPC_HEADER_SIZE: usize = core::mem::size_of::<RpcMessageHeader>();

/// `NV_VGPU_MSG_RESULT_RPC_PENDING`: the result a sender puts in a request header.
pub const NV_VGPU_MSG_RESULT_RPC_PENDING: u32 = 0xFFFF_FFFF;

/// A message's `function` number that prints as its name and number
/// (`GSP_RM_CONTROL (76)`, `GSP_INIT_DONE (0x1001)`, `unknown (0x1fff)`), so that messages
/// nvbare has no type for are still reported by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MessageFunction(pub u32);

impl MessageFunction {
    /// The name without its `NV_VGPU_MSG_FUNCTION_` / `NV_VGPU_MSG_EVENT_` prefix, or `None`
    /// for a number 570.144 does not define.
    pub fn name(self) -> Option<&'static str> {
        match RpcNumber::from_u32(self.0) {
            RpcNumber::Function(f) => Some(f.short_name()),
            RpcNumber::Event(e) => Some(e.short_name()),
            RpcNumber::Unknown(_) => None,
        }
    }
}

impl From<RpcFunction> for MessageFunction {
    fn from(f: RpcFunction) -> Self {
        Self(f.as_u32())
    }
}

impl From<RpcEvent> for MessageFunction {
    fn from(e: RpcEvent) -> Self {
        Self(e.as_u32())
    }
}

impl fmt::Display for MessageFunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) if self.0 >= RpcEvent::FIRST => write!(f, "{n} ({:#x})", self.0),
            Some(n) => write!(f, "{n} ({})", self.0),
            None => write!(f, "unknown ({:#x})", self.0),
        }
    }
}

/// An RPC's `rpc_result` or a reply's `status` field: an `NV_STATUS`, or one of the RPC-layer
/// codes of `rpc_headers.h`; prints as its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RpcResult(pub u32);

impl RpcResult {
    /// `NV_OK`.
    pub const OK: RpcResult = RpcResult(0);

    /// The `NV_*` name, or for the RPC-layer codes of `rpc_headers.h`
    /// (`NV_VGPU_MSG_RESULT_VMIOP_*`, `NV_VGPU_MSG_RESULT_RPC_*`) their names.
    pub fn name(self) -> Option<&'static str> {
        if let Some(n) = NvStatus(self.0).name() {
            return Some(n);
        }
        Some(match self.0 {
            0xFF00_0001 => "NV_VGPU_MSG_RESULT_VMIOP_INVAL",
            0xFF00_0002 => "NV_VGPU_MSG_RESULT_VMIOP_RESOURCE",
            0xFF00_0003 => "NV_VGPU_MSG_RESULT_VMIOP_RANGE",
            0xFF00_0004 => "NV_VGPU_MSG_RESULT_VMIOP_READ_ONLY",
            0xFF00_0005 => "NV_VGPU_MSG_RESULT_VMIOP_NOT_FOUND",
            0xFF00_0006 => "NV_VGPU_MSG_RESULT_VMIOP_NO_ADDRESS_SPACE",
            0xFF00_0007 => "NV_VGPU_MSG_RESULT_VMIOP_TIMEOUT",
            0xFF00_0008 => "NV_VGPU_MSG_RESULT_VMIOP_NOT_ALLOWED_IN_CALLBACK",
            0xFF00_0009 => "NV_VGPU_MSG_RESULT_VMIOP_ECC_MISMATCH",
            0xFF00_000A => "NV_VGPU_MSG_RESULT_VMIOP_NOT_SUPPORTED",
            0xFF10_0001 => "NV_VGPU_MSG_RESULT_RPC_UNKNOWN_FUNCTION",
            0xFF10_0002 => "NV_VGPU_MSG_RESULT_RPC_INVALID_MESSAGE_FORMAT",
            0xFF10_0003 => "NV_VGPU_MSG_RESULT_RPC_HANDLE_NOT_FOUND",
            0xFF10_0004 => "NV_VGPU_MSG_RESULT_RPC_HANDLE_EXISTS",
            0xFF10_0005 => "NV_VGPU_MSG_RESULT_RPC_UNKNOWN_RM_ERROR",
            0xFF10_0006 => "NV_VGPU_MSG_RESULT_RPC_UNKNOWN_VMIOP_ERROR",
            0xFF10_0007 => "NV_VGPU_MSG_RESULT_RPC_RESERVED_HANDLE",
            0xFF10_0008 => "NV_VGPU_MSG_RESULT_RPC_CUDA_PROFILING_DISABLED",
            0xFF10_0009 => "NV_VGPU_MSG_RESULT_RPC_API_CONTROL_NOT_SUPPORTED",
            0xFFFF_FFFF => "NV_VGPU_MSG_RESULT_RPC_PENDING",
            _ => return None,
        })
    }

    /// The `nvstatuscodes.h` description, where there is one.
    pub fn description(self) -> Option<&'static str> {
        NvStatus(self.0).text()
    }

    /// `true` for `NV_OK`.
    pub fn is_ok(self) -> bool {
        self.0 == 0
    }
}

impl fmt::Display for RpcResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => write!(f, "{n} ({:#x})", self.0),
            None => write!(f, "unknown NV_STATUS ({:#x})", self.0),
        }
    }
}

/// A request header as `rpcSendMessage` fills it: signature, header version 3.0, result and
/// private result `RPC_PENDING`, `length` = header + payload.
pub fn request_header(function: u32, payload_len: usize) -> RpcMessageHeader {
    RpcMessageHeader {
        header_version: RPC_HEADER_VERSION,
        signature: NV_VGPU_MSG_SIGNATURE_VALID,
        length: (RPC_HEADER_SIZE + payload_len) as u32,
        function,
        rpc_result: NV_VGPU_MSG_RESULT_RPC_PENDING,
        rpc_result_private: NV_VGPU_MSG_RESULT_RPC_PENDING,
        sequence: 0,
        spare: 0,
    }
}

/// A reply or event header as GSP-RM writes it: `rpc_result` and `rpc_result_private` set
/// to `result` (the simulator's side of [`request_header`]).
pub fn reply_header(function: u32, result: u32, payload_len: usize) -> RpcMessageHeader {
    RpcMessageHeader {
        rpc_result: result,
        rpc_result_private: result,
        ..request_header(function, payload_len)
    }
}

/// Why an RPC message (header + payload) was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RpcHeaderError {
    /// Fewer bytes than `rpc_message_header_v`.
    Truncated { len: usize },
    /// `signature` is not `NV_VGPU_MSG_SIGNATURE_VALID`.
    BadSignature { signature: u32 },
    /// `length` smaller than the header or larger than the bytes available.
    BadLength { length: u32, available: usize },
}

impl fmt::Display for RpcHeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated { len } => write!(f, "RPC message of {len} bytes has no full header"),
            Self::BadSignature { signature } => {
                write!(f, "RPC header signature {signature:#x} is not 'VRPC'")
            }
            Self::BadLength { length, available } => {
                write!(f, "RPC header length {length} outside 32..={available}")
            }
        }
    }
}

/// Splits an RPC message into its header and payload (`length - 32` bytes), checking the
/// signature and that `length` fits in `msg`.
pub fn split_message(msg: &[u8]) -> Result<(RpcMessageHeader, &[u8]), RpcHeaderError> {
    let (hdr, _) = RpcMessageHeader::read_from_prefix(msg)
        .map_err(|_| RpcHeaderError::Truncated { len: msg.len() })?;
    if hdr.signature != NV_VGPU_MSG_SIGNATURE_VALID {
        return Err(RpcHeaderError::BadSignature {
            signature: hdr.signature,
        });
    }
    let length = hdr.length as usize;
    if length < RPC_HEADER_SIZE || length > msg.len() {
        return Err(RpcHeaderError::BadLength {
            length: hdr.length,
            available: msg.len(),
        });
    }
    Ok((hdr, &msg[RPC_HEADER_SIZE..length]))
}

/// Header and payload bytes of a request, concatenated (what goes after the queue element
/// header).
pub fn encode_request(function: u32, payload: &[u8]) -> alloc::vec::Vec<u8> {
    let mut v = alloc::vec::Vec::with_capacity(RPC_HEADER_SIZE + payload.len());
    v.extend_from_slice(request_header(function, payload.len()).as_bytes());
    v.extend_from_slice(payload);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_functions_events_and_status() {
        assert_eq!(MessageFunction(103).name(), Some("GSP_RM_ALLOC"));
        assert_eq!(MessageFunction(71).name(), Some("CONTINUATION_RECORD"));
        assert_eq!(MessageFunction(0x101c).name(), Some("GSP_LOCKDOWN_NOTICE"));
        assert_eq!(MessageFunction(0x100c).name(), Some("UCODE_LIBOS_PRINT"));
        assert_eq!(MessageFunction(0x1fff).name(), None);
        assert_eq!(
            alloc::format!("{}", MessageFunction(0x1fff)),
            "unknown (0x1fff)"
        );
        assert_eq!(
            alloc::format!("{}", MessageFunction(76)),
            "GSP_RM_CONTROL (76)"
        );
        assert_eq!(
            alloc::format!("{}", MessageFunction(0x1001)),
            "GSP_INIT_DONE (0x1001)"
        );
        assert_eq!(RpcResult(0x65).name(), Some("NV_ERR_TIMEOUT"));
        assert_eq!(RpcResult(0).name(), Some("NV_OK"));
        assert_eq!(
            RpcResult(0xFF10_0001).name(),
            Some("NV_VGPU_MSG_RESULT_RPC_UNKNOWN_FUNCTION")
        );
        assert_eq!(
            alloc::format!("{}", RpcResult(0x1f)),
            "NV_ERR_INVALID_ARGUMENT (0x1f)"
        );
    }

    #[test]
    fn request_round_trips_through_split() {
        let m = encode_request(RpcFunction::SetRegistry.as_u32(), &[1, 2, 3]);
        assert_eq!(m.len(), 35);
        let (h, p) = split_message(&m).unwrap();
        assert_eq!((h.function, h.length, p), (73, 35, &[1u8, 2, 3][..]));
        assert_eq!(h.header_version, 3 << 24);
        let mut bad = m.clone();
        bad[8] = 200;
        assert_eq!(
            split_message(&bad),
            Err(RpcHeaderError::BadLength {
                length: 200,
                available: 35
            })
        );
    }
}
