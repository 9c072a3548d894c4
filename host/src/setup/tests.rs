use std::cell::RefCell;
use std::fs;
use std::os::unix::fs::symlink;

use super::*;
use crate::pci::fake::{FakeDevice, FakeSysfs};

/// A fake kernel: records every write, stores it in the file, and reacts as Linux does to
/// `driver_override`, `driver/unbind` and `drivers_probe`.
struct FakeKernel<'a> {
    tree: &'a FakeSysfs,
    /// The driver a probe binds when no override is set.
    default_driver: Option<&'static str>,
    /// Writes refused with EACCES.
    read_only: bool,
    writes: RefCell<Vec<(String, String)>>,
}

impl<'a> FakeKernel<'a> {
    fn new(tree: &'a FakeSysfs) -> Self {
        FakeKernel {
            tree,
            default_driver: Some("nvidia"),
            read_only: false,
            writes: RefCell::new(Vec::new()),
        }
    }

    fn writes(&self) -> Vec<(String, String)> {
        self.writes.borrow().clone()
    }
}

impl SysfsWrite for FakeKernel<'_> {
    fn write(&self, path: &Path, value: &str) -> io::Result<()> {
        let root = self.tree.path("");
        let rel = path.strip_prefix(&root).expect("inside the tree");
        let rel = rel.to_string_lossy().into_owned();
        if self.read_only {
            return Err(io::Error::from(io::ErrorKind::PermissionDenied));
        }
        self.writes
            .borrow_mut()
            .push((rel.clone(), value.to_string()));
        if let Some(dev) = rel.strip_prefix("sys/bus/pci/devices/") {
            let (bdf, attr) = dev.split_once('/').expect("attribute");
            match attr {
                "driver_override" => {
                    let v = if value.trim().is_empty() {
                        "(null)"
                    } else {
                        value.trim()
                    };
                    self.tree.write(&rel, &format!("{v}\n"));
                }
                "driver/unbind" => {
                    assert_eq!(value, bdf);
                    self.tree.set_driver(bdf, None);
                }
                _ => panic!("unexpected write {rel}"),
            }
        } else if rel == "sys/bus/pci/drivers_probe" {
            let ov = self
                .tree
                .read(&format!("sys/bus/pci/devices/{value}/driver_override"));
            let drv = match ov.trim() {
                "(null)" => self.default_driver.map(str::to_string),
                d => Some(d.to_string()),
            };
            if let Some(d) = drv
                && self.tree.path(&format!("sys/bus/pci/drivers/{d}")).is_dir()
            {
                self.tree.set_driver(value, Some(&d));
                // As Linux: vfio-pci binding a device without an IOMMU group, vfio loaded
                // with enable_unsafe_noiommu_mode=1, gives it a `vfio-noiommu` group of its
                // own (vfio_group_find_or_alloc -> vfio_noiommu_group_alloc).
                let dev = format!("sys/bus/pci/devices/{value}");
                if d == "vfio-pci"
                    && !self.tree.path(&format!("{dev}/iommu_group")).exists()
                    && self.tree.sysfs().vfio_noiommu_enabled()
                {
                    self.tree.join_group(value, 0);
                    self.tree.make_noiommu(0);
                }
            }
        } else if let Some(drv) = rel.strip_prefix("sys/bus/pci/drivers/") {
            let d = drv.strip_suffix("/bind").expect("bind");
            self.tree.set_driver(value, Some(d));
        } else {
            panic!("unexpected write {rel}");
        }
        Ok(())
    }
}

const GPU: &str = "0000:41:00.0";

fn gpu() -> PciAddress {
    parse_address(GPU).unwrap()
}

/// An H200 bound to nvidia in group 12, vfio-pci loaded.
fn tree() -> FakeSysfs {
    let t = FakeSysfs::new();
    t.add_device(FakeDevice {
        driver: Some("nvidia"),
        ..FakeDevice::gpu(GPU)
    });
    t.add_driver("vfio-pci");
    t
}

#[test]
fn bind_writes_override_unbind_probe_in_order_and_reports() {
    let t = tree();
    let k = FakeKernel::new(&t);
    let r = bind_in(&t.sysfs(), &k, gpu()).unwrap();
    assert_eq!(
        k.writes(),
        [
            (
                format!("sys/bus/pci/devices/{GPU}/driver_override"),
                "vfio-pci".into()
            ),
            (
                format!("sys/bus/pci/devices/{GPU}/driver/unbind"),
                GPU.into()
            ),
            ("sys/bus/pci/drivers_probe".into(), GPU.into()),
        ]
    );
    assert_eq!(t.sysfs().driver(gpu()).as_deref(), Some("vfio-pci"));
    assert_eq!(r.previous.as_deref(), Some("nvidia"));
    assert_eq!(
        r.to_string(),
        format!("{GPU}: bound to vfio-pci (was: nvidia)")
    );
}

#[test]
fn bind_of_an_unbound_device_skips_the_unbind_and_binding_twice_writes_nothing() {
    let t = tree();
    t.set_driver(GPU, None);
    let k = FakeKernel::new(&t);
    bind_in(&t.sysfs(), &k, gpu()).unwrap();
    assert_eq!(k.writes().len(), 2, "{:?}", k.writes());
    let k2 = FakeKernel::new(&t);
    let r = bind_in(&t.sysfs(), &k2, gpu()).unwrap();
    assert!(r.already && k2.writes().is_empty());
    assert!(r.to_string().contains("already bound to vfio-pci"));
}

#[test]
fn bind_refuses_with_the_iommu_off() {
    let t = FakeSysfs::new();
    t.add_device(FakeDevice {
        group: None,
        driver: Some("nvidia"),
        ..FakeDevice::gpu(GPU)
    });
    t.add_driver("vfio-pci");
    let k = FakeKernel::new(&t);
    let e = bind_in(&t.sysfs(), &k, gpu()).unwrap_err();
    assert!(matches!(e, SetupError::IommuOff), "{e:?}");
    let m = e.to_string();
    assert!(
        m.contains("intel_iommu=on") && m.contains("amd_iommu=on"),
        "{m}"
    );
    assert!(m.contains("UNSAFE"), "{m}");
    assert!(k.writes().is_empty());
}

/// Seen under a real kernel (tests/vm/run's no-IOMMU guest): with no IOMMU and vfio loaded
/// with enable_unsafe_noiommu_mode=1, a device has no group until vfio-pci binds it; bind must
/// not refuse it as "IOMMU off", and says the mode is UNSAFE.
#[test]
fn bind_in_noiommu_mode_binds_then_the_kernel_gives_the_group() {
    let t = FakeSysfs::new();
    t.add_device(FakeDevice {
        group: None,
        driver: None,
        ..FakeDevice::gpu(GPU)
    });
    t.add_driver("vfio-pci");
    t.write(
        "sys/module/vfio/parameters/enable_unsafe_noiommu_mode",
        "Y\n",
    );
    let k = FakeKernel::new(&t);
    let r = bind_in(&t.sysfs(), &k, gpu()).unwrap();
    assert!(r.noiommu && !r.already, "{r:?}");
    assert!(r.to_string().contains("no-IOMMU mode: UNSAFE"), "{r}");
    assert!(r.to_string().contains("--allow-noiommu-unsafe"), "{r}");
    let g = t
        .sysfs()
        .iommu_group(gpu())
        .expect("the group vfio-pci made");
    assert!(t.sysfs().is_noiommu_group(g));
    // Bound already: said so, still no-IOMMU.
    let r = bind_in(&t.sysfs(), &FakeKernel::new(&t), gpu()).unwrap();
    assert!(r.already && r.noiommu, "{r:?}");
    // vfio's mode off (`N`): the IOMMU is off, as before.
    let t = FakeSysfs::new();
    t.add_device(FakeDevice {
        group: None,
        driver: None,
        ..FakeDevice::gpu(GPU)
    });
    t.add_driver("vfio-pci");
    t.write(
        "sys/module/vfio/parameters/enable_unsafe_noiommu_mode",
        "N\n",
    );
    let e = bind_in(&t.sysfs(), &FakeKernel::new(&t), gpu()).unwrap_err();
    assert!(matches!(e, SetupError::IommuOff), "{e:?}");
}

#[test]
fn bind_refuses_a_group_shared_with_a_host_device_and_lists_it() {
    let t = tree();
    t.add_device(FakeDevice {
        vendor: 0x8086,
        class: 0x020000,
        driver: Some("ixgbe"),
        ..FakeDevice::gpu("0000:40:00.0")
    });
    let k = FakeKernel::new(&t);
    let e = bind_in(&t.sysfs(), &k, gpu()).unwrap_err();
    let m = e.to_string();
    assert!(
        matches!(e, SetupError::GroupNotViable { group: 12, .. }),
        "{e:?}"
    );
    assert!(m.contains("0000:40:00.0 (ixgbe)"), "{m}");
    assert!(k.writes().is_empty());
}

#[test]
fn bind_names_the_audio_function_that_must_follow() {
    let t = tree();
    t.add_device(FakeDevice {
        class: 0x040300,
        driver: Some("snd_hda_intel"),
        ..FakeDevice::gpu("0000:41:00.1")
    });
    let k = FakeKernel::new(&t);
    let r = bind_in(&t.sysfs(), &k, gpu()).unwrap();
    assert_eq!(r.also_bind.len(), 1);
    let m = r.to_string();
    assert!(m.contains("0000:41:00.1 (snd_hda_intel)"), "{m}");
    assert!(m.contains("nvbare bind 0000:41:00.1"), "{m}");
    // Binding the audio function too makes the group viable.
    let r2 = bind_in(&t.sysfs(), &k, parse_address("41:00.1").unwrap()).unwrap();
    assert!(r2.also_bind.is_empty(), "{r2}");
    let ready = crate::pci::vfio_readiness(&t.sysfs(), gpu()).to_string();
    assert!(
        ready.ends_with("dev/vfio/12 missing (is vfio-pci loaded?)"),
        "{ready}"
    );
}

#[test]
fn bind_refuses_while_processes_hold_the_gpu_through_nvidia() {
    let t = tree();
    t.write(
        &format!("proc/driver/nvidia/gpus/{GPU}/information"),
        "Model: NVIDIA H200\nDevice Minor: 3\n",
    );
    for (pid, comm, node) in [
        (4242, "nvidia-persiste", "/dev/nvidia3"),
        (777, "python3", "/dev/nvidia0"),
    ] {
        t.write(&format!("proc/{pid}/comm"), &format!("{comm}\n"));
        fs::create_dir_all(t.path(&format!("proc/{pid}/fd"))).unwrap();
        symlink(node, t.path(&format!("proc/{pid}/fd/5"))).unwrap();
        symlink("/dev/nvidiactl", t.path(&format!("proc/{pid}/fd/4"))).unwrap();
    }
    let k = FakeKernel::new(&t);
    let e = bind_in(&t.sysfs(), &k, gpu()).unwrap_err();
    let m = e.to_string();
    assert!(m.contains("4242 (nvidia-persiste)"), "{m}");
    assert!(
        !m.contains("777"),
        "a process on another GPU is not a holder: {m}"
    );
    assert!(m.contains("nvidia-persistenced"), "{m}");
    assert!(k.writes().is_empty());
}

#[test]
fn bind_without_vfio_pci_or_permission_says_what_to_do() {
    let t = FakeSysfs::new();
    t.add_device(FakeDevice {
        driver: Some("nvidia"),
        ..FakeDevice::gpu(GPU)
    });
    let k = FakeKernel::new(&t);
    let m = bind_in(&t.sysfs(), &k, gpu()).unwrap_err().to_string();
    assert!(m.contains("modprobe vfio-pci"), "{m}");

    let t = tree();
    let k = FakeKernel {
        read_only: true,
        ..FakeKernel::new(&t)
    };
    let e = bind_in(&t.sysfs(), &k, gpu()).unwrap_err();
    let m = e.to_string();
    assert!(matches!(e, SetupError::NotPermitted { .. }), "{e:?}");
    assert!(m.contains(&format!("sudo nvbare bind {GPU}")), "{m}");
    assert_eq!(t.sysfs().driver(gpu()).as_deref(), Some("nvidia"));
}

#[test]
fn bind_rejects_other_vendors_and_missing_devices() {
    let t = tree();
    t.add_device(FakeDevice {
        vendor: 0x1002,
        group: Some(20),
        ..FakeDevice::gpu("0000:05:00.0")
    });
    let k = FakeKernel::new(&t);
    let m = bind_in(&t.sysfs(), &k, parse_address("05:00.0").unwrap())
        .unwrap_err()
        .to_string();
    assert!(m.contains("not an NVIDIA device (vendor 0x1002)"), "{m}");
    let m = bind_in(&t.sysfs(), &k, parse_address("06:00.0").unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        m.contains("no PCI device 0000:06:00.0") && m.contains("nvbare list"),
        "{m}"
    );
    assert!(
        bind("nonsense")
            .unwrap_err()
            .to_string()
            .contains("not a PCI address")
    );
}

#[test]
fn a_bind_that_does_not_take_is_reported_and_undone() {
    let t = tree();
    // A kernel whose probe binds nothing (vfio-pci refuses the device).
    fs::remove_dir_all(t.path("sys/bus/pci/drivers/vfio-pci")).unwrap();
    fs::create_dir_all(t.path("sys/bus/pci/drivers/vfio-pci")).unwrap();
    struct Refusing<'a>(FakeKernel<'a>);
    impl SysfsWrite for Refusing<'_> {
        fn write(&self, path: &Path, value: &str) -> io::Result<()> {
            if path.ends_with("drivers_probe") {
                return Err(io::Error::from_raw_os_error(libc::EINVAL));
            }
            self.0.write(path, value)
        }
    }
    let k = Refusing(FakeKernel::new(&t));
    let e = bind_in(&t.sysfs(), &k, gpu()).unwrap_err();
    assert!(matches!(e, SetupError::Write { .. }), "{e:?}");
    assert!(e.to_string().contains("drivers_probe") && e.to_string().contains("dmesg"));
    // The override is cleared again and nvidia has the GPU back.
    assert_eq!(
        t.read(&format!("sys/bus/pci/devices/{GPU}/driver_override")),
        "(null)\n"
    );
    assert_eq!(t.sysfs().driver(gpu()).as_deref(), Some("nvidia"));
}

#[test]
fn unbind_clears_the_override_and_reprobes_the_default_driver() {
    let t = tree();
    let k = FakeKernel::new(&t);
    bind_in(&t.sysfs(), &k, gpu()).unwrap();
    let k = FakeKernel::new(&t);
    let r = unbind_in(&t.sysfs(), &k, gpu(), &t.path("")).unwrap();
    assert_eq!(
        k.writes(),
        [
            (
                format!("sys/bus/pci/devices/{GPU}/driver_override"),
                "\n".into()
            ),
            (
                format!("sys/bus/pci/devices/{GPU}/driver/unbind"),
                GPU.into()
            ),
            ("sys/bus/pci/drivers_probe".into(), GPU.into()),
        ]
    );
    assert_eq!(r.now.as_deref(), Some("nvidia"));
    assert!(r.to_string().contains("now bound to nvidia"));

    let m = unbind_in(&t.sysfs(), &k, gpu(), &t.path(""))
        .unwrap_err()
        .to_string();
    assert!(m.contains("not bound to vfio-pci (now: nvidia)"), "{m}");

    // With no default driver loaded the report says how to get one.
    bind_in(&t.sysfs(), &k, gpu()).unwrap();
    let k = FakeKernel {
        default_driver: None,
        ..FakeKernel::new(&t)
    };
    let r = unbind_in(&t.sysfs(), &k, gpu(), &t.path("")).unwrap();
    assert!(r.to_string().contains("modprobe nvidia"), "{r}");
}

#[test]
fn unbind_refuses_while_nvbare_drives_the_gpu() {
    let t = tree();
    let k = FakeKernel::new(&t);
    bind_in(&t.sysfs(), &k, gpu()).unwrap();
    let held =
        crate::lock::DeviceLock::acquire(&crate::lock::vfio_lock_path(&t.path(""), GPU), "GPU")
            .unwrap();
    let k = FakeKernel::new(&t);
    let m = unbind_in(&t.sysfs(), &k, gpu(), &t.path(""))
        .unwrap_err()
        .to_string();
    assert!(
        m.contains("driven by nvbare") && m.contains(&std::process::id().to_string()),
        "{m}"
    );
    assert!(k.writes().is_empty());
    drop(held);
    unbind_in(&t.sysfs(), &k, gpu(), &t.path("")).unwrap();
}
