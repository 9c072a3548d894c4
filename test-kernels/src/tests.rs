//! The table against the driver: every architecture it knows has test kernels, and every
//! cubin is for the SM its entry names and has the kernels its users load.

extern crate std;

use std::format;
use std::vec::Vec;

use nvbare_core::chip::Arch;
use nvbare_core::cubin::Cubin;
use nvbare_core::launch::{Cbuf0Slots, LaunchLimits};

use super::{ALL, for_sm};

/// The SM version an nvcc cubin's ELF header names: `e_flags` (ELF64 offset 48, as
/// `nvbare_core::cubin::elf::Elf::parse` reads it) holds it in bits 23:16 since CUDA 12.8
/// and in bits 15:8 before (then 23:16 are 0), as `Cubin::parse` decodes it.
fn elf_header_sm(cubin: &[u8]) -> u32 {
    assert_eq!(&cubin[..4], b"\x7fELF");
    let flags = u32::from_le_bytes([cubin[48], cubin[49], cubin[50], cubin[51]]);
    match (flags >> 16) & 0xff {
        0 => (flags >> 8) & 0xff,
        sm => sm,
    }
}

#[test]
fn each_cubin_names_its_sm_in_its_elf_header() {
    for k in &ALL {
        assert_eq!(elf_header_sm(k.cubin), k.sm, "{}: e_flags", k.path);
        let parsed = Cubin::parse(k.cubin).unwrap_or_else(|e| panic!("{}: {e:?}", k.path));
        assert_eq!(parsed.sm, k.sm, "{}: the driver's parser", k.path);
        assert!(
            k.path.ends_with(&format!("/kernels.sm_{}.cubin", k.sm)),
            "{}",
            k.path
        );
    }
}

#[test]
fn each_cubin_has_the_kernels_its_users_load() {
    for k in &ALL {
        let parsed = Cubin::parse(k.cubin).unwrap_or_else(|e| panic!("{}: {e:?}", k.path));
        // The demo and examples load vector_add, the benchmark's launch figures empty_kernel,
        // the recorded-sequence replay store_value.
        for name in ["empty_kernel", "vector_add", "store_value"] {
            assert!(parsed.kernel(name).is_ok(), "{}: no {name}", k.path);
        }
    }
}

#[test]
fn every_architecture_the_driver_knows_has_test_kernels_it_can_launch() {
    for arch in Arch::ALL {
        assert!(
            ALL.iter()
                .any(|k| Arch::from_sm_version(k.sm) == Some(arch)),
            "no test kernels for {arch:?}"
        );
    }
    for k in &ALL {
        assert!(Arch::from_sm_version(k.sm).is_some(), "sm_{}", k.sm);
        assert!(LaunchLimits::for_sm(k.sm).is_some(), "sm_{}", k.sm);
        assert!(Cbuf0Slots::for_sm(k.sm).is_some(), "sm_{}", k.sm);
    }
}

#[test]
fn for_sm_finds_each_entry_and_nothing_else() {
    let sms: Vec<u32> = ALL.iter().map(|k| k.sm).collect();
    assert_eq!(sms, [75, 80, 86, 89, 90, 100, 120]);
    for k in &ALL {
        assert_eq!(for_sm(k.sm), Some(k));
    }
    for sm in [0, 70, 87, 103, 121] {
        assert_eq!(for_sm(sm), None, "sm_{sm}");
    }
}
