//! Test helpers: pinned entries for made-up files, package building, a loopback HTTP server.
#![allow(dead_code)]

use nvbare_firmware_fetch::PinnedFile;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A pinned entry for `bytes` at `path` (leaked: sources take `&'static`).
pub fn pin(path: &str, bytes: &[u8]) -> &'static PinnedFile {
    Box::leak(Box::new(PinnedFile {
        path: Box::leak(path.to_owned().into_boxed_str()),
        size: bytes.len() as u64,
        sha256: Sha256::digest(bytes).into(),
    }))
}

pub enum TarItem<'a> {
    File(&'a str, &'a [u8]),
    Symlink(&'a str, &'a str),
}

/// A Debian binary package: `debian-binary`, `control.tar.xz`, `data.tar.xz`, with the
/// items under `./usr/lib/firmware/`.
pub fn build_deb(items: &[TarItem<'_>]) -> Vec<u8> {
    let mut tar = tar::Builder::new(Vec::new());
    for item in items {
        let mut header = tar::Header::new_gnu();
        header.set_mode(0o644);
        match item {
            TarItem::File(path, bytes) => {
                header.set_size(bytes.len() as u64);
                header.set_entry_type(tar::EntryType::Regular);
                tar.append_data(&mut header, format!("./usr/lib/firmware/{path}"), *bytes)
                    .unwrap();
            }
            TarItem::Symlink(path, target) => {
                header.set_size(0);
                header.set_entry_type(tar::EntryType::Symlink);
                tar.append_link(&mut header, format!("./usr/lib/firmware/{path}"), target)
                    .unwrap();
            }
        }
    }
    let data_tar = tar.into_inner().unwrap();
    let xz = |bytes: &[u8]| {
        let mut w =
            lzma_rust2::XzWriter::new(Vec::new(), lzma_rust2::XzOptions::with_preset(1)).unwrap();
        w.write_all(bytes).unwrap();
        w.finish().unwrap()
    };
    let mut ar = ar::Builder::new(Vec::new());
    for (name, bytes) in [
        ("debian-binary", b"2.0\n".to_vec()),
        ("control.tar.xz", xz(&[0u8; 1024])),
        ("data.tar.xz", xz(&data_tar)),
    ] {
        let header = ar::Header::new(name.as_bytes().to_vec(), bytes.len() as u64);
        ar.append(&header, bytes.as_slice()).unwrap();
    }
    ar.into_inner().unwrap()
}

/// Every regular file under `dir`, relative, sorted (for "nothing else was left" checks).
pub fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    if !dir.exists() {
        return out;
    }
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    out
}

/// A loopback HTTP/1.1 server answering GET from a path → bytes map (404 otherwise).
/// Bounded: it stops when dropped, and after 120 s whatever happens.
pub struct LoopbackServer {
    pub base: String,
    stop: Arc<AtomicBool>,
    pub requests: Arc<std::sync::Mutex<Vec<String>>>,
}

impl LoopbackServer {
    pub fn serve(files: HashMap<String, Vec<u8>>) -> LoopbackServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (stop2, requests2) = (stop.clone(), requests.clone());
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(120);
            while !stop2.load(Ordering::Relaxed) && Instant::now() < deadline {
                let Ok((stream, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                };
                stream.set_nonblocking(false).unwrap();
                stream
                    .set_read_timeout(Some(Duration::from_secs(10)))
                    .unwrap();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() {
                    continue;
                }
                loop {
                    let mut h = String::new();
                    if reader.read_line(&mut h).map_or(true, |n| n == 0) || h == "\r\n" {
                        break;
                    }
                }
                let path = line
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or("/")
                    .trim_start_matches('/')
                    .to_owned();
                requests2.lock().unwrap().push(path.clone());
                let mut stream = stream;
                match files.get(&path) {
                    Some(body) => {
                        let _ = write!(
                            stream,
                            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                            body.len()
                        );
                        let _ = stream.write_all(body);
                    }
                    None => {
                        let _ = write!(
                            stream,
                            "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                        );
                    }
                }
            }
        });
        LoopbackServer {
            base,
            stop,
            requests,
        }
    }
}

impl Drop for LoopbackServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
