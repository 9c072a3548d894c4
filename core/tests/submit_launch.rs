//! Launch preparation on nvcc's real sm_90 (and sm_80/sm_100) cubins: constant bank 0 driver
//! slots, QMD v4 contents, and every launch-limit error.

use nvbare_core::cubin::Cubin;
use nvbare_core::launch::{self, ComputeContext, LaunchConfig, LaunchError, LaunchLimits};
use nvbare_core::qmd::QmdVersion;

fn cubin_bytes(sm: u32) -> Vec<u8> {
    std::fs::read(format!(
        "{}/tests/data/cubin/kernels.sm_{sm}.cubin",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn ctx(sm: u32) -> ComputeContext {
    let qmd_version = match sm {
        75 => QmdVersion::V2,
        90 => QmdVersion::V4,
        100 | 120 => QmdVersion::V5,
        _ => QmdVersion::V3,
    };
    ComputeContext {
        qmd_version,
        sm,
        shared_window: 0x7294_0000_0000,
        local_window: 0x7293_0000_0000,
        local_memory_per_thread: 0x400,
    }
}

const CFG: LaunchConfig = LaunchConfig {
    grid: [4, 1, 1],
    block: [128, 1, 1],
    dynamic_shared: 0,
};

#[test]
fn hopper_vector_add_launch() {
    let bytes = cubin_bytes(90);
    let cubin = Cubin::parse(&bytes).unwrap();
    let image = cubin.load_image(0x10_0000_0000).unwrap();
    let k = cubin.kernel("vector_add").unwrap();
    let params: Vec<u8> = (0..28).collect();
    let p = launch::prepare(&ctx(90), &image, k, &CFG, &params, 0x20_0000_0000).unwrap();
    let q = &p.qmd;
    let l = q.layout();
    assert_eq!(q.to_bytes().len(), 384);
    assert_eq!(q.get(l.major_version), 4);
    assert_eq!(q.get(l.qmd_type.unwrap()), 2, "GRID_CTA");
    assert_eq!([q.get(l.grid[0]), q.get(l.block[0])], [4, 128]);
    assert_eq!(q.get(l.register_count), k.registers as u64);
    let prog = image.section_va(k.text_section).unwrap();
    assert_eq!(q.get(l.program_lower) | q.get(l.program_upper) << 32, prog);
    // cbuf0 at 0x20_0000_0000, shifted by 6 on v4.
    let c0 =
        q.get(l.cbuf_addr_lower.at(0).unwrap()) | q.get(l.cbuf_addr_upper.at(0).unwrap()) << 32;
    assert_eq!(c0 << 6, 0x20_0000_0000);
    assert_eq!(q.get(l.cbuf_valid.at(0).unwrap()), 1);
    assert_eq!(
        q.get(l.cbuf_size_shifted4.at(0).unwrap()) << 4,
        p.cbuf0.len() as u64
    );
    // sm_90 has no static shared memory here: the reserved 1 KiB is still given.
    assert_eq!(q.get(l.shared_memory_size), 0x400);
    // Driver slots (cuobjdump-notes.md): shared window 0x18, local window 0x20, stack 0x28,
    // parameters at 0x210.
    let u64_at = |o: usize| u64::from_le_bytes(p.cbuf0[o..o + 8].try_into().unwrap());
    assert_eq!(u64_at(0x18), 0x7294_0000_0000);
    assert_eq!(u64_at(0x20), 0x7293_0000_0000);
    assert_eq!(&p.cbuf0[0x28..0x2c], &0xfffdc0u32.to_le_bytes());
    assert_eq!(&p.cbuf0[0x210..0x210 + 28], &params[..]);
    // reverse_block: its 0x800-byte shared section already includes the reserved 1 KiB.
    let k = cubin.kernel("reverse_block").unwrap();
    let p = launch::prepare(
        &ctx(90),
        &image,
        k,
        &LaunchConfig {
            dynamic_shared: 0x1000,
            ..CFG
        },
        &[0; 8],
        0x20_0000_0000,
    )
    .unwrap();
    assert_eq!(p.qmd.get(l.shared_memory_size), 0x1800);
    // Carveout: 6 KiB needed -> 8 KiB target (8/4+1 = 3), max 228 KiB (58).
    assert_eq!(
        [
            p.qmd.get(l.target_sm_config_shared),
            p.qmd.get(l.max_sm_config_shared)
        ],
        [3, 58]
    );
}

#[test]
fn local_memory_is_sized_and_checked() {
    let bytes = cubin_bytes(90);
    let cubin = Cubin::parse(&bytes).unwrap();
    let image = cubin.load_image(0x10_0000_0000).unwrap();
    let k = cubin.kernel("local_array").unwrap();
    // 0x100 bytes of stack + the 0x240 reserve above the initial stack pointer.
    assert_eq!(launch::local_memory_needed(k), 0x340);
    assert_eq!(
        launch::local_memory_needed(cubin.kernel("empty_kernel").unwrap()),
        0
    );
    let small = ComputeContext {
        local_memory_per_thread: 0x200,
        ..ctx(90)
    };
    assert_eq!(
        launch::prepare(&small, &image, k, &CFG, &[0; 12], 0x2000_0000).unwrap_err(),
        LaunchError::LocalMemoryTooSmall {
            needed: 0x340,
            configured: 0x200
        }
    );
    let p = launch::prepare(&ctx(90), &image, k, &CFG, &[0; 12], 0x2000_0000).unwrap();
    let l = p.qmd.layout();
    assert_eq!(p.qmd.get(l.local_memory_high), 0x400);
    assert_eq!(p.qmd.get(l.local_memory_low), 0);
}

#[test]
fn launch_limits_are_typed_errors() {
    let bytes = cubin_bytes(90);
    let cubin = Cubin::parse(&bytes).unwrap();
    let image = cubin.load_image(0x10_0000_0000).unwrap();
    let k = cubin.kernel("vector_add").unwrap();
    let c = ctx(90);
    let run = |cfg: LaunchConfig, params: &[u8]| {
        launch::prepare(&c, &image, k, &cfg, params, 0x2000_0000).unwrap_err()
    };
    let p = [0u8; 28];
    assert_eq!(
        run(
            LaunchConfig {
                grid: [0, 1, 1],
                ..CFG
            },
            &p
        ),
        LaunchError::ZeroDimension
    );
    assert_eq!(
        run(
            LaunchConfig {
                block: [1, 1, 65],
                ..CFG
            },
            &p
        ),
        LaunchError::BlockTooLarge {
            axis: 2,
            value: 65,
            max: 64
        }
    );
    assert_eq!(
        run(
            LaunchConfig {
                grid: [1, 65536, 1],
                ..CFG
            },
            &p
        ),
        LaunchError::GridTooLarge {
            axis: 1,
            value: 65536,
            max: 65535
        }
    );
    assert_eq!(
        run(
            LaunchConfig {
                grid: [1 << 31, 1, 1],
                ..CFG
            },
            &p
        ),
        LaunchError::GridTooLarge {
            axis: 0,
            value: 1 << 31,
            max: (1 << 31) - 1
        }
    );
    assert!(matches!(
        run(
            LaunchConfig {
                block: [1024, 2, 1],
                ..CFG
            },
            &p
        ),
        LaunchError::TooManyThreads {
            threads: 2048,
            max: 1024,
            ..
        }
    ));
    // Hopper: 227 KiB per block for the kernel (plus the reserved 1 KiB: the 228 KiB carveout).
    assert_eq!(
        run(
            LaunchConfig {
                dynamic_shared: 227 * 1024 + 1,
                ..CFG
            },
            &p
        ),
        LaunchError::SharedMemoryTooLarge {
            bytes: 227 * 1024 + 1,
            max: 227 * 1024
        }
    );
    let full = launch::prepare(
        &c,
        &image,
        k,
        &LaunchConfig {
            dynamic_shared: 227 * 1024,
            ..CFG
        },
        &p,
        0x2000_0000,
    )
    .unwrap();
    let l = full.qmd.layout();
    assert_eq!(full.qmd.get(l.shared_memory_size), 228 * 1024);
    assert_eq!(full.qmd.get(l.target_sm_config_shared), 228 / 4 + 1);
    assert!(
        launch::prepare(
            &c,
            &image,
            k,
            &LaunchConfig {
                dynamic_shared: 100 * 1024,
                ..CFG
            },
            &p,
            0x2000_0000
        )
        .is_ok()
    );
    assert_eq!(
        run(CFG, &[0; 27]),
        LaunchError::ParamSizeMismatch {
            given: 27,
            expected: 28
        }
    );
    assert_eq!(
        launch::prepare(&ComputeContext { sm: 70, ..c }, &image, k, &CFG, &p, 0).unwrap_err(),
        LaunchError::UnsupportedSm(70)
    );
    for e in [
        LaunchError::ZeroDimension,
        LaunchError::SharedMemoryTooLarge { bytes: 1, max: 0 },
        LaunchError::UnsupportedSm(70),
    ] {
        assert!(!e.to_string().is_empty());
    }
}

#[test]
fn register_limits_follow_the_allocation_granularity() {
    let bytes = cubin_bytes(90);
    let cubin = Cubin::parse(&bytes).unwrap();
    let mut k = cubin.kernel("vector_add").unwrap().clone();
    let limits = LaunchLimits::for_sm(90).unwrap();
    // 255 registers: 255*32 -> 8192 per warp, 65536/8192 = 8 warps = 256 threads.
    k.registers = 255;
    let cfg = |t| LaunchConfig {
        grid: [1, 1, 1],
        block: [t, 1, 1],
        dynamic_shared: 0,
    };
    assert!(launch::check_limits(&limits, &k, &cfg(256)).is_ok());
    assert_eq!(
        launch::check_limits(&limits, &k, &cfg(257)).unwrap_err(),
        LaunchError::TooManyThreads {
            threads: 257,
            max: 256,
            registers: 255
        }
    );
    // 64 registers: 2048 per warp, 32 warps = 1024 threads.
    k.registers = 64;
    assert!(launch::check_limits(&limits, &k, &cfg(1024)).is_ok());
    k.required_block = Some([64, 1, 1]);
    assert_eq!(
        launch::check_limits(&limits, &k, &cfg(128)).unwrap_err(),
        LaunchError::BlockViolatesKernelBounds { threads: 128 }
    );
}

#[test]
fn ampere_and_blackwell_slots() {
    for sm in [75, 80, 100] {
        let bytes = cubin_bytes(sm);
        let cubin = Cubin::parse(&bytes).unwrap();
        let image = cubin.load_image(0x10_0000_0000).unwrap();
        let k = cubin.kernel("window_addresses").unwrap();
        let p = launch::prepare(&ctx(sm), &image, k, &CFG, &[0; 8], 0x20_0000_0000).unwrap();
        let u64_at = |o: usize| u64::from_le_bytes(p.cbuf0[o..o + 8].try_into().unwrap());
        let (shared, local) = if sm < 100 {
            (0x18, 0x20)
        } else {
            (0x2f0, 0x2f8)
        };
        assert_eq!(u64_at(shared), 0x7294_0000_0000, "sm_{sm}");
        assert_eq!(u64_at(local), 0x7293_0000_0000, "sm_{sm}");
        let l = p.qmd.layout();
        // sm_80: the static 0x80 bytes plus tinygrad's 1 KiB, rounded to 256; sm_75: no
        // reserved KiB (compute capability 7.x reserves none), the 0x80 rounded to 256.
        let smem = if sm == 75 {
            0x100
        } else if sm == 80 {
            0x500
        } else {
            0x480u64.next_multiple_of(256) >> 7
        };
        assert_eq!(p.qmd.get(l.shared_memory_size), smem, "sm_{sm}");
        if sm == 75 {
            // TURING_COMPUTE_A's QMD 02_03, carveout 32 KiB (Turing's smallest) up to 64 KiB.
            assert_eq!(p.qmd.version(), QmdVersion::V2);
            assert_eq!(p.qmd.get(l.major_version), 2);
            assert_eq!(p.qmd.get(l.target_sm_config_shared), 32 / 4 + 1);
            assert_eq!(p.qmd.get(l.max_sm_config_shared), 64 / 4 + 1);
            assert_eq!(p.qmd.get(l.sass_version), 0x75);
        }
    }
}
