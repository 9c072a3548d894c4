//! nvbare-sim: a simulated GPU behind the core's hardware traits (not yet built).

pub mod decode;
