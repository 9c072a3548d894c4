//! Writes a simulated chip's VBIOS to a file, read as a driver reads it: 32-bit reads of
//! BAR0's PROM window (`NV_PROM_DATA`, 0x300000) up to where the image chain ends
//! (`nvbare_gsp::vbios::rom_extent`). For `nvbare vbios FILE` on the simulated images.
//!
//! cargo run -p nvbare-sim --example vbios_dump -- ga102|ad102|ga100|tu102 FILE

use std::process::ExitCode;

use nvbare_sim::units::gfw::{PROM, PROM_SIZE};
use nvbare_sim::{SimChip, SimGpu};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(chip), Some(path)) = (
        args.first().and_then(|c| SimChip::from_name(c)),
        args.get(1),
    ) else {
        let booter: Vec<&str> = SimChip::ALL
            .into_iter()
            .filter(|c| c.spec().booter.is_some())
            .map(|c| c.spec().name)
            .collect();
        eprintln!(
            "usage: vbios_dump {} FILE (a chip on the booter path)",
            booter.join("|")
        );
        return ExitCode::from(2);
    };
    let gpu = match SimGpu::new(chip) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("vbios_dump: {e}");
            return ExitCode::FAILURE;
        }
    };
    let window: Vec<u8> = (0..PROM_SIZE)
        .step_by(4)
        .flat_map(|o| gpu.bar0_read(PROM + o).to_le_bytes())
        .collect();
    let end = match nvbare_gsp::vbios::rom_extent(&window) {
        Ok(end) => end,
        Err(e) => {
            eprintln!(
                "vbios_dump: {} has no VBIOS in its PROM window ({e:?}); the booter-path chips do",
                chip.spec().name
            );
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = std::fs::write(path, &window[..end]) {
        eprintln!("vbios_dump: writing {path}: {e}");
        return ExitCode::FAILURE;
    }
    println!(
        "{}: {end} bytes of VBIOS written to {path}",
        chip.spec().name
    );
    ExitCode::SUCCESS
}
