//! Each source on made-up files: links followed, compression undone, wrong bytes refused
//! and nothing unverified left behind in the cache.

mod support;

use nvbare_firmware_fetch::digest::Offered;
use nvbare_firmware_fetch::{Cache, FetchArgs, FirmwareCommand, Progress, Source};
use std::collections::HashMap;
use support::{LoopbackServer, TarItem, build_deb, files_under, pin};

const GSP: &[u8] = b"the GSP-RM image bytes";
const BOOTLOADER: &[u8] = b"turing bootloader bytes";
const BOOTER: &[u8] = b"ad102 booter bytes";

#[test]
fn deb_follows_file_directory_and_chained_links_and_refuses_wrong_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let deb = tmp.path().join("firmware-nvidia-graphics_test_all.deb");
    std::fs::write(
        &deb,
        build_deb(&[
            TarItem::File("nvidia/ga102/gsp/gsp-570.144.bin", GSP),
            TarItem::File("nvidia/tu102/gsp/bootloader-535.113.01.bin", BOOTLOADER),
            TarItem::File(
                "nvidia/ad102/gsp/booter_load-570.144.bin",
                b"ad102 booter bytez",
            ),
            TarItem::File("nvidia/ga102/gsp/unrelated-535.bin", b"not wanted at all"),
            TarItem::Symlink(
                "nvidia/gh100/gsp/gsp-570.144.bin",
                "../../ga102/gsp/gsp-570.144.bin",
            ),
            TarItem::Symlink(
                "nvidia/tu102/gsp/bootloader-570.144.bin",
                "bootloader-535.113.01.bin",
            ),
            TarItem::Symlink(
                "nvidia/tu116/gsp/bootloader-570.144.bin",
                "../../tu102/gsp/bootloader-570.144.bin",
            ),
            TarItem::Symlink("nvidia/ga104/gsp", "../ga102/gsp"),
        ]),
    )
    .unwrap();
    let gh100_gsp = pin("nvidia/gh100/gsp/gsp-570.144.bin", GSP);
    let ga104_gsp = pin("nvidia/ga104/gsp/gsp-570.144.bin", GSP);
    let tu116_bl = pin("nvidia/tu116/gsp/bootloader-570.144.bin", BOOTLOADER);
    let ad102_booter = pin("nvidia/ad102/gsp/booter_load-570.144.bin", BOOTER);
    let absent = pin("nvidia/gb202/gsp/fmc-570.144.bin", b"fmc");

    let cache = Cache::new(tmp.path().join("cache"));
    let source = Source::from_argument(deb.to_str().unwrap()).unwrap();
    let supplied = source
        .supply(
            &[gh100_gsp, ga104_gsp, tu116_bl, ad102_booter, absent],
            &cache,
            &Progress::new(true),
        )
        .unwrap();
    let mut stored: Vec<&str> = supplied.stored.iter().map(|f| f.path).collect();
    stored.sort();
    assert_eq!(
        stored,
        [
            "nvidia/ga104/gsp/gsp-570.144.bin",
            "nvidia/gh100/gsp/gsp-570.144.bin",
            "nvidia/tu116/gsp/bootloader-570.144.bin"
        ]
    );
    assert_eq!(supplied.mismatched.len(), 1);
    assert_eq!(supplied.mismatched[0].0.path, ad102_booter.path);
    assert!(matches!(supplied.mismatched[0].1, Offered::Bytes(m) if m.size == BOOTER.len() as u64));
    assert_eq!(std::fs::read(cache.path_of(gh100_gsp)).unwrap(), GSP);
    assert_eq!(std::fs::read(cache.path_of(tu116_bl)).unwrap(), BOOTLOADER);
    // Only the verified files: no staging directory, no temp file, no tampered booter.
    assert_eq!(
        files_under(cache.root()),
        [
            "nvidia/ga104/gsp/gsp-570.144.bin",
            "nvidia/gh100/gsp/gsp-570.144.bin",
            "nvidia/tu116/gsp/bootloader-570.144.bin"
        ]
    );
}

#[test]
fn a_file_that_is_not_a_package_is_refused_with_a_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = tmp.path().join("fake.deb");
    std::fs::write(&fake, b"!<arch>\nnot really").unwrap();
    let cache = Cache::new(tmp.path().join("cache"));
    let err = Source::Deb(fake)
        .supply(&[pin("nvidia/x/gsp/a", b"a")], &cache, &Progress::new(true))
        .unwrap_err();
    assert!(!err.to_string().is_empty());
    assert!(files_under(cache.root()).is_empty());
}

#[test]
fn a_long_name_index_past_the_name_table_is_an_error_not_a_panic() {
    // Issue 14: this 68-byte archive (GNU long name `/99`, no name table) made
    // `nvbare firmware fetch --from X.deb` panic inside the ar crate.
    let tmp = tempfile::tempdir().unwrap();
    let deb = tmp.path().join("bad.deb");
    let mut bytes = b"!<arch>\n".to_vec();
    bytes.extend(
        format!(
            "{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
            "/99", 0, 0, 0, 644, 0
        )
        .bytes(),
    );
    assert_eq!(bytes.len(), 68);
    std::fs::write(&deb, &bytes).unwrap();
    let err = nvbare_firmware_fetch::run(FirmwareCommand::Fetch(FetchArgs {
        chip: "gh100".into(),
        from: Some(deb.to_str().unwrap().into()),
        cache: Some(tmp.path().join("cache")),
        quiet: true,
    }))
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with(&format!("--from {}: not a Debian package", deb.display())),
        "{err}"
    );

    // The same member after a valid debian-binary, before the data: skipped, not indexed.
    let mut bytes = b"!<arch>\n".to_vec();
    for (name, data) in [("debian-binary", &b"2.0\n"[..]), ("/99", b""), ("//", b"x")] {
        let size = data.len();
        bytes.extend(format!("{name:<16}{:<12}{:<6}{:<6}{:<8}{size:<10}`\n", 0, 0, 0, 644).bytes());
        bytes.extend(data);
        if size % 2 == 1 {
            bytes.push(b'\n');
        }
    }
    std::fs::write(&deb, &bytes).unwrap();
    let cache = Cache::new(tmp.path().join("cache"));
    let err = Source::Deb(deb)
        .supply(&[pin("nvidia/x/gsp/a", b"a")], &cache, &Progress::new(true))
        .unwrap_err();
    assert!(err.to_string().contains("no data.tar member"), "{err}");
    assert!(files_under(cache.root()).is_empty());
}

#[test]
fn directory_source_reads_plain_zst_and_xz_files() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("lib-firmware");
    let dir = root.join("nvidia/ad102/gsp");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("plain-570.144.bin"), b"plain bytes").unwrap();
    let zst = ruzstd::encoding::compress_to_vec(
        &b"zstd bytes"[..],
        ruzstd::encoding::CompressionLevel::Fastest,
    );
    std::fs::write(dir.join("zst-570.144.bin.zst"), zst).unwrap();
    let mut xz =
        lzma_rust2::XzWriter::new(Vec::new(), lzma_rust2::XzOptions::with_preset(1)).unwrap();
    std::io::Write::write_all(&mut xz, b"xz bytes").unwrap();
    std::fs::write(dir.join("xz-570.144.bin.xz"), xz.finish().unwrap()).unwrap();
    std::os::unix::fs::symlink("plain-570.144.bin", dir.join("linked-570.144.bin")).unwrap();

    let wanted = [
        pin("nvidia/ad102/gsp/plain-570.144.bin", b"plain bytes"),
        pin("nvidia/ad102/gsp/zst-570.144.bin", b"zstd bytes"),
        pin("nvidia/ad102/gsp/xz-570.144.bin", b"xz bytes"),
        pin("nvidia/ad102/gsp/linked-570.144.bin", b"plain bytes"),
    ];
    let cache = Cache::new(tmp.path().join("cache"));
    let supplied = Source::Dir(root)
        .supply(&wanted, &cache, &Progress::new(true))
        .unwrap();
    assert_eq!(supplied.stored.len(), 4);
    assert_eq!(
        std::fs::read(cache.path_of(wanted[1])).unwrap(),
        b"zstd bytes"
    );
    assert_eq!(
        std::fs::read(cache.path_of(wanted[2])).unwrap(),
        b"xz bytes"
    );
}

#[test]
fn http_source_resolves_whence_links_and_refuses_tampered_files() {
    let whence = "File: nvidia/ga102/gsp/gsp-570.144.bin\n\
                  Link: nvidia/gh100/gsp/gsp-570.144.bin -> ../../ga102/gsp/gsp-570.144.bin\n\
                  Link: nvidia/gb202/gsp/gsp-570.144.bin -> ../../ga102/gsp/gsp-570.144.bin\n";
    let server = LoopbackServer::serve(HashMap::from([
        ("WHENCE".to_owned(), whence.as_bytes().to_vec()),
        ("nvidia/ga102/gsp/gsp-570.144.bin".to_owned(), GSP.to_vec()),
        (
            "nvidia/ad102/gsp/booter_load-570.144.bin".to_owned(),
            b"ad102 booter bytez".to_vec(),
        ),
    ]));
    let tmp = tempfile::tempdir().unwrap();
    let cache = Cache::new(tmp.path());
    let wanted = [
        pin("nvidia/gh100/gsp/gsp-570.144.bin", GSP),
        pin("nvidia/gb202/gsp/gsp-570.144.bin", GSP),
        pin("nvidia/ad102/gsp/booter_load-570.144.bin", BOOTER),
        pin("nvidia/ad102/gsp/missing-570.144.bin", b"x"),
    ];
    let supplied = Source::from_argument(&server.base)
        .unwrap()
        .supply(&wanted, &cache, &Progress::new(true))
        .unwrap();
    assert_eq!(supplied.stored.len(), 2);
    assert_eq!(supplied.mismatched.len(), 1);
    assert_eq!(std::fs::read(cache.path_of(wanted[1])).unwrap(), GSP);
    let requests = server.requests.lock().unwrap().clone();
    // Both linked names were fetched from the link target; the link names were never asked.
    assert_eq!(
        requests
            .iter()
            .filter(|r| r.as_str() == "nvidia/ga102/gsp/gsp-570.144.bin")
            .count(),
        2,
        "{requests:?}"
    );
    assert!(
        !requests.iter().any(|r| r.starts_with("nvidia/gh100")),
        "{requests:?}"
    );
    assert_eq!(
        files_under(cache.root()),
        [
            "nvidia/gb202/gsp/gsp-570.144.bin",
            "nvidia/gh100/gsp/gsp-570.144.bin"
        ]
    );
}

#[test]
fn unreachable_http_source_is_reported() {
    // Bind and drop: nothing listens on this loopback port any more.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let tmp = tempfile::tempdir().unwrap();
    let err = Source::Http(format!("http://127.0.0.1:{port}"))
        .supply(
            &[pin("nvidia/x/gsp/a", b"a")],
            &Cache::new(tmp.path()),
            &Progress::new(true),
        )
        .unwrap_err();
    assert!(err.to_string().contains("127.0.0.1"), "{err}");
}

#[test]
fn from_argument_errors_are_one_line_with_a_remedy() {
    let run = |from: &str| {
        nvbare_firmware_fetch::run(FirmwareCommand::Fetch(FetchArgs {
            chip: "gh100".into(),
            from: Some(from.into()),
            cache: Some(tempfile::tempdir().unwrap().path().to_owned()),
            quiet: true,
        }))
        .unwrap_err()
        .to_string()
    };
    let msg = run("/nonexistent");
    assert!(!msg.contains('\n'));
    assert!(
        msg.starts_with("--from /nonexistent: no such file or directory"),
        "{msg}"
    );
    assert!(msg.contains(".deb") && msg.contains("http"), "{msg}");
    assert!(run("ftp://example.invalid/fw").contains("only http:// and https://"));
    let tmp = tempfile::tempdir().unwrap();
    let not_deb = tmp.path().join("notes.txt");
    std::fs::write(&not_deb, b"x").unwrap();
    assert!(run(not_deb.to_str().unwrap()).contains("not a directory and not a .deb"));
}

#[test]
fn unknown_chip_error_lists_the_known_ones() {
    let err = nvbare_firmware_fetch::run(FirmwareCommand::Fetch(FetchArgs {
        chip: "gk110".into(),
        from: None,
        cache: None,
        quiet: true,
    }))
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with(
            "unknown chip 'gk110'; known: tu102 ga100 ga102 ad102 gh100 gb100 gb202 or all"
        ),
        "{err}"
    );
}
