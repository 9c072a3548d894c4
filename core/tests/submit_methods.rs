//! Method offsets, bit fields and structure offsets used by the submission code, checked against
//! NVIDIA's class headers (open-gpu-doc `classes/`, open-gpu-kernel-modules 570.144 `class/`),
//! which this test parses.

mod submit_common;
use submit_common::shared_path;

use nvbare_core::{compute, copy, gpfifo, push};
use nvbare_hwref::{Headers, Lookup};

/// A class header, read with nvbare's one header reader (`nvbare-hwref`), and how many of its
/// defines were checked.
struct Header(Headers, usize);

impl Header {
    fn new(rel: &str) -> Self {
        let mut h = Headers::new();
        h.add_file(&shared_path(rel)).unwrap();
        Header(h, 0)
    }
    fn method(&mut self, name: &str, ours: u32) {
        let v = self.0.value(name).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(v, u64::from(ours), "{name}");
        self.1 += 1;
    }
    /// The `(hi, lo)` of field `field`.
    fn range(&self, field: &str) -> (u64, u64) {
        self.0
            .field(field)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("{field} not in header"))
    }
    /// The bits of `field` = `value_name` (or a number), shifted into place.
    fn bits(&mut self, field: &str, value: &str) -> u32 {
        let (hi, lo) = self.range(field);
        let v = match self.0.value(&format!("{field}_{value}")) {
            Ok(v) => v,
            Err(_) => value.parse().unwrap(),
        };
        assert!(hi >= lo && v < (1u64 << (hi - lo + 1)));
        self.1 += 1;
        (v << lo) as u32
    }
}

/// `hi:lo` of the bits set in `mask` (one field set to all ones), within their 32-bit word.
fn word_range(mask: u64) -> (u64, u64) {
    let lo = u64::from(mask.trailing_zeros());
    let hi = 63 - u64::from(mask.leading_zeros());
    assert_eq!(hi / 32, lo / 32, "a field inside one word");
    (hi % 32, lo % 32)
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
    assert!(!a.0.contains("NVC6C0_REPORT_SEMAPHORE_EXECUTE"));
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
    // The method header's bitfield-struct layout is the header's.
    let m = || push::MethodHeader::new();
    let mh = |h: push::MethodHeader| word_range(u64::from(h.into_bits()));
    for (field, ours) in [
        ("NVC56F_DMA_INCR_ADDRESS", mh(m().with_method_dword(0xfff))),
        ("NVC56F_DMA_INCR_SUBCHANNEL", mh(m().with_subchannel(7))),
        ("NVC56F_DMA_INCR_COUNT", mh(m().with_count(0x1fff))),
        ("NVC56F_DMA_INCR_OPCODE", mh(m().with_opcode(7))),
        ("NVC56F_DMA_IMMD_DATA", mh(m().with_count(0x1fff))),
    ] {
        assert_eq!(h.range(field), ours, "{field}");
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
    // The GPFIFO entry's bitfield-struct layout is the header's (word 1 is bits 63:32).
    let e = || gpfifo::GpEntryBits::new();
    let eb = |x: gpfifo::GpEntryBits| word_range(x.into_bits());
    for (field, ours) in [
        (
            "NVC86F_GP_ENTRY0_FETCH",
            eb(e().with_fetch_conditional(true)),
        ),
        ("NVC86F_GP_ENTRY0_GET", eb(e().with_get(0x3fff_ffff))),
        ("NVC86F_GP_ENTRY1_GET_HI", eb(e().with_get_hi(0xff))),
        ("NVC86F_GP_ENTRY1_LEVEL", eb(e().with_subroutine(true))),
        ("NVC86F_GP_ENTRY1_LENGTH", eb(e().with_length(0x1f_ffff))),
        ("NVC86F_GP_ENTRY1_SYNC", eb(e().with_sync_wait(true))),
    ] {
        assert_eq!(k.range(field), ours, "{field}");
    }
    assert_eq!(
        k.0.value("NVC86F_GP_ENTRY__SIZE").unwrap() as usize,
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
