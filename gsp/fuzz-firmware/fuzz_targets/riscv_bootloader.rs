#![no_main]
//! RISC-V bootloader parser (nvfw bin header + RM_RISCV_UCODE_DESC).
use libfuzzer_sys::fuzz_target;
use nvbare_gsp::firmware::RiscvBootloader;

fuzz_target!(|data: &[u8]| {
    if let Ok(bl) = RiscvBootloader::parse(data) {
        // Accessors must stay in bounds for every accepted file.
        let _ = bl.monitor_code().len() + bl.manifest().len();
    }
});
