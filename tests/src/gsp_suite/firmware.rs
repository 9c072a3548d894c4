//! The real GSP-RM 570.144 firmware for the end-to-end tests: from `$NVBARE_FIRMWARE_DIR`
//! or `~/.cache/nvbare/firmware` (`nvidia/<chip>/gsp/*-570.144.bin`, as `nvbare firmware
//! fetch --chip all` lays it out). Absent files make a test say it skipped, unless
//! `NVBARE_REQUIRE_FIRMWARE=1`, which makes their absence a failure.

use std::path::PathBuf;

use nvbare_core::boot::Firmware;

/// The firmware files of one chip.
pub struct Files {
    /// `fmc-570.144.bin`.
    pub fmc: Vec<u8>,
    /// `gsp-570.144.bin`.
    pub gsp: Vec<u8>,
    /// `bootloader-570.144.bin`.
    pub bootloader: Vec<u8>,
    /// `booter_load-570.144.bin` (booter-path chips; empty otherwise).
    pub booter_load: Vec<u8>,
    /// `booter_unload-570.144.bin` (booter-path chips; empty otherwise).
    pub booter_unload: Vec<u8>,
    /// `gen_bootloader-570.144.bin` (Turing, GA100; empty otherwise).
    pub generic_bootloader: Vec<u8>,
}

impl Files {
    /// The files as the boot takes them.
    pub fn firmware(&self) -> Firmware<'_> {
        Firmware {
            fmc: &self.fmc,
            gsp: &self.gsp,
            bootloader: &self.bootloader,
            booter: nvbare_core::boot::booter::BooterFirmware {
                booter_load: &self.booter_load,
                booter_unload: &self.booter_unload,
                vbios: None,
                generic_bootloader: &self.generic_bootloader,
            },
        }
    }
}

/// Where the firmware cache is.
pub fn root() -> PathBuf {
    match std::env::var_os("NVBARE_FIRMWARE_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cache/nvbare/firmware"),
    }
}

/// The files of firmware family `dir` ("gh100", "gb202"), or `None` after saying the test
/// skipped (a panic under `NVBARE_REQUIRE_FIRMWARE=1`).
pub fn load(dir: &str) -> Option<Files> {
    let base = root().join("nvidia").join(dir).join("gsp");
    let read = |name: &str| std::fs::read(base.join(format!("{name}-570.144.bin"))).ok();
    let files = match (read("fmc"), read("gsp"), read("bootloader")) {
        (Some(fmc), Some(gsp), Some(bootloader)) => Some(Files {
            fmc,
            gsp,
            bootloader,
            booter_load: Vec::new(),
            booter_unload: Vec::new(),
            generic_bootloader: Vec::new(),
        }),
        // The booter-path chips (Turing to Ada) have no FMC but the booter files.
        (None, Some(gsp), Some(bootloader)) => match (read("booter_load"), read("booter_unload")) {
            (Some(booter_load), Some(booter_unload)) => Some(Files {
                fmc: Vec::new(),
                gsp,
                bootloader,
                booter_load,
                booter_unload,
                generic_bootloader: read("gen_bootloader").unwrap_or_default(),
            }),
            _ => None,
        },
        _ => None,
    };
    match files {
        Some(f) => Some(f),
        _ => {
            let msg = format!(
                "no 570.144 firmware for {dir} under {} (set NVBARE_FIRMWARE_DIR or run \
                 `nvbare firmware fetch --chip all`)",
                base.display()
            );
            if std::env::var("NVBARE_REQUIRE_FIRMWARE").as_deref() == Ok("1") {
                panic!("{msg} and NVBARE_REQUIRE_FIRMWARE=1");
            }
            eprintln!("skipped: {msg}");
            None
        }
    }
}
