//! nvbare-test-kernels: the committed cubins of the test kernels
//! (`core/tests/data/cubin/kernels.cu`: `empty_kernel`, `vector_add`, `store_value`, ...), one
//! per SM version nvbare drives, and the one table of which goes with which SM.
//!
//! The host's demo and benchmark, the test suites, the simulator's tests and the bare-metal
//! example (`examples/embed`) all pick their cubin here. It is its own crate because the
//! bare-metal example cannot depend on the host crate, and the driver crates (`nvbare-core`)
//! should not carry test data: this one is `no_std`, depends on nothing and holds only the
//! bytes and the table.
//!
//! The files stay where `core/tests/data/cubin/build.sh` writes them (beside their source and
//! their `cuobjdump` notes, which core's cubin tests read); [`TestKernels::path`] names each.
//!
//! Size: a program that calls [`for_sm`] at run time (with the SM of the GPU it found) links
//! every cubin in the table, about 147 KiB in all; one that calls it in a `const` with a fixed
//! SM links only that one.
#![no_std]
#![forbid(unsafe_code)]

/// One committed cubin of the test kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TestKernels {
    /// The SM version it is built for, as nvcc numbers it (90 for `sm_90`; what
    /// `Gpu::sm()` returns).
    pub sm: u32,
    /// Its path from the repository root (`core/tests/data/cubin/kernels.sm_90.cubin`), for
    /// messages and for programs that pass the file by name.
    pub path: &'static str,
    /// The file's bytes.
    pub cubin: &'static [u8],
}

/// The entry for `kernels.sm_<sm>.cubin`: its path and bytes from one literal, so they cannot
/// disagree.
macro_rules! committed {
    ($sm:literal) => {
        TestKernels {
            sm: $sm,
            path: concat!("core/tests/data/cubin/kernels.sm_", $sm, ".cubin"),
            cubin: include_bytes!(concat!(
                "../../core/tests/data/cubin/kernels.sm_",
                $sm,
                ".cubin"
            )),
        }
    };
}

/// Every committed cubin of the test kernels, by SM version: Turing TU10x (75), Ampere GA100
/// (80) and GA10x (86), Ada AD10x (89), Hopper GH100 (90), Blackwell GB10x (100) and GB20x
/// (120). `core/tests/data/cubin/build.sh` builds the same list.
pub static ALL: [TestKernels; 7] = [
    committed!(75),
    committed!(80),
    committed!(86),
    committed!(89),
    committed!(90),
    committed!(100),
    committed!(120),
];

/// The test kernels for a GPU of SM version `sm` (75, 80, 86, 89, 90, 100 or 120), if
/// committed. A `const fn`, so that a program wanting one SM's cubin can name it in a `const`
/// (`for_sm(90).expect(..)`, checked at compile time) and link only that one.
pub const fn for_sm(sm: u32) -> Option<&'static TestKernels> {
    let mut rest: &'static [TestKernels] = &ALL;
    while let [k, tail @ ..] = rest {
        if k.sm == sm {
            return Some(k);
        }
        rest = tail;
    }
    None
}

#[cfg(test)]
mod tests;
