//! Proof on silicon of nvbare's own ver3 page tables (issue 17, item 7): the kernel-driver
//! backend in own-page-tables mode (`NvkOptions::own_page_tables`) allocates a
//! `SHARED_MANAGEMENT` VA space, builds its tables with `nvbare_mmu` in VRAM from RM, hands
//! RM the top-level directory (`NV0080_CTRL_CMD_DMA_SET_PAGE_DIRECTORY`) and maps every
//! buffer with its own PTEs, invalidating through `NV0080_CTRL_CMD_DMA_INVALIDATE_TLB`.
//! Ignored by default (needs the H200); run through the device tool:
//!   cargo test --release -p nvbare-host --test nvk_h200_own_pt --no-run   # here
//!   ./nvk_h200_own_pt --ignored --test-threads=1 --nocapture            # there
//!
//! One line per check; the test fails at the end if any check failed.

use nvbare_core::gpu::{GpuConfig, Placement};
use nvbare_host::bench::BENCH_CUBIN;
use nvbare_host::nvk::own_pt::{OWN_VA, OWN_VA_HIGH};
use nvbare_host::nvk::{self, Buffer, Gpu, NvkOptions};
use nvbare_mmu::PageSize;

const PAGE_WORDS: usize = 1024;

struct Checks(Vec<(String, bool)>);

impl Checks {
    fn check(&mut self, name: impl Into<String>, ok: bool, detail: impl std::fmt::Display) {
        let name = name.into();
        println!("{} {name}: {detail}", if ok { "PASS" } else { "FAIL" });
        self.0.push((name, ok));
    }
}

fn a_of(i: usize) -> f32 {
    i as f32 + 0.25
}
fn b_of(i: usize) -> f32 {
    i as f32 * 0.5 + 0.25
}

/// One index per 4 KiB page of `n` floats (spread inside the page).
fn samples(n: usize) -> impl Iterator<Item = usize> {
    (0..n.div_ceil(PAGE_WORDS)).map(move |p| (p * PAGE_WORDS + (p * 37) % PAGE_WORDS).min(n - 1))
}

fn read_f32(buf: &Buffer, i: usize) -> f32 {
    f32::from_bits(nvk::view(buf).unwrap().read_u32(4 * i).unwrap())
}

/// A kernel reads and writes `buf` through its mapping (c = a + b in place over its halves),
/// then the copy engine copies the first half onto the second; both checked on every 4 KiB
/// page through the CPU's own mapping of the same memory.
fn prove(gpu: &mut Gpu, k: &nvk::Kernel, buf: &Buffer, label: &str, checks: &mut Checks) {
    let half = buf.size() / 2;
    let n = (half / 4) as usize;
    let mut a = Vec::with_capacity(n * 4);
    let mut b = Vec::with_capacity(n * 4);
    for i in 0..n {
        a.extend_from_slice(&a_of(i).to_le_bytes());
        b.extend_from_slice(&b_of(i).to_le_bytes());
    }
    let v = nvk::view(buf).unwrap();
    v.write(0, &a).unwrap();
    v.write(half as usize, &b).unwrap();
    drop((a, b));
    let (va_a, va_b) = (buf.gpu_va(), buf.gpu_va() + half);
    let mut params = Vec::new();
    for va in [va_a, va_b, va_a] {
        params.extend_from_slice(&va.to_le_bytes());
    }
    // CAST: at most 2^26 elements.
    params.extend_from_slice(&(n as u32).to_le_bytes());
    params.resize(k.info.param_size as usize, 0);
    let grid = (n as u32).div_ceil(256);
    let r = gpu
        .launch(k, [grid, 1, 1], [256, 1, 1], &params)
        .and_then(|f| gpu.wait_for(f, 5_000_000_000));
    let wrong = match &r {
        Ok(()) => samples(n)
            .filter(|&i| read_f32(buf, i) != a_of(i) + b_of(i))
            .count(),
        Err(_) => usize::MAX,
    };
    checks.check(
        format!("{label}: kernel reads and writes"),
        r.is_ok() && wrong == 0,
        match &r {
            Ok(()) => format!(
                "vector_add of {n} floats at {va_a:#x}; {} pages sampled, {wrong} wrong",
                samples(n).count()
            ),
            Err(e) => format!("kernel at {va_a:#x} failed: {e}"),
        },
    );
    if r.is_err() {
        return;
    }
    let r = gpu
        .copy(va_b, va_a, half)
        .and_then(|f| gpu.wait_for(f, 5_000_000_000));
    let wrong = match &r {
        Ok(()) => samples(n)
            .filter(|&i| read_f32(buf, n + i) != a_of(i) + b_of(i))
            .count(),
        Err(_) => usize::MAX,
    };
    checks.check(
        format!("{label}: copy engine"),
        r.is_ok() && wrong == 0,
        match &r {
            Ok(()) => format!("{half:#x} bytes {va_a:#x} -> {va_b:#x}; {wrong} pages wrong"),
            Err(e) => format!("copy failed: {e}"),
        },
    );
}

/// One arrangement of the VA space: opens the GPU in it, maps and proves every page size,
/// faults at `bad`, hands the directory back. Returns whether every check passed.
fn arrangement(label: &str, options: NvkOptions, bad: u64) -> bool {
    println!("== {label}");
    let mut checks = Checks(Vec::new());
    let config = GpuConfig {
        // TIMEOUT: 3 s: every wait here is for a few MiB of work (well under a second); a
        // channel that does not move is reported sooner than the default 10 s.
        timeout_ns: 3_000_000_000,
        ..GpuConfig::default()
    };
    let mut gpu = match nvk::open_with(0, config, options) {
        Ok(g) => g,
        Err(e) => {
            checks.check("open with own page tables", false, &e);
            return false;
        }
    };
    let own = gpu.backend().own_tables().expect("own tables");
    let (root, entries) = own.root();
    let (e0, e1) = (own.root_entry(0), own.root_entry(1));
    checks.check(
        "SET_PAGE_DIRECTORY",
        true,
        format!(
            "VA space {:#x} (SHARED_MANAGEMENT) now walks nvbare's ver3 root at VRAM {root:#x} \
             ({entries} entries): entry 0 {:#018x}, entry 1 {:#018x} (RM's entry copied in by RM)",
            own.vaspace,
            e0.unwrap_or(0),
            e1.unwrap_or(0)
        ),
    );
    let k = match gpu.load(BENCH_CUBIN, "vector_add") {
        Ok(k) => k,
        Err(e) => {
            checks.check("load vector_add", false, e);
            return false;
        }
    };
    checks.check(
        "GPU layer opened",
        true,
        format!(
            "channels, rings, pushbuffers, arena, sync page, kernel code in place \
             ({} TLB invalidates so far)",
            gpu.backend().own_tables().unwrap().invalidates
        ),
    );

    let cases = [
        (
            "VRAM 4 KiB pages",
            Placement::Vram,
            PageSize::Size4K,
            4u64 << 20,
        ),
        (
            "VRAM 64 KiB pages",
            Placement::Vram,
            PageSize::Size64K,
            4 << 20,
        ),
        (
            "VRAM 2 MiB pages",
            Placement::Vram,
            PageSize::Size2M,
            8 << 20,
        ),
        (
            "VRAM 512 MiB pages",
            Placement::Vram,
            PageSize::Size512M,
            512 << 20,
        ),
        (
            "host 4 KiB pages",
            Placement::Host,
            PageSize::Size4K,
            4 << 20,
        ),
        (
            "host 64 KiB pages",
            Placement::Host,
            PageSize::Size64K,
            2 << 20,
        ),
        (
            "host 2 MiB pages",
            Placement::Host,
            PageSize::Size2M,
            2 << 20,
        ),
    ];
    let mut bufs = Vec::new();
    for (what, placement, page, size) in cases {
        let r = gpu
            .backend_mut()
            .alloc_paged(size, placement, page, true, 0);
        match r {
            Ok((buf, stats)) => {
                // pages_by_size: 4 KiB, 64 KiB, 2 MiB, 512 MiB.
                let idx = page as usize;
                let only = stats
                    .pages_by_size
                    .iter()
                    .enumerate()
                    .all(|(i, &c)| (i == idx) == (c > 0));
                checks.check(
                    format!("{what}: map"),
                    only,
                    format!(
                        "{size:#x} bytes at VA {:#x}: pages by size [4K, 64K, 2M, 512M] = {:?}, \
                         {} PTEs written",
                        buf.gpu_va(),
                        stats.pages_by_size,
                        stats.ptes_written
                    ),
                );
                prove(&mut gpu, &k, &buf, what, &mut checks);
                bufs.push(buf);
            }
            Err(e) => checks.check(format!("{what}: map"), false, e),
        }
    }
    for b in bufs {
        gpu.free(b);
    }
    checks.check(
        "unmap",
        true,
        format!(
            "buffers freed: their PTEs cleared, {} TLB invalidates in all",
            gpu.backend().own_tables().unwrap().invalidates
        ),
    );

    // A channel an earlier check faulted loads nothing more (the run of 2026-12-02, RM keeping
    // entry 0: SM errors at every VA above 2^56 left the compute channel dead).
    let sk = match gpu.load(BENCH_CUBIN, "store_value") {
        Ok(k) => k,
        Err(e) => {
            checks.check("load store_value", false, e);
            return false;
        }
    };
    let mut params = Vec::new();
    params.extend_from_slice(&bad.to_le_bytes());
    params.extend_from_slice(&42u64.to_le_bytes());
    params.resize(sk.info.param_size as usize, 0);
    let r = gpu
        .launch(&sk, [1, 1, 1], [1, 1, 1], &params)
        .and_then(|f| gpu.wait_for(f, 3_000_000_000));
    match r {
        Ok(()) => checks.check("fault at unmapped VA", false, "the store completed"),
        Err(e) => {
            let named = e
                .fault()
                .is_some_and(|f| f.mmu.iter().any(|m| m.address & !0xfff == bad & !0xfff));
            checks.check(
                "fault at unmapped VA",
                true,
                format!("store to {bad:#x}: {e} (MMU fault names the address: {named})"),
            );
        }
    }
    let r = gpu.backend_mut().unset_page_directory();
    checks.check(
        "UNSET_PAGE_DIRECTORY",
        r.is_ok(),
        match &r {
            Ok(()) => "RM has its own root back".to_string(),
            Err(e) => e.to_string(),
        },
    );
    drop(gpu);
    checks.check("teardown", true, "client freed");
    checks.0.iter().all(|c| c.1)
}

#[test]
#[ignore = "needs an NVIDIA GPU with its kernel driver; run through the device tool"]
fn own_page_tables_on_the_h200() {
    let _ = env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info"))
        .is_test(true)
        .try_init();
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    println!("euid {euid} (RMCTRL_FLAGS_PRIVILEGED controls need root: RS_PRIV_LEVEL_USER_ROOT)");
    let high = arrangement(
        "RM keeps root entry 1 [2^56, 2^57); nvbare maps everything below",
        NvkOptions {
            own_page_tables: true,
            ..Default::default()
        },
        OWN_VA.0 + OWN_VA.1 + 0xdead_0000,
    );
    let high_4k = arrangement(
        "as above, the GPU layer's own buffers in 4 KiB pages only",
        NvkOptions {
            own_page_tables: true,
            default_pages_4k: true,
            ..Default::default()
        },
        OWN_VA.0 + OWN_VA.1 + 0xdead_0000,
    );
    let low = arrangement(
        "RM keeps root entry 0 [0, 2^56) (UVM's split) and maps the GPU layer's buffers there; \
         nvbare maps the test buffers above 2^56",
        NvkOptions {
            own_page_tables: true,
            rm_keeps_low: true,
            ..Default::default()
        },
        OWN_VA_HIGH.0 + OWN_VA_HIGH.1 + 0xdead_0000,
    );
    println!(
        "all checks passed: RM keeps entry 1: {high}; the same, 4 KiB pages: {high_4k}; \
         RM keeps entry 0: {low}"
    );
    assert!(high || high_4k || low, "no arrangement passed every check");
}
