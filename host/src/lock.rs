//! One driver per GPU: an exclusive `flock` on a per-device lock file that holds the pid of
//! the process that drives it, so a second process gets an error naming the first.
//!
//! The lock lives as long as the open file: it goes with the process however that ends
//! (crash, kill -9), so a stale file never blocks a later run.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

/// A device lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds it.
    #[error(
        "{device} is in use by process {} (lock {}); stop that process first, or wait for it \
         to finish",
        pid.map_or("(pid unknown)".to_string(), |p| p.to_string()),
        path.display()
    )]
    Held {
        /// What is locked ("GPU 0000:41:00.0").
        device: String,
        /// The lock file.
        path: PathBuf,
        /// The holder's pid, as it wrote it.
        pid: Option<u32>,
    },
    /// The lock file could not be opened or locked.
    #[error("cannot take the lock {} for {device}: {source}; check the directory's permissions", path.display())]
    Io {
        /// What is locked.
        device: String,
        /// The lock file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
}

/// An exclusive lock on a device, held until dropped.
#[derive(Debug)]
pub struct DeviceLock {
    _file: Flock<File>,
    path: PathBuf,
}

impl DeviceLock {
    /// Takes the lock at `path` for `device` (named in errors), without waiting.
    pub fn acquire(path: &Path, device: &str) -> Result<DeviceLock, LockError> {
        let io_err = |source| LockError::Io {
            device: device.to_string(),
            path: path.to_path_buf(),
            source,
        };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o666)
            .open(path)
            .map_err(io_err)?;
        // Let a process of another user take the lock once this one is gone (umask would
        // otherwise narrow the mode); failing is harmless.
        let _ = file.set_permissions(std::fs::Permissions::from_mode(0o666));
        let mut locked = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(l) => l,
            Err((mut file, Errno::EWOULDBLOCK)) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                return Err(LockError::Held {
                    device: device.to_string(),
                    path: path.to_path_buf(),
                    pid: text.trim().parse().ok(),
                });
            }
            Err((_, errno)) => return Err(io_err(io::Error::from(errno))),
        };
        let pid = std::process::id();
        let write = |f: &mut File| -> io::Result<()> {
            f.set_len(0)?;
            f.rewind()?;
            writeln!(f, "{pid}")
        };
        write(&mut locked).map_err(io_err)?;
        Ok(DeviceLock {
            _file: locked,
            path: path.to_path_buf(),
        })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The lock file of the VFIO device `bdf` under `dir`.
pub fn vfio_lock_path(dir: &Path, bdf: &str) -> PathBuf {
    dir.join(format!("nvbare-vfio-{bdf}.lock"))
}

/// The lock file tinygrad takes for remote device `HOST:PORT:N` (`nv_remote:…` in the
/// temporary directory), so nvbare and tinygrad on one machine never drive one remote GPU
/// at once.
pub fn remote_lock_path(dir: &Path, host: &str, port: u16, dev_id: u32) -> PathBuf {
    dir.join(format!("nv_remote:{host}:{port}:{dev_id}.lock"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_told_the_first_ones_pid() {
        let dir = tempfile::tempdir().unwrap();
        let path = vfio_lock_path(dir.path(), "0000:41:00.0");
        let first = DeviceLock::acquire(&path, "GPU 0000:41:00.0").unwrap();
        assert_eq!(
            std::fs::read_to_string(first.path()).unwrap().trim(),
            std::process::id().to_string()
        );
        // flock conflicts between open file descriptions, also within one process.
        let e = DeviceLock::acquire(&path, "GPU 0000:41:00.0").unwrap_err();
        let m = e.to_string();
        assert!(matches!(e, LockError::Held { pid: Some(p), .. } if p == std::process::id()));
        assert!(
            m.contains(&format!("in use by process {}", std::process::id())),
            "{m}"
        );
        assert!(m.contains("GPU 0000:41:00.0"), "{m}");
        drop(first);
        DeviceLock::acquire(&path, "GPU 0000:41:00.0").unwrap();
    }

    #[test]
    fn an_unwritable_directory_is_named() {
        let e = DeviceLock::acquire(Path::new("/nonexistent-dir/x.lock"), "GPU x").unwrap_err();
        assert!(e.to_string().contains("/nonexistent-dir/x.lock"), "{e}");
    }

    #[test]
    fn lock_paths_match_tinygrad_and_name_the_device() {
        let d = Path::new("/tmp");
        assert_eq!(
            remote_lock_path(d, "127.0.0.1", 6667, 0),
            Path::new("/tmp/nv_remote:127.0.0.1:6667:0.lock")
        );
        assert_eq!(
            vfio_lock_path(d, "0000:41:00.0"),
            Path::new("/tmp/nvbare-vfio-0000:41:00.0.lock")
        );
    }
}
