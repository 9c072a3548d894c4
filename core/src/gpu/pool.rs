//! A sub-allocator for small and medium video-memory allocations: chunks of video memory
//! allocated once through the backend, carved up by the buddy allocator of `nvbare-mmu`, so
//! an allocation of up to [`MAX_POOLED`] costs no backend call (no RM round trip on nvk).

use alloc::vec::Vec;

use nvbare_mmu::PhysAllocator;

use super::{Backend, Buffer, GpuError, MemoryRequest, Placement};
use crate::rm::Step;
use crate::rm::tree::at;

/// Size of one pool chunk.
pub const CHUNK: u64 = 256 << 20;
/// Largest request served from the pool; larger ones go to the backend directly.
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

#[derive(Debug)]
struct Chunk<M> {
    buf: Buffer<M>,
    alloc: PhysAllocator,
}

/// Video-memory chunks and their buddy allocators.
#[derive(Debug)]
pub(crate) struct Pool<M> {
    chunks: Vec<Chunk<M>>,
}

impl<M> Default for Pool<M> {
    fn default() -> Self {
        Self { chunks: Vec::new() }
    }
}

impl<M> Pool<M> {
    /// Takes `size` bytes (≤ [`MAX_POOLED`]), adding a chunk from `b` when all are full.
    pub(crate) fn alloc<B: Backend<Memory = M>>(
        &mut self,
        b: &mut B,
        size: u64,
    ) -> Result<PoolBuffer, GpuError<B::Error>> {
        if size == 0 || size > MAX_POOLED {
            return Err(GpuError::PoolRequest {
                size,
                max: MAX_POOLED,
            });
        }
        let size = size.next_multiple_of(GRANULE);
        let align = size.next_power_of_two().min(2 << 20);
        for (i, c) in self.chunks.iter_mut().enumerate() {
            if let Ok(off) = c.alloc.alloc(size, align) {
                return Ok(PoolBuffer {
                    gpu_va: c.buf.gpu_va() + off,
                    size,
                    chunk: i,
                });
            }
        }
        let mut alloc = PhysAllocator::new(0, CHUNK)?;
        let off = alloc.alloc(size, align)?;
        let buf = b
            .alloc_memory(&MemoryRequest::new(CHUNK, Placement::Vram, false))
            .map_err(at(Step::AllocMemory))?;
        let gpu_va = buf.gpu_va() + off;
        self.chunks.push(Chunk { buf, alloc });
        Ok(PoolBuffer {
            gpu_va,
            size,
            chunk: self.chunks.len() - 1,
        })
    }

    /// The chunks' buffers, the pool given up (for closing the GPU).
    pub(crate) fn into_buffers(self) -> impl Iterator<Item = Buffer<M>> {
        self.chunks.into_iter().map(|c| c.buf)
    }

    /// Returns a piece (the caller guarantees the GPU no longer uses it).
    pub(crate) fn free(&mut self, b: PoolBuffer) {
        if let Some(c) = self.chunks.get_mut(b.chunk) {
            let _ = c.alloc.free(b.gpu_va - c.buf.gpu_va(), b.size);
        }
    }
}
