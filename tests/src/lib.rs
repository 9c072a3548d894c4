//! nvbare-tests: end-to-end scenarios across crates.
pub mod layout;
pub mod test_backend;
