//! status
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NvStatus(pub u32);
