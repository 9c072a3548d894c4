//! A fake sysfs tree in a temporary directory, for tests of everything that reads or writes
//! sysfs (`list`, `bind`/`unbind`, VFIO's group checks).

use std::fs;
use std::os::unix::fs::symlink;
use std::path::PathBuf;

use super::{Sysfs, parse_address};

/// A temporary root holding `sys/`, `dev/` and `proc/`.
pub struct FakeSysfs {
    dir: tempfile::TempDir,
}

/// A device to add.
pub struct FakeDevice<'a> {
    pub bdf: &'a str,
    pub vendor: u16,
    pub device: u16,
    pub class: u32,
    pub group: Option<u32>,
    pub driver: Option<&'a str>,
}

impl FakeDevice<'_> {
    /// An NVIDIA 3D controller (an H200) at `bdf`.
    pub fn gpu(bdf: &str) -> FakeDevice<'_> {
        FakeDevice {
            bdf,
            vendor: 0x10de,
            device: 0x2335,
            class: 0x030200,
            group: Some(12),
            driver: None,
        }
    }
}

impl FakeSysfs {
    /// An empty tree (no devices, no IOMMU groups).
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        for d in [
            "sys/bus/pci/devices",
            "sys/bus/pci/drivers",
            "sys/kernel/iommu_groups",
            "sys/kernel/mm/hugepages/hugepages-2048kB",
            "dev/vfio",
            "proc",
        ] {
            fs::create_dir_all(dir.path().join(d)).expect("mkdir");
        }
        fs::write(dir.path().join("sys/bus/pci/drivers_probe"), "").expect("write");
        FakeSysfs { dir }
    }

    /// The root as a [`Sysfs`].
    pub fn sysfs(&self) -> Sysfs {
        Sysfs::at(self.dir.path())
    }

    /// `root/rel`.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Reads `root/rel` (empty when missing).
    pub fn read(&self, rel: &str) -> String {
        fs::read_to_string(self.path(rel)).unwrap_or_default()
    }

    /// Writes `root/rel`, creating directories.
    pub fn write(&self, rel: &str, text: &str) {
        let p = self.path(rel);
        fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        fs::write(p, text).expect("write");
    }

    /// Makes driver `name` known (its directory with `bind`/`unbind`).
    pub fn add_driver(&self, name: &str) {
        let d = format!("sys/bus/pci/drivers/{name}");
        self.write(&format!("{d}/bind"), "");
        self.write(&format!("{d}/unbind"), "");
    }

    /// Adds a device.
    pub fn add_device(&self, dev: FakeDevice<'_>) {
        parse_address(dev.bdf).expect("fake device address");
        let d = format!("sys/bus/pci/devices/{}", dev.bdf);
        self.write(&format!("{d}/vendor"), &format!("{:#06x}\n", dev.vendor));
        self.write(&format!("{d}/device"), &format!("{:#06x}\n", dev.device));
        self.write(&format!("{d}/class"), &format!("{:#08x}\n", dev.class));
        self.write(&format!("{d}/driver_override"), "(null)\n");
        self.write(
            &format!("{d}/resource"),
            "0x00000000fa000000 0x00000000faffffff 0x0000000000040200\n\
             0x0000380000000000 0x0000381fffffffff 0x000000000014220c\n\
             0x0000000000000000 0x0000000000000000 0x0000000000000000\n\
             0x0000382000000000 0x0000382001ffffff 0x000000000014220c\n",
        );
        if let Some(g) = dev.group {
            self.join_group(dev.bdf, g);
        }
        self.set_driver(dev.bdf, dev.driver);
    }

    /// Puts device `bdf` in IOMMU group `g` (the links both ways).
    pub fn join_group(&self, bdf: &str, g: u32) {
        let gd = format!("sys/kernel/iommu_groups/{g}/devices");
        fs::create_dir_all(self.path(&gd)).expect("mkdir");
        symlink(
            format!("../../../../kernel/iommu_groups/{g}"),
            self.path(&format!("sys/bus/pci/devices/{bdf}/iommu_group")),
        )
        .expect("symlink");
        symlink(
            format!("../../../../bus/pci/devices/{bdf}"),
            self.path(&format!("{gd}/{bdf}")),
        )
        .expect("symlink");
    }

    /// Binds `bdf` to `driver` (or unbinds it), as the kernel would.
    pub fn set_driver(&self, bdf: &str, driver: Option<&str>) {
        let link = self.path(&format!("sys/bus/pci/devices/{bdf}/driver"));
        let _ = fs::remove_file(&link);
        if let Some(drv) = driver {
            self.add_driver(drv);
            symlink(format!("../../drivers/{drv}"), link).expect("symlink");
        }
    }

    /// Creates the VFIO node of `group` (`dev/vfio/N`).
    pub fn add_vfio_node(&self, group: u32) {
        self.write(&format!("dev/vfio/{group}"), "");
    }

    /// Makes `group` VFIO's no-IOMMU stand-in.
    pub fn make_noiommu(&self, group: u32) {
        self.write(
            &format!("sys/kernel/iommu_groups/{group}/name"),
            "vfio-noiommu\n",
        );
        let _ = fs::remove_file(self.path(&format!("dev/vfio/{group}")));
        self.write(&format!("dev/vfio/noiommu-{group}"), "");
    }
}
