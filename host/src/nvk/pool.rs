//! A sub-allocator for small and medium video-memory allocations: chunks of
//! video memory mapped once (RM + UVM), carved up by the buddy allocator of
//! `nvbare-mmu`, so an allocation of up to [`MAX_POOLED`] costs no RM round trip.

use nvbare_mmu::PhysAllocator;

use super::NvkError;
use super::device::Device;
use super::mem::{Buffer, Placement};

/// Size of one pool chunk.
pub const CHUNK: u64 = 256 << 20;
/// Largest request served from the pool; larger ones go to RM directly.
pub const MAX_POOLED: u64 = 32 << 20;
/// Smallest granule handed out.
pub const GRANULE: u64 = 4 << 10;

/// A piece of a pool chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolBuffer {
    /// GPU virtual address.
    pub gpu_va: u64,
    /// Bytes reserved (the request rounded up to the granule).
    pub size: u64,
    chunk: usize,
}

struct Chunk {
    buf: Buffer,
    alloc: PhysAllocator,
}

/// Video-memory chunks and their buddy allocators.
#[derive(Default)]
pub struct Pool {
    chunks: Vec<Chunk>,
}

impl Pool {
    /// Takes `size` bytes (≤ [`MAX_POOLED`]), adding a chunk from `dev` when all are full.
    pub fn alloc(&mut self, dev: &mut Device, size: u64) -> Result<PoolBuffer, NvkError> {
        if size == 0 || size > MAX_POOLED {
            return Err(NvkError::Va(format!(
                "pool requests must be 1..={MAX_POOLED:#x} bytes, got {size:#x}; use Device::alloc"
            )));
        }
        let size = size.next_multiple_of(GRANULE);
        let align = size.next_power_of_two().min(2 << 20);
        for (i, c) in self.chunks.iter_mut().enumerate() {
            if let Ok(off) = c.alloc.alloc(size, align) {
                return Ok(PoolBuffer {
                    gpu_va: c.buf.gpu_va + off,
                    size,
                    chunk: i,
                });
            }
        }
        let buf = dev.alloc(CHUNK, Placement::Vram, false)?;
        let mut alloc = PhysAllocator::new(0, CHUNK).map_err(|e| NvkError::Va(e.to_string()))?;
        let off = alloc
            .alloc(size, align)
            .map_err(|e| NvkError::Va(e.to_string()))?;
        self.chunks.push(Chunk { buf, alloc });
        Ok(PoolBuffer {
            gpu_va: self.chunks.last().map_or(0, |c| c.buf.gpu_va) + off,
            size,
            chunk: self.chunks.len() - 1,
        })
    }

    /// Returns a piece (the caller guarantees the GPU no longer uses it).
    pub fn free(&mut self, b: PoolBuffer) {
        if let Some(c) = self.chunks.get_mut(b.chunk) {
            let _ = c.alloc.free(b.gpu_va - c.buf.gpu_va, b.size);
        }
    }
}
