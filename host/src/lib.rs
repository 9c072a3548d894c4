//! nvbare-host: the std side of nvbare: platform backends and the command line.

pub mod pci;
pub mod nvk;
