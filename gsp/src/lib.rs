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
