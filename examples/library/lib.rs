//! nvbare used from a Rust program. The crate is its two examples (`cargo run --release -p
//! nvbare-examples --example vector_add -- --backend sim`, and `--example
//! recorded_sequence`); README.md, "Using nvbare from Rust", walks through them.
