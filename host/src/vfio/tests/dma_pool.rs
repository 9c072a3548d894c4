//! The DMA pool through the platform: hugepage chunks mapped once in the IOMMU, the mapping
//! limit, IOVA ranges, hugepage shortage, failed unmaps, no-IOMMU physical addresses.

use super::*;

#[test]
fn noiommu_is_refused_unless_asked_for_and_then_uses_physical_addresses() {
    let r = rig();
    r.tree.make_noiommu(12);
    let e = r.open().unwrap_err();
    assert!(
        matches!(e, VfioError::NoIommuRefused { group: 12, .. }),
        "{e:?}"
    );
    assert!(e.to_string().contains("UNSAFE") && e.to_string().contains("no DMA isolation"));

    let mut r = r;
    r.opts.allow_noiommu_unsafe = true;
    let mut v = r.open().unwrap();
    assert!(v.is_noiommu_unsafe());
    assert_eq!(
        r.twin.0.lock().unwrap().iommu_set,
        Some(b::VFIO_NOIOMMU_IOMMU)
    );
    assert!(r.calls().contains(&"open dev/vfio/noiommu-12".to_string()));
    let m = v.dma_alloc(8192, true).unwrap();
    assert_eq!(m.bus_pages, [0x40_0000_0000, 0x40_0000_1000]);
    assert!(
        r.twin.0.lock().unwrap().dma.is_empty(),
        "no IOMMU mapping without an IOMMU"
    );
    // Two hugepages need not be physically contiguous: fine unless contiguity is asked for.
    let big = v.dma_alloc(4 << 20, false).unwrap();
    assert!(!big.is_contiguous());
    let e = v.dma_alloc(4 << 20, true).unwrap_err().to_string();
    assert!(
        e.contains("physically contiguous") && e.contains("UNSAFE"),
        "{e}"
    );
    assert_eq!(v.dma_outstanding(), 2, "the refused allocation is undone");
    // SAFETY: no view of `m` is used after this and no device uses it.
    unsafe { v.dma_free(m) };
    // SAFETY: no view of `big` is used after this and no device uses it.
    unsafe { v.dma_free(big) };

    // Without CAP_SYS_ADMIN the pagemap has no PFNs.
    r.twin.0.lock().unwrap().phys_base = 0;
    let m = v.dma_alloc(4096, false).unwrap_err().to_string();
    assert!(m.contains("UNSAFE") && m.contains("CAP_SYS_ADMIN"), "{m}");
}

#[test]
fn dma_memory_is_zeroed_and_small_allocations_share_one_mapped_hugepage() {
    let r = rig();
    let mut v = r.open().unwrap();
    let a = v.dma_alloc(3 * 4096, false).unwrap();
    assert!(a.is_contiguous());
    assert!(a.bus_pages[0] >= dma::IOVA_BASE);
    assert_eq!(a.cpu.gpu_va(), a.bus_pages[0]);
    assert_eq!(a.cpu.read_u64(8192).unwrap(), 0);
    a.cpu.write_u32(4, 0x55).unwrap();
    let b = v.dma_alloc(4096, true).unwrap();
    assert_eq!(v.dma_chunks(), 1, "small allocations share a hugepage");
    assert_eq!(
        b.bus_pages[0],
        a.bus_pages[0] + 3 * 4096,
        "chunk IOVA + offset"
    );
    {
        let s = r.twin.0.lock().unwrap();
        assert_eq!(s.dma.len(), 1, "one IOMMU mapping for the chunk");
        assert_eq!(s.dma[&a.bus_pages[0]].1, dma::HUGEPAGE);
        assert_eq!(s.dma_maps, 1);
        assert_eq!(s.hugepages_free, 7);
    }
    let big = v.dma_alloc(4 << 20, true).unwrap();
    assert!(big.is_contiguous(), "one chunk: contiguous on the bus");
    assert!(big.bus_pages[0].is_multiple_of(dma::HUGEPAGE as u64));
    assert_eq!(v.dma_chunks(), 2);
    assert_eq!(r.twin.0.lock().unwrap().dma[&big.bus_pages[0]].1, 4 << 20);
    // SAFETY: no view of `a` is used after this and no device uses it.
    unsafe { v.dma_free(a) };
    // Freed pages come back zeroed to the next user, in the same mapping.
    let c = v.dma_alloc(4096, false).unwrap();
    assert_eq!(c.cpu.read_u32(4).unwrap(), 0);
    {
        let s = r.twin.0.lock().unwrap();
        assert_eq!(s.dma_maps, 2, "no map call for reused pages");
        assert_eq!(s.dma.len(), 2, "nothing unmapped at free");
    }
    // SAFETY: no view of `c` is used after this and no device uses it.
    unsafe { v.dma_free(c) };
    // SAFETY: no view of `b` is used after this and no device uses it.
    unsafe { v.dma_free(b) };
    assert_eq!(v.dma_chunks(), 2, "the emptied hugepage stays as the spare");
    // SAFETY: no view of `big` is used after this and no device uses it.
    unsafe { v.dma_free(big) };
    {
        let s = r.twin.0.lock().unwrap();
        assert_eq!(s.dma.len(), 1, "a freed large chunk is unmapped");
        assert_eq!(s.hugepages_free, 7, "and goes back");
    }
    assert_eq!(v.dma_chunks(), 1);
    assert_eq!(v.dma_outstanding(), 0);
    drop(v);
    let s = r.twin.0.lock().unwrap();
    assert!(s.dma.is_empty(), "every mapping undone at close");
    assert_eq!(s.hugepages_free, 8, "every hugepage back");
}

#[test]
fn many_small_allocations_make_one_map_call_per_hugepage() {
    let r = rig();
    // Far fewer mappings allowed than allocations made: only per-chunk mapping fits.
    r.twin.0.lock().unwrap().dma_limit = 8;
    let mut v = r.open().unwrap();
    let sizes: [usize; 5] = [4096, 8192, 3 * 4096, 100, 4096 * 5];
    let mut total = 0usize;
    let mut mems = Vec::new();
    for i in 0..1000 {
        let bytes = sizes[i % sizes.len()];
        total += bytes.div_ceil(4096) * 4096;
        let m = v.dma_alloc(bytes, true).unwrap();
        assert!(m.is_contiguous());
        mems.push(m);
    }
    let maps = r.twin.0.lock().unwrap().dma_maps;
    assert!(
        maps <= total.div_ceil(dma::HUGEPAGE),
        "{maps} map calls for {total} bytes"
    );
    assert!(mems.len() > 8, "more allocations than the mapping limit");
    // Every allocation is its own range on the bus.
    let mut ranges: Vec<(u64, u64)> = mems
        .iter()
        .map(|m| {
            (
                m.bus_pages[0],
                m.bus_pages[0] + (m.bus_pages.len() * 4096) as u64,
            )
        })
        .collect();
    ranges.sort();
    assert!(ranges.windows(2).all(|w| w[0].1 <= w[1].0), "no overlap");
    // Freeing everything and allocating again maps nothing new (the spare chunk is reused).
    for m in mems {
        // SAFETY: no view of `m` is used after this and no device uses it.
        unsafe { v.dma_free(m) };
    }
    assert_eq!(v.dma_chunks(), 1, "one empty hugepage kept as the spare");
    let again = v.dma_alloc(4096, false).unwrap();
    assert_eq!(r.twin.0.lock().unwrap().dma_maps, maps);
    // SAFETY: no view of `again` is used after this and no device uses it.
    unsafe { v.dma_free(again) };
    drop(v);
    let s = r.twin.0.lock().unwrap();
    assert!(s.dma.is_empty());
    assert_eq!(s.hugepages_free, 8);
}

#[test]
fn the_mapping_limit_reached_is_a_map_error_that_undoes_the_chunk() {
    let r = rig();
    r.twin.0.lock().unwrap().dma_limit = 1;
    let mut v = r.open().unwrap();
    let a = v.dma_alloc(4096, false).unwrap();
    let e = v.dma_alloc(4 << 20, false).unwrap_err();
    let m = e.to_string();
    assert!(m.contains("dma_entry_limit"), "{m}");
    assert_eq!(v.dma_chunks(), 1, "the refused chunk is not kept");
    assert_eq!(
        r.twin.0.lock().unwrap().hugepages_free,
        7,
        "its hugepages went back"
    );
    // SAFETY: no view of `a` is used after this and no device uses it.
    unsafe { v.dma_free(a) };
}

#[test]
fn dma_iovas_stay_inside_the_ranges_the_iommu_reports() {
    const G: u64 = 1 << 30;
    const M: u64 = 1 << 20;
    // The default x86 ranges hold the whole preferred window.
    let r = rig();
    let mut v = r.open().unwrap();
    assert!(r.calls().contains(&"iommu_info".to_string()));
    let m = v.dma_alloc(4096, false).unwrap();
    assert_eq!(m.bus_pages[0], dma::IOVA_BASE);
    // SAFETY: no view of `m` is used after this and no device uses it.
    unsafe { v.dma_free(m) };
    drop(v);

    // Only [6 GiB + 2 MiB, 6 GiB + 6 MiB) of the window is usable once 2 MiB aligned.
    r.twin.0.lock().unwrap().iova_ranges =
        Some(vec![(0, 0xffff_ffff), (6 * G + 4096, 6 * G + 6 * M - 1)]);
    let mut v = r.open().unwrap();
    let a = v.dma_alloc(4096, false).unwrap();
    assert_eq!(a.bus_pages[0], 6 * G + 2 * M);
    let e = v.dma_alloc(4 << 20, false).unwrap_err().to_string();
    assert!(e.contains("no IOVA space left"), "{e}");
    let b = v.dma_alloc(2 << 20, true).unwrap();
    assert_eq!(b.bus_pages[0], 6 * G + 4 * M);
    assert_eq!(v.dma_chunks(), 2, "the refused allocation kept no chunk");
    // SAFETY: no view of `a` is used after this and no device uses it.
    unsafe { v.dma_free(a) };
    // SAFETY: no view of `b` is used after this and no device uses it.
    unsafe { v.dma_free(b) };
    drop(v);

    // No capability (an old kernel): the preferred window whole.
    r.twin.0.lock().unwrap().iova_ranges = None;
    let mut v = r.open().unwrap();
    let m = v.dma_alloc(4096, false).unwrap();
    assert_eq!(m.bus_pages[0], dma::IOVA_BASE);
    // SAFETY: no view of `m` is used after this and no device uses it.
    unsafe { v.dma_free(m) };
    drop(v);

    // Nothing of the window usable: open refuses, naming the step and the ranges.
    r.twin.0.lock().unwrap().iova_ranges = Some(vec![(0, 0xffff_ffff), (1 << 39, u64::MAX)]);
    let e = r.open().unwrap_err();
    let chain = e.to_string();
    assert!(
        chain.contains("VFIO_IOMMU_GET_INFO (usable IOVA ranges)")
            && chain.contains("[0x0, 0xffffffff]")
            && chain.contains("reserved_regions"),
        "{chain}"
    );
    assert_eq!(r.twin.0.lock().unwrap().hugepages_free, 8);
    // Nothing half-built: the lock is free again.
    r.twin.0.lock().unwrap().iova_ranges = None;
    assert!(r.open().is_ok());
}

#[test]
fn no_hugepages_is_one_message_saying_how_to_reserve_them() {
    let r = rig();
    r.twin.0.lock().unwrap().hugepages_free = 0;
    r.tree.write(
        "sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages",
        "0\n",
    );
    r.tree.write(
        "sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages",
        "0\n",
    );
    let mut v = r.open().unwrap();
    let e = v.dma_alloc(6 << 20, false).unwrap_err();
    let m = e.to_string();
    assert!(m.starts_with("DMA memory: "), "{m}");
    assert!(
        m.contains("echo 3 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"),
        "{m}"
    );
    assert!(m.contains("0 of 0 reserved are free, 3 more needed"), "{m}");
    assert_eq!(v.dma_outstanding(), 0);
}

#[test]
fn a_failed_unmap_keeps_the_pages_out_of_reuse() {
    let r = rig();
    let mut v = r.open().unwrap();
    let big = v.dma_alloc(4 << 20, false).unwrap();
    let iova = big.bus_pages[0];
    r.twin.0.lock().unwrap().fail_unmap = true;
    // SAFETY: no view of `big` is used after this and no device uses it.
    unsafe { v.dma_free(big) };
    assert_eq!(
        v.dma_chunks(),
        1,
        "the chunk stays: the device may still reach it"
    );
    assert_eq!(v.dma_outstanding(), 0);
    r.twin.0.lock().unwrap().fail_unmap = false;
    let again = v.dma_alloc(4 << 20, false).unwrap();
    assert_ne!(again.bus_pages[0], iova, "its IOVAs are not reused");
    assert_eq!(v.dma_chunks(), 2, "nor its pages");
    // SAFETY: no view of `again` is used after this and no device uses it.
    unsafe { v.dma_free(again) };
    drop(v);
    assert_eq!(
        r.twin.0.lock().unwrap().hugepages_free,
        6,
        "never given back while mapped"
    );
}
