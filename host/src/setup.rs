//! `nvbare bind BDF` / `nvbare unbind BDF`: hand a GPU to vfio-pci through sysfs
//! (`driver_override`, `unbind`, `drivers_probe`) and give it back, with the checks a user
//! needs first: the IOMMU is on, the IOMMU group can be used by VFIO, no process holds the GPU
//! through NVIDIA's driver, and the writes are permitted.
//!
//! Reads go through a [`Sysfs`] root and writes through [`SysfsWrite`], so tests run against a
//! fake tree and a fake kernel that reacts to the writes as the real one does.

use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use nvbare_core::hal::PciAddress;

use crate::pci::{
    BadAddress, GroupMember, NVIDIA_VENDOR, Sysfs, VFIO_PCI, join_members, parse_address,
};

/// How sysfs attributes are written: the kernel's files, or a test's fake kernel.
pub trait SysfsWrite {
    /// Writes `value` to the attribute at `path`.
    fn write(&self, path: &Path, value: &str) -> io::Result<()>;
}

/// Writes to the real sysfs attributes (the write returns once the kernel has acted on it:
/// an unbind or a probe is done when `write` returns).
#[derive(Clone, Copy, Debug, Default)]
pub struct KernelSysfs;

impl SysfsWrite for KernelSysfs {
    fn write(&self, path: &Path, value: &str) -> io::Result<()> {
        fs::OpenOptions::new()
            .write(true)
            .open(path)?
            .write_all(value.as_bytes())
    }
}

/// Why a bind or unbind did not happen.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The address did not parse.
    #[error(transparent)]
    BadAddress(#[from] BadAddress),
    /// No such PCI device.
    #[error("no PCI device {addr} (no {}); `nvbare list` shows the NVIDIA GPUs here", path.display())]
    NoSuchDevice {
        /// The address asked for.
        addr: PciAddress,
        /// The sysfs directory that is missing.
        path: PathBuf,
    },
    /// Not an NVIDIA function.
    #[error(
        "{addr} is not an NVIDIA device (vendor {vendor:#06x}); nvbare binds only NVIDIA functions"
    )]
    NotNvidia {
        /// The device.
        addr: PciAddress,
        /// Its vendor id.
        vendor: u16,
    },
    /// The IOMMU is off.
    #[error(
        "the IOMMU is off (no groups under /sys/kernel/iommu_groups): turn it on in the firmware \
         (VT-d or AMD-Vi) and on the kernel command line (intel_iommu=on iommu=pt, or \
         amd_iommu=on), then reboot. VFIO's no-IOMMU mode works without it but is UNSAFE: the GPU \
         can then write anywhere in memory (no DMA isolation); it needs vfio loaded with \
         enable_unsafe_noiommu_mode=1 and nvbare's --allow-noiommu-unsafe"
    )]
    IommuOff,
    /// The device has no IOMMU group although the IOMMU is on.
    #[error(
        "{addr} has no IOMMU group although the IOMMU is on; the IOMMU does not cover its PCI \
         segment: check dmesg for DMAR/AMD-Vi messages about it"
    )]
    NoGroup {
        /// The device.
        addr: PciAddress,
    },
    /// The group holds devices of other vendors bound to host drivers.
    #[error(
        "IOMMU group {group} of {addr} also holds {others}; VFIO needs every device of a group \
         bound to vfio-pci or to no driver: put the GPU in a slot with its own IOMMU group, or \
         unbind those devices (this host then loses them)"
    )]
    GroupNotViable {
        /// The device.
        addr: PciAddress,
        /// Its group.
        group: u32,
        /// The devices in the way, with their drivers.
        others: String,
    },
    /// Processes hold the GPU through NVIDIA's driver.
    #[error(
        "{addr} is in use through the NVIDIA driver by {users}; stop them first (nvidia-smi \
         lists GPU processes; `systemctl stop nvidia-persistenced` stops the persistence daemon) \
         and retry"
    )]
    NvidiaInUse {
        /// The device.
        addr: PciAddress,
        /// `pid (command)` of each holder.
        users: String,
    },
    /// vfio-pci is not loaded.
    #[error("the vfio-pci driver is not loaded (no {}); run `modprobe vfio-pci`", path.display())]
    NoVfioDriver {
        /// The driver directory that is missing.
        path: PathBuf,
    },
    /// A write was refused for lack of permission.
    #[error("no permission to write {}: run as root (sudo nvbare {command} {addr})", path.display())]
    NotPermitted {
        /// The device.
        addr: PciAddress,
        /// `bind` or `unbind`.
        command: &'static str,
        /// The attribute.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// A write failed for another reason.
    #[error("writing {value:?} to {} failed; see dmesg for the kernel's reason", path.display())]
    Write {
        /// The attribute.
        path: PathBuf,
        /// What was written.
        value: String,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The kernel did not bind vfio-pci.
    #[error("{addr} is not bound to vfio-pci after the bind (now: {now}); see dmesg for why")]
    BindDidNotTake {
        /// The device.
        addr: PciAddress,
        /// What it is bound to now.
        now: String,
    },
    /// An nvbare process drives the GPU.
    #[error("{addr} is driven by nvbare right now ({source}); stop that process before unbinding")]
    InUse {
        /// The device.
        addr: PciAddress,
        /// The lock that is held.
        #[source]
        source: crate::lock::LockError,
    },
    /// `unbind` of a device that vfio-pci does not hold.
    #[error("{addr} is not bound to vfio-pci (now: {now}); there is nothing to unbind")]
    NotBoundToVfio {
        /// The device.
        addr: PciAddress,
        /// What it is bound to.
        now: String,
    },
}

/// What `bind` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BindReport {
    /// The device.
    pub address: PciAddress,
    /// The driver it was bound to before (`None`: no driver).
    pub previous: Option<String>,
    /// Whether it was already bound to vfio-pci (nothing was written).
    pub already: bool,
    /// Whether VFIO holds it in no-IOMMU mode (UNSAFE: no DMA isolation).
    pub noiommu: bool,
    /// NVIDIA functions of the same IOMMU group still bound to other drivers: VFIO can open
    /// the group once they are bound too.
    pub also_bind: Vec<GroupMember>,
}

impl fmt::Display for BindReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.already {
            write!(f, "{} is already bound to vfio-pci", self.address)?;
        } else {
            let was = self.previous.as_deref().unwrap_or("no driver");
            write!(f, "{}: bound to vfio-pci (was: {was})", self.address)?;
        }
        if self.noiommu {
            write!(
                f,
                " in VFIO's no-IOMMU mode: UNSAFE, the GPU can write anywhere in memory (no DMA \
                 isolation); nvbare drives it only with --allow-noiommu-unsafe"
            )?;
        }
        if !self.also_bind.is_empty() {
            write!(
                f,
                "\nits IOMMU group also holds {}: VFIO can open the GPU once they are bound too:",
                join_members(&self.also_bind)
            )?;
            for m in &self.also_bind {
                write!(f, "\n  nvbare bind {}", m.address)?;
            }
        }
        Ok(())
    }
}

/// What `unbind` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnbindReport {
    /// The device.
    pub address: PciAddress,
    /// The driver that took it after (`None`: none did).
    pub now: Option<String>,
}

impl fmt::Display for UnbindReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.now {
            Some(d) => write!(
                f,
                "{}: released by vfio-pci, now bound to {d}",
                self.address
            ),
            None => write!(
                f,
                "{}: released by vfio-pci; no driver claimed it (load one, e.g. `modprobe \
                 nvidia`, and it will)",
                self.address
            ),
        }
    }
}

fn describe(driver: Option<&str>) -> String {
    driver.map_or("no driver".into(), str::to_string)
}

fn write_attr(
    w: &impl SysfsWrite,
    addr: PciAddress,
    command: &'static str,
    path: PathBuf,
    value: &str,
) -> Result<(), SetupError> {
    w.write(&path, value).map_err(|source| match source.kind() {
        io::ErrorKind::PermissionDenied => SetupError::NotPermitted {
            addr,
            command,
            path,
            source,
        },
        _ => SetupError::Write {
            path,
            value: value.trim().to_string(),
            source,
        },
    })
}

/// Processes that hold the GPU's NVIDIA device node (`/dev/nvidiaN`, N its minor; every
/// `/dev/nvidiaN` when the minor is unknown), as `pid (command)`.
pub fn nvidia_users(sysfs: &Sysfs, addr: PciAddress) -> Vec<String> {
    let info = sysfs.path(&format!("proc/driver/nvidia/gpus/{addr}/information"));
    let minor = fs::read_to_string(info).ok().and_then(|t| {
        t.lines()
            .find_map(|l| l.strip_prefix("Device Minor:"))
            .and_then(|m| m.trim().parse::<u32>().ok())
    });
    let is_ours = |target: &str| match target.strip_prefix("/dev/nvidia") {
        Some(rest) => match minor {
            Some(m) => rest == m.to_string(),
            None => !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()),
        },
        None => false,
    };
    let mut users = Vec::new();
    let Ok(procs) = fs::read_dir(sysfs.path("proc")) else {
        return users;
    };
    for p in procs.filter_map(Result::ok) {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(fds) = fs::read_dir(p.path().join("fd")) else {
            continue;
        };
        let holds = fds
            .filter_map(Result::ok)
            .any(|fd| fs::read_link(fd.path()).is_ok_and(|t| t.to_str().is_some_and(is_ours)));
        if holds {
            let comm = fs::read_to_string(p.path().join("comm")).unwrap_or_default();
            users.push(format!("{pid} ({})", comm.trim()));
        }
    }
    users.sort();
    users
}

/// Binds `bdf` to vfio-pci on this machine.
pub fn bind(bdf: &str) -> Result<BindReport, SetupError> {
    bind_in(&Sysfs::system(), &KernelSysfs, parse_address(bdf)?)
}

/// Gives `bdf` back to its default driver on this machine (refused while an nvbare process
/// drives it: its lock in [`default_lock_dir`](crate::lock::default_lock_dir), where
/// `VfioOptions` puts it by default).
pub fn unbind(bdf: &str) -> Result<UnbindReport, SetupError> {
    unbind_in(
        &Sysfs::system(),
        &KernelSysfs,
        parse_address(bdf)?,
        &crate::lock::default_lock_dir(),
    )
}

fn check_device(sysfs: &Sysfs, addr: PciAddress) -> Result<(), SetupError> {
    if !sysfs.exists(addr) {
        return Err(SetupError::NoSuchDevice {
            addr,
            path: sysfs.device_dir(addr),
        });
    }
    // CAST: PCI vendor ids are 16 bits.
    let vendor = sysfs.hex_attr(addr, "vendor").unwrap_or(0) as u16;
    if vendor != NVIDIA_VENDOR {
        return Err(SetupError::NotNvidia { addr, vendor });
    }
    Ok(())
}

/// [`bind`] on the tree `sysfs`, writing through `w`.
pub fn bind_in(
    sysfs: &Sysfs,
    w: &impl SysfsWrite,
    addr: PciAddress,
) -> Result<BindReport, SetupError> {
    check_device(sysfs, addr)?;
    // Without an IOMMU, VFIO's no-IOMMU mode (when vfio was loaded with it) gives the device
    // a group of its own only as vfio-pci binds it (vfio_group_find_or_alloc, seen under a
    // real kernel in tests/vm/run): there is no group to check before.
    let noiommu = match sysfs.iommu_group(addr) {
        Some(group) => sysfs.is_noiommu_group(group),
        None if !sysfs.iommu_enabled() && sysfs.vfio_noiommu_enabled() => true,
        None if !sysfs.iommu_enabled() => return Err(SetupError::IommuOff),
        None => return Err(SetupError::NoGroup { addr }),
    };
    let nvidia = match sysfs.iommu_group(addr) {
        Some(group) if !noiommu => {
            let blockers =
                sysfs
                    .group_blockers(group, addr)
                    .map_err(|source| SetupError::Write {
                        path: sysfs.path(&format!("sys/kernel/iommu_groups/{group}/devices")),
                        value: String::new(),
                        source,
                    })?;
            let (nvidia, foreign): (Vec<_>, Vec<_>) = blockers
                .into_iter()
                .partition(|m| m.vendor == NVIDIA_VENDOR);
            if !foreign.is_empty() {
                return Err(SetupError::GroupNotViable {
                    addr,
                    group,
                    others: join_members(&foreign),
                });
            }
            nvidia
        }
        _ => Vec::new(),
    };
    let previous = sysfs.driver(addr);
    if previous.as_deref() == Some(VFIO_PCI) {
        return Ok(BindReport {
            address: addr,
            previous,
            already: true,
            noiommu,
            also_bind: nvidia,
        });
    }
    if previous.as_deref() == Some("nvidia") {
        let users = nvidia_users(sysfs, addr);
        if !users.is_empty() {
            return Err(SetupError::NvidiaInUse {
                addr,
                users: users.join(", "),
            });
        }
    }
    let vfio_dir = sysfs.path("sys/bus/pci/drivers/vfio-pci");
    if !vfio_dir.is_dir() {
        return Err(SetupError::NoVfioDriver { path: vfio_dir });
    }

    let dev = sysfs.device_dir(addr);
    let override_path = dev.join("driver_override");
    let old_override = fs::read_to_string(&override_path).unwrap_or_default();
    write_attr(w, addr, "bind", override_path.clone(), VFIO_PCI)?;
    let rest = (|| {
        if previous.is_some() {
            write_attr(
                w,
                addr,
                "bind",
                dev.join("driver/unbind"),
                &addr.to_string(),
            )?;
        }
        write_attr(
            w,
            addr,
            "bind",
            sysfs.path("sys/bus/pci/drivers_probe"),
            &addr.to_string(),
        )
    })();
    if let Err(e) = rest {
        // Leave the device as it was: the old override back (the kernel shows "(null)" for none).
        let old = old_override.trim();
        let restore = if old == "(null)" { "\n" } else { old };
        let _ = w.write(&override_path, restore);
        if let Some(drv) = &previous
            && sysfs.driver(addr).is_none()
        {
            let bind = sysfs.path(&format!("sys/bus/pci/drivers/{drv}/bind"));
            let _ = w.write(&bind, &addr.to_string());
        }
        return Err(e);
    }
    let now = sysfs.driver(addr);
    if now.as_deref() != Some(VFIO_PCI) {
        return Err(SetupError::BindDidNotTake {
            addr,
            now: describe(now.as_deref()),
        });
    }
    Ok(BindReport {
        address: addr,
        previous,
        already: false,
        noiommu,
        also_bind: nvidia,
    })
}

/// [`unbind`] on the tree `sysfs`, writing through `w`, with VFIO's locks in `lock_dir`.
pub fn unbind_in(
    sysfs: &Sysfs,
    w: &impl SysfsWrite,
    addr: PciAddress,
    lock_dir: &Path,
) -> Result<UnbindReport, SetupError> {
    check_device(sysfs, addr)?;
    let now = sysfs.driver(addr);
    if now.as_deref() != Some(VFIO_PCI) {
        return Err(SetupError::NotBoundToVfio {
            addr,
            now: describe(now.as_deref()),
        });
    }
    // Held for the unbind, so no nvbare process opens the GPU meanwhile.
    let lock_path = crate::lock::vfio_lock_path(lock_dir, &addr.to_string());
    let _lock = match crate::lock::DeviceLock::acquire(&lock_path, &format!("GPU {addr}")) {
        Ok(l) => Some(l),
        Err(source @ crate::lock::LockError::Held { .. }) => {
            return Err(SetupError::InUse { addr, source });
        }
        // A lock directory we cannot write, or a lock file we may not trust (and so do not
        // touch), is no evidence of a user.
        Err(crate::lock::LockError::Io { .. } | crate::lock::LockError::Untrusted { .. }) => None,
    };
    let dev = sysfs.device_dir(addr);
    // A newline clears driver_override, so the probe picks the default driver.
    write_attr(w, addr, "unbind", dev.join("driver_override"), "\n")?;
    write_attr(
        w,
        addr,
        "unbind",
        dev.join("driver/unbind"),
        &addr.to_string(),
    )?;
    write_attr(
        w,
        addr,
        "unbind",
        sysfs.path("sys/bus/pci/drivers_probe"),
        &addr.to_string(),
    )?;
    Ok(UnbindReport {
        address: addr,
        now: sysfs.driver(addr),
    })
}

#[cfg(test)]
mod tests;
