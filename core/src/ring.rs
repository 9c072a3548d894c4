//! Placement in a ring of GPU-visible memory whose pieces are freed in order,
//! each when a timeline value passes: pushbuffer segments (freed as the front end
//! consumes them) and per-launch QMD/constant-bank slots (freed as grids finish).

use alloc::collections::VecDeque;

#[derive(Clone, Copy, Debug)]
struct Piece {
    start: usize,
    end: usize,
    /// The timeline value after which the piece is free.
    value: u64,
}

/// Offsets into a ring of `capacity` bytes; the memory itself is the caller's.
#[derive(Clone, Debug)]
pub struct Ring {
    capacity: usize,
    /// Live pieces, oldest first; the newest one's end is where the next goes.
    live: VecDeque<Piece>,
}

impl Ring {
    /// An empty ring over `capacity` bytes.
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            live: VecDeque::new(),
        }
    }

    /// Where the next piece would start: after the newest live piece, or at 0.
    fn head(&self) -> usize {
        self.live.back().map_or(0, |p| p.end)
    }

    /// Frees every piece whose value is `<= done`; an empty ring starts again at 0.
    pub fn reclaim(&mut self, done: u64) {
        while self.live.front().is_some_and(|p| p.value <= done) {
            self.live.pop_front();
        }
    }

    /// Where `bytes` fit now, if anywhere. Pieces never wrap: a piece that does not
    /// fit before the end starts again at 0, and `head == tail` always means empty.
    pub fn place(&self, bytes: usize) -> Option<usize> {
        let Some(oldest) = self.live.front() else {
            return (bytes <= self.capacity).then_some(0);
        };
        let (head, tail) = (self.head(), oldest.start);
        if head >= tail {
            // Free: [head, capacity) and [0, tail).
            if head + bytes <= self.capacity {
                Some(head)
            } else if bytes < tail {
                Some(0)
            } else {
                None
            }
        } else if head + bytes < tail {
            Some(head)
        } else {
            None
        }
    }

    /// Records `bytes` at `at` (from [`Self::place`]) as live until `value` passes.
    pub fn commit(&mut self, at: usize, bytes: usize, value: u64) {
        self.live.push_back(Piece {
            start: at,
            end: at + bytes,
            value,
        });
    }

    /// Forgets the newest pieces committed for `value` or later: a submission that failed
    /// (nothing will ever pass that value for them, so they must not wait for it).
    pub fn unwind(&mut self, value: u64) {
        while self.live.back().is_some_and(|p| p.value >= value) {
            self.live.pop_back();
        }
    }

    /// The value the oldest live piece waits for.
    pub fn oldest_value(&self) -> Option<u64> {
        self.live.front().map(|p| p.value)
    }

    /// Bytes held by live pieces.
    pub fn bytes_live(&self) -> usize {
        self.live.iter().map(|p| p.end - p.start).sum()
    }

    /// Ring size in bytes.
    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

#[cfg(test)]
mod tests {
    use super::Ring;
    use alloc::vec::Vec;

    #[test]
    fn places_in_order_wraps_and_waits_for_the_oldest() {
        let mut r = Ring::new(100);
        assert_eq!(r.place(101), None, "larger than the ring");
        let a = r.place(40).unwrap();
        r.commit(a, 40, 1);
        let b = r.place(40).unwrap();
        r.commit(b, 40, 2);
        assert_eq!((a, b), (0, 40));
        assert_eq!(
            r.place(30),
            None,
            "20 bytes left at the end, nothing before the oldest"
        );
        r.reclaim(1);
        assert_eq!(
            r.place(30),
            Some(0),
            "wraps to the front once the oldest is free"
        );
        r.commit(0, 30, 3);
        assert_eq!(
            r.place(10),
            None,
            "head 30 + 10 would touch the oldest at 40"
        );
        assert_eq!(r.oldest_value(), Some(2));
        assert_eq!(r.bytes_live(), 70);
        r.reclaim(3);
        assert_eq!((r.bytes_live(), r.place(100)), (0, Some(0)));
    }

    #[test]
    fn an_unwound_submission_gives_its_pieces_back() {
        let mut r = Ring::new(100);
        r.commit(r.place(40).unwrap(), 40, 1);
        r.commit(r.place(20).unwrap(), 20, 2);
        r.commit(r.place(20).unwrap(), 20, 2);
        r.unwind(2);
        assert_eq!((r.bytes_live(), r.oldest_value()), (40, Some(1)));
        assert_eq!(r.place(60), Some(40), "the space after the last kept piece");
        r.unwind(2);
        assert_eq!(r.bytes_live(), 40, "older pieces stay");
    }

    #[test]
    fn live_pieces_never_overlap() {
        // A deterministic random walk of places and reclaims.
        let mut r = Ring::new(1000);
        let mut live: Vec<(usize, usize, u64)> = Vec::new();
        let (mut x, mut value, mut done) = (12345u64, 0u64, 0u64);
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let bytes = (x % 300 + 1) as usize;
            if x % 3 == 0 && done < value {
                done += 1;
                r.reclaim(done);
                live.retain(|&(_, _, v)| v > done);
            } else if let Some(at) = r.place(bytes) {
                assert!(at + bytes <= 1000);
                for &(s, e, _) in &live {
                    assert!(
                        at + bytes <= s || at >= e,
                        "[{at}, {}) overlaps [{s}, {e})",
                        at + bytes
                    );
                }
                value += 1;
                r.commit(at, bytes, value);
                live.push((at, at + bytes, value));
            }
        }
    }
}
