//! Cross-check against an independent implementation: tinygrad 0.11.0's page-table code.
//!
//! `tests/fixtures/tinygrad_entries.txt` holds every entry tinygrad's `NVPageTableEntry`
//! wrote on the way to each page of a fixed set of mappings (ver2 and ver3), produced by
//! `scripts/tinygrad_pte_fixtures.py`. Two checks:
//! 1. each entry re-encoded by our `Pte` / `Pde` / `DualPde` equals tinygrad's raw value;
//! 2. mapping the same set with our `AddressSpace` (tables handed out in tinygrad's order:
//!    root at 0, then 4 KiB tables upward from 2 MiB) yields the very same raw entries at the
//!    very same table addresses, read back from table memory by our walker's path.

use std::collections::BTreeMap;

use nvbare_mmu::{
    AddressSpace, Aperture, DualPde, Format, MmuError, MmuVersion, NoTlb, PageSizes, Pde,
    PhysAllocator, PhysRange, Pte, PteAttributes, TableAddr, TableAllocator, TableAperture,
    TableMemory, VecMemory, walk::walk,
};

const FIXTURE: &str = include_str!("fixtures/tinygrad_entries.txt");

#[derive(Clone, Debug)]
struct Line {
    ver: u32,
    mapping: String,
    va: u64,
    level: usize,
    index: u64,
    entry: String,
    raw: u128,
    target: u64,
    page_size: u64,
    pa: u64,
    uncached: bool,
    system: bool,
}

fn hex(s: &str) -> u128 {
    u128::from_str_radix(s.trim_start_matches("0x"), 16).expect("hex field")
}

fn lines() -> Vec<Line> {
    let out: Vec<Line> = FIXTURE
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let c: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(c.len(), 12, "fixture line: {l}");
            Line {
                ver: c[0].parse().unwrap(),
                mapping: c[1].to_string(),
                va: hex(c[2]) as u64,
                level: c[3].parse().unwrap(),
                index: c[4].parse().unwrap(),
                entry: c[5].to_string(),
                raw: hex(c[6]),
                target: hex(c[7]) as u64,
                page_size: hex(c[8]) as u64,
                pa: hex(c[9]) as u64,
                uncached: c[10] == "1",
                system: c[11] == "1",
            }
        })
        .collect();
    assert!(out.len() > 100, "fixture has {} entries", out.len());
    out
}

fn format_of(ver: u32) -> &'static Format {
    match ver {
        2 => &Format::VER2,
        3 => &Format::VER3,
        v => panic!("unknown version {v}"),
    }
}

fn attrs_of(l: &Line) -> PteAttributes {
    let aperture = if l.system {
        Aperture::SystemCoherent
    } else {
        Aperture::Video
    };
    let a = PteAttributes::new(aperture);
    if l.uncached { a.uncached() } else { a }
}

#[test]
fn every_tinygrad_entry_equals_our_encoding() {
    let mut counts = BTreeMap::new();
    for l in lines() {
        let format = format_of(l.ver);
        let ours: u128 = match l.entry.as_str() {
            "pte" => {
                let pte = Pte {
                    addr: l.pa,
                    attrs: attrs_of(&l),
                };
                let raw = pte.encode(format).unwrap();
                assert_eq!(
                    Pte::decode(format, raw),
                    Some(pte),
                    "decode round trip {l:?}"
                );
                raw.into()
            }
            "pde" => Pde {
                table: TableAddr::video(l.target),
            }
            .encode(format)
            .unwrap()
            .into(),
            "dual" => DualPde {
                big: None,
                small: Some(TableAddr::video(l.target)),
            }
            .encode(format)
            .unwrap(),
            other => panic!("unknown entry kind {other}"),
        };
        assert_eq!(
            ours, l.raw,
            "ver{} {} va {:#x} level {} {}: ours {ours:#x} tinygrad {:#x}",
            l.ver, l.mapping, l.va, l.level, l.entry, l.raw
        );
        *counts.entry((l.ver, l.entry.clone())).or_insert(0) += 1;
    }
    println!("entries equal to tinygrad's: {counts:?}");
}

/// Root at 0, then tables upward from 2 MiB: the order tinygrad's MemoryManager hands them out.
struct TinygradOrder {
    root_taken: bool,
    rest: PhysAllocator,
}

impl TableAllocator for TinygradOrder {
    fn alloc_table(&mut self, bytes: u64) -> Result<u64, MmuError> {
        if !self.root_taken {
            self.root_taken = true;
            return Ok(0);
        }
        self.rest.alloc(bytes, 4096)
    }
    fn free_table(&mut self, addr: u64, bytes: u64) -> Result<(), MmuError> {
        self.rest.free(addr, bytes)
    }
}

#[test]
fn our_tables_for_the_same_mappings_hold_tinygrads_entries() {
    let all = lines();
    for ver in [2, 3] {
        let version = if ver == 2 {
            MmuVersion::Ver2
        } else {
            MmuVersion::Ver3
        };
        let format = format_of(ver);
        let memory = VecMemory::new(TableAperture::Video, 0, 16 << 20);
        let tables = TinygradOrder {
            root_taken: false,
            rest: PhysAllocator::new(2 << 20, 14 << 20).unwrap(),
        };
        let mut space = AddressSpace::new(version, TableAperture::Video, memory, tables, NoTlb)
            .unwrap()
            .with_page_sizes(PageSizes::NO_64K);

        // Rebuild each map_range call: the mapping's pages in order, physically contiguous
        // pages merged into one range.
        let mut order: Vec<String> = Vec::new();
        let mut pages: BTreeMap<String, Vec<&Line>> = BTreeMap::new();
        for l in all.iter().filter(|l| l.ver == ver && l.entry == "pte") {
            if !pages.contains_key(&l.mapping) {
                order.push(l.mapping.clone());
            }
            pages.entry(l.mapping.clone()).or_default().push(l);
        }
        for name in &order {
            let p = &pages[name];
            let mut ranges: Vec<PhysRange> = Vec::new();
            for l in p {
                match ranges.last_mut() {
                    Some(r) if r.addr + r.size == l.pa => r.size += l.page_size,
                    _ => ranges.push(PhysRange::new(l.pa, l.page_size)),
                }
            }
            space.map(p[0].va, &ranges, attrs_of(p[0])).unwrap();
        }

        // Every entry tinygrad passed through, at the same place in our memory.
        let mut checked = 0;
        for l in all.iter().filter(|l| l.ver == ver) {
            // Follow tinygrad's path in our memory: the table at this level is the one the
            // previous line of the same page pointed at (root for level 0).
            let table = if l.level == 0 {
                space.root().addr
            } else {
                all.iter()
                    .find(|p| p.ver == ver && p.va == l.va && p.level + 1 == l.level)
                    .unwrap()
                    .target
            };
            let entry_bytes =
                if l.entry == "dual" || (l.entry == "pte" && l.level == format.pd0_index()) {
                    16
                } else {
                    8
                };
            let at = TableAddr::video(table + l.index * entry_bytes);
            let lo = space.memory().read_u64(at).unwrap() as u128;
            let ours = if entry_bytes == 16 {
                lo | (space.memory().read_u64(at.offset(8)).unwrap() as u128) << 64
            } else {
                lo
            };
            assert_eq!(
                ours, l.raw,
                "ver{ver} {} va {:#x} level {}: ours {ours:#x} tinygrad {:#x}",
                l.mapping, l.va, l.level, l.raw
            );
            if l.entry == "pte" {
                let t = walk(format, space.memory(), space.root(), l.va)
                    .unwrap()
                    .expect("walker finds the page");
                assert_eq!(
                    (t.pa, t.page_size.bytes(), t.pte as u128),
                    (l.pa, l.page_size, l.raw)
                );
                assert_eq!(space.translate(l.va).unwrap(), Some(t));
            }
            checked += 1;
        }
        println!(
            "ver{ver}: {checked} entries in our tables equal tinygrad's, at the same addresses"
        );
    }
}
