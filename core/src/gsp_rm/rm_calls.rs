//! The RM API over RPCs: `GSP_RM_ALLOC`, `GSP_RM_CONTROL` and `FREE` in one of our clients,
//! each reply decoded, its parameters copied back, the object tree and the channel records
//! kept in step.

use nvbare_gsp::rm::alloc::RootClientAllocParams;
use nvbare_gsp::rm::classes as cls;
use nvbare_gsp::rpc::commands::Command;
use nvbare_gsp::rpc::events::GspMessage;
use zerocopy::{FromBytes, IntoBytes};

use super::GspRm;
use super::error::{GspRmError, RmCall};
use crate::hal::Platform;
use crate::rm::{Handle, RmAbi, RmApi};

impl<P: Platform> GspRm<P> {
    pub(super) fn call(&mut self, call: RmCall, c: &Command) -> Result<GspMessage, GspRmError> {
        self.gsp
            .rpc()
            .call(c)
            .map(|r| r.body)
            .map_err(|e| GspRmError::from_rpc(call, e))
    }

    pub(super) fn alloc_client(&mut self, client: Handle) -> Result<(), GspRmError> {
        let call = RmCall::Alloc {
            class: cls::NV01_ROOT_CLIENT,
            parent: 0,
        };
        let p = RootClientAllocParams {
            h_client: client,
            ..Default::default()
        };
        let c = Command::rm_alloc(client, 0, client, cls::NV01_ROOT_CLIENT, p.as_bytes())
            .map_err(|source| GspRmError::Encode { call, source })?;
        match self.call(call, &c)? {
            GspMessage::RmAllocReply { .. } => {
                self.handles.record(client, 0, cls::NV01_ROOT_CLIENT);
                Ok(())
            }
            _ => Err(GspRmError::UnexpectedReply { call }),
        }
    }

    /// `GSP_RM_ALLOC` of `class` under `parent` in `client`, parameters updated from the
    /// reply.
    ///
    /// The handle goes back to the free list only when GSP-RM certainly did not make the
    /// object (it refused, or the call was never sent). When the call did not complete (no
    /// reply in time, GSP-RM halted, a reply that makes no sense) GSP-RM may have made it:
    /// the handle is kept as a live object, freed with its client, and a channel keeps the
    /// memory GSP-RM may be using.
    pub(super) fn alloc_raw_in(
        &mut self,
        client: Handle,
        parent: Handle,
        class: u32,
        params: &mut [u8],
    ) -> Result<Handle, GspRmError> {
        let call = RmCall::Alloc { class, parent };
        let h = self.handles.take()?;
        let done = Command::rm_alloc(client, parent, h, class, params)
            .map_err(|source| GspRmError::Encode { call, source })
            .and_then(|c| self.call(call, &c))
            .and_then(|body| match body {
                GspMessage::RmAllocReply { params: out, .. } if out.len() == params.len() => {
                    params.copy_from_slice(&out);
                    Ok(())
                }
                GspMessage::RmAllocReply { params: out, .. } => Err(GspRmError::ReplySize {
                    call,
                    sent: params.len(),
                    got: out.len(),
                }),
                _ => Err(GspRmError::UnexpectedReply { call }),
            });
        let not_made = matches!(
            done,
            Err(GspRmError::Refused { .. } | GspRmError::Encode { .. })
        );
        let made = (!not_made).then_some(h);
        self.channels
            .allocated(&mut self.mm, made, parent, class, params);
        if not_made {
            self.handles.release(h);
        } else {
            self.handles.record(h, parent, class);
        }
        done.map(|()| h)
    }

    pub(super) fn alloc_in<T: IntoBytes + FromBytes>(
        &mut self,
        client: Handle,
        parent: Handle,
        class: u32,
        params: &mut T,
    ) -> Result<Handle, GspRmError> {
        self.alloc_raw_in(client, parent, class, params.as_mut_bytes())
    }

    pub(super) fn control_raw_in(
        &mut self,
        client: Handle,
        object: Handle,
        command: u32,
        params: &mut [u8],
    ) -> Result<(), GspRmError> {
        let call = RmCall::Control {
            cmd: command,
            object,
        };
        let c = Command::rm_control(client, object, command, params)
            .map_err(|source| GspRmError::Encode { call, source })?;
        match self.call(call, &c)? {
            GspMessage::RmControlReply { params: out, .. } if out.len() == params.len() => {
                params.copy_from_slice(&out);
                Ok(())
            }
            GspMessage::RmControlReply { params: out, .. } => Err(GspRmError::ReplySize {
                call,
                sent: params.len(),
                got: out.len(),
            }),
            _ => Err(GspRmError::UnexpectedReply { call }),
        }
    }

    pub(super) fn control_in<T: IntoBytes + FromBytes>(
        &mut self,
        client: Handle,
        object: Handle,
        command: u32,
        params: &mut T,
    ) -> Result<(), GspRmError> {
        self.control_raw_in(client, object, command, params.as_mut_bytes())
    }

    pub(super) fn free_in(
        &mut self,
        client: Handle,
        parent: Handle,
        object: Handle,
    ) -> Result<(), GspRmError> {
        let call = RmCall::Free { object };
        match self.call(call, &Command::free(client, parent, object))? {
            GspMessage::FreeReply { .. } => {
                let gone = self.handles.remove_subtree(object);
                self.channels.freed(&mut self.mm, &gone);
                // GSP-RM released the freed channels' context buffers.
                for (h, _) in &gone {
                    for b in self.channel_context.remove(h).into_iter().flatten() {
                        self.mm.free(self.gsp.platform_mut(), b);
                    }
                }
                Ok(())
            }
            _ => Err(GspRmError::UnexpectedReply { call }),
        }
    }
}

impl<P: Platform> RmApi for GspRm<P> {
    type Error = GspRmError;

    fn client(&self) -> Handle {
        self.client
    }

    fn abi(&self) -> RmAbi {
        RmAbi::R570
    }

    fn alloc_raw(
        &mut self,
        parent: Handle,
        class: u32,
        params: &mut [u8],
    ) -> Result<Handle, GspRmError> {
        self.alloc_raw_in(self.client, parent, class, params)
    }

    fn control_raw(
        &mut self,
        object: Handle,
        cmd: u32,
        params: &mut [u8],
    ) -> Result<(), GspRmError> {
        self.control_raw_in(self.client, object, cmd, params)
    }

    fn free(&mut self, parent: Handle, object: Handle) -> Result<(), GspRmError> {
        self.free_in(self.client, parent, object)
    }
}
