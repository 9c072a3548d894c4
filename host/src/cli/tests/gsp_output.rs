//! What the backends that boot GSP-RM print without a GPU: the boot timeline in ms, the
//! teardown line, `info`'s simulated and unsafe lines, and the code each VFIO, remote, boot,
//! RM and teardown failure carries.

use std::path::PathBuf;

use nvbare_core::boot::{BootError, BootErrorKind, BootReport, Stage, StageTime, TeardownReport};
use nvbare_core::chip::Chip;
use nvbare_core::gsp_rm::{CloseError, CloseReport, GspRmError, MemoryError, OpenError};
use nvbare_core::hal::{PciAddress, PlatformError};

use super::super::codes::{self, ErrorCode};
use super::super::error::{BackendError, CliError};
use super::super::gpu::teardown_text;
use super::super::info::BootTimeline;
use crate::lock::LockError;
use crate::vfio::VfioError;

const ADDR: PciAddress = PciAddress {
    domain: 0,
    bus: 0x41,
    device: 0,
    function: 0,
};

fn report() -> BootReport {
    BootReport {
        chip: Chip::GH100,
        reset_for_wpr2: true,
        stages: vec![
            StageTime {
                stage: Stage::Identify,
                host_ns: 12_000,
                waited_ns: 0,
            },
            StageTime {
                stage: Stage::Lockdown,
                host_ns: 44_000,
                waited_ns: 91_066_000,
            },
        ],
    }
}

#[test]
fn the_boot_timeline_reads_in_milliseconds_per_stage() {
    let t = BootTimeline::of(&report());
    assert_eq!(t.chip, "GH100");
    assert!(t.reset_for_wpr2);
    assert_eq!(
        t.lines("  "),
        [
            "  stage (ms)             host work      waited",
            "  identify                   0.012       0.000",
            "  lockdown release           0.044      91.066",
            "  total                      0.056      91.066",
        ]
    );
    let v = serde_json::to_value(&t).unwrap();
    assert_eq!(v["stages"][1]["stage"], "lockdown release");
    assert_eq!(v["waited_ms"], 91.066);
}

#[test]
fn the_teardown_line_says_what_was_unloaded_and_freed() {
    let clean = CloseReport {
        objects_freed: 19,
        left: Default::default(),
        teardown: TeardownReport {
            unloaded: true,
            halted: true,
            reset: false,
            wpr2_left_up: false,
            freed: 14,
            booter: Default::default(),
        },
    };
    assert_eq!(
        teardown_text(&clean, Some(0)),
        "19 RM objects freed, UNLOADING_GUEST_DRIVER acknowledged, GSP core halted, 14 DMA \
         allocations freed (none left)"
    );
    assert!(!teardown_text(&clean, None).contains("left"));
    let stopped = teardown_text(&clean, Some(2));
    assert!(stopped.ends_with("(2 more of the stopped work's freed with the device)"));
    let bad = CloseReport {
        teardown: TeardownReport {
            unloaded: false,
            halted: false,
            reset: true,
            wpr2_left_up: true,
            freed: 14,
            booter: Default::default(),
        },
        ..clean
    };
    let text = teardown_text(&bad, Some(0));
    assert!(
        text.contains("not acknowledged")
            && text.contains("not halted")
            && text.contains("the GPU was reset")
            && text.contains("WPR2 is still up (the next run resets the GPU)"),
        "{text}"
    );
}

fn boot_failure(kind: BootErrorKind) -> CliError {
    CliError::Open {
        on: "a simulated GH100".into(),
        source: Box::new(OpenError::Boot(Box::new(BootError {
            stage: Stage::Fsp,
            kind,
            diagnostics: Default::default(),
        }))),
    }
}

fn vfio_failed(e: VfioError) -> PlatformError {
    PlatformError::Failed {
        step: "DMA memory",
        source: Box::new(e),
    }
}

fn hugepages() -> VfioError {
    VfioError::NoHugepages {
        bytes: 1 << 21,
        free: 0,
        total: 0,
        needed: 1,
        suggest: 64,
    }
}

#[test]
fn every_failure_of_the_vfio_path_has_its_code() {
    let cases: Vec<(CliError, ErrorCode)> = vec![
        (
            CliError::Vfio(VfioError::NotBoundToVfio {
                addr: ADDR,
                driver: "nvidia".into(),
            }),
            codes::VFIO_NOT_BOUND,
        ),
        (
            CliError::Vfio(VfioError::NoIommuRefused {
                addr: ADDR,
                group: 3,
            }),
            codes::NOIOMMU_REFUSED,
        ),
        (
            CliError::Vfio(VfioError::IommuOff { addr: ADDR }),
            codes::IOMMU_OFF,
        ),
        (
            CliError::Vfio(VfioError::NoSuchDevice { addr: ADDR }),
            codes::NO_SUCH_DEVICE,
        ),
        (
            CliError::Vfio(VfioError::ResetUnsupported { addr: ADDR }),
            codes::NO_RESET,
        ),
        (CliError::Vfio(hugepages()), codes::NO_HUGEPAGES),
        (
            CliError::Vfio(VfioError::NoIova { bytes: 4096 }),
            codes::DMA,
        ),
        (
            CliError::Vfio(VfioError::Locked(LockError::Held {
                device: "GPU 0000:41:00.0".into(),
                path: PathBuf::from("/tmp/x.lock"),
                pid: Some(7),
            })),
            codes::GPU_LOCKED,
        ),
        (
            CliError::Remote(crate::remote::OpenError::Connect {
                addr: "127.0.0.1:1".into(),
                source: std::io::Error::from(std::io::ErrorKind::ConnectionRefused),
            }),
            codes::REMOTE_CONNECT,
        ),
        (
            CliError::ChipNotBootable { chip: Chip::AD102 },
            codes::CHIP_NOT_BOOTABLE,
        ),
        (
            boot_failure(BootErrorKind::Wpr2StillUp {
                wpr2_lo: 1,
                wpr2_hi: 2,
            }),
            codes::WPR2_STUCK,
        ),
        (
            boot_failure(BootErrorKind::FspRejected {
                error_code: 1,
                name: "X",
                status: "NV_ERR_GENERIC",
            }),
            codes::BOOT_FSP,
        ),
        (
            boot_failure(BootErrorKind::RiscvNotRunning { cpuctl: 0 }),
            codes::BOOT_LOCKDOWN,
        ),
        (
            boot_failure(BootErrorKind::MissingBar { index: 1 }),
            codes::BOOT_SETUP,
        ),
        // The platform's own error shows through the boot's: hugepages, a vanished GPU.
        (
            boot_failure(BootErrorKind::Dma {
                what: "the GSP-RM image",
                source: vfio_failed(hugepages()),
            }),
            codes::NO_HUGEPAGES,
        ),
        (
            boot_failure(BootErrorKind::gone("NV_PMC_BOOT_42")),
            codes::GPU_GONE,
        ),
        (
            CliError::Open {
                on: "x".into(),
                source: Box::new(OpenError::Setup {
                    step: "our RM client",
                    source: GspRmError::OutOfHandles,
                }),
            },
            codes::RM_MEMORY,
        ),
        (
            CliError::Gpu(nvbare_core::gpu::GpuError::Backend {
                step: nvbare_core::rm::Step::AllocMemory,
                source: BackendError::GspRm(GspRmError::Memory(MemoryError::Dma(vfio_failed(
                    hugepages(),
                )))),
            }),
            codes::NO_HUGEPAGES,
        ),
        (
            CliError::Gpu(nvbare_core::gpu::GpuError::Backend {
                step: nvbare_core::rm::Step::ServiceEvents,
                source: BackendError::GspRm(GspRmError::DeviceGone),
            }),
            codes::GPU_GONE,
        ),
        (
            CliError::Close(Box::new(CloseError::Free {
                source: GspRmError::DeviceGone,
                teardown: Default::default(),
            })),
            codes::TEARDOWN,
        ),
        (
            CliError::WrongResult {
                what: "x".into(),
                detail: "y".into(),
            },
            codes::WRONG_RESULT,
        ),
    ];
    for (e, code) in cases {
        assert_eq!(e.code(), code, "{e}");
    }
    // No-IOMMU mode is called unsafe wherever it is named.
    let e = CliError::Vfio(VfioError::NoIommuRefused {
        addr: ADDR,
        group: 3,
    });
    assert!(e.to_string().contains("UNSAFE"), "{e}");
    assert!(codes::NOIOMMU_REFUSED.title.contains("UNSAFE"));
}
