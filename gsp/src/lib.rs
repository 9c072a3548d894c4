//! nvbare-gsp: the GSP-RM 570.144 ABI and the RM API, as plain data.
//!
//! `no_std` + `alloc`; depends on nothing else of ours.
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;
pub mod abi;
pub mod firmware;

pub mod boot;
pub mod fsp;
pub mod libos;
pub mod msgq;
pub mod registry;
pub mod rm;
pub mod rpc;
pub mod sequencer;
pub mod vbios;

/// The bytes of a fixed-size C string buffer before its first NUL (all of them if there is
/// none). The one helper for every NUL-terminated string GSP-RM or a firmware file hands us.
pub(crate) fn until_nul(buf: &[u8]) -> &[u8] {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    &buf[..end]
}
