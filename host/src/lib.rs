//! nvbare-host: the std side of nvbare: platform backends and the command line.

pub mod bench;
pub mod cli;
pub mod clock;
pub mod nvk;
pub mod pci;
pub mod study;
