//! GSP-RM's object database: clients and the objects under them, as resserv keeps them
//! (`rs_server.c`, `rs_client.c`, `rmapi/alloc_free.c` of OpenRM 570.144), with the checks
//! and `NV_STATUS` codes those functions apply. Class constructors are in [`alloc`],
//! controls in [`control`].
//!
//! Generic checks of an allocation, in OpenRM's order:
//! - a class no resource describes: `NV_ERR_INVALID_CLASS` (`serverAllocResourceUnderLock`,
//!   alloc_free.c, `RsResInfoByExternalClassId` is NULL); a class the chip does not list
//!   counts as undescribed;
//! - a client handle already in use: `NV_ERR_INSERT_DUPLICATE_NAME`
//!   (`_serverCreateEntryAndLockForNewClient`, rs_server.c);
//! - an unknown client: `NV_ERR_INVALID_OBJECT_HANDLE` (`_serverLockClientWithLockInfo`);
//! - an unknown parent: `NV_ERR_OBJECT_NOT_FOUND` (`clientGetResourceRef` from
//!   `serverAllocResourceUnderLock`); a parent of a class the resource does not list:
//!   `NV_ERR_INVALID_OBJECT_PARENT` (the same function's `pParentList` loop);
//! - a handle of 0 or equal to the client's: `NV_ERR_INVALID_OBJECT_HANDLE`; a handle in
//!   use: `NV_ERR_INSERT_DUPLICATE_NAME` (`clientValidateNewResourceHandle_IMPL`, rs_client.c).

pub mod alloc;
pub mod channel;
pub mod control;

use std::collections::BTreeMap;

use nvbare_gsp::rm::NvStatus;
use nvbare_gsp::rm::classes as cls;

use crate::chip::ChipSpec;
use crate::device::Engine;

/// A handle.
pub type Handle = u32;

/// What an object is, with the state the model keeps for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The client itself.
    Client,
    /// `NV01_DEVICE_0`.
    Device,
    /// `NV20_SUBDEVICE_0`.
    Subdevice,
    /// Physical memory (`ALLOC_MEMORY`): its pages.
    Memory {
        /// Bus addresses of its 4 KiB pages.
        pages: Vec<u64>,
        /// Bytes.
        length: u64,
    },
    /// `NV01_MEMORY_VIRTUAL`: a range of the device's VA.
    VirtualMemory,
    /// `FERMI_VASPACE_A`: key into `World::vaspaces`.
    VaSpace {
        /// The world's id of this VA space.
        id: u32,
    },
    /// `KEPLER_CHANNEL_GROUP_A`.
    ChannelGroup {
        /// Its engine and runlist.
        engine: Engine,
        /// Runlist id.
        runlist: u32,
        /// Subcontext ids in use.
        subctx_used: u64,
        /// Scheduled.
        scheduled: bool,
        /// The VA space named at allocation (`hVASpace`): channels allocated in the group
        /// without a context share or a VA space of their own take it.
        vaspace: Option<u32>,
    },
    /// `FERMI_CONTEXT_SHARE_A`.
    ContextShare {
        /// VA space id.
        vaspace: u32,
        /// Subcontext id.
        subctx: u32,
    },
    /// A GPFIFO channel: key into `World::channels`.
    Channel {
        /// The doorbell token (`runlist << 16 | chid`).
        token: u32,
        /// Golden context promoted.
        promoted: bool,
    },
    /// An engine object (compute, copy, ...) on a channel.
    EngineObject,
    /// `GT200_DEBUGGER`: the debugged channel's token.
    Debugger {
        /// Token of the channel of the debugged object.
        token: u32,
    },
    /// A usermode region class.
    Usermode,
}

/// One object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Object {
    /// Its class.
    pub class: u32,
    /// Its parent handle (the client's own handle for top-level objects).
    pub parent: Handle,
    /// What it is.
    pub kind: Kind,
}

/// One client's objects by handle (the client's own handle maps to [`Kind::Client`]).
#[derive(Clone, Debug, Default)]
pub struct Client {
    /// Objects.
    pub objects: BTreeMap<Handle, Object>,
}

/// The database.
#[derive(Debug)]
pub struct RmDb {
    /// The chip.
    pub spec: &'static ChipSpec,
    /// Clients by handle.
    pub clients: BTreeMap<Handle, Client>,
    /// Next channel id.
    pub next_chid: u32,
    /// Next VA space id.
    pub next_vaspace: u32,
    /// MMU faults reported to debuggers: (channel token, VA, fault type).
    pub mmu_faults: Vec<(u32, u64, u32)>,
}

/// How many clients and objects GSP-RM's database holds (for drivers' leak checks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RmObjectCount {
    /// Clients, GSP-RM's internal one included.
    pub clients: usize,
    /// Objects of all clients, each client's own entry included.
    pub objects: usize,
}

/// A failed request: the status and why (for the log).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RmError {
    /// The `NV_STATUS` GSP-RM answers.
    pub status: NvStatus,
    /// Why, naming the OpenRM function that returns it.
    pub why: String,
}

/// `Err` of `status` because `why`.
pub fn rm_err<T>(status: NvStatus, why: impl Into<String>) -> Result<T, RmError> {
    Err(RmError {
        status,
        why: why.into(),
    })
}

/// The client classes (`NV01_ROOT`, `NV01_ROOT_NON_PRIV`, `NV01_ROOT_CLIENT`): always
/// allocatable (`serverAllocResource`'s `bClientAlloc`).
pub fn is_client_class(class: u32) -> bool {
    matches!(
        class,
        cls::NV01_ROOT | cls::NV01_ROOT_NON_PRIV | cls::NV01_ROOT_CLIENT
    )
}

impl RmDb {
    /// An empty database for `spec`.
    pub fn new(spec: &'static ChipSpec) -> RmDb {
        RmDb {
            spec,
            clients: BTreeMap::new(),
            next_chid: 0,
            next_vaspace: 1,
            mmu_faults: Vec::new(),
        }
    }

    /// How many clients and objects there are.
    pub fn count(&self) -> RmObjectCount {
        RmObjectCount {
            clients: self.clients.len(),
            objects: self.clients.values().map(|c| c.objects.len()).sum(),
        }
    }

    /// The object `h` of client `c`.
    pub fn object(&self, c: Handle, h: Handle) -> Option<&Object> {
        self.clients.get(&c)?.objects.get(&h)
    }

    /// The object `h` of client `c`, mutably.
    pub fn object_mut(&mut self, c: Handle, h: Handle) -> Option<&mut Object> {
        self.clients.get_mut(&c)?.objects.get_mut(&h)
    }

    /// The client `c`, or `NV_ERR_INVALID_OBJECT_HANDLE` (`_serverLockClientWithLockInfo`).
    pub fn client(&self, c: Handle) -> Result<&Client, RmError> {
        self.clients.get(&c).ok_or_else(|| RmError {
            status: NvStatus::ERR_INVALID_OBJECT_HANDLE,
            why: format!("client {c:#x} does not exist (_serverLockClientWithLockInfo)"),
        })
    }

    /// Registers a new client.
    pub fn add_client(&mut self, h: Handle) -> Result<(), RmError> {
        if h == 0 {
            return rm_err(
                NvStatus::ERR_INVALID_OBJECT_HANDLE,
                "client handle 0 (GSP-RM takes the handle the RPC names)",
            );
        }
        if self.clients.contains_key(&h) {
            return rm_err(
                NvStatus::ERR_INSERT_DUPLICATE_NAME,
                format!("client {h:#x} already exists (_serverCreateEntryAndLockForNewClient)"),
            );
        }
        let mut client = Client::default();
        client.objects.insert(
            h,
            Object {
                class: cls::NV01_ROOT,
                parent: 0,
                kind: Kind::Client,
            },
        );
        self.clients.insert(h, client);
        Ok(())
    }

    /// The internal client GSP-RM makes for the kernel RM's internal controls, with its
    /// device and subdevice (`GspStaticConfigInfo.hInternalClient/Device/Subdevice`).
    pub fn add_internal_objects(&mut self) {
        use crate::units::gsp::facts::{INTERNAL_CLIENT, INTERNAL_DEVICE, INTERNAL_SUBDEVICE};
        let _ = self.add_client(INTERNAL_CLIENT);
        if let Some(c) = self.clients.get_mut(&INTERNAL_CLIENT) {
            c.objects.insert(
                INTERNAL_DEVICE,
                Object {
                    class: cls::NV01_DEVICE_0,
                    parent: INTERNAL_CLIENT,
                    kind: Kind::Device,
                },
            );
            c.objects.insert(
                INTERNAL_SUBDEVICE,
                Object {
                    class: cls::NV20_SUBDEVICE_0,
                    parent: INTERNAL_DEVICE,
                    kind: Kind::Subdevice,
                },
            );
        }
    }

    /// The device of client `c` above `h` (`h` itself if a device).
    pub fn device_of(&self, c: Handle, mut h: Handle) -> Option<Handle> {
        loop {
            let o = self.object(c, h)?;
            if o.kind == Kind::Device {
                return Some(h);
            }
            if o.kind == Kind::Client {
                return None;
            }
            h = o.parent;
        }
    }

    /// Frees `h` of client `c` and everything under it (a client frees all it has);
    /// the tokens of channels freed, and the VA space ids freed.
    pub fn free(&mut self, c: Handle, h: Handle) -> Result<(Vec<u32>, Vec<u32>), RmError> {
        let client = self.clients.get(&c).ok_or_else(|| RmError {
            status: NvStatus::ERR_INVALID_OBJECT_HANDLE,
            why: format!("free in client {c:#x}, which does not exist (_serverFreeClient)"),
        })?;
        if !client.objects.contains_key(&h) {
            return rm_err(
                NvStatus::ERR_OBJECT_NOT_FOUND,
                format!(
                    "free of {h:#x}, which client {c:#x} does not have (clientFreeResource_IMPL)"
                ),
            );
        }
        let mut doomed = vec![h];
        let mut i = 0;
        while i < doomed.len() {
            let p = doomed[i];
            doomed.extend(
                client
                    .objects
                    .iter()
                    .filter(|(k, o)| o.parent == p && **k != p)
                    .map(|(k, _)| *k),
            );
            i += 1;
        }
        let (mut tokens, mut vaspaces) = (Vec::new(), Vec::new());
        for d in &doomed {
            match client.objects.get(d).map(|o| &o.kind) {
                Some(Kind::Channel { token, .. }) => tokens.push(*token),
                Some(Kind::VaSpace { id }) => vaspaces.push(*id),
                _ => {}
            }
        }
        if h == c {
            self.clients.remove(&c);
        } else if let Some(client) = self.clients.get_mut(&c) {
            for d in doomed {
                client.objects.remove(&d);
            }
        }
        Ok((tokens, vaspaces))
    }
}
