//! nvbare-tests: end-to-end scenarios across crates.
