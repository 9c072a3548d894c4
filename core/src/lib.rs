//! nvbare-core: the hardware-independent heart of the driver.
//!
//! Everything here is `no_std` + `alloc`. The core reaches hardware only through the
//! narrow traits in [`hal`]; everything else is plain data logic over byte buffers.
#![no_std]
#![forbid(unsafe_op_in_unsafe_fn)]

extern crate alloc;

pub mod boot;
pub mod chip;
pub mod compute;
pub mod copy;
pub mod cubin;
pub mod falcon;
pub mod fault_names;
pub mod gpfifo;
pub mod gpu;
pub mod gsp_rm;
pub mod gsp_rpc;
pub mod hal;
pub mod launch;
pub mod mirror;
pub mod push;
pub mod qmd;
pub mod regs;
pub mod ring;
pub mod rm;
pub mod sem;
pub mod shared;
