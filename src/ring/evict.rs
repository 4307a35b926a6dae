//! Making room: the oldest records move out of the ring (`head` moves past
//! them, counted as lost) before their bytes are reused, never a record
//! still in flight ([R7]), and a little ahead, so that most appends find
//! their room made.

use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

use super::record;
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
    /// passed: Err when one is in the way before `needed`.
    #[cold]
    #[inline(never)]
    fn evict(&mut self, tail: u64, needed: u64, mut head: u64) -> Result<(), Blocked> {
        let size = self.data_size as u64;
        let h = self.header();
        // Never ahead into records the outputs have not printed ([R5]).
        let printed = h.printed.load(Ordering::Acquire);
        let ahead = if self.prints_here && printed < h.marked_end.load(Ordering::Relaxed) {
            (needed + size / 64).min(printed.max(needed))
        } else {
            needed + size / 64
        };
        let mut lost = 0;
        let mut result = Ok(());
        let data = self.data_ptr();
        let data_size = self.data_size;
        let end = ahead.min(tail);
        let mut off = (head % size) as usize;
        while head < end {
            // SAFETY: a record boundary inside the data area (`off` stays
            // below the data size: it goes back to 0 at its end), 8-aligned:
            // its first word holds a commit word (or a pad's mark) and a
            // length, the commit word stored atomically.
            let word = unsafe { AtomicU64::from_ptr(data.add(off).cast()) };
            // [R7] Acquire: pairs with [W7] in Slot::commit; what a copy
            // wrote is done before these bytes are reused.
            let [c0, c1, c2, c3, l0, l1, l2, l3] = word.load(Ordering::Acquire).to_ne_bytes();
            let (commit, len) = (
                u32::from_ne_bytes([c0, c1, c2, c3]),
                u32::from_ne_bytes([l0, l1, l2, l3]) as usize,
            );
            if commit == 0 {
                if head < needed {
                    result = Err(Blocked {
                        pos: head,
                        ring: self.as_raw().addr(),
                    });
                }
                break;
            }
            lost += u64::from(commit != record::PAD_MARK);
            // A record or a pad: 8 bytes or more, a multiple of 8, within
            // the data area. Our own bytes cannot be otherwise; if they
            // are, everything older is given up on rather than walk
            // garbage.
            let rest = data_size - off;
            if len == 0 || !len.is_multiple_of(8) || len > rest {
                head = tail;
                break;
            }
            off = if len == rest { 0 } else { off + len };
            head += len as u64;
        }
        let h = self.header();
        let head = if result.is_ok() {
            head.max(needed.min(tail))
        } else {
            head
        };
        h.head.store(head, Ordering::Relaxed);
        // Only the lock's holder writes the counter: no read-modify-write.
        h.lost
            .store(h.lost.load(Ordering::Relaxed) + lost, Ordering::Relaxed);
        self.room_end = head + size;
        // [W2] Release fence: the head update is ordered before the stores
        // that overwrite the evicted bytes; pairs with [R2], the reader's
        // Acquire fence and head load after its copy (reader::read).
        fence(Ordering::Release);
        result
    }
}
