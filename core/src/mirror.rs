//! A CPU-side copy of what was last written to GPU memory the GPU only reads,
//! so a write can skip the 64-byte lines that would not change.
//!
//! Every store to a BAR1 write-combined window is an uncached CPU store that
//! ends up as PCIe traffic, and on the launch path they are most of the CPU's
//! time: a Hopper QMD (384 bytes) and constant bank 0 (about 1 KiB) per launch.
//! Launches of one kernel with one shape differ in a line or two (the release
//! value, the parameters), and in a launch-and-wait loop they land in the same
//! slot every time, so comparing against the shadow first turns ~350 stores into
//! a handful. The shadow is only right while the CPU is the memory's sole
//! writer; a line the shadow has never seen is always written.

use alloc::vec;
use alloc::vec::Vec;

use crate::shared::{SharedMem, SharedMemError};

/// Bytes per compared and written unit (one write-combining buffer on x86).
pub const LINE: usize = 64;

/// `mem` plus the bytes last written to each of its lines.
#[derive(Debug)]
pub struct MirroredMem {
    mem: SharedMem,
    shadow: Vec<u8>,
    /// One bit per line: the shadow holds what the memory holds.
    known: Vec<u64>,
}

impl MirroredMem {
    /// Mirrors `mem`, whose contents are not known yet. `mem` must start on a
    /// line boundary.
    pub fn new(mem: SharedMem) -> Result<Self, SharedMemError> {
        if mem
            .as_ptr()
            .is_some_and(|p| !(p as usize).is_multiple_of(LINE))
        {
            return Err(SharedMemError::Misaligned {
                offset: 0,
                align: LINE as u64,
            });
        }
        let lines = mem.len().div_ceil(LINE);
        Ok(Self {
            shadow: vec![0; lines * LINE],
            known: vec![0; lines.div_ceil(64)],
            mem,
        })
    }

    /// The memory itself.
    pub fn mem(&self) -> &SharedMem {
        &self.mem
    }

    /// Writes `data` at `offset` (both whole lines: `offset` and `data.len()`
    /// multiples of [`LINE`]), storing only the lines that differ from what was
    /// last written there. Returns how many lines were stored.
    pub fn write(&mut self, offset: usize, data: &[u8]) -> Result<usize, SharedMemError> {
        if !offset.is_multiple_of(LINE) || !data.len().is_multiple_of(LINE) {
            return Err(SharedMemError::Misaligned {
                offset: offset as u64,
                align: LINE as u64,
            });
        }
        // Bounds: the whole range, once.
        self.mem.slice(offset, data.len())?;
        let mut stored = 0;
        for (i, new) in data.chunks_exact(LINE).enumerate() {
            let at = offset + i * LINE;
            let line = at / LINE;
            let bit = 1u64 << (line % 64);
            let old = &mut self.shadow[at..at + LINE];
            if self.known[line / 64] & bit != 0 && old == new {
                continue;
            }
            self.mem.write_bytes_u64(at, new)?;
            old.copy_from_slice(new);
            self.known[line / 64] |= bit;
            stored += 1;
        }
        Ok(stored)
    }

    /// Forgets the shadow of `[offset, offset + len)` (someone else wrote it).
    pub fn forget(&mut self, offset: usize, len: usize) {
        let end = (offset + len).div_ceil(LINE).min(self.known.len() * 64);
        for line in offset / LINE..end {
            self.known[line / 64] &= !(1u64 << (line % 64));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[repr(C, align(64))]
    struct Backing([u8; 512]);

    fn mirrored(b: &mut Backing) -> MirroredMem {
        // SAFETY: `b` outlives the mirror in each test and is touched only through it.
        let mem = unsafe { SharedMem::from_raw(b.0.as_mut_ptr(), 512, 0x1000) };
        MirroredMem::new(mem).unwrap()
    }

    fn read(m: &MirroredMem) -> Vec<u8> {
        let mut out = vec![0; m.mem().len()];
        m.mem().read_bytes(0, &mut out).unwrap();
        out
    }

    #[test]
    fn first_write_stores_every_line_even_if_memory_already_matches() {
        let mut b = Backing([0; 512]);
        let mut m = mirrored(&mut b);
        // Memory is zero and so is the shadow, but the shadow is not yet known.
        assert_eq!(m.write(0, &[0; 128]).unwrap(), 2);
        assert_eq!(m.write(0, &[0; 128]).unwrap(), 0);
    }

    #[test]
    fn only_changed_lines_are_stored_and_memory_matches_the_data() {
        let mut b = Backing([0xee; 512]);
        let mut m = mirrored(&mut b);
        let mut data: Vec<u8> = (0..256).map(|i| i as u8).collect();
        assert_eq!(m.write(128, &data).unwrap(), 4);
        data[70] ^= 0xff;
        data[255] ^= 0x01;
        assert_eq!(m.write(128, &data).unwrap(), 2);
        let mem = read(&m);
        assert_eq!(&mem[128..384], &data[..]);
        assert!(mem[..128].iter().all(|&x| x == 0xee));
        assert!(mem[384..].iter().all(|&x| x == 0xee));
    }

    #[test]
    fn forget_makes_the_next_write_store_again() {
        let mut b = Backing([0; 512]);
        let mut m = mirrored(&mut b);
        m.write(0, &[7; 192]).unwrap();
        m.forget(64, 1);
        assert_eq!(m.write(0, &[7; 192]).unwrap(), 1);
    }

    #[test]
    fn partial_lines_and_out_of_range_writes_are_refused_untouched() {
        let mut b = Backing([0; 512]);
        let mut m = mirrored(&mut b);
        assert!(matches!(
            m.write(32, &[1; 64]),
            Err(SharedMemError::Misaligned { .. })
        ));
        assert!(matches!(
            m.write(0, &[1; 100]),
            Err(SharedMemError::Misaligned { .. })
        ));
        assert!(matches!(
            m.write(448, &[1; 128]),
            Err(SharedMemError::OutOfBounds { .. })
        ));
        assert!(read(&m).iter().all(|&x| x == 0));
    }

    #[test]
    fn random_writes_always_leave_memory_equal_to_the_last_data() {
        let mut b = Backing([0x55; 512]);
        let mut m = mirrored(&mut b);
        let mut model = [0x55u8; 512];
        let mut x = 0x9e37_79b9_u32;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        for _ in 0..2000 {
            let line = (next() % 8) as usize;
            let n = 1 + (next() % (8 - line as u32)) as usize;
            let mut data = model[line * LINE..(line + n) * LINE].to_vec();
            // Change a few bytes, or none.
            for _ in 0..next() % 3 {
                let i = (next() as usize) % data.len();
                data[i] = next() as u8;
            }
            if next() % 10 == 0 {
                m.forget(0, 512);
            }
            m.write(line * LINE, &data).unwrap();
            model[line * LINE..(line + n) * LINE].copy_from_slice(&data);
            assert_eq!(read(&m), model);
        }
    }
}
