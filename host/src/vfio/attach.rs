//! How the device is reached: [`IommuBackend`] names the IOMMU interface, and
//! [`open_device`] opens the device's file through a type1 (or no-IOMMU) container and its
//! group, or through iommufd (the device's cdev bound to a new IOAS). What comes back is the
//! device, the [`Iommu`] the DMA pool maps through, and the files that must stay open while
//! the device is used.

use std::path::PathBuf;
use std::sync::Arc;

use nvbare_core::hal::PciAddress;
use vfio_bindings::bindings::vfio as b;

use super::dma::Iommu;
use super::error::VfioError;
use super::ioctl_err;
use super::sys::VfioSys;
use crate::pci::{Sysfs, join_members};

/// Which IOMMU interface to use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IommuBackend {
    /// A type1 container (`/dev/vfio/vfio` + the group).
    #[cfg_attr(not(feature = "iommufd"), default)]
    Type1,
    /// iommufd (`/dev/iommu` + the device's cdev).
    #[cfg(feature = "iommufd")]
    Iommufd,
    /// iommufd where the kernel offers it for the device (`/dev/iommu` and the device's VFIO
    /// cdev, `vfio-dev/vfioN`), a type1 container otherwise: the default with the `iommufd`
    /// feature, so that the feature's build takes iommufd from the command line (it had no
    /// way to before: tests/vm/run's iommufd guest showed it opening a type1 container).
    #[cfg(feature = "iommufd")]
    #[default]
    Auto,
}

impl IommuBackend {
    /// The interface to use for the device at `addr` (`Auto` decided).
    #[cfg_attr(not(feature = "iommufd"), allow(unused_variables))]
    fn resolve(self, sysfs: &Sysfs, addr: PciAddress) -> IommuBackend {
        match self {
            #[cfg(feature = "iommufd")]
            IommuBackend::Auto => {
                let cdev = std::fs::read_dir(sysfs.device_dir(addr).join("vfio-dev"))
                    .is_ok_and(|mut d| d.next().is_some());
                if cdev && sysfs.path("dev/iommu").exists() {
                    IommuBackend::Iommufd
                } else {
                    IommuBackend::Type1
                }
            }
            b => b,
        }
    }
}

/// How the device was reached: the files that must stay open while it is used.
#[derive(Debug)]
pub(super) struct Attachment<F> {
    _group: Option<F>,
    _container: Option<Arc<F>>,
}

/// The device's file, the IOMMU its DMA is mapped through, and what keeps both open.
pub(super) struct Attached<F> {
    /// The device (`VFIO_GROUP_GET_DEVICE_FD`, or its cdev).
    pub device: F,
    /// What DMA memory is mapped through.
    pub iommu: Iommu<F>,
    /// The group and the container or iommufd.
    pub attachment: Attachment<F>,
}

/// Opens the device at `addr` (in IOMMU group `group`, a no-IOMMU group if `noiommu`) through
/// `backend` (`Auto` decided; a no-IOMMU group goes through a no-IOMMU container whatever the
/// backend), and logs which.
pub(super) fn open_device<S: VfioSys>(
    sys: &Arc<S>,
    sysfs: &Sysfs,
    addr: PciAddress,
    group: u32,
    noiommu: bool,
    backend: IommuBackend,
) -> Result<Attached<S::Fd>, VfioError> {
    let attached = match backend.resolve(sysfs, addr) {
        IommuBackend::Type1 => container(sys, sysfs, addr, group, noiommu)?,
        #[cfg(feature = "iommufd")]
        IommuBackend::Iommufd if !noiommu => iommufd(sys, sysfs, addr)?,
        #[cfg(feature = "iommufd")]
        IommuBackend::Iommufd | IommuBackend::Auto => container(sys, sysfs, addr, group, noiommu)?,
    };
    log::info!(
        "{addr}: VFIO through {}; group {group}",
        match &attached.iommu {
            Iommu::Type1 { .. } => "a type1 container".to_string(),
            #[cfg(feature = "iommufd")]
            Iommu::Iommufd { ioas, .. } => format!("iommufd (IOAS {ioas})"),
            Iommu::NoIommuUnsafe => "a no-IOMMU container (UNSAFE)".to_string(),
        }
    );
    Ok(attached)
}

/// The device through a type1 (or no-IOMMU) container and its group.
fn container<S: VfioSys>(
    sys: &Arc<S>,
    sysfs: &Sysfs,
    addr: PciAddress,
    group: u32,
    noiommu: bool,
) -> Result<Attached<S::Fd>, VfioError> {
    let container = open_node(&**sys, sysfs.path("dev/vfio/vfio"), "container")?;
    let version = sys.api_version(&container).map_err(ioctl_err(
        "VFIO_GET_API_VERSION",
        addr,
        "see dmesg",
    ))?;
    if version != b::VFIO_API_VERSION as i32 {
        return Err(VfioError::ApiVersion(version));
    }
    let (kind, what, remedy) = if noiommu {
        (
            b::VFIO_NOIOMMU_IOMMU,
            "the no-IOMMU mode (UNSAFE)",
            "load vfio with `enable_unsafe_noiommu_mode=1` (UNSAFE: no DMA isolation)",
        )
    } else {
        (
            b::VFIO_TYPE1v2_IOMMU,
            "a type1v2 IOMMU",
            "the kernel needs vfio_iommu_type1 (`modprobe vfio_iommu_type1`)",
        )
    };
    if !sys.check_extension(&container, kind).unwrap_or(false) {
        return Err(VfioError::NoExtension { what, remedy });
    }
    let group_fd = open_node(&**sys, sysfs.vfio_group_node(group), "group")?;
    let flags = sys.group_flags(&group_fd).map_err(ioctl_err(
        "VFIO_GROUP_GET_STATUS",
        addr,
        "see dmesg",
    ))?;
    if flags & b::VFIO_GROUP_FLAGS_VIABLE == 0 {
        let others = sysfs
            .group_members(group)
            .map(|m| {
                let others: Vec<_> = m.into_iter().filter(|m| m.address != addr).collect();
                join_members(&others)
            })
            .unwrap_or_default();
        return Err(VfioError::GroupNotViable {
            group,
            others: if others.is_empty() {
                "devices the kernel counts against it".into()
            } else {
                others
            },
        });
    }
    sys.group_set_container(&group_fd, &container)
        .map_err(ioctl_err("VFIO_GROUP_SET_CONTAINER", addr, "see dmesg"))?;
    sys.set_iommu(&container, kind).map_err(|source| {
        // Seen under a real kernel (tests/vm/run, virtio-iommu): vfio_iommu_type1 answers
        // EPERM for an IOMMU without interrupt remapping.
        let remedy = if source.raw_os_error() == Some(libc::EPERM) {
            "the IOMMU has no interrupt remapping (a virtio-iommu, or interrupt remapping \
             off); vfio_iommu_type1 then refuses the container unless loaded with \
             allow_unsafe_interrupts=1 (modprobe vfio_iommu_type1 \
             allow_unsafe_interrupts=1), which trusts the device's MSIs; see dmesg"
        } else {
            "see dmesg (the IOMMU driver refused the container)"
        };
        ioctl_err("VFIO_SET_IOMMU", addr, remedy)(source)
    })?;
    let device = sys
        .group_device(&group_fd, &addr.to_string())
        .map_err(ioctl_err(
            "VFIO_GROUP_GET_DEVICE_FD",
            addr,
            "another process may hold the device open; see dmesg",
        ))?;
    let container = Arc::new(container);
    let iommu = if noiommu {
        Iommu::NoIommuUnsafe
    } else {
        Iommu::Type1 {
            container: container.clone(),
        }
    };
    Ok(Attached {
        device,
        iommu,
        attachment: Attachment {
            _group: Some(group_fd),
            _container: Some(container),
        },
    })
}

/// The device through iommufd: its cdev bound to a new IOAS.
#[cfg(feature = "iommufd")]
fn iommufd<S: VfioSys>(
    sys: &Arc<S>,
    sysfs: &Sysfs,
    addr: PciAddress,
) -> Result<Attached<S::Fd>, VfioError> {
    let iommufd = open_node(&**sys, sysfs.path("dev/iommu"), "iommufd")?;
    let cdev_dir = sysfs.device_dir(addr).join("vfio-dev");
    let cdev = std::fs::read_dir(&cdev_dir)
        .ok()
        .and_then(|mut d| d.next()?.ok())
        .map(|e| e.file_name())
        .ok_or_else(|| VfioError::Open {
            path: cdev_dir.clone(),
            remedy: "this kernel gives vfio-pci devices no cdev (CONFIG_VFIO_DEVICE_CDEV); \
                     use the type1 backend",
            source: std::io::ErrorKind::NotFound.into(),
        })?;
    let path = sysfs.path("dev/vfio/devices").join(cdev);
    let device = open_node(&**sys, path, "device")?;
    let ioas =
        sys.ioas_alloc(&iommufd)
            .map_err(ioctl_err("IOMMU_IOAS_ALLOC", addr, "see dmesg"))?;
    sys.bind_and_attach(&device, &iommufd, ioas)
        .map_err(ioctl_err("VFIO_DEVICE_BIND_IOMMUFD", addr, "see dmesg"))?;
    let iommufd = Arc::new(iommufd);
    Ok(Attached {
        device,
        iommu: Iommu::Iommufd {
            iommufd: iommufd.clone(),
            ioas,
        },
        attachment: Attachment {
            _group: None,
            _container: Some(iommufd),
        },
    })
}

fn open_node<S: VfioSys>(sys: &S, path: PathBuf, what: &'static str) -> Result<S::Fd, VfioError> {
    sys.open(&path).map_err(|source| {
        let remedy = match source.kind() {
            std::io::ErrorKind::NotFound => match what {
                "container" => "load vfio-pci (`modprobe vfio-pci`)",
                "iommufd" => "this kernel has no iommufd (CONFIG_IOMMUFD); use the type1 backend",
                _ => "is the GPU bound to vfio-pci (`nvbare bind BDF`)?",
            },
            std::io::ErrorKind::PermissionDenied => {
                "no permission: run as root, or give your user access to the node (chown, or a \
                 udev rule)"
            }
            _ if source.raw_os_error() == Some(libc::EBUSY) => {
                "another process (a VM, or another VFIO user) holds the group"
            }
            _ => "see dmesg",
        };
        VfioError::Open {
            path,
            remedy,
            source,
        }
    })
}
