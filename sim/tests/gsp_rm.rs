//! The simulated GSP-RM's object database, generic side: every NV_STATUS path of
//! resserv's checks (clients, parents, classes, handles, controls, free) and of the device
//! and subdevice constructors, and the RPC failure injection. Parameter blocks from
//! `nvbare_gsp::rm` (checked against the SDK headers); RPCs from the test's own driver
//! ([`gsp_rig`]).

mod gsp_rig;

use gsp_rig::*;
use nvbare_gsp::abi::*;
use nvbare_gsp::rm::NvStatus;
use nvbare_gsp::rm::alloc::*;
use nvbare_gsp::rm::classes as cls;
use nvbare_gsp::rm::ctrl::cmd;
use nvbare_gsp::rm::ctrl::subdevice::*;
use nvbare_gsp::rm::r570::ClassListV2Params;
use nvbare_sim::{FaultPlan, SimChip};
use zerocopy::{FromZeros, IntoBytes};

use gsp_rig::rm::*;

#[test]
fn generic_alloc_and_control_checks_give_resservs_statuses() {
    let Some(mut rig) = booted(SimChip::Gh100) else {
        return;
    };
    let root = RootClientAllocParams::default();
    basic_objects(&mut rig);
    // _serverCreateEntryAndLockForNewClient.
    assert_eq!(
        status(rig.rm_alloc(CLIENT, 0, CLIENT, cls::NV01_ROOT, root.as_bytes())),
        NvStatus::ERR_INSERT_DUPLICATE_NAME
    );
    assert_eq!(
        status(rig.rm_alloc(0, 0, 0, cls::NV01_ROOT, root.as_bytes())),
        NvStatus::ERR_INVALID_OBJECT_HANDLE
    );
    let dp = DeviceAllocParams::default();
    // _serverLockClientWithLockInfo.
    assert_eq!(
        status(rig.rm_alloc(
            0xc100_0099,
            0xc100_0099,
            0xd0,
            cls::NV01_DEVICE_0,
            dp.as_bytes()
        )),
        NvStatus::ERR_INVALID_OBJECT_HANDLE
    );
    // serverAllocResourceUnderLock: unknown parent, wrong parent class, unknown class.
    assert_eq!(
        status(rig.rm_alloc(CLIENT, 0x1234, 0xd0, cls::NV01_DEVICE_0, dp.as_bytes())),
        NvStatus::ERR_OBJECT_NOT_FOUND
    );
    assert_eq!(
        status(rig.rm_alloc(CLIENT, CLIENT, 0xd0, cls::NV20_SUBDEVICE_0, &[0; 4])),
        NvStatus::ERR_INVALID_OBJECT_PARENT
    );
    assert_eq!(
        status(rig.rm_alloc(CLIENT, DEVICE, 0xd0, cls::AMPERE_COMPUTE_A, &[])),
        NvStatus::ERR_INVALID_CLASS,
        "not on GH100's list"
    );
    assert_eq!(
        status(rig.rm_alloc(CLIENT, DEVICE, 0xd0, 0xbeef, &[])),
        NvStatus::ERR_INVALID_CLASS
    );
    // clientValidateNewResourceHandle_IMPL.
    assert_eq!(
        status(rig.rm_alloc(CLIENT, CLIENT, CLIENT, cls::NV01_DEVICE_0, dp.as_bytes())),
        NvStatus::ERR_INVALID_OBJECT_HANDLE
    );
    assert_eq!(
        status(rig.rm_alloc(CLIENT, CLIENT, 0, cls::NV01_DEVICE_0, dp.as_bytes())),
        NvStatus::ERR_INVALID_OBJECT_HANDLE
    );
    assert_eq!(
        status(rig.rm_alloc(CLIENT, CLIENT, DEVICE, cls::NV01_DEVICE_0, dp.as_bytes())),
        NvStatus::ERR_INSERT_DUPLICATE_NAME
    );
    // deviceConstruct_IMPL / subdeviceConstruct_IMPL / parameter sizes.
    let bad_dev = DeviceAllocParams {
        device_id: 1,
        ..Default::default()
    };
    assert_eq!(
        status(rig.rm_alloc(CLIENT, CLIENT, 0xd1, cls::NV01_DEVICE_0, bad_dev.as_bytes())),
        NvStatus::ERR_INVALID_CLASS
    );
    let bad_mode = DeviceAllocParams {
        va_mode: 5,
        ..Default::default()
    };
    assert_eq!(
        status(rig.rm_alloc(
            CLIENT,
            CLIENT,
            0xd1,
            cls::NV01_DEVICE_0,
            bad_mode.as_bytes()
        )),
        NvStatus::ERR_INVALID_ARGUMENT
    );
    assert_eq!(
        status(rig.rm_alloc(CLIENT, CLIENT, 0xd1, cls::NV01_DEVICE_0, &[0; 12])),
        NvStatus::ERR_INVALID_ARGUMENT
    );
    assert_eq!(
        status(rig.rm_alloc(CLIENT, DEVICE, 0xd1, cls::NV20_SUBDEVICE_0, &[0; 4])),
        NvStatus::ERR_INSUFFICIENT_RESOURCES
    );
    assert_eq!(
        status(rig.rm_alloc(
            CLIENT,
            DEVICE,
            0xd1,
            cls::NV20_SUBDEVICE_0,
            &1u32.to_le_bytes()
        )),
        NvStatus::ERR_INVALID_CLASS
    );
    // Memory is the kernel RM's to allocate; GSP-RM takes it described by ALLOC_MEMORY.
    assert_eq!(
        status(rig.rm_alloc(
            CLIENT,
            DEVICE,
            0xd5,
            cls::NV01_MEMORY_LOCAL_USER,
            MemoryAllocParams::default().as_bytes()
        )),
        NvStatus::ERR_NOT_SUPPORTED
    );
    // Controls: serverControl, resControlLookup_IMPL.
    let cl = ClassListV2Params::new_zeroed();
    assert_eq!(
        status(rig.rm_control(
            CLIENT,
            0xdead,
            cmd::NV0080_GPU_GET_CLASSLIST_V2,
            cl.as_bytes()
        )),
        NvStatus::ERR_OBJECT_NOT_FOUND
    );
    assert_eq!(
        status(rig.rm_control(
            0xc1aa_aaaa,
            DEVICE,
            cmd::NV0080_GPU_GET_CLASSLIST_V2,
            cl.as_bytes()
        )),
        NvStatus::ERR_INVALID_OBJECT_HANDLE
    );
    assert_eq!(
        status(rig.rm_control(
            CLIENT,
            SUBDEVICE,
            cmd::NV0080_GPU_GET_CLASSLIST_V2,
            cl.as_bytes()
        )),
        NvStatus::ERR_NOT_SUPPORTED
    );
    assert_eq!(
        status(rig.rm_control(
            CLIENT,
            DEVICE,
            cmd::NV0080_GPU_GET_CLASSLIST_V2,
            &cl.as_bytes()[..100]
        )),
        NvStatus::ERR_INVALID_PARAM_STRUCT
    );
    assert_eq!(
        status(rig.rm_control(CLIENT, SUBDEVICE, 0x2080_1201, &[0; 32])),
        NvStatus::ERR_NOT_SUPPORTED,
        "GR_GET_INFO has a pointer"
    );
    assert_eq!(
        status(rig.rm_control(CLIENT, SUBDEVICE, 0x2080_ffff, &[])),
        NvStatus::ERR_NOT_SUPPORTED
    );
    // Free: clientFreeResource_IMPL.
    let free = |c: u32, o: u32| {
        [
            c.to_le_bytes(),
            0u32.to_le_bytes(),
            o.to_le_bytes(),
            0u32.to_le_bytes(),
        ]
        .concat()
    };
    let (_, p) = rig.call(RpcFunction::Free.as_u32(), &free(CLIENT, 0x4242));
    assert_eq!(
        u32::from_le_bytes(p[12..16].try_into().unwrap()),
        NvStatus::ERR_OBJECT_NOT_FOUND.0
    );
    let (_, p) = rig.call(RpcFunction::Free.as_u32(), &free(CLIENT, SUBDEVICE));
    assert_eq!(u32::from_le_bytes(p[12..16].try_into().unwrap()), 0);
    assert_eq!(
        status(rig.rm_control(
            CLIENT,
            SUBDEVICE,
            cmd::NV2080_GPU_GET_GID_INFO,
            GidInfoParams::new_zeroed().as_bytes()
        )),
        NvStatus::ERR_OBJECT_NOT_FOUND,
        "freed"
    );
}

#[test]
fn the_object_count_follows_allocs_and_frees() {
    let Some(mut rig) = booted(SimChip::Gh100) else {
        return;
    };
    // Let GSP-RM take a step with nothing to do, so the count is current.
    let idle = |rig: &Rig| {
        std::thread::sleep(std::time::Duration::from_millis(20));
        rig.gpu.rm_objects()
    };
    let internal = idle(&rig);
    assert_eq!(
        (internal.clients, internal.objects),
        (1, 3),
        "GSP-RM's internal client, device and subdevice"
    );
    basic_objects(&mut rig);
    let with = idle(&rig);
    assert_eq!(with.clients, 2);
    assert!(with.objects >= internal.objects + 3, "{with:?}");
    let free = [CLIENT, 0, CLIENT, 0].map(u32::to_le_bytes).concat();
    let (_, p) = rig.call(RpcFunction::Free.as_u32(), &free);
    assert_eq!(u32::from_le_bytes(p[12..16].try_into().unwrap()), 0);
    assert_eq!(idle(&rig), internal, "freeing the client frees all it has");
}

#[test]
fn injected_rpc_failure_reaches_the_alloc_status() {
    let faults = FaultPlan {
        rpc_failure: Some((RpcFunction::GspRmAlloc.as_u32(), NvStatus::ERR_NO_MEMORY.0)),
        ..Default::default()
    };
    let Some(mut rig) = Rig::new(SimChip::Gb202, faults) else {
        return;
    };
    rig.boot();
    let (st, _) = rig.rm_alloc(
        CLIENT,
        0,
        CLIENT,
        cls::NV01_ROOT,
        RootClientAllocParams::default().as_bytes(),
    );
    assert_eq!(st, NvStatus::ERR_NO_MEMORY);
    rig.gpu.inject(|f| f.rpc_failure = None);
    ok(
        rig.rm_alloc(
            CLIENT,
            0,
            CLIENT,
            cls::NV01_ROOT,
            RootClientAllocParams::default().as_bytes(),
        ),
        "the client was never made",
    );
}
