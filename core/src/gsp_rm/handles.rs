//! RM object handles: the client chooses them on the GSP path (`GSP_RM_ALLOC` names the new
//! object's handle, as `rpcRmApiAlloc_GSP` does), so the RM emulation hands them out and keeps
//! the tree of live objects, to know what a free takes with it and to count what is left.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use super::error::GspRmError;
use crate::rm::Handle;

/// First object handle (tinygrad's PCI path counts from here too).
pub const FIRST_HANDLE: Handle = 0xcf00_0000;
/// One past the last object handle.
const END_HANDLE: Handle = 0xd000_0000;

/// One live object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Object {
    /// Its parent (the client for top-level objects).
    pub parent: Handle,
    /// Its class.
    pub class: u32,
}

/// Handles of one client's objects: free handles, and the live objects with their parents.
#[derive(Debug, Default)]
pub struct Handles {
    next: Handle,
    free: Vec<Handle>,
    live: BTreeMap<Handle, Object>,
}

impl Handles {
    /// No object yet.
    pub fn new() -> Self {
        Self {
            next: FIRST_HANDLE,
            free: Vec::new(),
            live: BTreeMap::new(),
        }
    }

    /// A handle no live object has (given back with [`Self::release`] if the allocation
    /// fails).
    pub fn take(&mut self) -> Result<Handle, GspRmError> {
        if let Some(h) = self.free.pop() {
            return Ok(h);
        }
        if self.next >= END_HANDLE {
            return Err(GspRmError::OutOfHandles);
        }
        self.next += 1;
        Ok(self.next - 1)
    }

    /// Gives back a handle whose allocation failed.
    pub fn release(&mut self, h: Handle) {
        if !self.live.contains_key(&h) {
            self.free.push(h);
        }
    }

    /// Records `h` as a live object of `class` under `parent`.
    pub fn record(&mut self, h: Handle, parent: Handle, class: u32) {
        self.live.insert(h, Object { parent, class });
    }

    /// The live object `h`.
    pub fn get(&self, h: Handle) -> Option<Object> {
        self.live.get(&h).copied()
    }

    /// Forgets `h` and everything under it (what RM frees with it); returns those objects,
    /// their handles free again.
    pub fn remove_subtree(&mut self, h: Handle) -> Vec<(Handle, Object)> {
        let mut gone = Vec::new();
        let mut todo = alloc::vec![h];
        while let Some(p) = todo.pop() {
            if let Some(o) = self.live.remove(&p) {
                gone.push((p, o));
                self.free.push(p);
            }
            todo.extend(
                self.live
                    .iter()
                    .filter(|(_, o)| o.parent == p)
                    .map(|(k, _)| *k),
            );
        }
        gone
    }

    /// Forgets every object (their client was freed).
    pub fn clear(&mut self) {
        *self = Self::new();
    }

    /// Live objects.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// Whether no object lives.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_reused_and_frees_take_the_subtree() {
        let mut h = Handles::new();
        let client = 0xc1d0_0000;
        let dev = h.take().unwrap();
        h.record(dev, client, 0x80);
        let sub = h.take().unwrap();
        h.record(sub, dev, 0x2080);
        let tsg = h.take().unwrap();
        h.record(tsg, dev, 0xa06c);
        let ch = h.take().unwrap();
        h.record(ch, tsg, 0xc86f);
        let failed = h.take().unwrap();
        h.release(failed);
        assert_eq!(
            h.take().unwrap(),
            failed,
            "a failed allocation's handle comes back"
        );
        h.release(failed);
        assert_eq!(h.len(), 4);
        let gone = h.remove_subtree(tsg);
        assert_eq!(gone.len(), 2);
        assert!(gone.iter().any(|(k, o)| *k == ch && o.class == 0xc86f));
        assert_eq!(h.len(), 2);
        assert!(h.get(sub).is_some());
        assert_eq!(h.remove_subtree(dev).len(), 2);
        assert!(h.is_empty());
        assert!(
            h.remove_subtree(dev).is_empty(),
            "freeing twice frees nothing"
        );
    }
}
