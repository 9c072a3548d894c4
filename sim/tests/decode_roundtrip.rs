//! Every operation kind `nvbare-core` encodes, decoded back by the simulator's independent
//! decoder: pushbuffer headers, host/copy/compute semaphores, copies, compute setup and
//! launches, and QMDs of versions 3, 4 and 5.

use nvbare_core::compute::{self, ComputeSetup, LocalMemory, PcasAction};
use nvbare_core::copy;
use nvbare_core::cubin::Cubin;
use nvbare_core::launch::{self, ComputeContext, LaunchConfig};
use nvbare_core::push::{PushBuffer, Subchannel};
use nvbare_core::qmd::{ConstantBuffer, Qmd, QmdParams, QmdVersion, SharedMemoryConfig};
use nvbare_core::sem::{self, HostRelease};
use nvbare_sim::decode::qmd::{CbufBinding, QmdRelease, decode_qmd};
use nvbare_sim::decode::{Decoder, HostSemaphoreOp, MethodWrite, Operation, method_writes};
use proptest::prelude::*;

fn decoder() -> Decoder {
    let mut d = Decoder::new();
    d.bind(1, 0xcbc0);
    d.bind(4, 0xc8b5);
    d
}

#[test]
fn header_kinds_round_trip() {
    let mut pb = PushBuffer::new();
    let sc = Subchannel::new(3).unwrap();
    pb.method(sc, 0x100, &[1, 2, 3]).unwrap();
    pb.method_non_incrementing(sc, 0x200, &[4, 5]).unwrap();
    pb.method_increment_once(sc, 0x300, &[6, 7, 8]).unwrap();
    pb.immediate(sc, 0x400, 0x1abc).unwrap();
    pb.end_segment();
    pb.method(sc, 0x500, &[9]).unwrap(); // after END_SEGMENT: not fetched
    let w = |method, value| MethodWrite {
        subchannel: 3,
        method,
        value,
    };
    assert_eq!(
        method_writes(pb.words()).unwrap(),
        [
            w(0x100, 1),
            w(0x104, 2),
            w(0x108, 3),
            w(0x200, 4),
            w(0x200, 5),
            w(0x300, 6),
            w(0x304, 7),
            w(0x304, 8),
            w(0x400, 0x1abc)
        ]
    );
    // Truncated data is an error, not a panic.
    let words = pb.words();
    assert!(method_writes(&words[..2]).is_err());
}

#[test]
fn host_semaphores_round_trip() {
    let mut pb = PushBuffer::new();
    sem::host_release(
        &mut pb,
        0x12_3456_7890,
        0xdead_beef_0000_0001,
        HostRelease::AFTER_IDLE,
    )
    .unwrap();
    sem::host_release(&mut pb, 0x1000, 7, HostRelease::ON_FETCH).unwrap();
    sem::host_acquire(&mut pb, 0x2000, 0x1_0000_0000).unwrap();
    sem::host_wait_for_idle(&mut pb).unwrap();
    assert_eq!(
        decoder().decode(pb.words()).unwrap(),
        [
            Operation::HostSemaphore {
                va: 0x12_3456_7890,
                value: 0xdead_beef_0000_0001,
                payload64: true,
                op: HostSemaphoreOp::Release {
                    wait_for_idle: true,
                    timestamp: true
                }
            },
            Operation::HostSemaphore {
                va: 0x1000,
                value: 7,
                payload64: true,
                op: HostSemaphoreOp::Release {
                    wait_for_idle: false,
                    timestamp: false
                }
            },
            Operation::HostSemaphore {
                va: 0x2000,
                value: 0x1_0000_0000,
                payload64: true,
                op: HostSemaphoreOp::AcquireCircGeq
            },
            Operation::WaitForIdle,
        ]
    );
}

#[test]
fn copies_round_trip_and_split_above_2_gib() {
    let mut pb = PushBuffer::new();
    let mut ch_bind = PushBuffer::new();
    ch_bind.set_object(Subchannel::COPY, 0xc8b5).unwrap();
    pb.append(&ch_bind);
    let len = (5u64 << 30) + 123;
    let n = copy::copy_linear(&mut pb, 0x40_0000_0000, 0x10_0000_0000, len).unwrap();
    assert_eq!(n, 3);
    copy::release_semaphore(&mut pb, 0x3000, u64::MAX - 1, true).unwrap();
    let ops = Decoder::new().decode(pb.words()).unwrap();
    assert_eq!(
        ops[0],
        Operation::SetObject {
            subchannel: 4,
            class: 0xc8b5
        }
    );
    let mut total = 0u64;
    for op in &ops[1..4] {
        let Operation::Copy { src, dst, len } = *op else {
            panic!("{op:?}")
        };
        assert_eq!(src - 0x10_0000_0000, total);
        assert_eq!(dst - 0x40_0000_0000, total);
        assert!(len as u64 <= 1 << 31);
        total += len as u64;
    }
    assert_eq!(total, len);
    assert_eq!(
        ops[4],
        Operation::CopySemaphoreRelease {
            va: 0x3000,
            value: u64::MAX - 1,
            payload64: true,
            timestamp: true
        }
    );
    assert_eq!(ops.len(), 5);
}

#[test]
fn compute_setup_launch_invalidate_and_release_round_trip() {
    let mut pb = PushBuffer::new();
    compute::setup(
        &mut pb,
        &ComputeSetup {
            compute_class: 0xcbc0,
            shared_window: 0x7294_0000_0000,
            local_window: 0x7293_0000_0000,
        },
    )
    .unwrap();
    let (per_tpc, total) = compute::local_memory_size(0x340, 64, 2, 72);
    compute::set_local_memory(
        &mut pb,
        &LocalMemory {
            va: 0x50_0000_0000,
            bytes_per_tpc: per_tpc,
            total_bytes: total,
        },
    )
    .unwrap();
    compute::invalidate_caches(&mut pb).unwrap();
    compute::launch_qmd(&mut pb, 0x12_3456_7800, PcasAction::PrefetchSchedule).unwrap();
    compute::release_semaphore(&mut pb, 0x4000, 0x1_2345_6789).unwrap();
    let ops = Decoder::new().decode(pb.words()).unwrap();
    assert_eq!(
        ops,
        [
            Operation::SetObject {
                subchannel: 1,
                class: 0xcbc0
            },
            Operation::LocalWindow(0x7293_0000_0000),
            Operation::SharedWindow(0x7294_0000_0000),
            Operation::LocalMemory(0x50_0000_0000),
            Operation::LocalMemoryPerTpc {
                bytes: per_tpc,
                max_sm: 0xff
            },
            Operation::InvalidateCaches(0x1011),
            Operation::LaunchQmd {
                qmd_va: 0x12_3456_7800,
                action: 9
            },
            Operation::ComputeSemaphoreRelease {
                va: 0x4000,
                value: 0x1_2345_6789,
                payload64: true
            },
        ]
    );
    // Sizing follows tinygrad's formula: per thread rounded to 32, per warp slot to 0x200,
    // times warps and SMs per TPC, rounded to 32 KiB; total to 128 KiB.
    assert_eq!(
        per_tpc,
        ((0x340 * 32u64).next_multiple_of(0x200) * 64 * 2).next_multiple_of(0x8000)
    );
    assert_eq!(total % 0x20000, 0);
    // Launching without a bound compute object is reported.
    let mut bare = PushBuffer::new();
    compute::launch_qmd(&mut bare, 0x1000, PcasAction::PrefetchSchedule).unwrap();
    assert!(Decoder::new().decode(bare.words()).is_err());
}

fn versions() -> impl Strategy<Value = QmdVersion> {
    prop_oneof![
        Just(QmdVersion::V2),
        Just(QmdVersion::V3),
        Just(QmdVersion::V4),
        Just(QmdVersion::V5)
    ]
}

proptest! {
    #[test]
    fn qmd_round_trips_for_every_version(
        version in versions(),
        program in (0u64..1 << 40).prop_map(|v| v & !0xff),
        grid in (1u32..1 << 31, 1u32..65536, 1u32..65536),
        block in (1u32..1025, 1u32..1025, 1u32..65),
        regs in 1u32..256,
        barriers in 0u32..17,
        smem in 0u32..(227 * 1024),
        slm in (0u32..0x10000).prop_map(|v| v & !0xf),
        cbufs in proptest::collection::btree_map(0u32..8, ((0u64..1 << 44).prop_map(|v| v & !0xff), (1u32..0x10000).prop_map(|v| v & !0xf)), 1..5),
        release in proptest::option::of(((0u64..1 << 40).prop_map(|v| v & !0xf), any::<u64>())),
        dependent in proptest::option::of((0u64..1 << 40).prop_map(|v| v & !0xff)),
    ) {
        let params = QmdParams {
            program_va: program,
            program_size: 0x400,
            register_count: regs,
            barrier_count: barriers,
            grid: [grid.0, grid.1, grid.2],
            block: [block.0, block.1, block.2],
            shared_memory_bytes: smem,
            shared_config: SharedMemoryConfig { min_kib: 8, target_kib: 100, max_kib: 228 },
            local_memory_bytes: slm,
            constant_buffers: cbufs.iter().map(|(&index, &(va, size))| ConstantBuffer { index, va, size }).collect(),
            sass_version: 0x90,
        };
        let mut qmd = Qmd::build(version, &params).unwrap();
        // V02_03's release payloads are 32 bits (clc5c0qmd.h RELEASE0_PAYLOAD).
        let wide = version != QmdVersion::V2;
        let release = release.map(|(va, p)| (va, if wide { p } else { p & 0xffff_ffff }));
        if let Some((va, payload)) = release {
            qmd.set_release(0, va, payload).unwrap();
        }
        if let Some(next) = dependent {
            qmd.set_dependent(next).unwrap();
        }
        let bytes = qmd.to_bytes();
        prop_assert_eq!(bytes.len(), version.size_bytes());
        let info = decode_qmd(&bytes, version.major() as u32).unwrap();
        prop_assert_eq!(info.major as u64, version.major());
        prop_assert_eq!(info.grid, params.grid);
        prop_assert_eq!(info.block, params.block);
        prop_assert_eq!(info.registers, regs);
        prop_assert_eq!(info.barriers, barriers);
        prop_assert_eq!(info.program_va, program);
        prop_assert_eq!(info.shared_bytes, smem.next_multiple_of(256));
        prop_assert_eq!(info.sm_config, [3, 58, 26]);
        prop_assert_eq!(info.local_memory, [0, slm]);
        let want: Vec<CbufBinding> = cbufs.iter().map(|(&index, &(va, size))| CbufBinding { index, va, size }).collect();
        prop_assert_eq!(info.cbufs, want);
        let want: Vec<QmdRelease> = release.into_iter().map(|(va, payload)| QmdRelease { va, payload, payload64: wide }).collect();
        prop_assert_eq!(info.releases, want);
        prop_assert_eq!(info.dependent, dependent);
    }
}

#[test]
fn qmd_release_slots_fill_in_order() {
    for v in [
        QmdVersion::V2,
        QmdVersion::V3,
        QmdVersion::V4,
        QmdVersion::V5,
    ] {
        let mut q = Qmd::new(v);
        for i in 0..q.release_slots() as u64 {
            let slot = q.free_release_slot().unwrap();
            q.set_release(slot, 0x1000 * (i + 1), i + 100).unwrap();
        }
        assert_eq!(q.free_release_slot(), None);
        let info = decode_qmd(&q.to_bytes(), v.major() as u32).unwrap();
        // V02_03 has two slots of 32-bit payloads, the later versions three of 64.
        let n = if v == QmdVersion::V2 { 2 } else { 3 };
        assert_eq!(info.releases.len(), n);
        assert_eq!(
            info.releases[n - 1],
            QmdRelease {
                va: 0x1000 * n as u64,
                payload: 99 + n as u64,
                payload64: v != QmdVersion::V2
            }
        );
    }
}

#[test]
fn real_kernel_launch_round_trips_for_turing_ampere_hopper_blackwell() {
    for (sm, version, class) in [
        (75, QmdVersion::V2, 0xc5c0u32),
        (80, QmdVersion::V3, 0xc6c0),
        (86, QmdVersion::V3, 0xc6c0),
        (89, QmdVersion::V3, 0xc9c0),
        (90, QmdVersion::V4, 0xcbc0),
        (100, QmdVersion::V5, 0xcec0),
        (120, QmdVersion::V5, 0xcec0),
    ] {
        let path = format!(
            "{}/../core/tests/data/cubin/kernels.sm_{sm}.cubin",
            env!("CARGO_MANIFEST_DIR")
        );
        let bytes = std::fs::read(path).unwrap();
        let cubin = Cubin::parse(&bytes).unwrap();
        let image = cubin.load_image(0x20_0000_0000).unwrap();
        let kernel = cubin.kernel("vector_add").unwrap();
        let ctx = ComputeContext {
            qmd_version: version,
            sm,
            shared_window: 0x7294_0000_0000,
            local_window: 0x7293_0000_0000,
            local_memory_per_thread: 0x400,
        };
        let cfg = LaunchConfig {
            grid: [40, 1, 1],
            block: [256, 1, 1],
            dynamic_shared: 0,
        };
        let mut params = Vec::new();
        for p in [0x1000u64, 0x2000, 0x3000] {
            params.extend_from_slice(&p.to_le_bytes());
        }
        params.extend_from_slice(&10240u32.to_le_bytes());
        let cbuf0_va = 0x30_0000_0000;
        let prepared = launch::prepare(&ctx, &image, kernel, &cfg, &params, cbuf0_va).unwrap();
        let info = decode_qmd(&prepared.qmd.to_bytes(), version.major() as u32).unwrap();
        assert_eq!(info.major as u64, version.major(), "sm_{sm}");
        assert_eq!(
            info.program_va,
            image.section_va(kernel.text_section).unwrap()
        );
        assert_eq!(
            (info.grid, info.block, info.registers),
            ([40, 1, 1], [256, 1, 1], kernel.registers)
        );
        assert_eq!(
            info.cbufs[0],
            CbufBinding {
                index: 0,
                va: cbuf0_va,
                size: prepared.cbuf0.len() as u32
            }
        );
        assert!(info.cbufs.iter().any(|c| c.index == 4));
        // The driver slots and parameters in bank 0, at the offsets nvcc's code reads.
        let word =
            |off: usize| u32::from_le_bytes(prepared.cbuf0[off..off + 4].try_into().unwrap());
        let (block, grid, stack) = if sm >= 100 {
            (0x360, 0x370, 0x37c)
        } else {
            (0x0, 0xc, 0x28)
        };
        assert_eq!([word(block), word(block + 4), word(block + 8)], [256, 1, 1]);
        assert_eq!([word(grid), word(grid + 4), word(grid + 8)], [40, 1, 1]);
        assert_eq!(word(stack), 0xfffdc0);
        let p = kernel.param_offset as usize;
        assert_eq!(&prepared.cbuf0[p..p + 28], &params[..]);
        // The launch methods carry the QMD address.
        let mut pb = PushBuffer::new();
        pb.set_object(Subchannel::COMPUTE, class).unwrap();
        compute::launch_qmd_for(class, &mut pb, 0x40_0000_0000, PcasAction::PrefetchSchedule)
            .unwrap();
        let ops = Decoder::new().decode(pb.words()).unwrap();
        // TURING_COMPUTE_A: SEND_SIGNALING_PCAS_B INVALIDATE | SCHEDULE, read as PCAS2's
        // INVALIDATE_COPY_SCHEDULE (3); the others PREFETCH_SCHEDULE (9).
        let action = if class == 0xc5c0 { 3 } else { 9 };
        assert_eq!(
            ops[1],
            Operation::LaunchQmd {
                qmd_va: 0x40_0000_0000,
                action
            }
        );
    }
}
