//! [`AddressSpace`]: one GPU virtual address space, its page-table tree in table memory and a
//! shadow of that tree in CPU memory (which tables exist, which slots are in use), so mapping
//! never reads table memory back.
//!
//! The operations themselves (`map`, `unmap`) are in [`crate::map`].

use alloc::vec;
use alloc::vec::Vec;

use crate::entry::{DualPde, Pde, Pte};
use crate::error::MmuError;
use crate::format::{Format, Level, LevelKind, MmuVersion, PT_4K, PT_64K, PageSize, PageSizes};
use crate::hooks::{TableAllocator, TlbInvalidate};
use crate::memory::{TableAddr, TableAperture, TableMemory};
use crate::walk::Translation;

/// Slot holds nothing.
pub(crate) const NONE: u32 = u32::MAX;
/// Slot holds a PTE.
pub(crate) const LEAF: u32 = u32::MAX - 1;

pub(crate) fn is_table(slot: u32) -> bool {
    slot < LEAF
}

/// Shadow of one page table.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub(crate) level: Level,
    pub(crate) at: TableAddr,
    /// Slots not [`NONE`].
    pub(crate) used: u32,
    /// Per entry: a child node id, [`LEAF`] or [`NONE`]. PD0 has two slots per entry: `i` for
    /// the big page table (or a 2 MiB PTE) and `entries + i` for the small page table.
    pub(crate) slots: Vec<u32>,
}

/// Smallest table allocation: page tables are placed on 4 KiB boundaries.
const TABLE_ALLOC_MIN: u64 = 1 << 12;

/// A GPU virtual address space and the page tables that implement it.
///
/// Generic over where tables live (`M`), where table pages come from (`A`) and how TLBs are
/// invalidated (`T`); each may be a `&mut` to something the caller keeps.
pub struct AddressSpace<M: TableMemory, A: TableAllocator, T: TlbInvalidate> {
    pub(crate) format: &'static Format,
    pub(crate) page_sizes: PageSizes,
    pub(crate) table_aperture: TableAperture,
    pub(crate) memory: M,
    pub(crate) allocator: A,
    pub(crate) tlb: T,
    pub(crate) nodes: Vec<Node>,
    /// Ids of released nodes, for reuse; every other node is a live table.
    free_ids: Vec<u32>,
}

/// Node id of the root (page directory base).
pub(crate) const ROOT: u32 = 0;

impl<M: TableMemory, A: TableAllocator, T: TlbInvalidate> AddressSpace<M, A, T> {
    /// An empty address space of `version` whose tables live in `table_aperture`: allocates
    /// and zeroes the root directory. All page sizes are enabled.
    pub fn new(
        version: MmuVersion,
        table_aperture: TableAperture,
        memory: M,
        allocator: A,
        tlb: T,
    ) -> Result<Self, MmuError> {
        let format = Format::of(version);
        let mut space = AddressSpace {
            format,
            page_sizes: PageSizes::ALL,
            table_aperture,
            memory,
            allocator,
            tlb,
            nodes: Vec::new(),
            free_ids: Vec::new(),
        };
        let root = space.new_table(format.directories[0])?;
        debug_assert_eq!(root, ROOT);
        Ok(space)
    }

    /// The same address space using only `sizes` for new mappings.
    pub fn with_page_sizes(mut self, sizes: PageSizes) -> Self {
        self.page_sizes = sizes;
        self
    }

    /// Uses only `sizes` for mappings made from now on (existing ones stay as they are).
    pub fn set_page_sizes(&mut self, sizes: PageSizes) {
        self.page_sizes = sizes;
    }

    /// The format.
    pub fn format(&self) -> &'static Format {
        self.format
    }

    /// The root directory: what the instance block's page directory base points at.
    pub fn root(&self) -> TableAddr {
        self.nodes[ROOT as usize].at
    }

    /// Number of page tables (the root included).
    pub fn table_count(&self) -> usize {
        self.nodes.len() - self.free_ids.len()
    }

    /// Table memory.
    pub fn memory(&self) -> &M {
        &self.memory
    }

    /// Table memory, mutably (to flush a staging implementation).
    pub fn memory_mut(&mut self) -> &mut M {
        &mut self.memory
    }

    /// The table allocator.
    pub fn allocator(&self) -> &A {
        &self.allocator
    }

    /// The TLB hook.
    pub fn tlb(&self) -> &T {
        &self.tlb
    }

    /// The TLB hook, mutably (to take a deferred invalidate).
    pub fn tlb_mut(&mut self) -> &mut T {
        &mut self.tlb
    }

    /// Gives every page table, the root included, back to the allocator and returns the parts.
    /// The tables are abandoned, not cleared: point the GPU elsewhere first.
    pub fn destroy(mut self) -> Result<(M, A, T), MmuError> {
        for n in &self.nodes {
            if !n.slots.is_empty() {
                let bytes = n.level.table_bytes().max(TABLE_ALLOC_MIN);
                self.allocator.free_table(n.at.addr, bytes)?;
            }
        }
        self.nodes.clear();
        Ok((self.memory, self.allocator, self.tlb))
    }

    /// Creates (where missing) the first `levels` directory tables on the path to `va`, the
    /// root first, and pins the deepest one so that no unmap ever frees it (or, through it,
    /// the ones above): the upper levels of a VA range handed to someone else who fills the
    /// levels below (GSP-RM's server-reserved range, given to it with
    /// `NV90F1_CTRL_CMD_VASPACE_COPY_SERVER_RESERVED_PDES`). `levels` counts directories
    /// that hold plain PDEs (not PD0's dual PDEs). Returns each table's level and place.
    pub fn pin_directories(
        &mut self,
        va: u64,
        levels: usize,
    ) -> Result<Vec<(Level, TableAddr)>, MmuError> {
        let dirs = self.format.directories;
        let max = self.format.pd0_index();
        if levels == 0 || levels > max {
            return Err(MmuError::NoSuchLevels { levels, max });
        }
        if va >= self.format.va_limit() {
            return Err(MmuError::VaOutOfRange {
                va,
                size: 1,
                limit: self.format.va_limit(),
            });
        }
        let mut node = ROOT;
        let mut out = Vec::with_capacity(levels);
        for depth in 0..levels {
            let n = &self.nodes[node as usize];
            out.push((n.level, n.at));
            if depth + 1 == levels {
                break;
            }
            let idx = n.level.index_of(va) as usize;
            node = match n.slots[idx] {
                LEAF => return Err(MmuError::AlreadyMapped { va }),
                NONE => self.attach(node, idx, dirs[depth + 1])?,
                child => child,
            };
        }
        // A pin counts as a use: `prune_empty` frees only tables with none.
        self.nodes[node as usize].used += 1;
        Ok(out)
    }

    /// Where `va` is mapped, read from the tables this address space wrote. `Ok(None)` when
    /// not mapped.
    pub fn translate(&self, va: u64) -> Result<Option<Translation>, MmuError> {
        if va >= self.format.va_limit() {
            return Err(MmuError::VaOutOfRange {
                va,
                size: 1,
                limit: self.format.va_limit(),
            });
        }
        let Some((node, index, size)) = self.lookup(va) else {
            return Ok(None);
        };
        let n = &self.nodes[node as usize];
        let at = n.at.offset(index as u64 * n.level.entry_bytes);
        let raw = self.memory.read_u64(at)?;
        Ok(Pte::decode(self.format, raw).map(|pte| {
            let offset = va & (size.bytes() - 1);
            Translation {
                pa: pte.addr + offset,
                aperture: pte.attrs.aperture,
                page_size: size,
                kind: pte.attrs.kind,
                pte: raw,
                pte_at: at,
            }
        }))
    }

    /// The table and entry index of the PTE mapping `va`, and its page size.
    pub(crate) fn lookup(&self, va: u64) -> Option<(u32, usize, PageSize)> {
        let mut node = ROOT;
        for level in self.format.directories {
            let n = &self.nodes[node as usize];
            let idx = level.index_of(va) as usize;
            let slot = n.slots[idx];
            match level.kind {
                LevelKind::DualDirectory => {
                    if slot == LEAF {
                        return Some((node, idx, PageSize::Size2M));
                    }
                    if is_table(slot) {
                        let j = PT_64K.index_of(va) as usize;
                        if self.nodes[slot as usize].slots[j] == LEAF {
                            return Some((slot, j, PageSize::Size64K));
                        }
                    }
                    let small = n.slots[level.entries() as usize + idx];
                    if is_table(small) {
                        let j = PT_4K.index_of(va) as usize;
                        if self.nodes[small as usize].slots[j] == LEAF {
                            return Some((small, j, PageSize::Size4K));
                        }
                    }
                    return None;
                }
                LevelKind::Directory { leaf } => {
                    if slot == LEAF {
                        return leaf.map(|size| (node, idx, size));
                    }
                    if !is_table(slot) {
                        return None;
                    }
                    node = slot;
                }
                LevelKind::Table(_) => return None,
            }
        }
        None
    }

    /// Allocates and zeroes a table for `level` and adds its shadow node.
    pub(crate) fn new_table(&mut self, level: Level) -> Result<u32, MmuError> {
        let bytes = level.table_bytes().max(TABLE_ALLOC_MIN);
        let addr = self.allocator.alloc_table(bytes)?;
        let at = TableAddr {
            aperture: self.table_aperture,
            addr,
        };
        if let Err(e) = self.memory.zero(at, level.table_bytes()) {
            // The table was never linked; giving it back restores the previous state.
            let _ = self.allocator.free_table(addr, bytes);
            return Err(e.into());
        }
        let slots_per_entry = if level.kind == LevelKind::DualDirectory {
            2
        } else {
            1
        };
        let node = Node {
            level,
            at,
            used: 0,
            slots: vec![NONE; level.entries() as usize * slots_per_entry],
        };
        Ok(match self.free_ids.pop() {
            Some(id) => {
                self.nodes[id as usize] = node;
                id
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        })
    }

    fn release_table(&mut self, id: u32) -> Result<(), MmuError> {
        let n = &mut self.nodes[id as usize];
        let bytes = n.level.table_bytes().max(TABLE_ALLOC_MIN);
        let addr = n.at.addr;
        n.slots = Vec::new();
        self.free_ids.push(id);
        self.allocator.free_table(addr, bytes)
    }

    /// Rewrites directory entry `index` of `node` (a PDE or a dual PDE) from the shadow slots.
    pub(crate) fn write_directory_entry(
        &mut self,
        node: u32,
        index: usize,
    ) -> Result<(), MmuError> {
        let n = &self.nodes[node as usize];
        let child_at = |slot: u32| is_table(slot).then(|| self.nodes[slot as usize].at);
        let at = n.at.offset(index as u64 * n.level.entry_bytes);
        match n.level.kind {
            LevelKind::DualDirectory => {
                let entries = n.level.entries() as usize;
                let dual = DualPde {
                    big: child_at(n.slots[index]),
                    small: child_at(n.slots[entries + index]),
                };
                let raw = dual.encode(self.format)?;
                self.memory
                    .write_u64s(at, &[raw as u64, (raw >> 64) as u64])?;
            }
            _ => {
                let raw = match child_at(n.slots[index]) {
                    Some(table) => Pde { table }.encode(self.format)?,
                    None => 0,
                };
                self.memory.write_u64s(at, &[raw])?;
            }
        }
        Ok(())
    }

    /// Creates a table for `level`, links it at `slot` of `parent` and returns its id. On
    /// failure nothing has changed.
    pub(crate) fn attach(
        &mut self,
        parent: u32,
        slot: usize,
        level: Level,
    ) -> Result<u32, MmuError> {
        let child = self.new_table(level)?;
        let p = &mut self.nodes[parent as usize];
        p.slots[slot] = child;
        p.used += 1;
        let entries = p.level.entries() as usize;
        if let Err(e) = self.write_directory_entry(parent, slot % entries) {
            let p = &mut self.nodes[parent as usize];
            p.slots[slot] = NONE;
            p.used -= 1;
            let _ = self.release_table(child);
            return Err(e);
        }
        Ok(child)
    }

    /// Frees every empty table on the path to `va`, bottom-up, clearing the entries that
    /// pointed at them. The root stays.
    pub(crate) fn prune_empty(&mut self, va: u64) -> Result<(), MmuError> {
        let mut path = [(ROOT, 0usize); 8];
        let mut depth = 0;
        let mut node = ROOT;
        for level in self.format.directories {
            let idx = level.index_of(va) as usize;
            if level.kind == LevelKind::DualDirectory {
                let entries = level.entries() as usize;
                for slot in [idx, entries + idx] {
                    let child = self.nodes[node as usize].slots[slot];
                    if is_table(child) && self.nodes[child as usize].used == 0 {
                        self.detach(node, slot)?;
                    }
                }
                break;
            }
            let child = self.nodes[node as usize].slots[idx];
            if !is_table(child) {
                break;
            }
            path[depth] = (node, idx);
            depth += 1;
            node = child;
        }
        for &(parent, slot) in path[..depth].iter().rev() {
            let child = self.nodes[parent as usize].slots[slot];
            if self.nodes[child as usize].used != 0 {
                break;
            }
            self.detach(parent, slot)?;
        }
        Ok(())
    }

    fn detach(&mut self, parent: u32, slot: usize) -> Result<(), MmuError> {
        let p = &mut self.nodes[parent as usize];
        let child = p.slots[slot];
        p.slots[slot] = NONE;
        p.used -= 1;
        let entries = p.level.entries() as usize;
        self.write_directory_entry(parent, slot % entries)?;
        self.release_table(child)
    }

    /// Page size for the next page: the largest enabled size that `va` and `pa` are aligned to
    /// and that `remaining` bytes fill.
    pub(crate) fn pick_page_size(&self, va: u64, pa: u64, remaining: u64) -> PageSize {
        PageSize::ALL_DESCENDING
            .into_iter()
            .find(|&s| {
                self.page_sizes.contains(s)
                    && (va | pa) & (s.bytes() - 1) == 0
                    && remaining >= s.bytes()
            })
            .unwrap_or(PageSize::Size4K)
    }
}
