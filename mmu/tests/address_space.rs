//! AddressSpace behaviour: page-size choice and mixing, every aperture through the walker,
//! typed errors for bad input, all-or-nothing maps when table memory runs out, one TLB
//! invalidation per operation.

use nvbare_mmu::walk::walk;
use nvbare_mmu::{
    AddressSpace, Aperture, CountingTlb, MmuError, MmuVersion, PageSize, PageSizes, PhysAllocator,
    PhysRange, Pte, PteAttributes, TableAllocator, TableAperture, VecMemory,
};
use proptest::prelude::*;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
const TABLES: u64 = 8 * MIB;

type Space<A> = AddressSpace<VecMemory, A, CountingTlb>;

fn space(version: MmuVersion) -> Space<PhysAllocator> {
    let memory = VecMemory::new(TableAperture::Video, 0, TABLES);
    let alloc = PhysAllocator::new(0, TABLES).unwrap();
    AddressSpace::new(
        version,
        TableAperture::Video,
        memory,
        alloc,
        CountingTlb::default(),
    )
    .unwrap()
}

const VERSIONS: [MmuVersion; 2] = [MmuVersion::Ver2, MmuVersion::Ver3];

#[test]
fn one_call_mixes_all_four_page_sizes() {
    for v in VERSIONS {
        let mut s = space(v);
        // VA 512 MiB aligned; physical ranges chosen so each size gets its turn:
        // 512 MiB, then 2 MiB, then 64 KiB, then 4 KiB pages.
        let va = 0x40_0000_0000;
        let ranges = [
            PhysRange::new(GIB, 512 * MIB),
            PhysRange::new(4 * GIB, 4 * MIB),
            PhysRange::new(5 * GIB, 128 * KIB),
            PhysRange::new(6 * GIB + 4 * KIB, 8 * KIB),
        ];
        let stats = s.map(va, &ranges, PteAttributes::default()).unwrap();
        assert_eq!(
            stats.pages_by_size,
            [2, 2, 2, 1],
            "{v:?}: [4K, 64K, 2M, 512M]"
        );
        assert_eq!(s.tlb().calls, 1, "one invalidation for the whole call");
        let probes = [
            (va + 0x1234_5678, GIB + 0x1234_5678, PageSize::Size512M),
            (
                va + 512 * MIB + 3 * MIB,
                4 * GIB + 3 * MIB,
                PageSize::Size2M,
            ),
            (
                va + 516 * MIB + 65 * KIB,
                5 * GIB + 65 * KIB,
                PageSize::Size64K,
            ),
            (
                va + 516 * MIB + 128 * KIB + 4 * KIB + 5,
                6 * GIB + 8 * KIB + 5,
                PageSize::Size4K,
            ),
        ];
        for (pva, pa, size) in probes {
            let t = walk(s.format(), s.memory(), s.root(), pva)
                .unwrap()
                .unwrap();
            assert_eq!((t.pa, t.page_size), (pa, size), "{v:?} walk {pva:#x}");
            assert_eq!(s.translate(pva).unwrap(), Some(t));
        }
        assert_eq!(
            s.translate(va + 516 * MIB + 128 * KIB + 12 * KIB).unwrap(),
            None
        );
        s.unmap(va, 512 * MIB + 4 * MIB + 128 * KIB + 8 * KIB)
            .unwrap();
        assert_eq!(s.table_count(), 1);
        // Destroying hands every table, root included, back.
        s.map(va, &ranges, PteAttributes::default()).unwrap();
        let (_, alloc, _) = s.destroy().unwrap();
        assert_eq!(alloc.free_bytes(), TABLES);
    }
}

#[test]
fn every_aperture_and_attribute_reaches_the_walker() {
    for v in VERSIONS {
        let mut s = space(v);
        let cases = [
            PteAttributes::new(Aperture::Video),
            PteAttributes::new(Aperture::Peer(5)),
            PteAttributes::new(Aperture::SystemCoherent).uncached(),
            PteAttributes {
                read_only: true,
                privileged: true,
                atomics: false,
                ..PteAttributes::new(Aperture::SystemNonCoherent)
            },
            PteAttributes {
                kind: 0,
                ..PteAttributes::new(Aperture::Video)
            },
        ];
        for (i, attrs) in cases.into_iter().enumerate() {
            let va = 0x100_0000 + i as u64 * 2 * MIB;
            let pa = 0x3_0000_0000 + i as u64 * 0x1000;
            s.map(va, &[PhysRange::new(pa, 4 * KIB)], attrs).unwrap();
            let t = walk(s.format(), s.memory(), s.root(), va + 8)
                .unwrap()
                .unwrap();
            assert_eq!(
                (t.pa, t.aperture, t.kind),
                (pa + 8, attrs.aperture, attrs.kind),
                "{v:?} {attrs:?}"
            );
            assert_eq!(
                Pte::decode(s.format(), t.pte),
                Some(Pte { addr: pa, attrs }),
                "{v:?} attributes round trip"
            );
        }
    }
}

#[test]
fn bad_input_gets_typed_errors_and_changes_nothing() {
    for v in VERSIONS {
        let mut s = space(v);
        s.map(
            0x20_0000,
            &[PhysRange::new(0x20_0000, 2 * MIB)],
            PteAttributes::default(),
        )
        .unwrap();
        let before = s.memory().clone();
        let d = PteAttributes::default();
        let limit = s.format().va_limit();
        let cases: Vec<(u64, Vec<PhysRange>, PteAttributes, MmuError)> = vec![
            (
                0x123,
                vec![PhysRange::new(0, 4096)],
                d,
                MmuError::Misaligned {
                    what: "virtual address",
                    value: 0x123,
                    align: 4096,
                },
            ),
            (
                0,
                vec![PhysRange::new(0x10, 4096)],
                d,
                MmuError::Misaligned {
                    what: "physical address",
                    value: 0x10,
                    align: 4096,
                },
            ),
            (
                0,
                vec![PhysRange::new(0, 100)],
                d,
                MmuError::Misaligned {
                    what: "physical range size",
                    value: 100,
                    align: 4096,
                },
            ),
            (
                0,
                vec![PhysRange::new(0, 0)],
                d,
                MmuError::ZeroSize {
                    what: "physical range size",
                },
            ),
            (
                0,
                vec![],
                d,
                MmuError::ZeroSize {
                    what: "physical ranges",
                },
            ),
            (
                limit - 4096,
                vec![PhysRange::new(0, 8192)],
                d,
                MmuError::VaOutOfRange {
                    va: limit - 4096,
                    size: 8192,
                    limit,
                },
            ),
            (
                0x40_0000,
                vec![PhysRange::new(0, 4096)],
                PteAttributes { kind: 0x10, ..d },
                MmuError::KindOutOfRange {
                    kind: 0x10,
                    max: if v == MmuVersion::Ver3 { 0xf } else { 0xff },
                },
            ),
            (
                0x40_0000,
                vec![PhysRange::new(0, 4096)],
                PteAttributes::new(Aperture::Peer(8)),
                MmuError::PeerIdOutOfRange { id: 8 },
            ),
            (
                0x30_0000,
                vec![PhysRange::new(0x900_0000, 4096)],
                d,
                MmuError::AlreadyMapped { va: 0x30_0000 },
            ),
        ];
        for (va, ranges, attrs, want) in cases {
            if v == MmuVersion::Ver2 && matches!(want, MmuError::KindOutOfRange { .. }) {
                continue; // ver2 kinds are 8 bits: 0x10 is valid there
            }
            assert_eq!(s.map(va, &ranges, attrs), Err(want), "{v:?}");
            assert_eq!(s.memory(), &before, "{v:?}: {want} changed the tables");
        }
        // Video addresses beyond the field: ver3 40 bits, ver2 37 bits.
        let too_far = if v == MmuVersion::Ver3 {
            1 << 40
        } else {
            1 << 37
        };
        assert!(matches!(
            s.map(0x40_0000, &[PhysRange::new(too_far, 4096)], d),
            Err(MmuError::AddressTooLarge { .. })
        ));
        // The range is validated to its last page before anything is written.
        assert!(matches!(
            s.map(0x40_0000, &[PhysRange::new(too_far - 4096, 8192)], d),
            Err(MmuError::AddressTooLarge { .. })
        ));
        assert_eq!(s.memory(), &before);
        // Unmap errors.
        assert_eq!(
            s.unmap(0x60_0000, 4096),
            Err(MmuError::NotMapped { va: 0x60_0000 })
        );
        assert_eq!(
            s.unmap(0x20_0000, 4096),
            Err(MmuError::PartialPage {
                page_va: 0x20_0000,
                page_size: 2 * MIB
            })
        );
        assert_eq!(
            s.unmap(0x30_0000, MIB),
            Err(MmuError::PartialPage {
                page_va: 0x20_0000,
                page_size: 2 * MIB
            })
        );
        assert_eq!(
            s.unmap(0x20_0000, 4 * MIB),
            Err(MmuError::NotMapped { va: 0x40_0000 })
        );
        assert_eq!(s.memory(), &before);
        let msg = s.unmap(0x20_0000, 4096).unwrap_err().to_string();
        assert!(
            msg.contains("cuts the") && msg.contains("unmap whole pages"),
            "{msg}"
        );
    }
}

#[test]
fn small_and_big_pages_share_a_2mib_region_without_overlap() {
    for v in VERSIONS {
        let mut s = space(v);
        s.map(
            0x20_0000,
            &[PhysRange::new(0x100_0000, 64 * KIB)],
            PteAttributes::default(),
        )
        .unwrap();
        s.map(
            0x21_0000,
            &[PhysRange::new(0x200_1000, 4 * KIB)],
            PteAttributes::default(),
        )
        .unwrap();
        // 4 KiB inside the 64 KiB page, and 64 KiB over the 4 KiB page, are overlaps.
        assert_eq!(
            s.map(
                0x20_8000,
                &[PhysRange::new(0x300_0000, 4 * KIB)],
                PteAttributes::default()
            ),
            Err(MmuError::AlreadyMapped { va: 0x20_8000 })
        );
        assert_eq!(
            s.map(
                0x21_0000,
                &[PhysRange::new(0x400_0000, 64 * KIB)],
                PteAttributes::default()
            ),
            Err(MmuError::AlreadyMapped { va: 0x21_0000 })
        );
        // A 2 MiB page over either is an overlap too.
        assert_eq!(
            s.map(
                0x20_0000,
                &[PhysRange::new(0x600_0000, 2 * MIB)],
                PteAttributes::default()
            ),
            Err(MmuError::AlreadyMapped { va: 0x20_0000 })
        );
        let w = |va| {
            walk(s.format(), s.memory(), s.root(), va)
                .unwrap()
                .map(|t| (t.pa, t.page_size))
        };
        assert_eq!(w(0x20_fff0), Some((0x100_fff0, PageSize::Size64K)));
        assert_eq!(w(0x21_0010), Some((0x200_1010, PageSize::Size4K)));
        assert_eq!(w(0x21_1000), None);
        assert_eq!(s.table_count(), if v == MmuVersion::Ver3 { 7 } else { 6 });
    }
}

/// Hands out at most `budget` tables.
struct Budget {
    inner: PhysAllocator,
    budget: usize,
}

impl TableAllocator for Budget {
    fn alloc_table(&mut self, bytes: u64) -> Result<u64, MmuError> {
        if self.budget == 0 {
            return Err(MmuError::OutOfMemory {
                allocator: "physical",
                requested: bytes,
                align: 4096,
                free: 0,
            });
        }
        self.budget -= 1;
        self.inner.alloc(bytes, 4096)
    }
    fn free_table(&mut self, addr: u64, bytes: u64) -> Result<(), MmuError> {
        self.budget += 1;
        self.inner.free(addr, bytes)
    }
}

proptest! {
    /// Running out of table memory part-way through a map leaves everything as it was.
    #[test]
    fn map_is_all_or_nothing_when_tables_run_out(ver3 in any::<bool>(), budget in 1usize..40, pages in 1u64..3000, va_page in 0u64..4096, extra in 0usize..3) {
        let version = if ver3 { MmuVersion::Ver3 } else { MmuVersion::Ver2 };
        let memory = VecMemory::new(TableAperture::Video, 0, TABLES);
        let alloc = Budget { inner: PhysAllocator::new(0, TABLES).unwrap(), budget };
        let mut s = AddressSpace::new(version, TableAperture::Video, memory, alloc, CountingTlb::default()).unwrap()
            .with_page_sizes(PageSizes::SMALL_ONLY);
        // Something already mapped, which must survive.
        let _ = s.map(0x7f_0000_0000, &[PhysRange::new(0x5000, 4096 * (extra as u64 + 1))], PteAttributes::default());
        let before = (s.memory().clone(), s.table_count(), s.allocator().budget);
        let va = 0x1_0000_0000 + va_page * 4096;
        match s.map(va, &[PhysRange::new(0x100_0000, pages * 4096)], PteAttributes::default()) {
            Ok(stats) => prop_assert_eq!(stats.ptes_written, pages),
            Err(e) => {
                prop_assert!(matches!(e, MmuError::OutOfMemory { .. }), "{e}");
                prop_assert_eq!(s.memory(), &before.0, "tables changed by a failed map");
                prop_assert_eq!((s.table_count(), s.allocator().budget), (before.1, before.2));
            }
        }
    }
}

#[test]
fn tables_in_system_memory_are_walked_there() {
    for v in VERSIONS {
        let base = 0x8_0000_0000; // a bus address
        let memory = VecMemory::new(TableAperture::SystemNonCoherent, base, MIB);
        let alloc = PhysAllocator::new(base, MIB).unwrap();
        let mut s = AddressSpace::new(
            v,
            TableAperture::SystemNonCoherent,
            memory,
            alloc,
            CountingTlb::default(),
        )
        .unwrap();
        s.map(
            0x1000,
            &[PhysRange::new(0x7000, 4096)],
            PteAttributes::default(),
        )
        .unwrap();
        s.map(
            0x40_0000,
            &[PhysRange::new(0x100_0000, 64 * KIB)],
            PteAttributes::default(),
        )
        .unwrap();
        assert_eq!(s.root().aperture, TableAperture::SystemNonCoherent);
        let w = |va| {
            walk(s.format(), s.memory(), s.root(), va)
                .unwrap()
                .map(|t| (t.pa, t.pte_at.aperture))
        };
        assert_eq!(w(0x1008), Some((0x7008, TableAperture::SystemNonCoherent)));
        assert_eq!(
            w(0x40_0008),
            Some((0x100_0008, TableAperture::SystemNonCoherent))
        );
    }
}

#[test]
fn tables_outside_the_memory_window_fail_cleanly() {
    for v in VERSIONS {
        // The allocator hands out 8 MiB but only 16 KiB are reachable: the fifth table
        // lands outside the window.
        let memory = VecMemory::new(TableAperture::Video, 0, 16 * KIB);
        let alloc = PhysAllocator::new(0, TABLES).unwrap();
        let mut s = AddressSpace::new(
            v,
            TableAperture::Video,
            memory,
            alloc,
            CountingTlb::default(),
        )
        .unwrap();
        let before = (
            s.memory().clone(),
            s.table_count(),
            s.allocator().free_bytes(),
        );
        let err = s
            .map(
                0x1000,
                &[PhysRange::new(0x7000, 4096)],
                PteAttributes::default(),
            )
            .unwrap_err();
        assert!(matches!(err, MmuError::Access(_)), "{v:?}: {err}");
        assert!(
            err.to_string().contains("outside the memory window"),
            "{err}"
        );
        assert_eq!(
            (
                s.memory().clone(),
                s.table_count(),
                s.allocator().free_bytes()
            ),
            before
        );
    }
}

#[test]
fn pinned_directories_outlive_the_mappings_under_them() {
    for v in VERSIONS {
        let mut s = space(v);
        let va = 0x7100_0000_0000;
        let tables = s.pin_directories(va, 3).unwrap();
        assert_eq!(tables.len(), 3);
        assert_eq!(tables[0].1, s.root(), "{v:?}: the root first");
        let names: Vec<_> = tables.iter().map(|(l, _)| l.name).collect();
        let want = match v {
            MmuVersion::Ver2 => ["PD3", "PD2", "PD1"],
            MmuVersion::Ver3 => ["PD4", "PD3", "PD2"],
        };
        assert_eq!(names, want);
        assert_eq!(s.table_count(), 3);
        // A page mapped and unmapped below leaves the pinned tables where they were.
        s.map(
            va,
            &[PhysRange::new(GIB, 4 * KIB)],
            PteAttributes::default(),
        )
        .unwrap();
        assert!(s.table_count() > 3);
        s.unmap(va, 4 * KIB).unwrap();
        assert_eq!(s.table_count(), 3, "{v:?}: only the unpinned tables went");
        // Pinning again finds the same tables.
        assert_eq!(s.pin_directories(va, 3).unwrap(), tables);
        let max = s.format().pd0_index();
        assert_eq!(max, if v == MmuVersion::Ver3 { 4 } else { 3 });
        assert_eq!(
            s.pin_directories(va, 0),
            Err(MmuError::NoSuchLevels { levels: 0, max })
        );
        assert!(
            s.pin_directories(va, max + 1).is_err(),
            "PD0 holds dual PDEs"
        );
    }
}

/// `set_page_sizes` limits the mappings made after it, per call: the same aligned 2 MiB
/// maps as 512 4 KiB PTEs, then 32 of 64 KiB, then one 2 MiB PTE (how nvk's own-page-tables
/// mode proves each size on the H200).
#[test]
fn set_page_sizes_limits_later_maps_only() {
    for v in VERSIONS {
        let mut s = space(v);
        let attrs = PteAttributes::default();
        let cases = [
            (PageSizes::SMALL_ONLY, [512, 0, 0, 0]),
            (PageSizes::UP_TO_64K, [0, 32, 0, 0]),
            (PageSizes::ALL, [0, 0, 1, 0]),
        ];
        for (i, (sizes, want)) in cases.into_iter().enumerate() {
            s.set_page_sizes(sizes);
            let va = 0x10_0000_0000 + i as u64 * 2 * MIB;
            let stats = s
                .map(
                    va,
                    &[PhysRange::new(0x4000_0000 + i as u64 * 2 * MIB, 2 * MIB)],
                    attrs,
                )
                .unwrap();
            assert_eq!(stats.pages_by_size, want, "{v:?} {sizes:?}");
        }
    }
}
