//! PCI discovery through sysfs.

use std::fs;
use std::path::Path;

/// One NVIDIA PCI function as sysfs describes it.
#[derive(Debug, Clone)]
pub struct PciFunction {
    pub address: String,
    pub device_id: u16,
    pub class: u32,
    pub driver: Option<String>,
    pub iommu_group: Option<u32>,
}

const NVIDIA_VENDOR: u16 = 0x10de;

fn read_hex(path: &Path) -> Option<u32> {
    let s = fs::read_to_string(path).ok()?;
    u32::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok()
}

fn link_name(path: &Path) -> Option<String> {
    let target = fs::read_link(path).ok()?;
    Some(target.file_name()?.to_string_lossy().into_owned())
}

/// Enumerates NVIDIA display/3D controllers under `root` (normally `/sys/bus/pci/devices`).
pub fn scan(root: &Path) -> std::io::Result<Vec<PciFunction>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(root)? {
        let dir = entry?.path();
        if read_hex(&dir.join("vendor")) != Some(u32::from(NVIDIA_VENDOR)) {
            continue;
        }
        let class = read_hex(&dir.join("class")).unwrap_or(0);
        // 0x03xxxx: display controllers (VGA and 3D); skip the HDMI audio and USB functions.
        if class >> 16 != 0x03 {
            continue;
        }
        out.push(PciFunction {
            address: dir
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned(),
            device_id: read_hex(&dir.join("device")).unwrap_or(0) as u16,
            class,
            driver: link_name(&dir.join("driver")),
            iommu_group: link_name(&dir.join("iommu_group")).and_then(|g| g.parse().ok()),
        });
    }
    out.sort_by(|a, b| a.address.cmp(&b.address));
    Ok(out)
}

/// `nvbare list`.
pub fn list() -> Result<(), String> {
    let root = Path::new("/sys/bus/pci/devices");
    let funcs = scan(root)
        .map_err(|e| format!("cannot read {}: {e}; is sysfs mounted?", root.display()))?;
    if funcs.is_empty() {
        println!("no NVIDIA GPU found under {}", root.display());
        return Ok(());
    }
    println!(
        "{:<14} {:<8} {:<10} {:<6}",
        "address", "device", "driver", "iommu"
    );
    for f in funcs {
        println!(
            "{:<14} {:<8} {:<10} {:<6}",
            f.address,
            format!("{:#06x}", f.device_id),
            f.driver.as_deref().unwrap_or("-"),
            f.iommu_group.map_or("-".into(), |g| g.to_string())
        );
    }
    Ok(())
}
