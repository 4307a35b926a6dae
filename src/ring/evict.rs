//! Making room: the oldest records move out of the ring (`head` moves past
//! them, counted as lost) before their bytes are reused, never a record
//! still in flight ([R7]), and a little ahead, so that most appends find
//! their room made. The walk over them is done outside the lock when it can
//! be (`ahead`): the lock's holder then only checks and takes its result.

use std::sync::atomic::{fence, AtomicU32, Ordering};

use super::ahead;
use super::walk::{walk, Stop};
use super::writer::{Blocked, Ring};

impl Ring {
    /// Moves `head` past every record that overlaps `[tail, tail + len)` of
    /// the next lap, counting them as lost, before their bytes are reused.
    /// When it has to move at all it moves a little further (a 64th of the
    /// ring), so that the next calls find their room made: eviction is
    /// paid for a few records at a time, not on every call.
    #[inline(always)]
    pub(super) fn make_room(&mut self, tail: u64, len: usize) -> Result<(), Blocked> {
        let size = self.data_size as u64;
        let Some(needed) = (tail + len as u64).checked_sub(size) else {
            return Ok(());
        };
        let head = self.header().head.load(Ordering::Relaxed);
        if head < needed {
            return self.evict(tail, needed, head);
        }
        Ok(())
    }

    /// The commit word of the record at data offset `off`.
    pub(super) fn commit_at(&self, off: usize) -> u32 {
        // SAFETY: a record's first word inside the data area (the caller's
        // offset is a record boundary below the tail), 8-aligned; its
        // writer stores it atomically.
        let word = unsafe { AtomicU32::from_ptr(self.data_ptr().add(off).cast()) };
        // [R7] Acquire: pairs with [W7] in Slot::commit; what the copy
        // wrote is done before these bytes are reused.
        word.load(Ordering::Acquire)
    }

    /// Moves `head` from `head` to at least `needed` (a record boundary, or
    /// `tail`), and on to a 64th of the ring beyond if it can, counting
    /// the records passed as lost. A record still in flight is never
    /// passed: Err when one is in the way before `needed`. A walk done
    /// ahead without the lock (`ahead`) is taken first, when it began
    /// where the head is and goes no further than the rules allow.
    #[cold]
    #[inline(never)]
    fn evict(&mut self, tail: u64, needed: u64, head: u64) -> Result<(), Blocked> {
        let size = self.data_size as u64;
        let h = self.header();
        // Never ahead into records the outputs have not printed ([R5]).
        let printed = h.printed.load(Ordering::Acquire);
        let limit = if self.prints_here && printed < h.marked_end.load(Ordering::Relaxed) {
            printed.max(needed)
        } else {
            u64::MAX
        };
        let mut lost = 0;
        let mut head = head;
        // (A ring file's oldest records are walked under its lock: other
        // processes append to it.)
        let done = if self.shared {
            None
        } else {
            ahead::take(self.id(), head)
        };
        if let Some(done) = done {
            if done.head <= limit.min(tail) {
                head = done.head;
                lost = done.records;
            }
        }
        let mut result = Ok(());
        if head < needed {
            // SAFETY: this ring's data area, mapped while it lives.
            let walked = unsafe {
                walk(
                    self.data_ptr(),
                    self.data_size,
                    head,
                    (needed + size / 64).min(limit).min(tail),
                )
            };
            lost += walked.records;
            head = match walked.stop {
                Stop::InFlight if walked.head < needed => {
                    result = Err(Blocked {
                        pos: walked.head,
                        ring: self.as_raw().addr(),
                    });
                    walked.head
                }
                // Our own bytes cannot be damaged; if they are, everything
                // older is given up on rather than walk garbage.
                Stop::Damaged => tail,
                _ => walked.head.max(needed.min(tail)),
            };
        }
        let h = self.header();
        h.head.store(head, Ordering::Relaxed);
        // Only the lock's holder writes the counter: no read-modify-write.
        h.lost
            .store(h.lost.load(Ordering::Relaxed) + lost, Ordering::Relaxed);
        if !self.shared {
            self.room_end = head + size;
        }
        // [W2] Release fence: the head update is ordered before the stores
        // that overwrite the evicted bytes; pairs with [R2], the reader's
        // Acquire fence and head load after its copy (reader::read).
        fence(Ordering::Release);
        if !self.shared {
            // The next stretch is walked by the next thread that records.
            ahead::want();
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Record;
    use crate::ring::layout::MIN_SIZE;

    /// A record's length damaged by a wild write of the program (0, not a
    /// multiple of 8, past the data area's end): eviction gives up on
    /// everything older rather than walk it, and appending goes on.
    #[test]
    fn a_damaged_length_is_given_up_on_never_walked() {
        for bad in [0u32, 12, 2 * MIN_SIZE as u32] {
            let mut ring = Ring::new(MIN_SIZE).unwrap();
            let mut i = 0;
            // Until the next append has to evict.
            while ring.header().tail.load(Ordering::Relaxed) + 256 < MIN_SIZE as u64 {
                ring.append(&Record::sample(format!("record {i}").as_bytes()))
                    .unwrap();
                i += 1;
            }
            let head = ring.header().head.load(Ordering::Relaxed);
            let off = (head % MIN_SIZE as u64) as usize;
            ring.data_mut(off + crate::ring::record::LEN_AT, 4)
                .copy_from_slice(&bad.to_ne_bytes());
            for j in 0..3 * i {
                let tail = ring.header().tail.load(Ordering::Relaxed);
                ring.append(&Record::sample(format!("after {j}").as_bytes()))
                    .unwrap_or_else(|e| panic!("length {bad}: append {j} refused: {e:?}"));
                let h = ring.header();
                let (head, new_tail) = (
                    h.head.load(Ordering::Relaxed),
                    h.tail.load(Ordering::Relaxed),
                );
                assert!(
                    head <= tail && new_tail - head <= MIN_SIZE as u64,
                    "length {bad}, append {j}: head {head}, tail {tail} -> {new_tail}"
                );
            }
        }
    }
}
