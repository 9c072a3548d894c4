//! nvbare-host: the std side of nvbare: platform backends and the command line.

pub mod bench;
pub mod ce_study;
pub mod cli;
pub mod clock;
pub mod lock;
pub mod nvk;
pub mod pci;
pub mod pipeline;
pub mod remote;
pub mod replay;
pub mod setup;
pub mod study;
pub mod vbios;
pub mod vfio;
