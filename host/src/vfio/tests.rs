use std::sync::Arc;

use vfio_bindings::bindings::vfio as b;

use super::region::{Area, RegionInfo, mmap_plan, parse_region_info};
use super::twin::{Twin, region_offset};
use super::*;
use crate::pci::fake::{FakeDevice, FakeSysfs};
use crate::pci::parse_address;

mod dma_pool;

const GPU: &str = "0000:41:00.0";

struct Rig {
    tree: FakeSysfs,
    twin: Arc<Twin>,
    opts: VfioOptions,
}

fn rig_with(twin: Twin) -> Rig {
    let tree = FakeSysfs::new();
    tree.add_device(FakeDevice {
        driver: Some("vfio-pci"),
        ..FakeDevice::gpu(GPU)
    });
    tree.add_vfio_node(12);
    let opts = VfioOptions {
        sysfs: tree.sysfs(),
        lock_dir: tree.path(""),
        ..VfioOptions::default()
    };
    Rig {
        tree,
        twin: Arc::new(twin),
        opts,
    }
}

fn rig() -> Rig {
    rig_with(Twin::gpu(12, GPU, 64 << 20, None))
}

fn addr() -> PciAddress {
    parse_address(GPU).unwrap()
}

impl Rig {
    fn open(&self) -> Result<Vfio<Twin>, VfioError> {
        Vfio::open_with(self.twin.clone(), addr(), &self.opts)
    }

    fn command(&self) -> u16 {
        let b = self.twin.peek(7, 4, 2);
        u16::from_le_bytes([b[0], b[1]])
    }

    fn calls(&self) -> Vec<String> {
        self.twin.0.lock().unwrap().calls.clone()
    }
}

#[test]
fn opens_through_a_type1_container_with_memory_decoding_on_and_bus_mastering_off() {
    let r = rig();
    let v = r.open().unwrap();
    let s = r.twin.0.lock().unwrap();
    assert_eq!(s.iommu_set, Some(b::VFIO_TYPE1v2_IOMMU));
    assert!(
        s.calls.contains(&"open dev/vfio/12".to_string()),
        "{:?}",
        s.calls
    );
    assert!(s.calls.contains(&format!("get_device {GPU}")));
    drop(s);
    // Bus mastering waits for the boot (WPR2 down, the FSP booted).
    assert_eq!(r.command() & 0x6, 0x2, "memory on, bus master off");
    assert_eq!(v.pci_address(), addr());
    assert!(!v.is_noiommu_unsafe());
    // Bus addresses from sysfs `resource`, sizes from the regions.
    assert_eq!(
        v.bar_info(0),
        Some(BarInfo {
            bus_addr: 0xfa00_0000,
            size: 16 << 20
        })
    );
    assert_eq!(v.bar_info(1).unwrap().bus_addr, 0x3800_0000_0000);
    assert_eq!(v.bar_info(3).unwrap().size, 32 << 20);
    assert_eq!(v.bar_info(2), None);
    drop(v);
    assert_eq!(r.command() & 0x4, 0, "bus master off at close");
    assert!(r.twin.0.lock().unwrap().mmaps.is_empty(), "BARs unmapped");
}

#[test]
fn bar0_goes_through_the_mapping() {
    let r = rig();
    let v = r.open().unwrap();
    r.twin.poke(0, 0, &0x180a_00a1u32.to_le_bytes());
    assert_eq!(v.read32(0), 0x180a_00a1);
    v.write32(0x1704, 0xdead_beef);
    assert_eq!(r.twin.peek(0, 0x1704, 4), 0xdead_beefu32.to_le_bytes());
    // Presence is judged from config space (region 7), not from BAR0; from the class dword,
    // which vfio-pci passes through, not the ids, which it virtualizes.
    r.twin.poke(7, 0, &[0xde, 0x10, 0x35, 0x23]);
    r.twin.poke(7, 8, &[0xa1, 0x00, 0x02, 0x03]);
    assert!(v.is_present());
    r.twin.poke(7, 8, &[0xff; 4]);
    assert!(!v.is_present());
    // Past the end reads all ones, as PCI does, and never touches memory outside.
    assert_eq!(v.read32(16 << 20), u32::MAX);
}

#[test]
fn a_bar_without_mmap_is_reached_through_pread_and_pwrite() {
    let twin = Twin::gpu(12, GPU, 64 << 20, None);
    twin.0.lock().unwrap().regions[0].flags &= !b::VFIO_REGION_INFO_FLAG_MMAP;
    let r = rig_with(twin);
    let v = r.open().unwrap();
    r.twin.poke(0, 0x88, &7u32.to_le_bytes());
    assert_eq!(v.read32(0x88), 7);
    v.write32(0x8c, 9);
    assert_eq!(r.twin.peek(0, 0x8c, 4), 9u32.to_le_bytes());
    assert!(
        r.twin
            .0
            .lock()
            .unwrap()
            .mmaps
            .values()
            .all(|&(off, _)| off >= region_offset(1))
    );
}

#[test]
fn sparse_bar1_maps_only_its_areas_and_reaches_the_holes_by_pread() {
    let sparse = vec![(0, 1 << 20), (2 << 20, 1 << 20)];
    let r = rig_with(Twin::gpu(12, GPU, 4 << 20, Some(sparse)));
    let v = r.open().unwrap();
    let bar1_maps: Vec<(u64, usize)> = r
        .twin
        .0
        .lock()
        .unwrap()
        .mmaps
        .values()
        .copied()
        .filter(|&(o, _)| (region_offset(1)..region_offset(2)).contains(&o))
        .collect();
    assert_eq!(bar1_maps.len(), 2, "{bar1_maps:?}");
    let bar1 = v.bar1().unwrap();
    assert_eq!(bar1.len(), 4 << 20);
    assert_eq!(bar1.gpu_va(), 0x3800_0000_0000);
    assert!(
        bar1.as_ptr().is_none(),
        "not one mapping: reached through the region"
    );
    bar1.write_u32(0x10, 0x1111).unwrap();
    bar1.write_u32((1 << 20) + 0x800, 0x2222).unwrap();
    bar1.write_u32((2 << 20) + 4, 0x3333).unwrap();
    assert_eq!(r.twin.peek(1, 0x10, 4), 0x1111u32.to_le_bytes());
    assert_eq!(
        r.twin.peek(1, (1 << 20) + 0x800, 4),
        0x2222u32.to_le_bytes()
    );
    assert_eq!(bar1.read_u32((2 << 20) + 4).unwrap(), 0x3333);
}

#[test]
fn a_whole_bar1_mapping_is_a_direct_window() {
    let r = rig();
    let v = r.open().unwrap();
    let bar1 = v.bar1().unwrap();
    assert!(bar1.as_ptr().is_some());
    bar1.write_u64(0x1000, 0x0102_0304_0506_0708).unwrap();
    assert_eq!(r.twin.peek(1, 0x1000, 1), [0x08]);
}

#[test]
fn refusals_name_the_remedy() {
    // Not bound to vfio-pci.
    let r = rig();
    r.tree.set_driver(GPU, Some("nvidia"));
    let m = r.open().unwrap_err().to_string();
    assert!(
        m.contains("bound to nvidia") && m.contains(&format!("nvbare bind {GPU}")),
        "{m}"
    );

    // IOMMU off: no group.
    let r = rig_iommu_off();
    let m = r.open().unwrap_err().to_string();
    assert!(
        m.contains("IOMMU is off") && m.contains("intel_iommu=on"),
        "{m}"
    );
    assert!(m.contains("UNSAFE"), "{m}");

    // A host device in the group.
    let r = rig();
    r.tree.add_device(FakeDevice {
        vendor: 0x8086,
        class: 0x020000,
        driver: Some("ixgbe"),
        ..FakeDevice::gpu("0000:40:00.0")
    });
    let m = r.open().unwrap_err().to_string();
    assert!(
        m.contains("group 12 is not viable") && m.contains("0000:40:00.0 (ixgbe)"),
        "{m}"
    );

    // The kernel says not viable.
    let r = rig();
    r.twin.0.lock().unwrap().group_flags = 0;
    let m = r.open().unwrap_err().to_string();
    assert!(m.contains("not viable"), "{m}");
}

/// A machine with the IOMMU off, as the real kernel leaves it (a q35 guest without an IOMMU in
/// tests/vm/run): no IOMMU groups at all, and the GPU with no driver, because vfio-pci's probe
/// fails without a group (`vfio_group_find_or_alloc`: -EINVAL unless no-IOMMU mode is on). The
/// twin used to leave the GPU bound to vfio-pci with no group, which the kernel never does.
fn rig_iommu_off() -> Rig {
    let r = rig();
    r.tree.set_driver(GPU, None);
    std::fs::remove_file(
        r.tree
            .path(&format!("sys/bus/pci/devices/{GPU}/iommu_group")),
    )
    .unwrap();
    std::fs::remove_dir_all(r.tree.path("sys/kernel/iommu_groups/12")).unwrap();
    r
}

#[test]
fn with_the_iommu_off_the_error_is_the_iommu_not_the_binding() {
    // The real kernel's view (tests/vm/run, guest without an IOMMU): the GPU has no driver,
    // and `nvbare bind` could not change that. The error names the IOMMU and its remedy, once.
    let r = rig_iommu_off();
    let e = r.open().unwrap_err();
    assert!(matches!(e, VfioError::IommuOff { .. }), "{e:?}");
    let m = e.to_string();
    assert!(!m.contains("nvbare bind"), "{m}");
    assert!(
        m.contains("intel_iommu=on") && m.contains("amd_iommu=on"),
        "{m}"
    );
    // Asked for no-IOMMU mode, the binding is what is missing (vfio-pci takes a device into
    // a no-IOMMU group when that mode is on).
    let mut r = r;
    r.opts.allow_noiommu_unsafe = true;
    let m = r.open().unwrap_err().to_string();
    assert!(m.contains("bound to no driver"), "{m}");
}

#[test]
fn a_gpu_that_falls_off_the_bus_reads_all_ones_and_cannot_be_reset() {
    // tests/vm/run unplugs the GPU under the guest in the middle of a demo: the kernel's
    // vfio-pci hands back all ones from BAR0 and config space, and its reset gives up.
    let r = rig();
    let mut v = r.open().unwrap();
    r.twin.poke(0, 0, &0x1b2000a1u32.to_le_bytes());
    r.twin.poke(7, 0, &0x2335_10deu32.to_le_bytes());
    r.twin.poke(7, 8, &0x0302_00a1u32.to_le_bytes());
    assert!(v.is_present());
    r.twin.unplug();
    // vfio-pci keeps answering the ids from its own copy: they cannot tell.
    assert_eq!(v.config_read(0, 2).unwrap(), 0x10de);
    assert!(!v.is_present(), "the class dword reads all ones: gone");
    assert_eq!(v.read32(0), 0xffff_ffff);
    v.config_write(4, 2, 0x6).unwrap();
    assert_eq!(
        v.config_read(4, 2).unwrap(),
        0xffff,
        "the write went nowhere"
    );
    let m = v.reset().unwrap_err().to_string();
    assert!(m.contains("VFIO_DEVICE_RESET"), "{m}");
}

#[test]
fn node_errors_say_what_to_do() {
    let r = rig();
    r.twin
        .0
        .lock()
        .unwrap()
        .open_errors
        .insert("dev/vfio/12".into(), libc::EACCES);
    let m = r.open().unwrap_err().to_string();
    assert!(
        m.contains("dev/vfio/12") && m.contains("run as root"),
        "{m}"
    );

    let r = rig();
    r.twin
        .0
        .lock()
        .unwrap()
        .open_errors
        .insert("dev/vfio/12".into(), libc::EBUSY);
    let m = r.open().unwrap_err().to_string();
    assert!(m.contains("another process"), "{m}");

    let r = rig();
    r.twin
        .0
        .lock()
        .unwrap()
        .nodes
        .remove(std::path::Path::new("dev/vfio/vfio"));
    let m = r.open().unwrap_err().to_string();
    assert!(m.contains("modprobe vfio-pci"), "{m}");

    let r = rig();
    r.twin.0.lock().unwrap().extensions.clear();
    let m = r.open().unwrap_err().to_string();
    assert!(
        m.contains("type1v2") && m.contains("vfio_iommu_type1"),
        "{m}"
    );
}

#[test]
fn reset_turns_bus_mastering_off_first_and_refuses_without_flr() {
    let r = rig();
    let mut v = r.open().unwrap();
    v.reset().unwrap();
    let calls = r.calls();
    let reset = calls.iter().position(|c| c == "reset").unwrap();
    let before = calls[..reset]
        .iter()
        .rev()
        .find(|c| c.starts_with("command"))
        .unwrap();
    let cmd = u16::from_str_radix(before.trim_start_matches("command 0x"), 16).unwrap();
    assert_eq!(cmd & 0x4, 0, "{calls:?}");
    assert_eq!(
        r.command() & 0x4,
        0,
        "left off: the boot turns it on once WPR2 is down and the FSP booted"
    );
    drop(v);

    let r = rig();
    r.twin.0.lock().unwrap().device_flags = b::VFIO_DEVICE_FLAGS_PCI;
    let mut v = r.open().unwrap();
    let m = v.reset().unwrap_err().to_string();
    assert!(m.starts_with("VFIO_DEVICE_RESET: "), "{m}");
    assert!(
        m.contains("offers VFIO no reset") && m.contains("secondary bus reset"),
        "{m}"
    );
    assert_eq!(r.twin.0.lock().unwrap().resets, 0);
}

#[test]
fn an_iommu_without_interrupt_remapping_names_allow_unsafe_interrupts() {
    // What a real kernel did in the QEMU guest behind virtio-iommu (tests/vm/run).
    let r = rig();
    r.twin.0.lock().unwrap().no_interrupt_remapping = true;
    let m = r.open().unwrap_err().to_string();
    assert!(m.contains("VFIO_SET_IOMMU"), "{m}");
    assert!(m.contains("allow_unsafe_interrupts=1"), "{m}");
}

#[test]
fn config_space_goes_through_the_config_region() {
    let r = rig();
    r.twin.poke(7, 0, &[0xde, 0x10, 0x35, 0x23]);
    let v = r.open().unwrap();
    assert_eq!(v.config_read(0, 2).unwrap(), 0x10de);
    assert_eq!(v.config_read(0, 4).unwrap(), 0x2335_10de);
    v.config_write(0x40, 1, 0xab).unwrap();
    assert_eq!(r.twin.peek(7, 0x40, 1), [0xab]);
    assert!(v.config_read(1, 2).is_err(), "misaligned");
    assert!(v.config_read(0, 3).is_err());
}

#[test]
fn a_second_process_is_refused_by_the_lock() {
    let r = rig();
    let _v = r.open().unwrap();
    let m = r.open().unwrap_err().to_string();
    assert!(
        m.contains(&format!(
            "GPU {GPU} is in use by process {}",
            std::process::id()
        )),
        "{m}"
    );
}

#[test]
fn region_info_parses_sparse_caps_and_rejects_broken_chains() {
    let twin = Twin::gpu(
        12,
        GPU,
        4 << 20,
        Some(vec![(0, 1 << 20), (3 << 20, 1 << 20)]),
    );
    let fd = twin.open(std::path::Path::new("/x/dev/vfio/12")).unwrap();
    let raw = twin.region_info(&fd, 1).unwrap();
    let info = parse_region_info(&raw).unwrap();
    assert_eq!(info.size, 4 << 20);
    assert_eq!(
        info.sparse.as_deref(),
        Some(
            &[
                Area {
                    offset: 0,
                    size: 1 << 20
                },
                Area {
                    offset: 3 << 20,
                    size: 1 << 20
                }
            ][..]
        )
    );
    assert_eq!(mmap_plan(&info).len(), 2);
    // Truncated: the chain points past the end.
    assert!(parse_region_info(&raw[..40]).is_err());
    // A chain that loops.
    let mut looped = raw.clone();
    looped[36..40].copy_from_slice(&32u32.to_ne_bytes());
    assert!(parse_region_info(&looped).unwrap_err().contains("loops"));
    assert!(parse_region_info(&raw[..16]).is_err());
    // Areas outside the region or unaligned are not mapped; no MMAP flag maps nothing.
    let odd = RegionInfo {
        flags: b::VFIO_REGION_INFO_FLAG_MMAP,
        size: 1 << 20,
        offset: 0,
        sparse: Some(vec![
            Area {
                offset: 0x800,
                size: 0x1000,
            },
            Area {
                offset: 0xff000,
                size: 0x2000,
            },
            Area {
                offset: 0x1000,
                size: 0x1000,
            },
        ]),
    };
    assert_eq!(
        mmap_plan(&odd),
        [Area {
            offset: 0x1000,
            size: 0x1000
        }]
    );
    assert!(mmap_plan(&RegionInfo { flags: 0, ..odd }).is_empty());
}

#[cfg(feature = "iommufd")]
#[test]
fn iommufd_binds_the_cdev_to_an_ioas_and_maps_dma_there() {
    let mut r = rig();
    r.tree.write(
        &format!("sys/bus/pci/devices/{GPU}/vfio-dev/vfio0/dev"),
        "511:0\n",
    );
    r.opts.backend = IommuBackend::Iommufd;
    let mut v = r.open().unwrap();
    let calls = r.calls();
    assert!(calls.contains(&"open dev/iommu".to_string()), "{calls:?}");
    assert!(
        calls.contains(&"open dev/vfio/devices/vfio0".to_string()),
        "{calls:?}"
    );
    assert!(calls.contains(&"bind_and_attach".to_string()));
    assert!(
        !calls.iter().any(|c| c.starts_with("set_iommu")),
        "no container: {calls:?}"
    );
    let m = v.dma_alloc(4096, false).unwrap();
    assert_eq!(r.twin.0.lock().unwrap().dma.len(), 1);
    // SAFETY: no view of `m` is used after this and no device uses it.
    unsafe { v.dma_free(m) };
    assert_eq!(
        r.twin.0.lock().unwrap().dma.len(),
        1,
        "the spare chunk stays mapped"
    );
    drop(v);
    assert!(r.twin.0.lock().unwrap().dma.is_empty(), "unmapped at close");
    assert!(r.calls().contains(&"ioas_iova_ranges".to_string()));

    // The IOAS's ranges bound the IOVAs as type1's do.
    r.twin.0.lock().unwrap().iova_ranges = Some(vec![(6 << 30, (6 << 30) + (4 << 20) - 1)]);
    let mut v = r.open().unwrap();
    let m = v.dma_alloc(4096, false).unwrap();
    assert_eq!(m.bus_pages[0], 6 << 30);
    // SAFETY: no view of `m` is used after this and no device uses it.
    unsafe { v.dma_free(m) };
    drop(v);
    r.twin.0.lock().unwrap().iova_ranges = Some(vec![(0, 0xffff_ffff)]);
    let e = r.open().unwrap_err().to_string();
    assert!(
        e.contains("IOMMU_IOAS_IOVA_RANGES (usable IOVA ranges)")
            && e.contains("[0x0, 0xffffffff]"),
        "{e}"
    );
}

/// With the `iommufd` feature the default backend takes iommufd where the kernel offers it
/// for the device (/dev/iommu and its cdev), type1 elsewhere: tests/vm/run's iommufd guest
/// showed the feature's build opening a type1 container, the CLI having no way to ask.
#[cfg(feature = "iommufd")]
#[test]
fn iommufd_feature_default_takes_iommufd_where_the_kernel_offers_it() {
    let r = rig();
    assert_eq!(r.opts.backend, IommuBackend::Auto);
    // No /dev/iommu, no cdev (a kernel without CONFIG_IOMMUFD): a type1 container.
    drop(r.open().unwrap());
    assert!(
        r.calls().iter().any(|c| c.starts_with("set_iommu")),
        "{:?}",
        r.calls()
    );
    assert!(!r.calls().contains(&"bind_and_attach".to_string()));
    r.twin.0.lock().unwrap().calls.clear();
    r.tree.write("dev/iommu", "");
    r.tree.write(
        &format!("sys/bus/pci/devices/{GPU}/vfio-dev/vfio0/dev"),
        "511:0\n",
    );
    drop(r.open().unwrap());
    assert!(
        r.calls().contains(&"bind_and_attach".to_string()),
        "{:?}",
        r.calls()
    );
    assert!(!r.calls().iter().any(|c| c.starts_with("set_iommu")));
}
