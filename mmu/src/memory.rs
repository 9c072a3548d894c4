//! Where page tables live and how they are read and written.
//!
//! The same mapping code writes real tables (through a CPU-visible VRAM window: BAR1 or
//! PRAMIN, or through system memory) and simulated ones ([`VecMemory`]).

use alloc::vec;
use alloc::vec::Vec;

use crate::error::AccessError;

/// Memory a page table (or the page directory base) can sit in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TableAperture {
    /// GPU video memory (VRAM).
    Video,
    /// System memory, snooped by the CPU caches.
    SystemCoherent,
    /// System memory, not snooped.
    SystemNonCoherent,
}

impl TableAperture {
    /// The value PDE aperture fields use (0 means "no table").
    pub const fn pde_value(self) -> u128 {
        match self {
            TableAperture::Video => 1,
            TableAperture::SystemCoherent => 2,
            TableAperture::SystemNonCoherent => 3,
        }
    }
}

/// The location of page-table memory: an aperture and a byte address in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TableAddr {
    /// Which memory.
    pub aperture: TableAperture,
    /// Byte address (VRAM offset, or bus address for system memory).
    pub addr: u64,
}

impl TableAddr {
    /// A location in video memory.
    pub const fn video(addr: u64) -> Self {
        TableAddr {
            aperture: TableAperture::Video,
            addr,
        }
    }
    /// The location `bytes` further on.
    pub const fn offset(self, bytes: u64) -> Self {
        TableAddr {
            aperture: self.aperture,
            addr: self.addr.wrapping_add(bytes),
        }
    }
}

/// Page-table memory as the mapping code and the walker see it: 64-bit little-endian words.
///
/// Reads take `&self` so a walker can run over shared memory; an implementation that must move
/// a window to read (PRAMIN) keeps that state in a `Cell`.
pub trait TableMemory {
    /// Reads the 8-byte word at `at` (8-byte aligned).
    fn read_u64(&self, at: TableAddr) -> Result<u64, AccessError>;

    /// Writes `values` to consecutive words starting at `at` (8-byte aligned).
    fn write_u64s(&mut self, at: TableAddr, values: &[u64]) -> Result<(), AccessError>;

    /// Writes zeros to `bytes` bytes (a multiple of 8) starting at `at`.
    fn zero(&mut self, at: TableAddr, bytes: u64) -> Result<(), AccessError> {
        const ZEROS: [u64; 64] = [0; 64];
        let mut done = 0;
        while done < bytes {
            let words = ((bytes - done) / 8).min(64) as usize;
            if words == 0 {
                return Err(AccessError { at, len: bytes });
            }
            self.write_u64s(at.offset(done), &ZEROS[..words])?;
            done += words as u64 * 8;
        }
        Ok(())
    }
}

impl<T: TableMemory + ?Sized> TableMemory for &mut T {
    fn read_u64(&self, at: TableAddr) -> Result<u64, AccessError> {
        (**self).read_u64(at)
    }
    fn write_u64s(&mut self, at: TableAddr, values: &[u64]) -> Result<(), AccessError> {
        (**self).write_u64s(at, values)
    }
    fn zero(&mut self, at: TableAddr, bytes: u64) -> Result<(), AccessError> {
        (**self).zero(at, bytes)
    }
}

/// Page-table memory backed by a `Vec`: one contiguous range of one aperture. For tests and
/// benchmarks (and, once it models an MMU, the simulator).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VecMemory {
    aperture: TableAperture,
    base: u64,
    words: Vec<u64>,
}

impl VecMemory {
    /// `bytes` bytes of zeroed memory at `base` in `aperture` (`bytes` rounded down to 8).
    pub fn new(aperture: TableAperture, base: u64, bytes: u64) -> Self {
        VecMemory {
            aperture,
            base,
            words: vec![0; (bytes / 8) as usize],
        }
    }

    /// Memory whose words are `words`, at `base` in `aperture`.
    pub fn from_words(aperture: TableAperture, base: u64, words: Vec<u64>) -> Self {
        VecMemory {
            aperture,
            base,
            words,
        }
    }

    /// The words, from `base` up.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Index of the word at `at` if `len` bytes from there are inside this memory.
    fn index(&self, at: TableAddr, len: u64) -> Result<usize, AccessError> {
        let err = AccessError { at, len };
        if at.aperture != self.aperture || !at.addr.is_multiple_of(8) || at.addr < self.base {
            return Err(err);
        }
        let first = (at.addr - self.base) / 8;
        let end = first.checked_add(len.div_ceil(8)).ok_or(err)?;
        if end > self.words.len() as u64 {
            return Err(err);
        }
        Ok(first as usize)
    }
}

impl TableMemory for VecMemory {
    fn read_u64(&self, at: TableAddr) -> Result<u64, AccessError> {
        let i = self.index(at, 8)?;
        Ok(self.words[i])
    }

    fn write_u64s(&mut self, at: TableAddr, values: &[u64]) -> Result<(), AccessError> {
        let i = self.index(at, values.len() as u64 * 8)?;
        self.words[i..i + values.len()].copy_from_slice(values);
        Ok(())
    }

    fn zero(&mut self, at: TableAddr, bytes: u64) -> Result<(), AccessError> {
        if !bytes.is_multiple_of(8) {
            return Err(AccessError { at, len: bytes });
        }
        let i = self.index(at, bytes)?;
        self.words[i..i + (bytes / 8) as usize].fill(0);
        Ok(())
    }
}
