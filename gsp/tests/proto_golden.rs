//! Golden-byte checks: everything nvbare-gsp builds that tinygrad also builds, compared with
//! the bytes tinygrad's own code produced (`gsp/scripts/golden.py`, fixtures in
//! `gsp/tests/fixtures/proto/`). The inputs here are the ones the script documents.
//!
//! Known, deliberate differences (asserted, not hidden):
//! - `wpr_meta_ad102_odd_boot`: tinygrad does not align `bootBinOffset` down to 4 KiB;
//!   OpenRM's `kgspCalculateFbLayout_TU102` does, and so do we.
//! - `fsp_cot_message_gb202`: tinygrad appends a whole zero dword when the payload is
//!   already dword-aligned (872 bytes); OpenRM's `kfspSendMessage` sends 868.

use std::collections::BTreeSet;
use std::path::PathBuf;

use nvbare_gsp::abi::{GspFwWprMeta, Nv0080CtrlDmaSetPageDirectoryParams, RpcFunction};
use nvbare_gsp::boot::wpr_meta::{
    FbLayoutSizes, FmcWprSizes, WprMetaInputs, wpr_meta_ampere_ada, wpr_meta_fmc,
};
use nvbare_gsp::boot::{
    Radix3Layout, fmc_boot_params, gsp_arguments_cached, libos_init_args_page, standard_regions,
};
use nvbare_gsp::fsp::{CotParams, cot_message, cot_payload};
use nvbare_gsp::msgq::{QueueGeometry, RpcQueue, SharedQueueLayout};
use nvbare_gsp::registry::RegistryTable;
use nvbare_gsp::rpc::commands::{Command, GPU_STATE_FLAGS_FAST_UNLOAD, SystemInfoInputs};
use nvbare_gsp::rpc::request_header;
use zerocopy::{FromBytes, IntoBytes};

const GIB: u64 = 1 << 30;

fn fixture(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/proto")
        .join(format!("{name}.hex"));
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let hex: String = text.split_whitespace().collect();
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

/// The script's synthetic bus address of boot-memory page `k`.
fn page_addr(k: u64) -> u64 {
    0x1_0000_0000 + (k ^ 0x2a5) * 0x1000
}

fn pattern(n: usize, mul: usize, add: usize) -> Vec<u8> {
    (0..n).map(|i| (i.wrapping_mul(mul) + add) as u8).collect()
}

struct Golden {
    matched: BTreeSet<&'static str>,
}

impl Golden {
    fn check(&mut self, name: &'static str, ours: &[u8]) {
        let theirs = fixture(name);
        if ours != theirs.as_slice() {
            let at = ours
                .iter()
                .zip(&theirs)
                .position(|(a, b)| a != b)
                .unwrap_or(ours.len().min(theirs.len()));
            panic!(
                "{name}: differs from tinygrad at byte {at:#x} (ours {} bytes, theirs {} bytes)",
                ours.len(),
                theirs.len()
            );
        }
        self.matched.insert(name);
    }
}

fn command_queue() -> (RpcQueue, Vec<u8>) {
    let l = SharedQueueLayout::default_sizes();
    let g = QueueGeometry::from_tx_header(&l.command_queue_header(), l.cmd_queue_size as usize)
        .unwrap();
    (RpcQueue::new(g, 0).unwrap(), vec![0u8; g.ring_len()])
}

fn wpr_inputs(boot_size: u64) -> WprMetaInputs {
    WprMetaInputs {
        radix3_sysmem_addr: 0x1_0000_0000,
        radix3_image_size: 0x2a01234,
        bootloader_sysmem_addr: 0x3_0000_0000,
        bootloader_size: boot_size,
        bootloader_code_offset: 0x100,
        bootloader_data_offset: 0x4200,
        bootloader_manifest_offset: 0x8000,
        signature_sysmem_addr: 0x2_0000_0000,
        signature_size: 0x1000,
    }
}

#[test]
fn golden_bytes_match_tinygrad() {
    let mut g = Golden {
        matched: BTreeSet::new(),
    };

    // Queue block, init arguments, command queue header.
    let layout = SharedQueueLayout::default_sizes();
    let addrs: Vec<u64> = (0..layout.total_pages() as u64).map(page_addr).collect();
    g.check("queue_page_table", &layout.page_table(&addrs).unwrap());
    g.check(
        "gsp_arguments_cached",
        gsp_arguments_cached(layout.init_arguments(addrs[0])).as_bytes(),
    );
    g.check(
        "cmd_queue_tx_header",
        layout.command_queue_header().as_bytes(),
    );

    // SET_REGISTRY as the first message: element header, checksum, RPC header, table.
    let table = RegistryTable::tinygrad_defaults().encode();
    g.check("registry_table", &table);
    g.check(
        "rpc_header_set_registry",
        request_header(73, table.len()).as_bytes(),
    );
    let (mut q, mut ring) = command_queue();
    let c = Command::set_registry(&RegistryTable::tinygrad_defaults());
    q.enqueue_rpc(&mut ring, 0, c.function.as_u32(), &c.payload)
        .unwrap();
    g.check("element_set_registry", &ring[..0x1000]);

    // Wrap across the ring's end.
    let (q0, mut ring) = command_queue();
    let mut q = RpcQueue::resume(q0.geometry(), 62, 7).unwrap();
    q.enqueue_rpc(
        &mut ring,
        10,
        RpcFunction::GspRmControl.as_u32(),
        &pattern(5000, 7, 3),
    )
    .unwrap();
    assert_eq!(q.write_ptr(), 1);
    let mut wrapped = ring[62 * 0x1000..].to_vec();
    wrapped.extend_from_slice(&ring[..0x1000]);
    g.check("element_wrap", &wrapped);

    // Continuation records.
    let (mut q, mut ring) = command_queue();
    assert_eq!(
        q.enqueue_rpc(&mut ring, 0, 103, &pattern(0x20000, 13, 1))
            .unwrap(),
        3
    );
    assert_eq!(q.write_ptr(), 33);
    g.check("elements_continuation", &ring[..33 * 0x1000]);

    // RPC payloads.
    let c = Command::rm_alloc(0xc1e00004, 0xcf000001, 0xcf000000, 0x2080, &[0; 4]).unwrap();
    g.check("rpc_rm_alloc_subdevice", &c.payload);
    let params: Vec<u8> = (0..24).collect();
    g.check(
        "rpc_rm_control",
        &Command::rm_control(0xc1e00004, 0xcf000002, 0x20800110, &params)
            .unwrap()
            .payload,
    );
    let pd = Nv0080CtrlDmaSetPageDirectoryParams {
        phys_address: 0x2345000,
        num_entries: 512,
        flags: 8,
        h_va_space: 0xcf000003,
        ch_id: 0,
        sub_device_id: 1,
        pasid: 0xffff_ffff,
    };
    g.check(
        "rpc_set_page_directory",
        &Command::set_page_directory(0xc1e00010, 0xcf000001, 0xffff_ffff, pd).payload,
    );
    g.check(
        "rpc_unloading_guest_driver",
        &Command::unloading_guest_driver(false, false, GPU_STATE_FLAGS_FAST_UNLOAD).payload,
    );
    let pages = [0x1_2345_6000, 0x7000, 0x20_0000_0000];
    let c = Command::alloc_memory(
        0xc1e00010,
        0xcf000001,
        0xcf000001,
        0x3e,
        0x4000_0020,
        6,
        0x3000,
        &pages,
    )
    .unwrap();
    g.check("rpc_alloc_memory", &c.payload);
    let sys = SystemInfoInputs {
        bar0: 0xfa00_0000,
        bar1: 0x380_0000_0000,
        bar3: 0x390_0000_0000,
        bdf: 0x4100,
        pci_device_id: 0x2335_10de,
        pci_sub_device_id: 0x18c9_10de,
        pci_revision_id: 0xa1,
        pci_config_mirror_base: 0x88000,
        // tinygrad's value, which the golden bytes hold.
        passthrough: true,
    };
    g.check(
        "rpc_system_info",
        &Command::set_system_info(&sys.to_system_info()).payload,
    );
    let sys = SystemInfoInputs {
        pci_config_mirror_base: 0x92000,
        ..sys
    };
    g.check(
        "rpc_system_info_fmc",
        &Command::set_system_info(&sys.to_system_info()).payload,
    );

    // libos arguments: logs from the first page of a fresh allocation, RMARGS at 0x5_0000_0000.
    g.check(
        "libos_init_args",
        &libos_init_args_page(&standard_regions(page_addr(0), 0x10000, 0x5_0000_0000)),
    );

    // radix3 over a 600-page + 123-byte image with scattered pages.
    let r = Radix3Layout::for_image(600 * 4096 + 123).unwrap();
    assert_eq!(r.pages, [1, 1, 2, 601]);
    let raddrs: Vec<u64> = (0..r.total_pages()).map(page_addr).collect();
    let raddr_bytes: Vec<u8> = raddrs.iter().flat_map(|a| a.to_le_bytes()).collect();
    g.check("radix3_page_addrs", &raddr_bytes);
    g.check("radix3_tables", &r.build_tables(&raddrs).unwrap());

    // WPR metadata.
    let ad =
        wpr_meta_ampere_ada(&wpr_inputs(0xd000), &FbLayoutSizes::ampere_ada(24 * GIB)).unwrap();
    g.check("wpr_meta_ad102", ad.as_bytes());
    let ours =
        wpr_meta_ampere_ada(&wpr_inputs(0xd123), &FbLayoutSizes::ampere_ada(24 * GIB)).unwrap();
    let theirs = GspFwWprMeta::read_from_bytes(&fixture("wpr_meta_ad102_odd_boot")).unwrap();
    assert_eq!(
        theirs.boot_bin_offset & 0xfff,
        0xedd,
        "tinygrad leaves bootBinOffset unaligned"
    );
    assert_eq!(ours.boot_bin_offset, theirs.boot_bin_offset & !0xfff);
    let mut ours_as_tinygrad = ours;
    ours_as_tinygrad.boot_bin_offset = theirs.boot_bin_offset;
    g.check("wpr_meta_ad102_odd_boot", ours_as_tinygrad.as_bytes());
    g.check(
        "wpr_meta_gb202",
        wpr_meta_fmc(&wpr_inputs(0xd123), &FmcWprSizes::gb20x(32 * GIB)).as_bytes(),
    );

    // FSP boot: FMC boot params, COT payload and its framed message.
    g.check(
        "fmc_boot_params_gb202",
        fmc_boot_params(0x8_0000_0000, 0x9_0000_0000).as_bytes(),
    );
    let hash: [u8; 48] = core::array::from_fn(|i| i as u8 + 1);
    let cot = cot_payload(
        &CotParams::gb20x(0x6_0000_0000, 0x7_0000_0000),
        &hash,
        &pattern(97, 11, 7),
        &pattern(96, 5, 2),
    )
    .unwrap();
    g.check("cot_payload_gb202", cot.as_bytes());
    let msg = cot_message(&cot).unwrap();
    let theirs = fixture("fsp_cot_message_gb202");
    assert_eq!(theirs.len(), msg.len() + 4);
    assert_eq!(
        &theirs[msg.len()..],
        &[0; 4],
        "tinygrad's extra padding dword is zero"
    );
    let mut ours_as_tinygrad = msg.clone();
    ours_as_tinygrad.extend_from_slice(&[0; 4]);
    g.check("fsp_cot_message_gb202", &ours_as_tinygrad);

    // Every fixture the script wrote was checked.
    let manifest = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/proto/MANIFEST"),
    )
    .unwrap();
    let all: BTreeSet<&str> = manifest.lines().filter(|l| !l.is_empty()).collect();
    let checked: BTreeSet<&str> = g.matched.iter().copied().collect();
    assert_eq!(
        all, checked,
        "fixtures not checked (or checks without fixture)"
    );
    println!("gsp-golden: matched {} fixtures", g.matched.len());
}
