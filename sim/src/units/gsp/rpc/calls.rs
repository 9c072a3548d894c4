//! The RM calls of GSP-RM: `GSP_RM_ALLOC`, `GSP_RM_CONTROL`, `FREE` and
//! `SET_PAGE_DIRECTORY`, each parsed from its `g_rpc-structures.h` payload and handed to the
//! object database ([`super::super::rm`]).

use nvbare_gsp::abi::{RpcGspRmAlloc, RpcGspRmControl, RpcSetPageDirectory};
use nvbare_gsp::rm::NvStatus;
use zerocopy::{FromBytes, IntoBytes};

use super::Rm;
use crate::device::Cx;
use crate::memory::Target;
use crate::units::gsp::rm::{Kind, RmError, alloc, control};

impl Rm {
    pub(super) fn rm_alloc(&mut self, cx: &mut Cx, payload: &mut [u8]) -> NvStatus {
        let fixed = core::mem::size_of::<RpcGspRmAlloc>();
        let Ok((mut req, _)) = RpcGspRmAlloc::read_from_prefix(payload) else {
            cx.log.warn(
                "gsp",
                "GSP_RM_ALLOC payload shorter than rpc_gsp_rm_alloc_v03_00",
            );
            return NvStatus::ERR_INVALID_ARGUMENT;
        };
        let end = fixed + req.params_size as usize;
        let status = if payload.len() < end {
            self.refused(
                cx,
                103,
                RmError {
                    status: NvStatus::ERR_INVALID_ARGUMENT,
                    why: format!("paramsSize {} beyond the message", req.params_size),
                },
            )
        } else {
            match alloc::rm_alloc(&mut self.db, cx, &req, &mut payload[fixed..end]) {
                Ok(()) => {
                    cx.log.debug(
                        "gsp",
                        format!(
                            "alloc {:#x}/{:#x} class {:#x} ok",
                            req.h_client, req.h_object, req.h_class
                        ),
                    );
                    NvStatus::OK
                }
                Err(e) => self.refused(cx, 103, e),
            }
        };
        req.status = status.0;
        payload[..fixed].copy_from_slice(req.as_bytes());
        status
    }

    pub(super) fn rm_control(&mut self, cx: &mut Cx, payload: &mut [u8]) -> NvStatus {
        let fixed = core::mem::size_of::<RpcGspRmControl>();
        let Ok((mut req, _)) = RpcGspRmControl::read_from_prefix(payload) else {
            cx.log.warn(
                "gsp",
                "GSP_RM_CONTROL payload shorter than rpc_gsp_rm_control_v03_00",
            );
            return NvStatus::ERR_INVALID_ARGUMENT;
        };
        let end = fixed + req.params_size as usize;
        let status = if payload.len() < end {
            self.refused(
                cx,
                76,
                RmError {
                    status: NvStatus::ERR_INVALID_ARGUMENT,
                    why: format!("paramsSize {} beyond the message", req.params_size),
                },
            )
        } else {
            match control::rm_control(&mut self.db, cx, &req, &mut payload[fixed..end]) {
                Ok(()) => {
                    cx.log.debug(
                        "gsp",
                        format!("control {:#010x} on {:#x} ok", req.cmd, req.h_object),
                    );
                    NvStatus::OK
                }
                Err(e) => self.refused(cx, 76, e),
            }
        };
        req.status = status.0;
        payload[..fixed].copy_from_slice(req.as_bytes());
        status
    }

    /// `FREE` (`rpc_free_v03_00`: `NVOS00_PARAMETERS` hRoot, hObjectParent, hObjectOld, status).
    pub(super) fn free(&mut self, cx: &mut Cx, payload: &mut [u8]) -> NvStatus {
        let word = |p: &[u8], i: usize| {
            p.get(i * 4..i * 4 + 4)
                .map_or(0, |b| u32::from_le_bytes(b.try_into().unwrap_or([0; 4])))
        };
        if payload.len() < 16 {
            return NvStatus::ERR_INVALID_ARGUMENT;
        }
        let (client, object) = (word(payload, 0), word(payload, 2));
        let status = match self.db.free(client, object) {
            Ok((tokens, vaspaces)) => {
                for t in tokens {
                    cx.world.channels.remove(&t);
                }
                for v in vaspaces {
                    cx.world.vaspaces.remove(&v);
                }
                NvStatus::OK
            }
            Err(e) => self.refused(cx, 10, e),
        };
        payload[12..16].copy_from_slice(&status.0.to_le_bytes());
        status
    }

    /// `SET_PAGE_DIRECTORY`: the VA space's root page directory.
    pub(super) fn set_page_directory(&mut self, cx: &mut Cx, payload: &[u8]) -> NvStatus {
        let Ok((req, _)) = RpcSetPageDirectory::read_from_prefix(payload) else {
            return NvStatus::ERR_INVALID_ARGUMENT;
        };
        let p = req.params;
        let c = req.h_client;
        let vaspace = match self.db.object(c, p.h_va_space) {
            Some(o) => match o.kind {
                Kind::VaSpace { id }
                    if self.db.device_of(c, p.h_va_space) == Some(req.h_device) =>
                {
                    Some(id)
                }
                _ => None,
            },
            None => None,
        };
        let Some(id) = vaspace else {
            return self.refused(
                cx,
                54,
                RmError {
                    status: NvStatus::ERR_INVALID_OBJECT_HANDLE,
                    why: format!(
                        "hVASpace {:#x} is not a VA space of device {:#x} of client {c:#x}",
                        p.h_va_space, req.h_device
                    ),
                },
            );
        };
        // NV0080_CTRL_DMA_SET_PAGE_DIRECTORY_FLAGS_APERTURE (1:0): VIDMEM 0, SYSMEM 1/2.
        let root = match p.flags & 3 {
            0 => Target::Vram(p.phys_address),
            1 | 2 => Target::Bus(p.phys_address),
            _ => return NvStatus::ERR_INVALID_ARGUMENT,
        };
        if !p.phys_address.is_multiple_of(0x1000) || p.num_entries == 0 {
            return self.refused(
                cx,
                54,
                RmError {
                    status: NvStatus::ERR_INVALID_ARGUMENT,
                    why: format!(
                        "page directory {:#x} with {} entries",
                        p.phys_address, p.num_entries
                    ),
                },
            );
        }
        if let Some(v) = cx.world.vaspaces.get_mut(&id) {
            v.page_dir = Some(root);
        }
        cx.log.info(
            "gsp",
            format!("VA space {id}: root page directory {root:?}"),
        );
        NvStatus::OK
    }
}
