//! The table of recognised kernels: name, SM, FNV-1a 64 of the code and the model that runs
//! it ([`super::kernels`] says how the hash is taken; `sim/tests/engines_compute.rs` checks
//! every entry against the committed cubins). The sm_100 entries are from
//! `core/tests/data/cubin/kernels.sm_100.cubin` and `host/data/bench_kernels.sm_100.cubin`,
//! the sm_75 ones from `core/tests/data/cubin/kernels.sm_75.cubin`.

use super::kernels::{Known, Model};

const fn known(name: &'static str, sm: &'static str, hash: u64, model: Model) -> Known {
    Known {
        name,
        sm,
        hash,
        model,
    }
}

/// The test kernels of `core/tests/data/cubin/kernels.sm_86.cubin` and `.sm_89.cubin`
/// (GA10x, AD10x): the same code for both SMs.
const fn sm8x(sm: &'static str) -> [Known; 7] {
    [
        known(
            "count_launches",
            sm,
            0x33a4b595d2fbb121,
            Model::CountLaunches,
        ),
        known("dims", sm, 0x5811f314026d1ec5, Model::Dims),
        known("empty_kernel", sm, 0xc90c564f0ae835ca, Model::Nothing),
        known("local_array", sm, 0xf20a84c1b11ffb72, Model::LocalArray),
        known("reverse_block", sm, 0x44beae1e09c42759, Model::ReverseBlock),
        known("store_value", sm, 0xf9117e7c0f4254af, Model::StoreValue),
        known("vector_add", sm, 0x7c8b2d0fe730620e, Model::VectorAdd),
    ]
}

/// The test kernels of `core/tests/data/cubin/kernels.sm_80.cubin` (GA100): `dims`,
/// `empty_kernel` and `store_value` are sm_86's code, the others differ.
const SM80: [Known; 7] = [
    known(
        "count_launches",
        "sm_80",
        0x4366067684765fac,
        Model::CountLaunches,
    ),
    known("dims", "sm_80", 0x5811f314026d1ec5, Model::Dims),
    known("empty_kernel", "sm_80", 0xc90c564f0ae835ca, Model::Nothing),
    known(
        "local_array",
        "sm_80",
        0xcb8824f604972ed3,
        Model::LocalArray,
    ),
    known(
        "reverse_block",
        "sm_80",
        0x403f56bb59a39ec8,
        Model::ReverseBlock,
    ),
    known(
        "store_value",
        "sm_80",
        0xf9117e7c0f4254af,
        Model::StoreValue,
    ),
    known("vector_add", "sm_80", 0x31a60786a669a011, Model::VectorAdd),
];

/// The sm_80, sm_86 and sm_89 test kernels.
pub const KNOWN_SM8X: [[Known; 7]; 3] = [SM80, sm8x("sm_86"), sm8x("sm_89")];

/// Every recognised kernel. `window_addresses` is not here: what it writes (generic addresses
/// inside the shared and local windows) depends on the hardware's memory layout.
pub const KNOWN: &[Known] = &[
    known(
        "count_launches",
        "sm_90",
        0x89bd93dd9afe5513,
        Model::CountLaunches,
    ),
    known("dims", "sm_90", 0xd6ab5e252f4c43b3, Model::Dims),
    known("empty_kernel", "sm_90", 0x66def827628eaeb3, Model::Nothing),
    known(
        "local_array",
        "sm_90",
        0xf822a1cfdbd0eb0f,
        Model::LocalArray,
    ),
    known(
        "reverse_block",
        "sm_90",
        0x6b5fa566e897f9f0,
        Model::ReverseBlock,
    ),
    known(
        "store_value",
        "sm_90",
        0x81b7c5da5c7e0fc4,
        Model::StoreValue,
    ),
    known("vector_add", "sm_90", 0x1c42dc3e3ffd05e6, Model::VectorAdd),
    known(
        "count_launches",
        "sm_120",
        0x35ea7e176060b005,
        Model::CountLaunches,
    ),
    known("dims", "sm_120", 0x7245bdd8b560128b, Model::Dims),
    known("empty_kernel", "sm_120", 0xac121423d2b1da48, Model::Nothing),
    known(
        "local_array",
        "sm_120",
        0x300d79acb1103f37,
        Model::LocalArray,
    ),
    known(
        "reverse_block",
        "sm_120",
        0xb52ae854b2725237,
        Model::ReverseBlock,
    ),
    known(
        "store_value",
        "sm_120",
        0x1bf84de98f2e51de,
        Model::StoreValue,
    ),
    known("vector_add", "sm_120", 0xf110f4ccc0dfc8a6, Model::VectorAdd),
    known("copy16", "sm_90", 0xcd86b86ff65a861d, Model::CopyAll),
    known("copy64", "sm_90", 0x3508a2f634091394, Model::CopyAll),
    known("copy64cs", "sm_90", 0x34b2d78336f707e0, Model::CopyAll),
    known("copy_bulk", "sm_90", 0x1dbd3b45131f2e60, Model::CopyAll),
    known("copy_chunk", "sm_90", 0x102726b515764879, Model::CopyAll),
    known("copy_flat", "sm_90", 0x67637ae0ba829b8a, Model::CopyFlat),
    known("copy_flat2", "sm_90", 0xd929b3bd1f018f8f, Model::CopyFlat2),
    known("copy_h000_1", "sm_90", 0x0964a482dfd92d1f, Model::CopyAll),
    known("copy_h000_4", "sm_90", 0x5a3b5d6f08a9383c, Model::CopyAll),
    known("copy_h010_4", "sm_90", 0x89858576412252ec, Model::CopyAll),
    known("copy_h100_1", "sm_90", 0x43935604fdbe7a1f, Model::CopyAll),
    known("copy_h100_2", "sm_90", 0xa7a934e81fdae142, Model::CopyAll),
    known("copy_h100_4", "sm_90", 0x70ca63d0341e8e0c, Model::CopyAll),
    known("copy_h110_1", "sm_90", 0xe9783456cb40b4bf, Model::CopyAll),
    known("copy_h110_4", "sm_90", 0x8d7b892a869fa9dc, Model::CopyAll),
    known("copy_h120_1", "sm_90", 0x7bd4bda6e21a4a1f, Model::CopyAll),
    known("copy_h200_1", "sm_90", 0x8c2554e22d8cda1f, Model::CopyAll),
    known("copy_h200_4", "sm_90", 0x6367cab0f7218d4c, Model::CopyAll),
    known("copy_h300_1", "sm_90", 0x272b8d03cee659df, Model::CopyAll),
    known("copy_tile", "sm_90", 0xf31450728728527a, Model::CopyAll),
    known("spin_cycles", "sm_90", 0x426f83aee094fbf2, Model::Nothing),
    known(
        "count_launches",
        "sm_100",
        0x02e340971bab10f7,
        Model::CountLaunches,
    ),
    known("dims", "sm_100", 0xc49cf56ebffa85e2, Model::Dims),
    known("empty_kernel", "sm_100", 0xac121423d2b1da48, Model::Nothing),
    known(
        "local_array",
        "sm_100",
        0x7fffee85cf4c06eb,
        Model::LocalArray,
    ),
    known(
        "reverse_block",
        "sm_100",
        0xe03ea2f47bca9966,
        Model::ReverseBlock,
    ),
    known(
        "store_value",
        "sm_100",
        0xa719822e73c9258a,
        Model::StoreValue,
    ),
    known("vector_add", "sm_100", 0xf110f4ccc0dfc8a6, Model::VectorAdd),
    known("copy16", "sm_100", 0x3f2fbd322edf3c46, Model::CopyAll),
    known("copy64", "sm_100", 0x4be00e7e227cd794, Model::CopyAll),
    known("copy64cs", "sm_100", 0xbf2e9e784e07347a, Model::CopyAll),
    known("copy_bulk", "sm_100", 0x81fc84a5101b0047, Model::CopyAll),
    known("copy_chunk", "sm_100", 0xdf10ff80c739500b, Model::CopyAll),
    known("copy_flat", "sm_100", 0xd42ceece5d7488b6, Model::CopyFlat),
    known("copy_flat2", "sm_100", 0xb4157de2c74bc89a, Model::CopyFlat2),
    known("copy_h000_1", "sm_100", 0x5b18befa99294728, Model::CopyAll),
    known("copy_h000_4", "sm_100", 0xd49ef8e99c63bc50, Model::CopyAll),
    known("copy_h010_4", "sm_100", 0x95b7a970b4242e60, Model::CopyAll),
    known("copy_h100_1", "sm_100", 0x6343421f52bbdc08, Model::CopyAll),
    known("copy_h100_2", "sm_100", 0xe2f385db66a36855, Model::CopyAll),
    known("copy_h100_4", "sm_100", 0x35f531d82bb2efc0, Model::CopyAll),
    known("copy_h110_1", "sm_100", 0x2cfcda512118c8c8, Model::CopyAll),
    known("copy_h110_4", "sm_100", 0x02a61b80370ef8b0, Model::CopyAll),
    known("copy_h120_1", "sm_100", 0xf92e0ddb3f49b588, Model::CopyAll),
    known("copy_h200_1", "sm_100", 0x5414b32eada90f88, Model::CopyAll),
    known("copy_h200_4", "sm_100", 0x3603f23f37fe1300, Model::CopyAll),
    known("copy_h300_1", "sm_100", 0x319f54649b2b2028, Model::CopyAll),
    known("copy_tile", "sm_100", 0x05c73211d4e163d8, Model::CopyAll),
    known("spin_cycles", "sm_100", 0xdf4bdbe1d2154d33, Model::Nothing),
    // sm_75 (TU10x): `core/tests/data/cubin/kernels.sm_75.cubin`.
    known(
        "count_launches",
        "sm_75",
        0x488e9a84c26929f3,
        Model::CountLaunches,
    ),
    known("dims", "sm_75", 0xc7646f8de8afc093, Model::Dims),
    known("empty_kernel", "sm_75", 0x33ef4abff8b44efc, Model::Nothing),
    known(
        "local_array",
        "sm_75",
        0xd57674f165dbe250,
        Model::LocalArray,
    ),
    known(
        "reverse_block",
        "sm_75",
        0x869239973ba20d74,
        Model::ReverseBlock,
    ),
    known(
        "store_value",
        "sm_75",
        0xb2196efa742e1b0a,
        Model::StoreValue,
    ),
    known("vector_add", "sm_75", 0x0d687486447cba3e, Model::VectorAdd),
    // `host/data/pdl_kernels.sm_90.cubin` and `.sm_100.cubin` (`bench --programmatic`): the
    // same work after `griddepcontrol.launch_dependents` and `griddepcontrol.wait`. The
    // simulator runs each grid to completion before the next starts, so no prerequisite grid
    // is ever in flight and the wait returns at once (PTX ISA, `griddepcontrol`): the models
    // of the plain kernels are exact.
    known("empty_kernel", "sm_90", 0x45c945f1c75d5a8e, Model::Nothing),
    known(
        "store_value",
        "sm_90",
        0xb7fcf0d7dccac2c3,
        Model::StoreValue,
    ),
    known("vector_add", "sm_90", 0x0f511f8182e3ca13, Model::VectorAdd),
    known("empty_kernel", "sm_100", 0xb9a112b8ee02a611, Model::Nothing),
    known(
        "store_value",
        "sm_100",
        0x97f44c4dddd35e61,
        Model::StoreValue,
    ),
    known("vector_add", "sm_100", 0x5f98b5417b543171, Model::VectorAdd),
];
