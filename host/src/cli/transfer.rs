//! A buffer's contents on their way in and out: [`Init`] makes a buffer's initial bytes a
//! chunk at a time, `upload` and `download` move them 16 MiB at a time, directly through
//! the CPU view of host memory or through one host staging buffer and the copy engine for
//! video memory (which has no CPU view here), with Ctrl-C checked between chunks.

use nvbare_core::gpu::{Backend, Buffer, Gpu, Placement};

use super::args::{self, Contents};
use super::error::{BackendError, CliError, GpuResultExt};
use super::run::{check_interrupt, wait};
use super::values::ElemType;

/// What a buffer holds before the launch, produced a chunk at a time (a filled buffer of
/// gigabytes is never built in memory whole).
#[derive(Clone, Debug, PartialEq)]
pub enum Init {
    /// Zeros.
    Zeros,
    /// A file's bytes (read when the run is planned).
    Bytes(Vec<u8>),
    /// Element `i` is `i`.
    Iota(ElemType),
    /// One element, repeated.
    Repeat(Vec<u8>),
}

impl Init {
    pub(super) fn of(a: &args::BufferArg) -> Init {
        match &a.contents {
            Contents::Zeroed | Contents::File(_) => Init::Zeros,
            Contents::Iota => Init::Iota(a.elem.unwrap_or(ElemType::U32)),
            Contents::Value(v) => Init::Repeat(v.clone()),
        }
    }

    /// Bytes `offset..offset + out.len()` of the buffer (`offset` a multiple of 8, so of
    /// every element size).
    pub fn fill(&self, offset: u64, out: &mut [u8]) {
        match self {
            Init::Zeros => out.fill(0),
            Init::Bytes(data) => {
                // CAST: offsets inside a file this process read fit usize.
                let at = (offset as usize).min(data.len());
                let n = out.len().min(data.len() - at);
                out[..n].copy_from_slice(&data[at..at + n]);
                out[n..].fill(0);
            }
            Init::Iota(t) => {
                let size = t.size();
                for (j, chunk) in out.chunks_mut(size).enumerate() {
                    let index = offset / size as u64 + j as u64;
                    let bytes = t.iota(index);
                    chunk.copy_from_slice(&bytes[..chunk.len()]);
                }
            }
            Init::Repeat(v) => {
                for (j, b) in out.iter_mut().enumerate() {
                    // CAST: the position within one element.
                    *b = v[((offset + j as u64) % v.len() as u64) as usize];
                }
            }
        }
    }

    /// The first `len` bytes (for tests and small buffers).
    pub fn bytes(&self, len: u64) -> Vec<u8> {
        // CAST: a length this process holds in memory.
        let mut out = vec![0; len as usize];
        self.fill(0, &mut out);
        out
    }
}

// TIMEOUT: 60 s for a staging copy: the copy engine moves a GiB over PCIe in about 20 ms, so
// a copy that takes a minute is a stalled engine, not a large buffer.
const COPY_TIMEOUT_NS: u64 = 60_000_000_000;

/// Bytes moved per step between the CPU and a buffer (and per staging copy).
const CHUNK: u64 = 16 << 20;

/// A CPU access to a buffer that fell outside it, as the command's error.
pub(super) fn memory_error(e: nvbare_core::shared::SharedMemError) -> CliError {
    CliError::Gpu(e.into())
}

/// A host staging buffer for a transfer of `len` bytes to or from video memory, and its view.
fn staging<B: Backend>(gpu: &mut Gpu<B>, len: u64) -> Result<Buffer<B::Memory>, CliError>
where
    BackendError: From<B::Error>,
{
    gpu.alloc(len.min(CHUNK), Placement::Host, true).cli()
}

/// `buf`'s CPU view, or the error naming the buffer when it has none.
pub(super) fn view_of<M>(buf: &Buffer<M>) -> Result<nvbare_core::gpu::BufferView<'_>, CliError> {
    buf.view()
        .ok_or(CliError::Gpu(nvbare_core::gpu::GpuError::NoCpuView(
            buf.gpu_va(),
        )))
}

/// Fills `buf`'s first `len` bytes from `init`, a chunk at a time: directly through its CPU
/// view (host memory), or through a host staging buffer and the copy engine (video memory).
pub(super) fn upload<B: Backend>(
    gpu: &mut Gpu<B>,
    buf: &Buffer<B::Memory>,
    init: &Init,
    len: u64,
) -> Result<(), CliError>
where
    BackendError: From<B::Error>,
{
    let mut chunk = vec![0u8; len.min(CHUNK) as usize];
    if let Some(v) = buf.view() {
        for at in (0..len).step_by(CHUNK as usize) {
            check_interrupt("while filling the buffers")?;
            // CAST: at most CHUNK.
            let n = (len - at).min(CHUNK) as usize;
            init.fill(at, &mut chunk[..n]);
            // CAST: offsets inside a mapped buffer fit usize.
            v.write(at as usize, &chunk[..n]).map_err(memory_error)?;
        }
        return Ok(());
    }
    let stage = staging(gpu, len)?;
    for at in (0..len).step_by(CHUNK as usize) {
        // CAST: at most CHUNK.
        let n = (len - at).min(CHUNK) as usize;
        init.fill(at, &mut chunk[..n]);
        view_of(&stage)?
            .write(0, &chunk[..n])
            .map_err(memory_error)?;
        let f = gpu
            .copy(buf.gpu_va() + at, stage.gpu_va(), n as u64)
            .cli()?;
        // After a failure the copy may still run: the staging memory goes with the teardown.
        wait(gpu, f, COPY_TIMEOUT_NS, "copying a buffer to video memory")?;
    }
    gpu.free(stage);
    Ok(())
}

/// Buffer `buf`'s first `len` bytes, a chunk at a time, to `sink` (see [`upload`]).
pub(super) fn download<B: Backend>(
    gpu: &mut Gpu<B>,
    buf: &Buffer<B::Memory>,
    len: u64,
    mut sink: impl FnMut(&[u8]) -> Result<(), CliError>,
) -> Result<(), CliError>
where
    BackendError: From<B::Error>,
{
    let mut chunk = vec![0u8; len.min(CHUNK) as usize];
    if let Some(v) = buf.view() {
        for at in (0..len).step_by(CHUNK as usize) {
            // CAST: at most CHUNK; offsets inside a mapped buffer fit usize.
            let n = (len - at).min(CHUNK) as usize;
            v.read(at as usize, &mut chunk[..n]).map_err(memory_error)?;
            sink(&chunk[..n])?;
        }
        return Ok(());
    }
    let stage = staging(gpu, len)?;
    for at in (0..len).step_by(CHUNK as usize) {
        // CAST: at most CHUNK.
        let n = (len - at).min(CHUNK) as usize;
        let f = gpu
            .copy(stage.gpu_va(), buf.gpu_va() + at, n as u64)
            .cli()?;
        wait(
            gpu,
            f,
            COPY_TIMEOUT_NS,
            "copying a buffer from video memory",
        )?;
        view_of(&stage)?
            .read(0, &mut chunk[..n])
            .map_err(memory_error)?;
        sink(&chunk[..n])?;
    }
    gpu.free(stage);
    Ok(())
}

/// A buffer's first `len` bytes in memory.
pub(super) fn download_head<B: Backend>(
    gpu: &mut Gpu<B>,
    buf: &Buffer<B::Memory>,
    len: u64,
) -> Result<Vec<u8>, CliError>
where
    BackendError: From<B::Error>,
{
    let mut out = Vec::new();
    download(gpu, buf, len, |c| {
        out.extend_from_slice(c);
        Ok(())
    })?;
    Ok(out)
}
