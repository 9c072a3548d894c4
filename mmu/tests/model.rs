//! Property tests: random map/unmap sequences against a reference model (a `BTreeMap` of
//! pages). After every operation `translate` and the independent walker agree with the model,
//! a failed operation leaves table memory and the allocator byte-for-byte as they were, every
//! table reachable in memory is counted (no leaks) and non-empty (empty tables are freed).
//!
//! Cases: `PROPTEST_CASES` (default 64) sequences of up to 24 operations.

use std::collections::{BTreeMap, BTreeSet};

use nvbare_mmu::walk::walk;
use nvbare_mmu::{
    AddressSpace, Aperture, CountingTlb, DualPde, Format, LevelKind, MmuError, MmuVersion,
    PageSize, PageSizes, Pde, PhysAllocator, PhysRange, PteAttributes, TableAddr, TableAperture,
    TableMemory, VecMemory,
};
use proptest::prelude::*;

const KIB4: u64 = 1 << 12;
const ALIGNS: [u64; 4] = [1 << 12, 1 << 16, 1 << 21, 1 << 29];
const WINDOW: u64 = 8 << 29; // 4 GiB of VA where the operations land
const TABLE_MEMORY: u64 = 4 << 20;

type Space = AddressSpace<VecMemory, PhysAllocator, CountingTlb>;

#[derive(Clone, Debug)]
struct RangeSpec {
    pa_align: usize,
    pa_unit: u64,
    units: u64,
    size_align: usize,
    extra_pages: u64,
}

#[derive(Clone, Debug)]
enum Op {
    Map {
        va_align: usize,
        va_unit: u64,
        ranges: Vec<RangeSpec>,
        system: bool,
        uncached: bool,
    },
    /// Unmap from model page `first` (plus `skip` 4 KiB) through `count` pages further.
    Unmap {
        first: usize,
        count: usize,
        skip: u64,
        trim: u64,
    },
    /// Unmap a random range: usually an error (nothing or part of a page there).
    UnmapRandom { va_unit: u64, pages: u64 },
}

fn op() -> impl Strategy<Value = Op> {
    let range = (0usize..4, any::<u64>(), 1u64..4, 0usize..4, 0u64..4).prop_map(
        |(pa_align, pa_unit, units, size_align, extra_pages)| RangeSpec {
            pa_align,
            pa_unit,
            units,
            size_align,
            extra_pages,
        },
    );
    prop_oneof![
        5 => (0usize..4, any::<u64>(), prop::collection::vec(range, 1..4), any::<bool>(), any::<bool>())
            .prop_map(|(va_align, va_unit, ranges, system, uncached)| Op::Map { va_align, va_unit, ranges, system, uncached }),
        3 => (any::<usize>(), 0usize..4, 0u64..3, 0u64..3).prop_map(|(first, count, skip, trim)| Op::Unmap { first, count, skip, trim }),
        1 => (any::<u64>(), 1u64..40).prop_map(|(va_unit, pages)| Op::UnmapRandom { va_unit, pages }),
    ]
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Page {
    pa: u64,
    size: PageSize,
    attrs: PteAttributes,
}

/// The specification: pages by virtual address.
struct Model {
    pages: BTreeMap<u64, Page>,
    sizes: PageSizes,
}

impl Model {
    fn page_at(&self, va: u64) -> Option<(u64, Page)> {
        let (&start, &p) = self.pages.range(..=va).next_back()?;
        (va < start + p.size.bytes()).then_some((start, p))
    }

    fn overlaps(&self, va: u64, size: u64) -> Option<u64> {
        let (&start, p) = self.pages.range(..va + size).next_back()?;
        (start + p.size.bytes() > va).then_some(start.max(va))
    }

    /// The pages `map` must produce: largest enabled size that alignment and length allow.
    fn decompose(
        &self,
        mut va: u64,
        ranges: &[PhysRange],
        attrs: PteAttributes,
    ) -> Vec<(u64, Page)> {
        let mut out = Vec::new();
        for r in ranges {
            let (mut pa, end) = (r.addr, r.addr + r.size);
            while pa < end {
                let size = PageSize::ALL_DESCENDING
                    .into_iter()
                    .find(|s| {
                        self.sizes.contains(*s)
                            && (va | pa).is_multiple_of(s.bytes())
                            && end - pa >= s.bytes()
                    })
                    .unwrap();
                out.push((va, Page { pa, size, attrs }));
                va += size.bytes();
                pa += size.bytes();
            }
        }
        out
    }

    /// The result `unmap(va, size)` must give.
    fn unmap_result(&self, va: u64, size: u64) -> Result<(), MmuError> {
        let end = va + size;
        let mut cursor = va;
        while cursor < end {
            let Some((start, p)) = self.page_at(cursor) else {
                return Err(MmuError::NotMapped { va: cursor });
            };
            if start != cursor || start + p.size.bytes() > end {
                return Err(MmuError::PartialPage {
                    page_va: start,
                    page_size: p.size.bytes(),
                });
            }
            cursor += p.size.bytes();
        }
        Ok(())
    }
}

/// Tables reachable from the root in raw memory; asserts every non-root table holds an entry.
fn reachable_tables(space: &Space) -> usize {
    let format = space.format();
    let mem = space.memory();
    let mut seen = BTreeSet::new();
    let mut stack = vec![(space.root(), 0usize)];
    while let Some((table, depth)) = stack.pop() {
        assert!(
            seen.insert(table.addr),
            "table {:#x} reached twice",
            table.addr
        );
        let (entries, entry_bytes, kind) = if depth < format.directories.len() {
            let l = format.directories[depth];
            (l.entries(), l.entry_bytes, Some(l.kind))
        } else {
            (512, 8, None)
        };
        let mut live = 0;
        for i in 0..entries {
            let at = table.offset(i * entry_bytes);
            let lo = mem.read_u64(at).unwrap();
            match kind {
                Some(LevelKind::DualDirectory) => {
                    let hi = mem.read_u64(at.offset(8)).unwrap();
                    let raw = u128::from(lo) | u128::from(hi) << 64;
                    if lo & 1 == 1 {
                        live += 1;
                        continue;
                    }
                    let d = DualPde::decode(format, raw);
                    for t in [d.big, d.small].into_iter().flatten() {
                        live += 1;
                        stack.push((t, depth + 1));
                    }
                }
                Some(LevelKind::Directory { .. }) => {
                    if lo & 1 == 1 {
                        live += 1;
                    } else if let Some(p) = Pde::decode(format, lo) {
                        live += 1;
                        stack.push((p.table, depth + 1));
                    }
                }
                _ => live += u64::from(lo & 1 == 1) as usize,
            }
        }
        assert!(
            depth == 0 || live > 0,
            "empty table {:#x} at depth {depth} was not freed",
            table.addr
        );
    }
    seen.len()
}

fn kind(e: &MmuError) -> &'static str {
    match e {
        MmuError::AlreadyMapped { .. } => "AlreadyMapped",
        MmuError::VaOutOfRange { .. } => "VaOutOfRange",
        MmuError::NotMapped { .. } => "NotMapped",
        MmuError::PartialPage { .. } => "PartialPage",
        _ => "other",
    }
}

fn check_agrees(space: &Space, model: &Model, samples: &[u64]) {
    let format = space.format();
    for &va in samples {
        let expected = model
            .page_at(va)
            .map(|(start, p)| (p.pa + (va - start), p.size, p.attrs.aperture));
        let translated = space
            .translate(va)
            .unwrap()
            .map(|t| (t.pa, t.page_size, t.aperture));
        let walked = walk(format, space.memory(), space.root(), va)
            .unwrap()
            .map(|t| (t.pa, t.page_size, t.aperture));
        assert_eq!(translated, expected, "translate({va:#x})");
        assert_eq!(walked, expected, "walk({va:#x})");
    }
}

fn run(version: MmuVersion, sizes: PageSizes, window_sel: u8, ops: Vec<Op>, sample_seed: u64) {
    let format = Format::of(version);
    let window = match window_sel {
        0 => 0,
        1 => (1 << 39) - WINDOW / 2, // straddles a PD2 entry boundary (512 GiB)
        _ => format.va_limit() - WINDOW,
    };
    let memory = VecMemory::new(TableAperture::Video, 0, TABLE_MEMORY);
    let alloc = PhysAllocator::new(0, TABLE_MEMORY).unwrap();
    let mut space: Space = AddressSpace::new(
        version,
        TableAperture::Video,
        memory,
        alloc,
        CountingTlb::default(),
    )
    .unwrap()
    .with_page_sizes(sizes);
    let mut model = Model {
        pages: BTreeMap::new(),
        sizes,
    };
    let mut rng = sample_seed | 1;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for op in ops {
        let words_before = space.memory().words().to_vec();
        let free_before = space.allocator().free_bytes();
        let calls_before = space.tlb().calls;
        let mut touched: Vec<u64> = Vec::new();
        let (result, expected) = match op {
            Op::Map {
                va_align,
                va_unit,
                ranges,
                system,
                uncached,
            } => {
                let align = ALIGNS[va_align];
                let va = window + (va_unit % (WINDOW / align)) * align;
                let mut phys = Vec::new();
                for (i, r) in ranges.iter().enumerate() {
                    let pa_align = ALIGNS[r.pa_align];
                    // 512 MiB-sized ranges only first and only fully aligned, to bound 4 KiB page counts.
                    let size_align =
                        if r.size_align == 3 && !(i == 0 && va_align == 3 && r.pa_align == 3) {
                            2
                        } else {
                            r.size_align
                        };
                    let units = if size_align == 3 { 1 } else { r.units };
                    let pa = (r.pa_unit % ((64 << 30) / pa_align)) * pa_align;
                    phys.push(PhysRange::new(
                        pa,
                        units * ALIGNS[size_align] + r.extra_pages * KIB4,
                    ));
                }
                let total: u64 = phys.iter().map(|r| r.size).sum();
                let aperture = if system {
                    Aperture::SystemCoherent
                } else {
                    Aperture::Video
                };
                let attrs = if uncached {
                    PteAttributes::new(aperture).uncached()
                } else {
                    PteAttributes::new(aperture)
                };
                let expected = if va + total > format.va_limit() {
                    Err("VaOutOfRange")
                } else if model.overlaps(va, total).is_some() {
                    Err("AlreadyMapped")
                } else {
                    Ok(())
                };
                let result = space.map(va, &phys, attrs);
                if let Ok(stats) = result {
                    let mut by_size = [0u64; 4];
                    for (pva, page) in model.decompose(va, &phys, attrs) {
                        by_size[page.size as usize] += 1;
                        touched.push(pva);
                        touched.push(pva + page.size.bytes() - 1);
                        model.pages.insert(pva, page);
                    }
                    assert_eq!(stats.pages_by_size, by_size, "page sizes chosen");
                    assert_eq!(stats.pages_by_size.iter().sum::<u64>(), stats.ptes_written);
                }
                touched.push(va);
                (result.map(|_| ()).map_err(|e| kind(&e)), expected)
            }
            Op::Unmap {
                first,
                count,
                skip,
                trim,
            } => {
                if model.pages.is_empty() {
                    continue;
                }
                let keys: Vec<u64> = model.pages.keys().copied().collect();
                let i = first % keys.len();
                let j = (i + count).min(keys.len() - 1);
                let start = keys[i] + skip * KIB4;
                let last = model.pages[&keys[j]];
                let end = (keys[j] + last.size.bytes())
                    .saturating_sub(trim * KIB4)
                    .max(start + KIB4);
                let expected = model.unmap_result(start, end - start);
                let result = space.unmap(start, end - start);
                assert_eq!(result, expected, "unmap({start:#x}, {:#x})", end - start);
                if result.is_ok() {
                    let gone: Vec<u64> = model.pages.range(start..end).map(|(&k, _)| k).collect();
                    for k in gone {
                        model.pages.remove(&k);
                    }
                }
                touched.extend([start, end - 1]);
                (result.map_err(|e| kind(&e)), expected.map_err(|e| kind(&e)))
            }
            Op::UnmapRandom { va_unit, pages } => {
                let va = window + (va_unit % (WINDOW / KIB4)) * KIB4;
                let expected = model.unmap_result(va, pages * KIB4);
                let result = space.unmap(va, pages * KIB4);
                assert_eq!(result, expected, "unmap({va:#x}, {:#x})", pages * KIB4);
                if result.is_ok() {
                    let gone: Vec<u64> = model
                        .pages
                        .range(va..va + pages * KIB4)
                        .map(|(&k, _)| k)
                        .collect();
                    for k in gone {
                        model.pages.remove(&k);
                    }
                }
                touched.push(va);
                (result.map_err(|e| kind(&e)), expected.map_err(|e| kind(&e)))
            }
        };
        assert_eq!(result, expected);
        // The TLB hook runs once per operation, never per page.
        assert!(space.tlb().calls - calls_before <= 1);
        if result.is_err() {
            assert_eq!(
                space.memory().words(),
                &words_before[..],
                "failed op changed table memory"
            );
            assert_eq!(
                space.allocator().free_bytes(),
                free_before,
                "failed op changed the allocator"
            );
        }
        // No leaked or empty tables; the allocator holds exactly the live tables.
        let reachable = reachable_tables(&space);
        assert_eq!(reachable, space.table_count());
        assert_eq!(
            space.allocator().free_bytes(),
            TABLE_MEMORY - 4096 * reachable as u64
        );
        let mut samples = touched;
        samples.extend((0..24).map(|_| window + (next() % (WINDOW / KIB4)) * KIB4 + next() % KIB4));
        samples.extend(model.pages.keys().take(64).copied());
        check_agrees(&space, &model, &samples);
    }
    // Unmapping everything frees every table but the root.
    let keys: Vec<(u64, u64)> = model
        .pages
        .iter()
        .map(|(&k, p)| (k, p.size.bytes()))
        .collect();
    for (va, size) in keys {
        space.unmap(va, size).unwrap();
    }
    assert_eq!(space.table_count(), 1);
    assert_eq!(reachable_tables(&space), 1);
    assert_eq!(space.allocator().free_bytes(), TABLE_MEMORY - 4096);
    assert!(
        space.memory().words().iter().all(|&w| w == 0),
        "root must be all invalid again"
    );
}

fn sizes() -> impl Strategy<Value = PageSizes> {
    prop_oneof![
        Just(PageSizes::ALL),
        Just(PageSizes::NO_64K),
        Just(PageSizes::NO_512M),
        Just(PageSizes::SMALL_ONLY)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(64), ..ProptestConfig::default() })]

    #[test]
    fn ver2_random_map_unmap_matches_model(sizes in sizes(), window in 0u8..3, ops in prop::collection::vec(op(), 1..24), seed in any::<u64>()) {
        run(MmuVersion::Ver2, sizes, window, ops, seed);
    }

    #[test]
    fn ver3_random_map_unmap_matches_model(sizes in sizes(), window in 0u8..3, ops in prop::collection::vec(op(), 1..24), seed in any::<u64>()) {
        run(MmuVersion::Ver3, sizes, window, ops, seed);
    }
}

#[test]
fn table_count_is_exact_for_a_known_layout() {
    let memory = VecMemory::new(TableAperture::Video, 0, TABLE_MEMORY);
    let alloc = PhysAllocator::new(0, TABLE_MEMORY).unwrap();
    let mut space: Space = AddressSpace::new(
        MmuVersion::Ver3,
        TableAperture::Video,
        memory,
        alloc,
        CountingTlb::default(),
    )
    .unwrap();
    // One 4 KiB page: PD4 root + PD3 + PD2 + PD1 + PD0 + small PT.
    space
        .map(
            0x1000,
            &[PhysRange::new(0x20_0000, 0x1000)],
            PteAttributes::default(),
        )
        .unwrap();
    assert_eq!(space.table_count(), 6);
    // A 64 KiB page in the same 2 MiB adds the big PT.
    space
        .map(
            0x10000,
            &[PhysRange::new(0x40_0000, 0x10000)],
            PteAttributes::default(),
        )
        .unwrap();
    assert_eq!(space.table_count(), 7);
    assert_eq!(reachable_tables(&space), 7);
    space.unmap(0x1000, 0x1000).unwrap();
    assert_eq!(space.table_count(), 6);
    space.unmap(0x10000, 0x10000).unwrap();
    assert_eq!(space.table_count(), 1);
    assert_eq!(space.tlb().calls, 4);
    let _ = TableAddr::video(0);
}
