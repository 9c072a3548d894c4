//! One driver per GPU: an exclusive `flock` on a per-device lock file that holds the pid of
//! the process that drives it, so a second process gets an error naming the first.
//!
//! The lock lives as long as the open file: it goes with the process however that ends
//! (crash, kill -9), so a stale file never blocks a later run.
//!
//! The lock file is opened without following a symbolic link and used only if it is a
//! regular file owned by this process's effective user with one link: a file planted in a
//! shared directory (a link to `/etc/shadow` for root to truncate, or one that another user
//! keeps locked) is refused, never written. Files this module creates are `0600`, so no other
//! user can open (and so hold) them; the default directory ([`default_lock_dir`]) is
//! `/run/nvbare` for root and `$XDG_RUNTIME_DIR/nvbare` for other users.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
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
    /// The lock file is not one this process may trust: a symbolic link, not a regular file,
    /// another user's or hard-linked elsewhere.
    #[error(
        "refusing the lock {} for {device}: it {problem}; remove it (or choose another lock \
         directory) and try again",
        path.display()
    )]
    Untrusted {
        /// What is locked.
        device: String,
        /// The lock file.
        path: PathBuf,
        /// What is wrong with it ("is a symbolic link", "is owned by uid 1000, not uid 0").
        problem: String,
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
    /// Takes the lock at `path` for `device` (named in errors), without waiting. The lock's
    /// directory is made (mode `0755`) if it is missing and its parent exists.
    pub fn acquire(path: &Path, device: &str) -> Result<DeviceLock, LockError> {
        let io_err = |source| LockError::Io {
            device: device.to_string(),
            path: path.to_path_buf(),
            source,
        };
        let untrusted = |problem: String| LockError::Untrusted {
            device: device.to_string(),
            path: path.to_path_buf(),
            problem,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
            && !dir.exists()
        {
            match DirBuilder::new().mode(0o755).create(dir) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(io_err(e)),
            }
        }
        let file = match OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
        {
            Ok(f) => f,
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                return Err(untrusted("is a symbolic link".into()));
            }
            Err(e) => return Err(io_err(e)),
        };
        let meta = file.metadata().map_err(io_err)?;
        let euid = nix::unistd::geteuid().as_raw();
        if !meta.file_type().is_file() {
            return Err(untrusted("is not a regular file".into()));
        }
        if meta.uid() != euid {
            return Err(untrusted(format!(
                "is owned by uid {}, not uid {euid} (this process)",
                meta.uid()
            )));
        }
        if meta.nlink() != 1 {
            return Err(untrusted(format!(
                "has {} hard links (a lock file has one)",
                meta.nlink()
            )));
        }
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

/// Where lock files go by default: `/run/nvbare` for root (a directory only root may write,
/// as the VFIO lock and `nvbare unbind` need), `$XDG_RUNTIME_DIR/nvbare` for another user
/// (their own directory), or the temporary directory if neither is known (the lock file's
/// checks still refuse a planted file there).
pub fn default_lock_dir() -> PathBuf {
    lock_dir_for(
        nix::unistd::geteuid().is_root(),
        std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from),
    )
}

fn lock_dir_for(root: bool, xdg_runtime_dir: Option<PathBuf>) -> PathBuf {
    if root {
        return PathBuf::from("/run/nvbare");
    }
    match xdg_runtime_dir {
        Some(d) if d.is_absolute() => d.join("nvbare"),
        _ => std::env::temp_dir(),
    }
}

/// The lock file of the VFIO device `bdf` under `dir`.
pub fn vfio_lock_path(dir: &Path, bdf: &str) -> PathBuf {
    dir.join(format!("nvbare-vfio-{bdf}.lock"))
}

/// The lock file tinygrad takes for remote device `HOST:PORT:N` (`nv_remote:…` in the
/// temporary directory), so nvbare and tinygrad on one machine never drive one remote GPU
/// at once (kept for that interop; such a file made by tinygrad of the same user passes
/// [`DeviceLock::acquire`]'s checks, one of another user is refused).
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
        let path = Path::new("/nonexistent-dir/sub/x.lock");
        let e = DeviceLock::acquire(path, "GPU x").unwrap_err();
        assert!(matches!(e, LockError::Io { .. }), "{e:?}");
        assert!(e.to_string().contains("/nonexistent-dir/sub/x.lock"), "{e}");
    }

    #[test]
    fn a_missing_lock_directory_is_made_and_the_file_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nvbare").join("x.lock");
        let lock = DeviceLock::acquire(&path, "GPU x").unwrap();
        let meta = std::fs::metadata(lock.path()).unwrap();
        assert_eq!(meta.mode() & 0o077, 0, "no other user may open it");
    }

    #[test]
    fn a_symbolic_link_is_refused_and_its_target_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("precious");
        std::fs::write(&target, "keep me\n").unwrap();
        let path = vfio_lock_path(dir.path(), "0000:41:00.0");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let e = DeviceLock::acquire(&path, "GPU 0000:41:00.0").unwrap_err();
        assert!(
            matches!(&e, LockError::Untrusted { problem, .. } if problem.contains("symbolic")),
            "{e:?}"
        );
        assert!(e.to_string().contains("remove it"), "{e}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me\n");
        let mode = std::fs::metadata(&target).unwrap().mode();
        assert_eq!(mode & 0o777, mode_of_new_file(&dir) & 0o777, "not chmod-ed");
    }

    /// The mode a plain file made in `dir` gets (the umask decides).
    fn mode_of_new_file(dir: &tempfile::TempDir) -> u32 {
        let p = dir.path().join("probe");
        std::fs::write(&p, "").unwrap();
        std::fs::metadata(&p).unwrap().mode()
    }

    #[test]
    fn a_hard_link_or_a_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let other = dir.path().join("other");
        std::fs::write(&other, "data\n").unwrap();
        let path = dir.path().join("linked.lock");
        std::fs::hard_link(&other, &path).unwrap();
        let e = DeviceLock::acquire(&path, "GPU x").unwrap_err();
        assert!(e.to_string().contains("2 hard links"), "{e}");
        assert_eq!(std::fs::read_to_string(&other).unwrap(), "data\n");

        let sub = dir.path().join("sub.lock");
        std::fs::create_dir(&sub).unwrap();
        let e = DeviceLock::acquire(&sub, "GPU x").unwrap_err();
        assert!(matches!(
            e,
            LockError::Io { .. } | LockError::Untrusted { .. }
        ));
    }

    #[test]
    fn another_users_file_is_refused() {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: making a file of another user needs root");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("theirs.lock");
        std::fs::write(&path, "4242\n").unwrap();
        std::os::unix::fs::chown(&path, Some(12345), Some(12345)).unwrap();
        let e = DeviceLock::acquire(&path, "GPU x").unwrap_err();
        assert!(e.to_string().contains("owned by uid 12345"), "{e}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "4242\n",
            "not truncated"
        );
    }

    #[test]
    fn the_default_directory_is_roots_or_the_users_own() {
        assert_eq!(lock_dir_for(true, None), Path::new("/run/nvbare"));
        assert_eq!(
            lock_dir_for(false, Some("/run/user/1000".into())),
            Path::new("/run/user/1000/nvbare")
        );
        assert_eq!(
            lock_dir_for(false, Some("relative".into())),
            std::env::temp_dir()
        );
        assert_eq!(lock_dir_for(false, None), std::env::temp_dir());
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
