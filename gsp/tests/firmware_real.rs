//! The parsers on the real 570.144 files, checked against tinygrad's independent reading
//! (tests/fixtures/tinygrad_offsets.json, made by tinygrad_offsets.py) and NVIDIA's headers.

mod firmware_common;

use firmware_common::{CHIPS, real_file, tinygrad_fixture};
use nvbare_gsp::firmware::{
    FmcImage, FmcSignatureScheme, GenericBootloader, GspRmImage, GspSignatureTarget, HsUcode,
    RiscvBootloader,
};
use serde_json::Value;

fn u(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("fixture value {v} is not a number"))
}

#[test]
fn gsp_rm_image_of_every_chip_has_version_image_and_its_signature() {
    let fixture = tinygrad_fixture();
    for chip in CHIPS {
        let Some(bytes) = real_file("gsp_rm_image", chip, "gsp-570.144.bin") else {
            continue;
        };
        let target = GspSignatureTarget::for_firmware_dir(chip).unwrap();
        let gsp = GspRmImage::parse(&bytes, target).unwrap_or_else(|e| panic!("{chip}: {e}"));
        assert_eq!(gsp.version, "570.144");
        assert_eq!(gsp.signature.len(), 4096, "{chip}");
        let expected = &fixture[chip]["gsp"];
        assert_eq!(
            gsp.image.len() as u64,
            u(&expected["fwimage_len"]),
            "{chip}"
        );
        assert_eq!(expected["fwversion"], "570.144");
        let sections: Vec<&str> = expected["signature_sections"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap())
            .collect();
        assert!(
            sections.contains(&gsp.signature_section),
            "{chip}: {}",
            gsp.signature_section
        );
    }
}

#[test]
fn gh100_uses_its_own_signature_section_where_tinygrads_formula_would_miss() {
    let fixture = tinygrad_fixture();
    assert_eq!(
        GspSignatureTarget::Gh100.section_name(false),
        ".fwsignature_gh100"
    );
    assert_eq!(
        fixture["gh100"]["gsp"]["tinygrad_signature_section"],
        ".fwsignature_gh10x"
    );
    let Some(bytes) = real_file("gh100_signature", "gh100", "gsp-570.144.bin") else {
        return;
    };
    let gsp = GspRmImage::parse(&bytes, GspSignatureTarget::Gh100).unwrap();
    assert_eq!(gsp.signature_section, ".fwsignature_gh100");
    let cc = GspRmImage::parse_with(&bytes, GspSignatureTarget::Gh100, true).unwrap();
    assert_ne!(
        gsp.signature, cc.signature,
        "CC and non-CC signatures differ"
    );
    // The Turing-family file has no Hopper signature: asking for one is a typed error.
    if let Some(tu) = real_file("gh100_signature", "tu102", "gsp-570.144.bin") {
        let err = GspRmImage::parse(&tu, GspSignatureTarget::Gh100).unwrap_err();
        assert_eq!(
            err,
            nvbare_gsp::firmware::FirmwareError::MissingSection {
                name: ".fwsignature_gh100"
            }
        );
    }
}

#[test]
fn riscv_bootloader_descriptor_matches_tinygrad() {
    let fixture = tinygrad_fixture();
    for chip in CHIPS {
        let Some(bytes) = real_file("riscv_bootloader", chip, "bootloader-570.144.bin") else {
            continue;
        };
        let bl = RiscvBootloader::parse(&bytes).unwrap_or_else(|e| panic!("{chip}: {e}"));
        let t = &fixture[chip]["bootloader"];
        assert_eq!(
            u64::from(bl.bin_header.data_offset),
            u(&t["data_offset"]),
            "{chip}"
        );
        assert_eq!(bl.image.len() as u64, u(&t["data_size"]), "{chip}");
        assert_eq!(u64::from(bl.desc.version), u(&t["version"]), "{chip}");
        assert_eq!(
            u64::from(bl.desc.monitor_code_offset),
            u(&t["monitorCodeOffset"]),
            "{chip}"
        );
        assert_eq!(
            u64::from(bl.desc.monitor_data_offset),
            u(&t["monitorDataOffset"]),
            "{chip}"
        );
        assert_eq!(
            u64::from(bl.desc.manifest_offset),
            u(&t["manifestOffset"]),
            "{chip}"
        );
        if bl.desc.version >= 5 {
            assert!(
                bl.desc.monitor_code_size > 0
                    && bl.monitor_code().len() == bl.desc.monitor_code_size as usize
            );
        } else {
            // Turing/GA100's v4 descriptor is 76 bytes; the v5-only fields read as zero.
            assert_eq!(
                (bl.desc.fb_reserved_size, bl.desc.b_signed_as_code),
                (0, 0),
                "{chip}"
            );
            assert_eq!(
                bl.bin_header.header_offset + 76,
                bl.bin_header.data_offset,
                "{chip}"
            );
        }
    }
}

#[test]
fn booter_load_and_unload_headers_match_tinygrad() {
    let fixture = tinygrad_fixture();
    for chip in ["tu102", "ga100", "ga102", "ad102"] {
        for kind in ["booter_load", "booter_unload"] {
            let Some(bytes) = real_file("booter", chip, &format!("{kind}-570.144.bin")) else {
                continue;
            };
            let hs = HsUcode::parse(&bytes).unwrap_or_else(|e| panic!("{chip} {kind}: {e}"));
            let t = &fixture[chip][kind];
            assert_eq!(
                u64::from(hs.bin_header.data_offset),
                u(&t["data_offset"]),
                "{chip} {kind}"
            );
            assert_eq!(hs.image.len() as u64, u(&t["data_size"]));
            assert_eq!(
                u64::from(hs.load_header.os_data_offset),
                u(&t["os_data_offset"]),
                "{chip} {kind}"
            );
            assert_eq!(
                u64::from(hs.load_header.os_data_size),
                u(&t["os_data_size"])
            );
            assert_eq!(hs.apps.len(), 1, "{chip} {kind}");
            assert_eq!(u64::from(hs.apps[0].offset), u(&t["app_code_offset"]));
            assert_eq!(u64::from(hs.apps[0].size), u(&t["app_code_size"]));
            assert_eq!(
                u64::from(hs.patch_location),
                u(&t["patch_loc"]),
                "{chip} {kind}"
            );
            assert_eq!(u64::from(hs.signature_count), u(&t["num_sig"]));
            assert_eq!(u64::from(hs.signature_size()), u(&t["signature_len"]));
            assert_eq!(
                u64::from(hs.hs_header.sig_prod_offset + hs.patch_signature_offset),
                u(&t["signature_offset_in_file"])
            );
            // OpenRM's rule: the signature goes inside the data segment of the image.
            assert!(
                hs.patch_location >= hs.load_header.os_data_offset,
                "{chip} {kind}"
            );
            let sig = hs.signature_for_fuse_version(0).unwrap();
            let patched = hs.patched_image(sig).unwrap();
            assert_eq!(&patched[hs.patch_location as usize..][..sig.len()], sig);
            assert_eq!(patched.len(), hs.image.len());
        }
    }
}

#[test]
fn scrubber_and_generic_bootloader_parse() {
    if let Some(bytes) = real_file("scrubber", "ad102", "scrubber-570.144.bin") {
        let hs = HsUcode::parse(&bytes).unwrap();
        assert_eq!(hs.image.len(), 0x1d00);
        assert!(hs.signature_count >= 1);
    }
    for chip in ["tu102", "ga100"] {
        let Some(bytes) = real_file("gen_bootloader", chip, "gen_bootloader-570.144.bin") else {
            continue;
        };
        let bl = GenericBootloader::parse(&bytes).unwrap();
        // Values as in nouveau's nvfw_bl_desc reading of the same file.
        assert_eq!(bl.desc.start_tag, 0xfd);
        assert_eq!((bl.desc.code_off, bl.desc.code_size), (0, 0x200));
        assert_eq!((bl.desc.data_off, bl.desc.data_size), (0x200, 0x100));
        assert_eq!(bl.image.len(), 0x300);
    }
}

#[test]
fn fmc_sections_have_the_chip_schemes_sizes_and_a_true_hash() {
    let fixture = tinygrad_fixture();
    for (chip, scheme) in [
        ("gh100", FmcSignatureScheme::Rsa3072),
        ("gb100", FmcSignatureScheme::EcdsaP384),
        ("gb202", FmcSignatureScheme::EcdsaP384),
    ] {
        assert_eq!(FmcSignatureScheme::for_firmware_dir(chip), Some(scheme));
        let Some(bytes) = real_file("fmc", chip, "fmc-570.144.bin") else {
            continue;
        };
        let fmc = FmcImage::parse(&bytes, scheme).unwrap_or_else(|e| panic!("{chip}: {e}"));
        let t = &fixture[chip]["fmc"];
        assert_eq!(fmc.image.len() as u64, u(&t["image_len"]), "{chip}");
        assert_eq!(fmc.signature.len() as u64, u(&t["signature_len"]));
        assert_eq!(fmc.public_key.len() as u64, u(&t["publickey_len"]));
        let hex: String = fmc.hash.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            t["image_sha384"].as_str().unwrap(),
            "{chip}: hash == SHA-384(image) per Python's hashlib"
        );
        // The other scheme's sizes are refused.
        let other = match scheme {
            FmcSignatureScheme::Rsa3072 => FmcSignatureScheme::EcdsaP384,
            FmcSignatureScheme::EcdsaP384 => FmcSignatureScheme::Rsa3072,
        };
        assert!(matches!(
            FmcImage::parse(&bytes, other),
            Err(nvbare_gsp::firmware::FirmwareError::WrongSize { .. })
        ));
    }
}
