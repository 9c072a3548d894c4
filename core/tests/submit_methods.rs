//! Method offsets, bit fields and structure offsets used by the submission code, checked against
//! NVIDIA's class headers (open-gpu-doc `classes/`, open-gpu-kernel-modules 570.144 `class/`),
//! which this test parses.

mod submit_common;
use submit_common::shared_path;

use nvbare_core::{compute, copy, gpfifo, push};
use std::collections::HashMap;

/// `#define NAME value` pairs of a header; values are `(0x..)`, `0x..` or `hi:lo`.
fn defines(rel: &str) -> HashMap<String, String> {
    let text = std::fs::read_to_string(shared_path(rel)).unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("#define "))
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            Some((it.next()?.to_string(), it.next()?.to_string()))
        })
        .collect()
}

fn num(s: &str) -> u32 {
    let s = s.trim_matches(|c| c == '(' || c == ')');
    u32::from_str_radix(s.trim_start_matches("0x"), 16).unwrap_or_else(|_| panic!("{s}"))
}

struct Header(HashMap<String, String>, usize);

impl Header {
    fn new(rel: &str) -> Self {
        Header(defines(rel), 0)
    }
    fn method(&mut self, name: &str, ours: u32) {
        let v = self
            .0
            .get(name)
            .unwrap_or_else(|| panic!("{name} not in header"));
        assert_eq!(num(v), ours, "{name}");
        self.1 += 1;
    }
    /// The bits of `field` = `value_name` (or a number), shifted into place.
    fn bits(&mut self, field: &str, value: &str) -> u32 {
        let range = self
            .0
            .get(field)
            .unwrap_or_else(|| panic!("{field} not in header"));
        let (hi, lo) = range.split_once(':').unwrap();
        let (hi, lo): (u32, u32) = (hi.parse().unwrap(), lo.parse().unwrap());
        let v = match self.0.get(&format!("{field}_{value}")) {
            Some(v) => num(v),
            None => value.parse().unwrap(),
        };
        assert!(hi >= lo && v < (1u64 << (hi - lo + 1)) as u32);
        self.1 += 1;
        v << lo
    }
}

#[test]
fn compute_methods_match_clcbc0_h() {
    let mut h = Header::new("reference/open-gpu-doc/classes/compute/clcbc0.h");
    h.method("NVCBC0_SEND_PCAS_A", compute::SEND_PCAS_A);
    h.method(
        "NVCBC0_SEND_SIGNALING_PCAS2_B",
        compute::SEND_SIGNALING_PCAS2_B,
    );
    h.method(
        "NVCBC0_SET_SHADER_SHARED_MEMORY_WINDOW_A",
        compute::SET_SHADER_SHARED_MEMORY_WINDOW_A,
    );
    h.method(
        "NVCBC0_SET_SHADER_LOCAL_MEMORY_WINDOW_A",
        compute::SET_SHADER_LOCAL_MEMORY_WINDOW_A,
    );
    h.method(
        "NVCBC0_SET_SHADER_LOCAL_MEMORY_A",
        compute::SET_SHADER_LOCAL_MEMORY_A,
    );
    h.method(
        "NVCBC0_SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A",
        compute::SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A,
    );
    h.method(
        "NVCBC0_INVALIDATE_SHADER_CACHES_NO_WFI",
        compute::INVALIDATE_SHADER_CACHES_NO_WFI,
    );
    h.method(
        "NVCBC0_INVALIDATE_SHADER_CACHES",
        compute::INVALIDATE_SHADER_CACHES,
    );
    h.method(
        "NVCBC0_SET_REPORT_SEMAPHORE_PAYLOAD_LOWER",
        compute::SET_REPORT_SEMAPHORE_PAYLOAD_LOWER,
    );
    h.method(
        "NVCBC0_SET_REPORT_SEMAPHORE_PAYLOAD_UPPER",
        compute::SET_REPORT_SEMAPHORE_PAYLOAD_LOWER + 4,
    );
    h.method(
        "NVCBC0_SET_REPORT_SEMAPHORE_ADDRESS_LOWER",
        compute::SET_REPORT_SEMAPHORE_PAYLOAD_LOWER + 8,
    );
    h.method(
        "NVCBC0_SET_REPORT_SEMAPHORE_ADDRESS_UPPER",
        compute::SET_REPORT_SEMAPHORE_PAYLOAD_LOWER + 12,
    );
    h.method(
        "NVCBC0_REPORT_SEMAPHORE_EXECUTE",
        compute::REPORT_SEMAPHORE_EXECUTE,
    );
    h.method(
        "NVCBC0_SET_SHADER_SHARED_MEMORY_WINDOW_B",
        compute::SET_SHADER_SHARED_MEMORY_WINDOW_A + 4,
    );
    h.method(
        "NVCBC0_SET_SHADER_LOCAL_MEMORY_WINDOW_B",
        compute::SET_SHADER_LOCAL_MEMORY_WINDOW_A + 4,
    );
    h.method(
        "NVCBC0_SET_SHADER_LOCAL_MEMORY_B",
        compute::SET_SHADER_LOCAL_MEMORY_A + 4,
    );
    h.method(
        "NVCBC0_SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_C",
        compute::SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A + 8,
    );
    for (field, ours) in [
        (
            "NVCBC0_INVALIDATE_SHADER_CACHES_NO_WFI_INSTRUCTION",
            compute::INVALIDATE_INSTRUCTION,
        ),
        (
            "NVCBC0_INVALIDATE_SHADER_CACHES_NO_WFI_GLOBAL_DATA",
            compute::INVALIDATE_DATA,
        ),
        (
            "NVCBC0_INVALIDATE_SHADER_CACHES_NO_WFI_CONSTANT",
            compute::INVALIDATE_CONSTANT,
        ),
    ] {
        assert_eq!(h.bits(field, "TRUE"), ours, "{field}");
    }
    assert_eq!(
        h.bits("NVCBC0_REPORT_SEMAPHORE_EXECUTE_PAYLOAD_SIZE64", "TRUE"),
        compute::REPORT_SEMAPHORE_PAYLOAD_SIZE64
    );
    assert_eq!(
        h.bits("NVCBC0_REPORT_SEMAPHORE_EXECUTE_OPERATION", "RELEASE"),
        0
    );
    assert_eq!(
        h.bits(
            "NVCBC0_REPORT_SEMAPHORE_EXECUTE_STRUCTURE_SIZE",
            "SEMAPHORE_FOUR_WORDS"
        ),
        0
    );
    for (name, action) in [
        (
            "INVALIDATE_COPY_SCHEDULE",
            compute::PcasAction::InvalidateCopySchedule,
        ),
        ("PREFETCH_SCHEDULE", compute::PcasAction::PrefetchSchedule),
        (
            "INVALIDATE_PREFETCH_COPY_SCHEDULE",
            compute::PcasAction::InvalidatePrefetchCopySchedule,
        ),
    ] {
        assert_eq!(
            h.bits("NVCBC0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION", name),
            action as u32
        );
    }
    // Ampere compute uses the same offsets (AMPERE_COMPUTE_B).
    let mut a = Header::new("reference/open-gpu-doc/classes/compute/clc6c0.h");
    a.method("NVC6C0_SEND_PCAS_A", compute::SEND_PCAS_A);
    a.method(
        "NVC6C0_SEND_SIGNALING_PCAS2_B",
        compute::SEND_SIGNALING_PCAS2_B,
    );
    a.method(
        "NVC6C0_SET_SHADER_LOCAL_MEMORY_A",
        compute::SET_SHADER_LOCAL_MEMORY_A,
    );
    a.method(
        "NVC6C0_INVALIDATE_SHADER_CACHES_NO_WFI",
        compute::INVALIDATE_SHADER_CACHES_NO_WFI,
    );
    // The 64-bit report semaphore exists from Ada on (clc9c0.h), not in clc6c0.h.
    let mut ada = Header::new("reference/open-gpu-doc/classes/compute/clc9c0.h");
    ada.method(
        "NVC9C0_SET_REPORT_SEMAPHORE_PAYLOAD_LOWER",
        compute::SET_REPORT_SEMAPHORE_PAYLOAD_LOWER,
    );
    ada.method(
        "NVC9C0_REPORT_SEMAPHORE_EXECUTE",
        compute::REPORT_SEMAPHORE_EXECUTE,
    );
    assert!(!a.0.contains_key("NVC6C0_REPORT_SEMAPHORE_EXECUTE"));
    let mut b = Header::new("reference/open-gpu-doc/classes/compute/clcec0.h");
    b.method("NVCEC0_SEND_PCAS_A", compute::SEND_PCAS_A);
    b.method(
        "NVCEC0_SET_SHADER_LOCAL_MEMORY_WINDOW_A",
        compute::SET_SHADER_LOCAL_MEMORY_WINDOW_A,
    );
    eprintln!("compute: {} definitions checked", h.1 + a.1 + ada.1 + b.1);
}

#[test]
fn copy_methods_match_clc8b5_h() {
    let mut h = Header::new("reference/open-gpu-doc/classes/dma-copy/clc8b5.h");
    h.method("NVC8B5_SET_SEMAPHORE_A", copy::SET_SEMAPHORE_A);
    h.method("NVC8B5_SET_SEMAPHORE_B", copy::SET_SEMAPHORE_A + 4);
    h.method("NVC8B5_SET_SEMAPHORE_PAYLOAD", copy::SET_SEMAPHORE_A + 8);
    h.method(
        "NVC8B5_SET_SEMAPHORE_PAYLOAD_UPPER",
        copy::SET_SEMAPHORE_PAYLOAD_UPPER,
    );
    h.method("NVC8B5_LAUNCH_DMA", copy::LAUNCH_DMA);
    h.method("NVC8B5_OFFSET_IN_UPPER", copy::OFFSET_IN_UPPER);
    h.method("NVC8B5_OFFSET_IN_LOWER", copy::OFFSET_IN_UPPER + 4);
    h.method("NVC8B5_OFFSET_OUT_UPPER", copy::OFFSET_IN_UPPER + 8);
    h.method("NVC8B5_OFFSET_OUT_LOWER", copy::OFFSET_IN_UPPER + 12);
    h.method("NVC8B5_LINE_LENGTH_IN", copy::LINE_LENGTH_IN);
    use copy::launch_dma as l;
    let f = "NVC8B5_LAUNCH_DMA";
    assert_eq!(
        h.bits(&format!("{f}_DATA_TRANSFER_TYPE"), "NON_PIPELINED"),
        l::DATA_TRANSFER_NON_PIPELINED
    );
    assert_eq!(
        h.bits(&format!("{f}_DATA_TRANSFER_TYPE"), "PIPELINED"),
        l::DATA_TRANSFER_PIPELINED
    );
    assert_eq!(
        h.bits(&format!("{f}_FLUSH_ENABLE"), "TRUE"),
        l::FLUSH_ENABLE
    );
    assert_eq!(
        h.bits(&format!("{f}_SEMAPHORE_TYPE"), "RELEASE_ONE_WORD_SEMAPHORE"),
        l::SEMAPHORE_ONE_WORD
    );
    assert_eq!(
        h.bits(
            &format!("{f}_SEMAPHORE_TYPE"),
            "RELEASE_FOUR_WORD_SEMAPHORE"
        ),
        l::SEMAPHORE_FOUR_WORD
    );
    assert_eq!(
        h.bits(&format!("{f}_SRC_MEMORY_LAYOUT"), "PITCH"),
        l::SRC_PITCH
    );
    assert_eq!(
        h.bits(&format!("{f}_DST_MEMORY_LAYOUT"), "PITCH"),
        l::DST_PITCH
    );
    assert_eq!(
        h.bits(&format!("{f}_SEMAPHORE_PAYLOAD_SIZE"), "TWO_WORD"),
        l::SEMAPHORE_PAYLOAD_64BIT
    );
    // The kernel-module copy of the header agrees.
    let mut k = Header::new(
        "reference/open-gpu-kernel-modules-570.144/src/common/sdk/nvidia/inc/class/clc8b5.h",
    );
    k.method("NVC8B5_LAUNCH_DMA", copy::LAUNCH_DMA);
    k.method("NVC8B5_SET_SEMAPHORE_A", copy::SET_SEMAPHORE_A);
    eprintln!("copy: {} definitions checked", h.1 + k.1);
}

#[test]
fn host_methods_and_headers_match_clc56f_and_clc86f() {
    let mut h = Header::new("reference/open-gpu-doc/classes/host/clc56f.h");
    use push::host;
    h.method("NVC56F_SET_OBJECT", host::SET_OBJECT);
    h.method("NVC56F_NON_STALL_INTERRUPT", host::NON_STALL_INTERRUPT);
    h.method("NVC56F_MEM_OP_A", host::MEM_OP_A);
    h.method("NVC56F_SEM_ADDR_LO", host::SEM_ADDR_LO);
    h.method("NVC56F_SEM_ADDR_HI", host::SEM_ADDR_HI);
    h.method("NVC56F_SEM_PAYLOAD_LO", host::SEM_PAYLOAD_LO);
    h.method("NVC56F_SEM_PAYLOAD_HI", host::SEM_PAYLOAD_HI);
    h.method("NVC56F_SEM_EXECUTE", host::SEM_EXECUTE);
    h.method("NVC56F_WFI", host::WFI);
    let e = "NVC56F_SEM_EXECUTE";
    assert_eq!(
        h.bits(&format!("{e}_OPERATION"), "RELEASE"),
        host::sem_op::RELEASE
    );
    assert_eq!(
        h.bits(&format!("{e}_OPERATION"), "ACQUIRE"),
        host::sem_op::ACQUIRE
    );
    assert_eq!(
        h.bits(&format!("{e}_OPERATION"), "ACQ_STRICT_GEQ"),
        host::sem_op::ACQ_STRICT_GEQ
    );
    assert_eq!(
        h.bits(&format!("{e}_OPERATION"), "ACQ_CIRC_GEQ"),
        host::sem_op::ACQ_CIRC_GEQ
    );
    assert_eq!(
        h.bits(&format!("{e}_ACQUIRE_SWITCH_TSG"), "EN"),
        host::SEM_EXECUTE_ACQUIRE_SWITCH_TSG
    );
    assert_eq!(
        h.bits(&format!("{e}_RELEASE_WFI"), "EN"),
        host::SEM_EXECUTE_RELEASE_WFI
    );
    assert_eq!(
        h.bits(&format!("{e}_PAYLOAD_SIZE"), "64BIT"),
        host::SEM_EXECUTE_PAYLOAD_64BIT
    );
    assert_eq!(
        h.bits(&format!("{e}_RELEASE_TIMESTAMP"), "EN"),
        host::SEM_EXECUTE_RELEASE_TIMESTAMP
    );
    // Method header opcodes (NVC56F_DMA_*).
    for (name, kind) in [
        (
            "NVC56F_DMA_INCR_OPCODE_VALUE",
            push::HeaderKind::Incrementing,
        ),
        (
            "NVC56F_DMA_NONINCR_OPCODE_VALUE",
            push::HeaderKind::NonIncrementing,
        ),
        ("NVC56F_DMA_IMMD_OPCODE_VALUE", push::HeaderKind::Immediate),
        (
            "NVC56F_DMA_ONEINCR_OPCODE_VALUE",
            push::HeaderKind::IncrementOnce,
        ),
        (
            "NVC56F_DMA_ENDSEG_OPCODE_VALUE",
            push::HeaderKind::EndSegment,
        ),
    ] {
        h.method(name, kind.opcode());
    }
    for (field, lo) in [
        ("NVC56F_DMA_INCR_ADDRESS", "11:0"),
        ("NVC56F_DMA_INCR_SUBCHANNEL", "15:13"),
        ("NVC56F_DMA_INCR_COUNT", "28:16"),
        ("NVC56F_DMA_INCR_OPCODE", "31:29"),
        ("NVC56F_DMA_IMMD_DATA", "28:16"),
    ] {
        assert_eq!(h.0[field], lo, "{field}");
    }
    let sub = push::Subchannel::new(5).unwrap();
    let w = push::encode_header(push::HeaderKind::Incrementing, sub, 0x3ffc, 0x1fff).unwrap();
    assert_eq!(
        (w & 0xfff, (w >> 13) & 7, (w >> 16) & 0x1fff, w >> 29),
        (0xfff, 5, 0x1fff, 1)
    );

    // Hopper's host class (kernel-module header): same semaphore methods, GP entry fields and
    // USERD offsets of GPGet/GPPut.
    let mut k = Header::new(
        "reference/open-gpu-kernel-modules-570.144/src/common/sdk/nvidia/inc/class/clc86f.h",
    );
    k.method("NVC86F_SEM_ADDR_LO", host::SEM_ADDR_LO);
    k.method("NVC86F_SEM_EXECUTE", host::SEM_EXECUTE);
    k.method("NVC86F_WFI", host::WFI);
    for (field, range) in [
        ("NVC86F_GP_ENTRY0_GET", "31:2"),
        ("NVC86F_GP_ENTRY1_GET_HI", "7:0"),
        ("NVC86F_GP_ENTRY1_LEVEL", "9:9"),
        ("NVC86F_GP_ENTRY1_LENGTH", "30:10"),
        ("NVC86F_GP_ENTRY1_SYNC", "31:31"),
    ] {
        assert_eq!(k.0[field], range, "{field}");
    }
    assert_eq!(
        num(&k.0["NVC86F_GP_ENTRY__SIZE"]) as usize,
        gpfifo::GP_ENTRY_SIZE
    );
    let text = std::fs::read_to_string(shared_path(
        "reference/open-gpu-kernel-modules-570.144/src/common/sdk/nvidia/inc/class/clc86f.h",
    ))
    .unwrap();
    let row = |field: &str| {
        let line = text
            .lines()
            .find(|l| l.contains(&format!("NvU32 {field};")))
            .unwrap();
        let range = line.rsplit_once(' ').unwrap().1.trim_end_matches("*/");
        usize::from_str_radix(range.split('-').next().unwrap(), 16).unwrap()
    };
    assert_eq!(row("GPGet"), gpfifo::USERD_GP_GET);
    assert_eq!(row("GPPut"), gpfifo::USERD_GP_PUT);
    eprintln!("host: {} definitions checked", h.1 + k.1 + 9);
}
