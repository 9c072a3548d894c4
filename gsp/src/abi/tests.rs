//! Checks of the ABI's numbers: RPC function and event numbers, sequencer opcodes and
//! `#define` constants against NVIDIA's 570.144 headers (skipped, with a printed reason,
//! when the reference tree is absent), and the behaviour of the helpers.

extern crate std;

use super::*;
use std::path::{Path, PathBuf};
use std::string::String;
use std::vec::Vec;
use std::{format, println};
use zerocopy::{FromBytes, IntoBytes};

/// `$NVBARE_REFERENCE/open-gpu-kernel-modules-570.144/src`, else the one beside the
/// checkout; `None` (after printing why) when it is absent.
fn openrm_src() -> Option<PathBuf> {
    let root = match std::env::var_os("NVBARE_REFERENCE") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/reference"),
    };
    let src = root.join("open-gpu-kernel-modules-570.144/src");
    if src.is_dir() {
        Some(src)
    } else {
        println!(
            "SKIPPED: reference headers not found at {} (set NVBARE_REFERENCE to shared/reference)",
            src.display()
        );
        None
    }
}

fn read(src: &Path, rel: &str) -> String {
    let path = src.join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Parses a C integer literal as the headers write them: `0x1f`, `(0x00000054)`, `17U`,
/// `0x000000100ULL`.
fn c_int(text: &str) -> u64 {
    let t = text
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
        .trim();
    let t = t.trim_end_matches(['U', 'u', 'L', 'l']);
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => t.parse(),
    }
    .unwrap_or_else(|e| panic!("not a C integer: `{text}`: {e}"))
}

/// The `(NAME, VALUE)` arguments of every `MACRO(..., NAME, VALUE)` line of a header.
fn table_entries(header: &str, macro_name: &str) -> Vec<(String, u64)> {
    let open = format!("{macro_name}(");
    header
        .lines()
        .filter_map(|line| {
            let rest = line.trim_start().strip_prefix(&open)?;
            let args: Vec<&str> = rest.split(')').next()?.split(',').map(str::trim).collect();
            let [.., name, value] = args.as_slice() else {
                return None;
            };
            // Skip the macro definitions themselves (`X(UNIT, RPC, VAL)`).
            if value.chars().next()?.is_ascii_digit() {
                Some(((*name).into(), c_int(value)))
            } else {
                None
            }
        })
        .collect()
}

/// The value of `#define NAME VALUE` in a header (nvbare's one header reader,
/// `nvbare-hwref`; the first definition wins).
fn define(header: &str, name: &str) -> u64 {
    use nvbare_hwref::Lookup;
    let mut h = nvbare_hwref::Headers::first_wins();
    h.add_text(header, "header");
    h.value(name)
        .unwrap_or_else(|e| panic!("#define {name}: {e}"))
}

const RPC_GLOBAL_ENUMS: &str = "nvidia/inc/kernel/vgpu/rpc_global_enums.h";

#[test]
fn every_rpc_function_matches_rpc_global_enums_h() {
    let Some(src) = openrm_src() else { return };
    let header = read(&src, RPC_GLOBAL_ENUMS);
    let entries = table_entries(&header, "X");
    assert!(
        entries.len() > 200,
        "parsed only {} X() entries",
        entries.len()
    );
    let mut checked = 0;
    for (name, value) in &entries {
        if name == "NUM_FUNCTIONS" {
            assert_eq!(u64::from(RpcFunction::COUNT), *value, "NUM_FUNCTIONS");
            continue;
        }
        let value = u32::try_from(*value).expect("function numbers fit in u32");
        let function = RpcFunction::from_u32(value)
            .unwrap_or_else(|| panic!("NV_VGPU_MSG_FUNCTION_{name} = {value} is missing"));
        assert_eq!(
            function.name(),
            format!("NV_VGPU_MSG_FUNCTION_{name}"),
            "number {value}"
        );
        assert_eq!(function.as_u32(), value);
        checked += 1;
    }
    assert_eq!(
        checked,
        RpcFunction::ALL.len(),
        "Rust defines functions the header does not"
    );
    println!("checked {checked} RPC function numbers against {RPC_GLOBAL_ENUMS}");
}

#[test]
fn every_rpc_event_matches_rpc_global_enums_h() {
    let Some(src) = openrm_src() else { return };
    let header = read(&src, RPC_GLOBAL_ENUMS);
    let entries = table_entries(&header, "E");
    assert!(
        entries.len() > 30,
        "parsed only {} E() entries",
        entries.len()
    );
    let mut checked = 0;
    for (name, value) in &entries {
        match name.as_str() {
            "FIRST_EVENT" => assert_eq!(u64::from(RpcEvent::FIRST), *value),
            "NUM_EVENTS" => assert_eq!(u64::from(RpcEvent::END), *value),
            _ => {
                let value = u32::try_from(*value).expect("event numbers fit in u32");
                let event = RpcEvent::from_u32(value)
                    .unwrap_or_else(|| panic!("NV_VGPU_MSG_EVENT_{name} = {value:#x} is missing"));
                assert_eq!(event.name(), format!("NV_VGPU_MSG_EVENT_{name}"));
                checked += 1;
            }
        }
    }
    assert_eq!(
        checked,
        RpcEvent::ALL.len(),
        "Rust defines events the header does not"
    );
    println!("checked {checked} RPC event numbers against {RPC_GLOBAL_ENUMS}");
}

#[test]
fn sequencer_opcodes_match_rmgspseq_h() {
    let Some(src) = openrm_src() else { return };
    let header = read(&src, "nvidia/arch/nvalloc/common/inc/rmgspseq.h");
    let body = header
        .split("typedef enum GSP_SEQ_BUF_OPCODE")
        .nth(1)
        .and_then(|rest| rest.split('}').next())
        .expect("GSP_SEQ_BUF_OPCODE enum");
    // C enum numbering: an explicit `= N`, else one more than the previous.
    let mut next = 0u32;
    let mut names = Vec::new();
    for item in body.trim_start_matches(['\n', '{', ' ']).split(',') {
        let item = item.trim().trim_start_matches('{').trim();
        if item.is_empty() {
            continue;
        }
        let (name, value) = match item.split_once('=') {
            Some((n, v)) => (n.trim(), u32::try_from(c_int(v)).expect("small")),
            None => (item, next),
        };
        let opcode = GspSeqBufOpcode::from_u32(value).unwrap_or_else(|| panic!("{name} = {value}"));
        assert_eq!(opcode.name(), name);
        assert_eq!(opcode as u32, value);
        names.push(name);
        next = value + 1;
    }
    assert_eq!(names.len(), GspSeqBufOpcode::ALL.len(), "{names:?}");
    assert_eq!(
        define(&header, "GSP_SEQ_BUF_REG_SAVE_SIZE"),
        GSP_SEQ_BUF_REG_SAVE_SIZE as u64
    );
    assert_eq!(define(&header, "GSP_SEQ_BUF_REG_SAVE_MAILBOX0"), 0);
    assert_eq!(define(&header, "GSP_SEQ_BUF_REG_SAVE_MAILBOX1"), 1);
}

#[test]
fn constants_match_their_defines() {
    let Some(src) = openrm_src() else { return };
    let rpc_headers = read(&src, "nvidia/inc/kernel/vgpu/rpc_headers.h");
    let wpr = read(&src, "nvidia/arch/nvalloc/common/inc/gsp/gsp_fw_wpr_meta.h");
    let msgq = read(&src, "common/shared/msgq/inc/msgq/msgq_priv.h");
    let libos = read(&src, "common/uproc/os/common/include/libos_init_args.h");
    let sdk = |rel: &str| read(&src, &format!("common/sdk/nvidia/inc/{rel}"));
    let checks: [(&str, u64, u64); 16] = [
        (
            "NV_VGPU_MSG_SIGNATURE_VALID",
            define(&rpc_headers, "NV_VGPU_MSG_SIGNATURE_VALID"),
            NV_VGPU_MSG_SIGNATURE_VALID.into(),
        ),
        (
            "NV_VGPU_MSG_HEADER_VERSION_MAJOR_TOT",
            define(&rpc_headers, "NV_VGPU_MSG_HEADER_VERSION_MAJOR_TOT"),
            NV_VGPU_MSG_HEADER_VERSION_MAJOR_TOT.into(),
        ),
        (
            "NV_VGPU_MSG_HEADER_VERSION_MINOR_TOT",
            define(&rpc_headers, "NV_VGPU_MSG_HEADER_VERSION_MINOR_TOT"),
            NV_VGPU_MSG_HEADER_VERSION_MINOR_TOT.into(),
        ),
        (
            "GSP_FW_WPR_META_MAGIC",
            define(&wpr, "GSP_FW_WPR_META_MAGIC"),
            GSP_FW_WPR_META_MAGIC,
        ),
        (
            "GSP_FW_WPR_META_REVISION",
            define(&wpr, "GSP_FW_WPR_META_REVISION"),
            GSP_FW_WPR_META_REVISION,
        ),
        (
            "GSP_FW_WPR_META_VERIFIED",
            define(&wpr, "GSP_FW_WPR_META_VERIFIED"),
            GSP_FW_WPR_META_VERIFIED,
        ),
        (
            "MSGQ_VERSION",
            define(&msgq, "MSGQ_VERSION"),
            MSGQ_VERSION.into(),
        ),
        (
            "LIBOS_MEMORY_REGION_INIT_ARGUMENTS_MAX",
            define(&libos, "LIBOS_MEMORY_REGION_INIT_ARGUMENTS_MAX"),
            LIBOS_MEMORY_REGION_INIT_ARGUMENTS_MAX as u64,
        ),
        (
            "LIBOS_MEMORY_REGION_RADIX_PAGE_SIZE",
            define(&libos, "LIBOS_MEMORY_REGION_RADIX_PAGE_SIZE"),
            LIBOS_MEMORY_REGION_RADIX_PAGE_SIZE as u64,
        ),
        (
            "LIBOS_MEMORY_REGION_RADIX_PAGE_LOG2",
            define(&libos, "LIBOS_MEMORY_REGION_RADIX_PAGE_LOG2"),
            LIBOS_MEMORY_REGION_RADIX_PAGE_LOG2.into(),
        ),
        (
            "NV0080_CTRL_GR_CAPS_TBL_SIZE",
            define(
                &sdk("ctrl/ctrl0080/ctrl0080gr.h"),
                "NV0080_CTRL_GR_CAPS_TBL_SIZE",
            ),
            NV0080_CTRL_GR_CAPS_TBL_SIZE as u64,
        ),
        (
            "NV2080_GPU_MAX_GID_LENGTH",
            define(
                &sdk("ctrl/ctrl2080/ctrl2080gpu.h"),
                "NV2080_GPU_MAX_GID_LENGTH",
            ),
            NV2080_GPU_MAX_GID_LENGTH as u64,
        ),
        (
            "NV2080_GPU_MAX_NAME_STRING_LENGTH",
            define(
                &sdk("ctrl/ctrl2080/ctrl2080gpu.h"),
                "NV2080_GPU_MAX_NAME_STRING_LENGTH",
            ),
            NV2080_GPU_MAX_NAME_STRING_LENGTH as u64,
        ),
        (
            "NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO_MAX_ENTRIES",
            define(
                &sdk("ctrl/ctrl2080/ctrl2080fb.h"),
                "NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO_MAX_ENTRIES",
            ),
            NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO_MAX_ENTRIES as u64,
        ),
        (
            "NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO_MEM_TYPES",
            define(
                &sdk("ctrl/ctrl2080/ctrl2080fb.h"),
                "NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO_MEM_TYPES",
            ),
            NV2080_CTRL_CMD_FB_GET_FB_REGION_INFO_MEM_TYPES as u64,
        ),
        (
            "NV0073_CTRL_SYSTEM_ACPI_ID_MAP_MAX_DISPLAYS",
            define(
                &sdk("ctrl/ctrl0073/ctrl0073system.h"),
                "NV0073_CTRL_SYSTEM_ACPI_ID_MAP_MAX_DISPLAYS",
            ),
            NV0073_CTRL_SYSTEM_ACPI_ID_MAP_MAX_DISPLAYS as u64,
        ),
    ];
    for (name, c, rust) in checks {
        assert_eq!(c, rust, "{name}: header {c:#x}, Rust {rust:#x}");
    }
    let engine_type_last = define(
        &sdk("class/cl2080_notification.h"),
        "NV2080_ENGINE_TYPE_LAST",
    );
    assert_eq!(
        ((engine_type_last - 1) / 32 + 1) as usize,
        NVGPU_ENGINE_CAPS_MASK_ARRAY_MAX
    );
}

#[test]
fn numbers_round_trip_and_unknown_numbers_are_rejected() {
    for &f in RpcFunction::ALL {
        assert_eq!(RpcFunction::from_u32(f.as_u32()), Some(f));
        assert_eq!(RpcFunction::try_from(f.as_u32()), Ok(f));
        assert_eq!(RpcNumber::from_u32(f.as_u32()), RpcNumber::Function(f));
        assert!(f.name().ends_with(f.short_name()));
    }
    for &e in RpcEvent::ALL {
        assert_eq!(RpcEvent::from_u32(e.as_u32()), Some(e));
        assert_eq!(RpcNumber::from_u32(e.as_u32()), RpcNumber::Event(e));
        assert!((RpcEvent::FIRST..RpcEvent::END).contains(&e.as_u32()));
    }
    assert_eq!(RpcFunction::from_u32(RpcFunction::COUNT), None);
    assert_eq!(RpcFunction::try_from(0xdead_beef), Err(0xdead_beef));
    assert_eq!(RpcEvent::from_u32(RpcEvent::END), None);
    assert_eq!(RpcNumber::from_u32(0x0fff), RpcNumber::Unknown(0x0fff));
    assert_eq!(RpcNumber::from_u32(0x0fff).name(), "unknown");
    assert_eq!(GspSeqBufOpcode::from_u32(9), None);
    assert_eq!(GspSeqBufOpcode::from_u32(u32::MAX), None);
}

#[test]
fn well_known_numbers() {
    assert_eq!(RpcFunction::GspRmAlloc.as_u32(), 103);
    assert_eq!(
        RpcFunction::GspRmControl.name(),
        "NV_VGPU_MSG_FUNCTION_GSP_RM_CONTROL"
    );
    assert_eq!(RpcFunction::GspSetSystemInfo.as_u32(), 72);
    assert_eq!(RpcFunction::SetRegistry.as_u32(), 73);
    assert_eq!(RpcEvent::GspInitDone.as_u32(), 0x1001);
    assert_eq!(
        RpcEvent::GspRunCpuSequencer.name(),
        "NV_VGPU_MSG_EVENT_GSP_RUN_CPU_SEQUENCER"
    );
    assert_eq!(
        std::format!("{}", RpcEvent::OsErrorLog),
        "NV_VGPU_MSG_EVENT_OS_ERROR_LOG"
    );
    assert_eq!(RPC_HEADER_VERSION, 0x0300_0000);
}

#[test]
fn pte_desc_packs_its_bitfields_low_bit_first() {
    let d = PteDesc::new(2, 0x1234);
    assert_eq!(d.bits, 0x1234_0002);
    assert_eq!((d.idr(), d.length()), (2, 0x1234));
    assert_eq!(PteDesc::new(7, 1).idr(), 3, "idr is two bits");
}

#[test]
fn sequencer_payload_sizes_follow_the_payload_structs() {
    use GspSeqBufOpcode::*;
    let dwords: Vec<usize> = GspSeqBufOpcode::ALL
        .iter()
        .map(|o| o.payload_dwords())
        .collect();
    assert_eq!(dwords, [2, 3, 5, 1, 2, 0, 0, 0, 0]);
    assert_eq!(RegPoll.payload_dwords(), 5);
    assert_eq!(CoreResume.payload_dwords(), 0);
}

#[test]
fn structs_round_trip_through_bytes_little_endian() {
    let header = RpcMessageHeader {
        header_version: RPC_HEADER_VERSION,
        signature: NV_VGPU_MSG_SIGNATURE_VALID,
        length: 0x40,
        function: RpcFunction::GspRmControl.as_u32(),
        ..Default::default()
    };
    let bytes = header.as_bytes();
    assert_eq!(&bytes[4..8], b"VRPC");
    assert_eq!(&bytes[12..16], &76u32.to_le_bytes());
    assert_eq!(RpcMessageHeader::read_from_bytes(bytes), Ok(header));

    let cot = NvdmPayloadCot {
        size: 860,
        gsp_boot_args_sysmem_offset: 0x1122_3344_5566_7788,
        ..Default::default()
    };
    let cot_bytes = cot.as_bytes();
    assert_eq!(cot_bytes.len(), 860);
    assert_eq!(
        &cot_bytes[852..860],
        &0x1122_3344_5566_7788u64.to_le_bytes()
    );
    assert_eq!(
        NvdmPayloadCot::read_from_bytes(cot_bytes).map(|c| c.size),
        Ok(860)
    );
    assert!(
        NvdmPayloadCot::read_from_bytes(&cot_bytes[..859]).is_err(),
        "short input is an error"
    );
}

proptest::proptest! {
    /// Any `function` field classifies consistently and never panics.
    #[test]
    fn any_number_classifies_consistently(value in proptest::prelude::any::<u32>()) {
        match RpcNumber::from_u32(value) {
            RpcNumber::Function(f) => proptest::prop_assert_eq!(f.as_u32(), value),
            RpcNumber::Event(e) => proptest::prop_assert_eq!(e.as_u32(), value),
            RpcNumber::Unknown(v) => {
                proptest::prop_assert_eq!(v, value);
                proptest::prop_assert!(RpcFunction::from_u32(value).is_none());
                proptest::prop_assert!(RpcEvent::from_u32(value).is_none());
            }
        }
        if let Some(op) = GspSeqBufOpcode::from_u32(value) {
            proptest::prop_assert_eq!(op as u32, value);
        }
    }
}
