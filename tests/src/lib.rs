//! nvbare-tests: end-to-end scenarios across crates.
pub mod gsp_suite;
pub mod layout;
pub mod test_backend;
