//! Any bytes given to the cubin loader: parse, read every kernel, lay out and relocate the
//! image, and prepare a launch of every kernel. Errors are fine; panics and hangs are bugs.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvbare_core::cubin::Cubin;
use nvbare_core::launch::{self, ComputeContext, LaunchConfig};
use nvbare_core::qmd::QmdVersion;

fuzz_target!(|data: &[u8]| {
    let Ok(cubin) = Cubin::parse(data) else {
        return;
    };
    let Ok(image) = cubin.load_image(0x10_0000_0000) else {
        return;
    };
    for (sm, version) in [
        (80, QmdVersion::V3),
        (90, QmdVersion::V4),
        (100, QmdVersion::V5),
    ] {
        let ctx = ComputeContext {
            qmd_version: version,
            sm,
            shared_window: 0x7294_0000_0000,
            local_window: 0x7293_0000_0000,
            local_memory_per_thread: 0x1000,
        };
        for k in &cubin.kernels {
            let params = vec![0u8; (k.param_size as usize).min(1 << 16)];
            let cfg = LaunchConfig {
                grid: [2, 1, 1],
                block: [64, 1, 1],
                dynamic_shared: 0,
            };
            let _ = launch::prepare(&ctx, &image, k, &cfg, &params, 0x20_0000_0000);
        }
    }
});
