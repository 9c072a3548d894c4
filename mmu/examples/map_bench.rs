//! Map throughput into memory-backed page tables.
//!
//! Run: `cargo run --release -p nvbare-mmu --example map_bench [-- --iters N]`
//!
//! Workloads, each at three sizes to show cost grows linearly with the size:
//! - 2 MiB pages, one `map` call for the whole region (32, 64, 128 GiB);
//! - 2 MiB pages, one `map` call per page (32, 64, 128 GiB), for the per-call cost;
//! - 4 KiB pages (page sizes restricted to 4 KiB), one call (256 MiB, 512 MiB, 1 GiB).
//!
//! Each measurement maps into a fresh address space (table allocation and zeroing included)
//! and reports the median of `--iters` runs (default 7). Rates use the thread's CPU time, so
//! other processes on a shared machine do not inflate them; wall time is shown beside it.
//! ver3 maps video memory; ver2 maps system memory (its video address field stops at 128 GiB).

use std::time::{Duration, Instant};

use cpu_time::ThreadTime;

use nvbare_mmu::{
    AddressSpace, Aperture, CountingTlb, MmuVersion, PageSize, PageSizes, PhysAllocator, PhysRange,
    PteAttributes, TableAperture, VecMemory,
};

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;
const TABLE_BYTES: u64 = 16 * MIB;
/// Virtual base: 512 MiB aligned. Physical base: 2 MiB past a 512 MiB boundary, so 2 MiB is
/// the largest page alignment allows.
const VA: u64 = 0x10_0000_0000;
const PA: u64 = 2 * MIB;

type Space = AddressSpace<VecMemory, PhysAllocator, CountingTlb>;

fn fresh(version: MmuVersion, sizes: PageSizes) -> Space {
    let memory = VecMemory::new(TableAperture::Video, 0, TABLE_BYTES);
    let tables = PhysAllocator::new(0, TABLE_BYTES).expect("table allocator");
    AddressSpace::new(
        version,
        TableAperture::Video,
        memory,
        tables,
        CountingTlb::default(),
    )
    .expect("address space")
    .with_page_sizes(sizes)
}

struct Sample {
    cpu: Duration,
    elapsed: Duration,
    ptes: u64,
    calls: u64,
}

fn run_once(version: MmuVersion, page: PageSize, total: u64, per_page_calls: bool) -> Sample {
    let sizes = if page == PageSize::Size4K {
        PageSizes::SMALL_ONLY
    } else {
        PageSizes::ALL
    };
    let aperture = if version == MmuVersion::Ver2 {
        Aperture::SystemCoherent
    } else {
        Aperture::Video
    };
    let attrs = PteAttributes::new(aperture);
    let mut space = fresh(version, sizes);
    let mut ptes = 0;
    let mut calls = 0;
    let start = Instant::now();
    let cpu_start = ThreadTime::now();
    if per_page_calls {
        let step = page.bytes();
        let mut off = 0;
        while off < total {
            let stats = space
                .map(VA + off, &[PhysRange::new(PA + off, step)], attrs)
                .expect("map");
            ptes += stats.ptes_written;
            calls += 1;
            off += step;
        }
    } else {
        let stats = space
            .map(VA, &[PhysRange::new(PA, total)], attrs)
            .expect("map");
        ptes += stats.ptes_written;
        calls += 1;
        assert_eq!(
            stats.pages_by_size[page as usize],
            total / page.bytes(),
            "every page is {page:?}"
        );
    }
    let cpu = cpu_start.elapsed();
    let elapsed = start.elapsed();
    // The last page resolves where it should, and the TLB hook ran once per call.
    let last = VA + total - page.bytes();
    let t = space.translate(last).expect("translate").expect("mapped");
    assert_eq!((t.pa, t.page_size), (PA + total - page.bytes(), page));
    assert_eq!(space.tlb().calls, calls);
    assert_eq!(ptes, total / page.bytes());
    std::hint::black_box(&space);
    Sample {
        cpu,
        elapsed,
        ptes,
        calls,
    }
}

fn human(bytes: u64) -> String {
    if bytes >= GIB {
        format!("{} GiB", bytes / GIB)
    } else {
        format!("{} MiB", bytes / MIB)
    }
}

fn main() {
    let mut iters = 7usize;
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--iters") {
        iters = args
            .get(i + 1)
            .and_then(|v| v.parse().ok())
            .unwrap_or(iters)
            .max(1);
    }
    let workloads: [(&str, PageSize, [u64; 3], bool); 3] = [
        (
            "2 MiB pages, 1 call",
            PageSize::Size2M,
            [32 * GIB, 64 * GIB, 128 * GIB],
            false,
        ),
        (
            "2 MiB pages, 1 call/page",
            PageSize::Size2M,
            [32 * GIB, 64 * GIB, 128 * GIB],
            true,
        ),
        (
            "4 KiB pages, 1 call",
            PageSize::Size4K,
            [256 * MIB, 512 * MIB, GIB],
            false,
        ),
    ];
    println!(
        "median of {iters} runs by thread CPU time; fresh address space per run; tables in a Vec (VecMemory)"
    );
    println!(
        "| format | workload | mapped | PTEs | calls | CPU ms | wall ms | M PTE/s | ns/PTE | ns/call |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for version in [MmuVersion::Ver3, MmuVersion::Ver2] {
        for (name, page, totals, per_page) in workloads {
            for total in totals {
                let mut samples: Vec<Sample> = (0..iters)
                    .map(|_| run_once(version, page, total, per_page))
                    .collect();
                samples.sort_by_key(|s| s.cpu);
                let s = &samples[samples.len() / 2];
                let secs = s.cpu.as_secs_f64();
                println!(
                    "| {:?} | {name} | {} | {} | {} | {:.3} | {:.3} | {:.1} | {:.2} | {:.0} |",
                    version,
                    human(total),
                    s.ptes,
                    s.calls,
                    secs * 1e3,
                    s.elapsed.as_secs_f64() * 1e3,
                    s.ptes as f64 / secs / 1e6,
                    secs * 1e9 / s.ptes as f64,
                    secs * 1e9 / s.calls as f64,
                );
            }
        }
    }
}
