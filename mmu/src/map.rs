//! `map` and `unmap` on an [`AddressSpace`].
//!
//! `map` walks the physical ranges, picks the largest page size that alignment and length
//! allow at each step, and writes runs of consecutive PTEs in one table with one memory call
//! per 128 words. It never overwrites a mapping: an occupied slot aborts the call, and
//! everything the call wrote is taken back, so a failed map leaves the tables as they were.

use crate::address_space::{AddressSpace, LEAF, NONE, ROOT, is_table};
use crate::entry::{Pte, PteAttributes};
use crate::error::{MmuError, check_aligned};
use crate::format::{LevelKind, PT_4K, PT_64K, PageSize};
use crate::hooks::{TableAllocator, TlbInvalidate};
use crate::memory::TableMemory;

const PAGE: u64 = 1 << 12;

/// A run of physical memory: `size` bytes at `addr`, both 4 KiB aligned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PhysRange {
    /// Start address.
    pub addr: u64,
    /// Length in bytes.
    pub size: u64,
}

impl PhysRange {
    /// `size` bytes at `addr`.
    pub const fn new(addr: u64, size: u64) -> Self {
        PhysRange { addr, size }
    }
}

/// What a `map` call did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MapStats {
    /// PTEs written.
    pub ptes_written: u64,
    /// Pages mapped with each size: 4 KiB, 64 KiB, 2 MiB, 512 MiB.
    pub pages_by_size: [u64; 4],
}

/// Where the PTE for one virtual address goes.
struct Target {
    node: u32,
    index: usize,
    /// PD0 node and entry above a last-level page table.
    pd0: Option<(u32, usize)>,
}

impl<M: TableMemory, A: TableAllocator, T: TlbInvalidate> AddressSpace<M, A, T> {
    fn check_va_range(&self, va: u64, size: u64) -> Result<(), MmuError> {
        check_aligned("virtual address", va, PAGE)?;
        check_aligned("size", size, PAGE)?;
        if size == 0 {
            return Err(MmuError::ZeroSize { what: "size" });
        }
        let limit = self.format.va_limit();
        if va.checked_add(size).is_none_or(|end| end > limit) {
            return Err(MmuError::VaOutOfRange { va, size, limit });
        }
        Ok(())
    }

    /// Maps the physical `ranges`, back to back, at virtual address `va` with `attrs`.
    ///
    /// Each page gets the largest enabled page size its virtual and physical alignment and the
    /// remaining length allow, so one call mixes sizes. The TLB hook runs once. On error
    /// (overlap, table allocation failure, a table outside the memory window) the tables, the
    /// table allocator and the shadow are as they were before the call; only if table memory
    /// stops accepting writes part-way is the rollback best effort.
    pub fn map(
        &mut self,
        va: u64,
        ranges: &[PhysRange],
        attrs: PteAttributes,
    ) -> Result<MapStats, MmuError> {
        let mut total = 0u64;
        for r in ranges {
            check_aligned("physical address", r.addr, PAGE)?;
            check_aligned("physical range size", r.size, PAGE)?;
            if r.size == 0 {
                return Err(MmuError::ZeroSize {
                    what: "physical range size",
                });
            }
            let last = r
                .addr
                .checked_add(r.size - PAGE)
                .ok_or(MmuError::AddressTooLarge {
                    addr: r.addr,
                    limit: u64::MAX,
                })?;
            // Encoding the first and last page checks kind, peer id and address width up front.
            Pte {
                addr: r.addr,
                attrs,
            }
            .encode(self.format)?;
            Pte { addr: last, attrs }.encode(self.format)?;
            total = total.checked_add(r.size).ok_or(MmuError::VaOutOfRange {
                va,
                size: u64::MAX,
                limit: self.format.va_limit(),
            })?;
        }
        if ranges.is_empty() {
            return Err(MmuError::ZeroSize {
                what: "physical ranges",
            });
        }
        self.check_va_range(va, total)?;

        let mut cursor = va;
        let mut stats = MapStats::default();
        let result = self.map_ranges(&mut cursor, ranges, attrs, &mut stats);
        if let Err(e) = result {
            // Take back what this call mapped, then any tables it left empty.
            if cursor > va {
                let _ = self.clear_range(va, cursor - va);
            }
            let _ = self.prune_empty(cursor);
            self.tlb.invalidate(self.root(), va, total);
            return Err(e);
        }
        self.tlb.invalidate(self.root(), va, total);
        Ok(stats)
    }

    fn map_ranges(
        &mut self,
        cursor: &mut u64,
        ranges: &[PhysRange],
        attrs: PteAttributes,
        stats: &mut MapStats,
    ) -> Result<(), MmuError> {
        let mut buf = [0u64; 128];
        for r in ranges {
            let mut pa = r.addr;
            let end = r.addr + r.size;
            while pa < end {
                let size = self.pick_page_size(*cursor, pa, end - pa);
                let target = self.descend_create(*cursor, size)?;
                let level = self.nodes[target.node as usize].level;
                let table_at = self.nodes[target.node as usize].at;
                let room = level.entries() as usize - target.index;
                let n = room
                    .min(((end - pa) / size.bytes()) as usize)
                    .min(self.pages_before_larger_fits(*cursor, pa, size));
                self.check_run_free(&target, n, size, *cursor)?;

                let first = Pte { addr: pa, attrs }.encode(self.format)?;
                let step = if n > 1 {
                    Pte {
                        addr: pa + size.bytes(),
                        attrs,
                    }
                    .encode(self.format)?
                        - first
                } else {
                    0
                };
                let words_per_entry = (level.entry_bytes / 8) as usize;
                let per_chunk = buf.len() / words_per_entry;
                let mut done = 0usize;
                while done < n {
                    let k = per_chunk.min(n - done);
                    let mut raw = first + done as u64 * step;
                    for e in 0..k {
                        buf[e * words_per_entry] = raw;
                        if words_per_entry == 2 {
                            buf[e * 2 + 1] = 0;
                        }
                        raw += step;
                    }
                    let at = table_at.offset((target.index + done) as u64 * level.entry_bytes);
                    self.memory.write_u64s(at, &buf[..k * words_per_entry])?;
                    let slots = &mut self.nodes[target.node as usize].slots;
                    slots[target.index + done..target.index + done + k].fill(LEAF);
                    self.nodes[target.node as usize].used += k as u32;
                    done += k;
                    *cursor += k as u64 * size.bytes();
                }
                pa += n as u64 * size.bytes();
                stats.ptes_written += n as u64;
                stats.pages_by_size[size as usize] += n as u64;
            }
        }
        Ok(())
    }

    /// How many `size` pages from `va`/`pa` come before a larger enabled page size could
    /// start (a boundary both addresses reach together); `usize::MAX` if none can.
    fn pages_before_larger_fits(&self, va: u64, pa: u64, size: PageSize) -> usize {
        PageSize::ALL_DESCENDING
            .into_iter()
            .filter(|&s| {
                s > size && self.page_sizes.contains(s) && (va ^ pa) & (s.bytes() - 1) == 0
            })
            .map(|s| ((s.bytes() - (va & (s.bytes() - 1))) / size.bytes()) as usize)
            .min()
            .unwrap_or(usize::MAX)
    }

    /// Finds (creating tables as needed) the table and index for a `size` PTE at `va`.
    fn descend_create(&mut self, va: u64, size: PageSize) -> Result<Target, MmuError> {
        let dirs = self.format.directories;
        let target_depth = match size {
            PageSize::Size512M => self.format.pd1_index(),
            _ => self.format.pd0_index(),
        };
        let mut node = ROOT;
        for (depth, level) in dirs.iter().enumerate() {
            let idx = level.index_of(va) as usize;
            if depth == target_depth {
                if level.kind != LevelKind::DualDirectory || size == PageSize::Size2M {
                    return Ok(Target {
                        node,
                        index: idx,
                        pd0: None,
                    });
                }
                if self.nodes[node as usize].slots[idx] == LEAF {
                    // A 2 MiB page covers this PD0 entry.
                    return Err(MmuError::AlreadyMapped { va });
                }
                let (slot, pt_level) = match size {
                    PageSize::Size64K => (idx, PT_64K),
                    _ => (level.entries() as usize + idx, PT_4K),
                };
                let child = match self.nodes[node as usize].slots[slot] {
                    LEAF => return Err(MmuError::AlreadyMapped { va }),
                    NONE => self.attach_or_prune(node, slot, pt_level, va)?,
                    child => child,
                };
                return Ok(Target {
                    node: child,
                    index: pt_level.index_of(va) as usize,
                    pd0: Some((node, idx)),
                });
            }
            let next = dirs[depth + 1];
            node = match self.nodes[node as usize].slots[idx] {
                LEAF => return Err(MmuError::AlreadyMapped { va }),
                NONE => self.attach_or_prune(node, idx, next, va)?,
                child => child,
            };
        }
        // Every size resolves at PD1 or PD0 above.
        Err(MmuError::PageSizeNotEnabled {
            page_size: size.bytes(),
        })
    }

    fn attach_or_prune(
        &mut self,
        parent: u32,
        slot: usize,
        level: crate::format::Level,
        va: u64,
    ) -> Result<u32, MmuError> {
        self.attach(parent, slot, level).inspect_err(|_| {
            let _ = self.prune_empty(va);
        })
    }

    /// Checks that `n` PTEs of `size` from `target` are free, and that the other page table
    /// under the same dual PDE maps nothing in their range.
    fn check_run_free(
        &mut self,
        target: &Target,
        n: usize,
        size: PageSize,
        va: u64,
    ) -> Result<(), MmuError> {
        let nodes = &self.nodes;
        let node = &nodes[target.node as usize];
        let own = (0..n).find(|&k| node.slots[target.index + k] != NONE);
        let other = |pd0: u32, slot: usize| {
            let s = nodes[pd0 as usize].slots[slot];
            is_table(s).then(|| &nodes[s as usize].slots)
        };
        let clash = own.or_else(|| match (size, target.pd0) {
            (PageSize::Size2M, _) => {
                let entries = node.level.entries() as usize;
                (0..n).find(|&k| node.slots[entries + target.index + k] != NONE)
            }
            (PageSize::Size64K, Some((pd0, idx))) => {
                let entries = nodes[pd0 as usize].level.entries() as usize;
                other(pd0, entries + idx).and_then(|small| {
                    (0..n).find(|&k| {
                        let first = (target.index + k) * 16;
                        small[first..first + 16].iter().any(|&s| s != NONE)
                    })
                })
            }
            (PageSize::Size4K, Some((pd0, idx))) => other(pd0, idx)
                .and_then(|big| (0..n).find(|&k| big[(target.index + k) / 16] != NONE)),
            _ => None,
        });
        match clash {
            Some(k) => self.fail_occupied(va + k as u64 * size.bytes()),
            None => Ok(()),
        }
    }

    fn fail_occupied(&mut self, va: u64) -> Result<(), MmuError> {
        let _ = self.prune_empty(va);
        Err(MmuError::AlreadyMapped { va })
    }

    /// Unmaps `[va, va + size)`. Every page in it must be mapped and lie wholly inside it. The
    /// TLB hook runs once; tables left empty are freed.
    pub fn unmap(&mut self, va: u64, size: u64) -> Result<(), MmuError> {
        self.check_va_range(va, size)?;
        let end = va + size;
        let mut cursor = va;
        while cursor < end {
            let (node, index, page) = self
                .lookup(cursor)
                .ok_or(MmuError::NotMapped { va: cursor })?;
            let run = self.leaf_run(node, index, page, end - cursor);
            if run == 0 || cursor & (page.bytes() - 1) != 0 {
                return Err(MmuError::PartialPage {
                    page_va: cursor & !(page.bytes() - 1),
                    page_size: page.bytes(),
                });
            }
            cursor += run as u64 * page.bytes();
        }
        let result = self.clear_range(va, size);
        self.tlb.invalidate(self.root(), va, size);
        result
    }

    /// Number of consecutive PTEs from `index` in `node`, each a whole page inside the next
    /// `remaining` bytes. Zero when the first page starts before the cursor or ends past it.
    fn leaf_run(&self, node: u32, index: usize, page: PageSize, remaining: u64) -> usize {
        let n = &self.nodes[node as usize];
        let max = (remaining / page.bytes()) as usize;
        let entries = n.level.entries() as usize;
        (index..entries.min(index + max))
            .take_while(|&i| n.slots[i] == LEAF)
            .count()
    }

    /// Clears every PTE in `[va, va + size)`, which must be whole mapped pages, and frees
    /// tables that become empty.
    fn clear_range(&mut self, va: u64, size: u64) -> Result<(), MmuError> {
        let end = va + size;
        let mut cursor = va;
        while cursor < end {
            let Some((node, index, page)) = self.lookup(cursor) else {
                return Err(MmuError::NotMapped { va: cursor });
            };
            if cursor & (page.bytes() - 1) != 0 {
                return Err(MmuError::PartialPage {
                    page_va: cursor & !(page.bytes() - 1),
                    page_size: page.bytes(),
                });
            }
            let run = self.leaf_run(node, index, page, end - cursor).max(1);
            let n = &mut self.nodes[node as usize];
            let bytes = run as u64 * n.level.entry_bytes;
            let at = n.at.offset(index as u64 * n.level.entry_bytes);
            n.slots[index..index + run].fill(NONE);
            n.used -= run as u32;
            let now_empty = n.used == 0;
            self.memory.zero(at, bytes)?;
            if now_empty {
                self.prune_empty(cursor)?;
            }
            cursor += run as u64 * page.bytes();
        }
        Ok(())
    }
}
