//! PCI functions as sysfs describes them: discovery of NVIDIA GPUs, their drivers and IOMMU
//! groups, and whether VFIO can take them (`nvbare list`).
//!
//! Every path goes through a [`Sysfs`] root, so tests build a fake tree in a temporary
//! directory.

pub mod ids;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use nvbare_core::hal::PciAddress;
use serde::Serialize;

/// NVIDIA's PCI vendor id.
pub const NVIDIA_VENDOR: u16 = 0x10de;

/// The name of the VFIO PCI driver in sysfs.
pub const VFIO_PCI: &str = "vfio-pci";

/// Drivers a device may be bound to without making its IOMMU group unusable for VFIO (the
/// kernel's own list in `drivers/vfio`: VFIO drivers and pci-stub).
fn driver_keeps_group_viable(driver: &str) -> bool {
    driver.starts_with("vfio") || driver == "pci-stub"
}

/// Text that is not a PCI address.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} is not a PCI address; write it as DOMAIN:BUS:DEVICE.FUNCTION (0000:41:00.0) or \
     BUS:DEVICE.FUNCTION (41:00.0), as `nvbare list` prints it"
)]
pub struct BadAddress(pub String);

/// Parses `0000:41:00.0` or `41:00.0`.
pub fn parse_address(s: &str) -> Result<PciAddress, BadAddress> {
    let bad = || BadAddress(s.to_string());
    let parts: Vec<&str> = s.trim().split(':').collect();
    let (domain, bus, devfn) = match parts.as_slice() {
        [d, b, df] => (u16::from_str_radix(d, 16).map_err(|_| bad())?, *b, *df),
        [b, df] => (0, *b, *df),
        _ => return Err(bad()),
    };
    let (dev, func) = devfn.split_once('.').ok_or_else(bad)?;
    let bus = u8::from_str_radix(bus, 16).map_err(|_| bad())?;
    let device = u8::from_str_radix(dev, 16).map_err(|_| bad())?;
    let function = func.parse::<u8>().map_err(|_| bad())?;
    if device >= 32 || function >= 8 {
        return Err(bad());
    }
    Ok(PciAddress {
        domain,
        bus,
        device,
        function,
    })
}

/// A sysfs tree: `/` on a real system, a temporary directory in tests.
#[derive(Clone, Debug)]
pub struct Sysfs {
    root: PathBuf,
}

impl Default for Sysfs {
    fn default() -> Self {
        Self::system()
    }
}

impl Sysfs {
    /// The running system's (`/sys`, `/dev`, `/proc` under `/`).
    pub fn system() -> Self {
        Self::at("/")
    }

    /// The tree under `root` (which holds `sys/`, `dev/`, `proc/`).
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Sysfs { root: root.into() }
    }

    /// `root/rel`.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel.trim_start_matches('/'))
    }

    /// `sys/bus/pci/devices`.
    pub fn devices_dir(&self) -> PathBuf {
        self.path("sys/bus/pci/devices")
    }

    /// The device's sysfs directory.
    pub fn device_dir(&self, addr: PciAddress) -> PathBuf {
        self.devices_dir().join(addr.to_string())
    }

    /// Whether the device exists.
    pub fn exists(&self, addr: PciAddress) -> bool {
        self.device_dir(addr).is_dir()
    }

    /// A hex attribute of the device (`vendor`, `device`, `class`).
    pub fn hex_attr(&self, addr: PciAddress, attr: &str) -> Option<u32> {
        read_hex(&self.device_dir(addr).join(attr))
    }

    /// The driver the device is bound to.
    pub fn driver(&self, addr: PciAddress) -> Option<String> {
        link_name(&self.device_dir(addr).join("driver"))
    }

    /// The device's IOMMU group number (none when the IOMMU is off and no-IOMMU mode is not
    /// in use).
    pub fn iommu_group(&self, addr: PciAddress) -> Option<u32> {
        link_name(&self.device_dir(addr).join("iommu_group")).and_then(|g| g.parse().ok())
    }

    /// Whether the kernel has an IOMMU on: `/sys/kernel/iommu_groups` holds groups that are
    /// not VFIO's no-IOMMU stand-ins.
    pub fn iommu_enabled(&self) -> bool {
        let Ok(dir) = fs::read_dir(self.path("sys/kernel/iommu_groups")) else {
            return false;
        };
        dir.filter_map(Result::ok)
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .any(|g| !self.is_noiommu_group(g))
    }

    /// Whether VFIO was loaded with its no-IOMMU mode on (`vfio`'s module parameter
    /// `enable_unsafe_noiommu_mode` reads `Y`): vfio-pci then gives a device without an IOMMU
    /// group a `vfio-noiommu` group of its own when it binds, not before.
    pub fn vfio_noiommu_enabled(&self) -> bool {
        fs::read_to_string(self.path("sys/module/vfio/parameters/enable_unsafe_noiommu_mode"))
            .is_ok_and(|v| v.trim() == "Y")
    }

    /// Whether group `group` is VFIO's no-IOMMU stand-in (named `vfio-noiommu`).
    pub fn is_noiommu_group(&self, group: u32) -> bool {
        fs::read_to_string(self.path(&format!("sys/kernel/iommu_groups/{group}/name")))
            .is_ok_and(|n| n.trim() == "vfio-noiommu")
    }

    /// The devices of IOMMU group `group`, with their drivers, sorted by address.
    pub fn group_members(&self, group: u32) -> io::Result<Vec<GroupMember>> {
        let dir = self.path(&format!("sys/kernel/iommu_groups/{group}/devices"));
        let mut out = Vec::new();
        for entry in fs::read_dir(dir)? {
            let name = entry?.file_name();
            let Some(addr) = name.to_str().and_then(|n| parse_address(n).ok()) else {
                continue;
            };
            let class = self.hex_attr(addr, "class").unwrap_or(0);
            out.push(GroupMember {
                address: addr,
                driver: self.driver(addr),
                vendor: self.hex_attr(addr, "vendor").map_or(0, |v| v as u16),
                // 0x0604xx: PCI-to-PCI bridge; the kernel lets bridges share a VFIO group.
                is_bridge: class >> 8 == 0x0604,
            });
        }
        out.sort_by_key(|m| m.address.to_bdf());
        Ok(out)
    }

    /// Members of `group` other than `addr` that keep VFIO from using the group: bound to a
    /// driver that is neither a VFIO driver nor pci-stub, and not a bridge.
    pub fn group_blockers(&self, group: u32, addr: PciAddress) -> io::Result<Vec<GroupMember>> {
        Ok(self
            .group_members(group)?
            .into_iter()
            .filter(|m| m.address != addr && m.blocks_vfio())
            .collect())
    }

    /// The VFIO group node for `group` (`/dev/vfio/N`, or `/dev/vfio/noiommu-N`).
    pub fn vfio_group_node(&self, group: u32) -> PathBuf {
        if self.is_noiommu_group(group) {
            self.path(&format!("dev/vfio/noiommu-{group}"))
        } else {
            self.path(&format!("dev/vfio/{group}"))
        }
    }

    /// The device's BARs from its `resource` file: `(start, end, flags)` per line.
    pub fn resources(&self, addr: PciAddress) -> io::Result<Vec<Resource>> {
        let text = fs::read_to_string(self.device_dir(addr).join("resource"))?;
        Ok(parse_resources(&text))
    }
}

/// One line of a sysfs `resource` file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resource {
    /// Bus address of the first byte (0 when unassigned).
    pub start: u64,
    /// Bus address of the last byte.
    pub end: u64,
    /// `IORESOURCE_*` flags.
    pub flags: u64,
}

impl Resource {
    /// Size in bytes (0 when unassigned).
    pub fn size(&self) -> u64 {
        if self.start == 0 && self.end == 0 {
            0
        } else {
            self.end.saturating_sub(self.start).saturating_add(1)
        }
    }
}

/// Parses a sysfs `resource` file (`0x%016llx 0x%016llx 0x%016llx` per line; unparsable
/// lines count as unassigned so indices stay aligned with BAR numbers).
pub fn parse_resources(text: &str) -> Vec<Resource> {
    text.lines()
        .map(|line| {
            let mut f = line
                .split_whitespace()
                .map(|w| u64::from_str_radix(w.trim_start_matches("0x"), 16).unwrap_or(0));
            Resource {
                start: f.next().unwrap_or(0),
                end: f.next().unwrap_or(0),
                flags: f.next().unwrap_or(0),
            }
        })
        .collect()
}

/// A device of an IOMMU group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupMember {
    /// Its address.
    pub address: PciAddress,
    /// The driver it is bound to.
    pub driver: Option<String>,
    /// Its vendor id.
    pub vendor: u16,
    /// Whether it is a PCI bridge.
    pub is_bridge: bool,
}

impl GroupMember {
    /// Whether this device keeps VFIO from using its group.
    pub fn blocks_vfio(&self) -> bool {
        !self.is_bridge
            && self
                .driver
                .as_deref()
                .is_some_and(|d| !driver_keeps_group_viable(d))
    }
}

impl std::fmt::Display for GroupMember {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({})",
            self.address,
            self.driver.as_deref().unwrap_or("no driver")
        )
    }
}

/// Lists group members as `a (drv), b (drv)`.
pub fn join_members(members: &[GroupMember]) -> String {
    members
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn read_hex(path: &Path) -> Option<u32> {
    let s = fs::read_to_string(path).ok()?;
    u32::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok()
}

fn link_name(path: &Path) -> Option<String> {
    let target = fs::read_link(path).ok()?;
    Some(target.file_name()?.to_string_lossy().into_owned())
}

/// Whether VFIO can open a GPU now, and if not, why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum VfioReadiness {
    /// Bound to vfio-pci, group viable, group node accessible.
    Ready,
    /// Bound to vfio-pci in VFIO's no-IOMMU mode: usable only with the unsafe option (no DMA
    /// isolation).
    ReadyNoIommuUnsafe,
    /// Not ready; `reason` says why and what to do.
    NotReady {
        /// What is missing, with the remedy.
        reason: String,
    },
}

impl std::fmt::Display for VfioReadiness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Ready => f.write_str("yes"),
            Self::ReadyNoIommuUnsafe => f.write_str("no-IOMMU only (UNSAFE: no DMA isolation)"),
            Self::NotReady { reason } => write!(f, "no: {reason}"),
        }
    }
}

/// One NVIDIA GPU as sysfs describes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PciFunction {
    /// `0000:41:00.0`.
    pub address: String,
    /// PCI device id.
    pub device_id: u16,
    /// PCI class code (0x030000 VGA, 0x030200 3D).
    pub class: u32,
    /// The chip the device id names, or `None` for an id nvbare does not know.
    pub chip: Option<String>,
    /// The board's name, where nvbare knows it.
    pub board: Option<String>,
    /// The bound driver.
    pub driver: Option<String>,
    /// The IOMMU group.
    pub iommu_group: Option<u32>,
    /// Whether VFIO can take it now.
    pub vfio: VfioReadiness,
}

/// Whether VFIO can open `addr` now (driver, group viability, node access).
pub fn vfio_readiness(sysfs: &Sysfs, addr: PciAddress) -> VfioReadiness {
    let not = |reason: String| VfioReadiness::NotReady { reason };
    // The IOMMU first: with it off, vfio-pci cannot take the GPU at all (the kernel's
    // vfio_group_find_or_alloc fails the probe with -EINVAL when a device has no group and
    // no-IOMMU mode is off), so "run `nvbare bind`" would send the user to a second error.
    if sysfs.iommu_group(addr).is_none() && !sysfs.iommu_enabled() {
        return not(
            "the IOMMU is off (no IOMMU group): turn it on (intel_iommu=on or amd_iommu=on on \
             the kernel command line, VT-d or AMD-Vi in the firmware)"
                .into(),
        );
    }
    let driver = sysfs.driver(addr);
    if driver.as_deref() != Some(VFIO_PCI) {
        let now = driver.map_or("no driver".to_string(), |d| format!("bound to {d}"));
        return not(format!("{now}; run `nvbare bind {addr}`"));
    }
    let Some(group) = sysfs.iommu_group(addr) else {
        return not(
            "no IOMMU group: turn the IOMMU on (intel_iommu=on or amd_iommu=on on \
                    the kernel command line)"
                .into(),
        );
    };
    match sysfs.group_blockers(group, addr) {
        Ok(b) if !b.is_empty() => {
            return not(format!(
                "IOMMU group {group} not viable: {} also in it; bind them to vfio-pci or unbind \
                 them",
                join_members(&b)
            ));
        }
        Ok(_) => {}
        Err(e) => return not(format!("cannot read IOMMU group {group}: {e}")),
    }
    let node = sysfs.vfio_group_node(group);
    if !node.exists() {
        return not(format!("{} missing (is vfio-pci loaded?)", node.display()));
    }
    if nix::unistd::access(
        &node,
        nix::unistd::AccessFlags::R_OK | nix::unistd::AccessFlags::W_OK,
    )
    .is_err()
    {
        return not(format!(
            "no permission on {}: run as root or give your user access (chown, or a udev rule)",
            node.display()
        ));
    }
    if sysfs.is_noiommu_group(group) {
        VfioReadiness::ReadyNoIommuUnsafe
    } else {
        VfioReadiness::Ready
    }
}

/// Enumerates NVIDIA display/3D controllers (class 0x03xxxx; the HDMI audio and USB functions
/// of a board are left out).
pub fn scan(sysfs: &Sysfs) -> io::Result<Vec<PciFunction>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(sysfs.devices_dir())? {
        let name = entry?.file_name();
        let Some(addr) = name.to_str().and_then(|n| parse_address(n).ok()) else {
            continue;
        };
        if sysfs.hex_attr(addr, "vendor") != Some(u32::from(NVIDIA_VENDOR)) {
            continue;
        }
        let class = sysfs.hex_attr(addr, "class").unwrap_or(0);
        if class >> 16 != 0x03 {
            continue;
        }
        // CAST: PCI device ids are 16 bits.
        let device_id = sysfs.hex_attr(addr, "device").unwrap_or(0) as u16;
        out.push(PciFunction {
            address: addr.to_string(),
            device_id,
            class,
            chip: ids::chip_of_device_id(device_id).map(|c| c.name().to_string()),
            board: ids::board_name(device_id).map(str::to_string),
            driver: sysfs.driver(addr),
            iommu_group: sysfs.iommu_group(addr),
            vfio: vfio_readiness(sysfs, addr),
        });
    }
    out.sort_by(|a, b| a.address.cmp(&b.address));
    Ok(out)
}

/// `nvbare list` could not read sysfs.
#[derive(Debug, thiserror::Error)]
#[error("cannot read {path}: {source}; is sysfs mounted at /sys?")]
pub struct ListError {
    /// The directory.
    pub path: PathBuf,
    /// The cause.
    #[source]
    pub source: io::Error,
}

/// The text `nvbare list` prints for `funcs` (a table, or JSON with `json`).
pub fn render_list(funcs: &[PciFunction], json: bool) -> String {
    if json {
        // PANIC: these types serialize infallibly (no maps with non-string keys).
        return serde_json::to_string_pretty(funcs).expect("serializable") + "\n";
    }
    if funcs.is_empty() {
        return "no NVIDIA GPU found\n".into();
    }
    let mut s = format!(
        "{:<14} {:<8} {:<22} {:<10} {:<6} {}\n",
        "address", "device", "chip", "driver", "iommu", "vfio-ready"
    );
    for f in funcs {
        let chip = match (&f.chip, &f.board) {
            (Some(c), Some(b)) => format!("{c} ({b})"),
            (Some(c), None) => c.clone(),
            (None, _) => "unknown id".to_string(),
        };
        s += &format!(
            "{:<14} {:<8} {:<22} {:<10} {:<6} {}\n",
            f.address,
            format!("{:#06x}", f.device_id),
            chip,
            f.driver.as_deref().unwrap_or("-"),
            f.iommu_group.map_or("-".into(), |g| g.to_string()),
            f.vfio
        );
    }
    s
}

/// `nvbare list [--json]`: prints the NVIDIA GPUs of this machine.
pub fn list(json: bool) -> Result<(), ListError> {
    let sysfs = Sysfs::system();
    let funcs = scan(&sysfs).map_err(|source| ListError {
        path: sysfs.devices_dir(),
        source,
    })?;
    print!("{}", render_list(&funcs, json));
    Ok(())
}

#[cfg(test)]
pub(crate) mod fake;

#[cfg(test)]
mod tests;
