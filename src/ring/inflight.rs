//! Records in flight as the ring's owner sees them: whether any is left
//! (a replaced ring stays mapped until none is), and, in a forked child,
//! the parent's other threads' marked abandoned. A record the outputs
//! passed over (`record::PASSED_OVER`) is still in flight.

use std::sync::atomic::{AtomicU32, Ordering};

use super::reader::Region;
use super::record;
use super::writer::Ring;

impl Ring {
    /// Whether a record of this ring is in flight (reserved, not committed
    /// yet): then the ring must stay mapped, its writer still copies into
    /// it. For a ring that was replaced, which gets no new record: each
    /// call goes on from the record in flight the last one found, so that
    /// the ring is walked once in all, however often it is asked.
    pub fn copies_in_flight(&mut self) -> bool {
        let from = self.flight_checked;
        let mut found = None;
        let end = self.in_flight(from, |_, pos| {
            found = Some(pos);
            true
        });
        self.flight_checked = found.unwrap_or(end);
        found.is_some()
    }

    /// Calls `f` with the offset and position of every record in flight
    /// from position `from` (or the head, if later) on, oldest first, until
    /// it returns true; returns where the walk ended.
    fn in_flight(&self, from: u64, mut f: impl FnMut(usize, u64) -> bool) -> u64 {
        let size = self.data_size as u64;
        let h = self.header();
        let tail = h.tail.load(Ordering::Acquire);
        let mut pos = h.head.load(Ordering::Relaxed).max(from);
        // Bounded by the data size: each step is 8 bytes or more.
        for _ in 0..self.data_size / 8 {
            if pos >= tail {
                break;
            }
            let off = (pos % size) as usize;
            let mut word = [0u8; 8];
            self.view().copy(off, &mut word);
            let step = match record::pad_len(&word) {
                Some(pad) => pad,
                None => {
                    if record::in_flight(self.commit_at(off)) && f(off, pos) {
                        return pos;
                    }
                    record::peek_len(&word).unwrap_or(0)
                }
            };
            if step == 0 {
                break;
            }
            pos += step as u64;
        }
        pos
    }

    /// In a forked child's copy of a private ring: the records other
    /// threads of the parent had in flight are never finished here; they
    /// are marked abandoned, so that the child's writers evict them
    /// without waiting (readers report them as never committed).
    pub(super) fn abandon_in_flight(&mut self) {
        let data = self.data_ptr();
        self.in_flight(0, |off, _| {
            // SAFETY: a record's first word in the data area, found by the
            // walk; this forked child has no other thread, and the walk
            // reads the length, not this word, to go on.
            unsafe { AtomicU32::from_ptr(data.add(off).cast()) }
                .store(record::ABANDONED, Ordering::Release);
            false
        });
    }
}
