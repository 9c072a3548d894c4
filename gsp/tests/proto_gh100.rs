//! GH100 (H100 80 GiB, H200 141 GiB) boot structures against a worked example built from
//! OpenRM 570.144's C headers (`gsp/scripts/gh100/worked_example.c`, fixtures in
//! `gsp/tests/fixtures/proto/gh100/`): the WPR metadata sizes of
//! `kgspCalculateFbLayout_GH100` with the heap formula of `gsp_fw_heap.h`, the
//! `GSP_FMC_BOOT_PARAMS` of `kgspSetupGspFmcArgs_GH100`, and the version-1 RSA-3K
//! `NVDM_PAYLOAD_COT` with its MCTP/NVDM framing from `kern_fsp_gh100.c` / `kern_fsp.c`.

use std::path::PathBuf;

use nvbare_gsp::boot::fmc_boot_params;
use nvbare_gsp::boot::wpr_meta::{FmcWprSizes, WprMetaInputs, wpr_meta_fmc};
use nvbare_gsp::fsp::{CotParams, cot_message, cot_payload};
use zerocopy::IntoBytes;

fn fixture(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/proto/gh100")
        .join(format!("{name}.hex"));
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let hex: String = text.split_whitespace().collect();
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

fn pattern(n: usize, mul: usize, add: usize) -> Vec<u8> {
    (0..n).map(|i| (i.wrapping_mul(mul) + add) as u8).collect()
}

#[test]
fn gh100_structures_match_the_openrm_worked_example() {
    let inputs = WprMetaInputs {
        radix3_sysmem_addr: 0x1_0000_0000,
        radix3_image_size: 0x2a01234,
        bootloader_sysmem_addr: 0x3_0000_0000,
        bootloader_size: 0xd123,
        bootloader_code_offset: 0x100,
        bootloader_data_offset: 0x4200,
        bootloader_manifest_offset: 0x8000,
        signature_sysmem_addr: 0x2_0000_0000,
        signature_size: 0x1000,
    };
    let mut matched = 0;
    for (gib, name, heap) in [
        (141u64, "wpr_meta_gh100_141g", 0x920_0000u64),
        (80, "wpr_meta_gh100_80g", 0x8C0_0000),
    ] {
        let m = wpr_meta_fmc(&inputs, &FmcWprSizes::gh100(gib << 30));
        assert_eq!(m.gsp_fw_heap_size, heap, "{name}");
        assert_eq!(m.as_bytes(), fixture(name).as_slice(), "{name}");
        matched += 1;
    }
    assert_eq!(
        fmc_boot_params(0x8_0000_0000, 0x9_0000_0000).as_bytes(),
        fixture("fmc_boot_params_gh100")
    );
    matched += 1;
    let hash: [u8; 48] = core::array::from_fn(|i| i as u8 + 1);
    let cot = cot_payload(
        &CotParams::gh100(0x6_0000_0000, 0x7_0000_0000),
        &hash,
        &pattern(384, 11, 7),
        &pattern(384, 5, 2),
    )
    .unwrap();
    assert_eq!(cot.as_bytes(), fixture("cot_payload_gh100"));
    assert_eq!(cot_message(&cot).unwrap(), fixture("fsp_cot_message_gh100"));
    matched += 2;
    println!("gsp-gh100: matched {matched} OpenRM worked-example fixtures");
}
