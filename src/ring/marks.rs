//! What the writer keeps for the records marked for the outputs
//! (`record::FOR_OUTPUTS`): where the outputs stopped, and whether an append
//! would overwrite a record they have not read ([W5]/[R5] in the overview).

use std::sync::atomic::Ordering;

use super::record::{self, align8, Kind, Stored};
use super::writer::Ring;
use crate::record::Record;

impl Ring {
    /// Whether this process's outputs read the ring (see `prints_here`).
    #[inline(always)]
    pub fn prints_here(&self) -> bool {
        self.prints_here
    }

    /// In a forked child: a ring file is its parent's too, whose outputs
    /// read it; the child prints its own records as it makes them. (A ring
    /// in private memory is the child's own copy, already printed: the
    /// parent wrote every pending line before it forked.)
    /// The records the parent's other threads had in flight are never
    /// finished in a private ring's copy: they are marked abandoned.
    pub fn after_fork(&mut self) {
        if self.shared {
            self.prints_here = false;
        } else {
            self.abandon_in_flight();
        }
    }

    /// Where the newest record starts.
    pub fn last(&self) -> u64 {
        self.last
    }

    /// The end of the newest record marked for the outputs.
    #[inline(always)]
    pub fn marked_end(&self) -> u64 {
        self.header().marked_end.load(Ordering::Relaxed)
    }

    /// Whether the ring is in this process's private memory (no ring file
    /// another process may write to).
    pub fn is_private(&self) -> bool {
        !self.shared
    }

    /// The size of the data area.
    #[inline(always)]
    pub fn data_size(&self) -> usize {
        self.data_size
    }

    /// Bytes of the ring between what the outputs printed and the newest
    /// record.
    #[inline(always)]
    pub fn unprinted_bytes(&self) -> u64 {
        let h = self.header();
        h.tail
            .load(Ordering::Relaxed)
            .saturating_sub(h.printed.load(Ordering::Relaxed))
    }

    /// Whether appending a record of `len` bytes would overwrite a record
    /// marked for the outputs that they have not printed yet: then the
    /// caller has them print first (the ring never loses a line it
    /// accepted for them).
    #[inline(always)]
    pub fn would_overwrite_unprinted(&self, len: usize) -> bool {
        let h = self.header();
        // [R5] printed Acquire: pairs with [W5] in `View::set_printed`;
        // the outputs are done with every
        // record before `printed`, which may be overwritten.
        let printed = h.printed.load(Ordering::Acquire);
        // A process that does not read for the outputs never waits for
        // them (it cannot make them read).
        if printed >= h.marked_end.load(Ordering::Relaxed) || !self.prints_here {
            return false;
        }
        let size = self.data_size as u64;
        let tail = h.tail.load(Ordering::Relaxed);
        // Even after a pad (shorter than the record), the record ends
        // within two of its lengths of the tail: the common case, decided
        // without a division.
        if tail + 2 * len as u64 <= printed + size {
            return false;
        }
        let off = tail % size;
        // A record that does not fit before the end pads to it first.
        let end = if off + len as u64 > size {
            tail + (size - off) + len as u64
        } else {
            tail + len as u64
        };
        end.saturating_sub(size) > printed
    }

    /// The size a record of a call takes in the ring (see `append_call`).
    pub fn call_len(rec: &Record, deferred: bool) -> usize {
        Stored {
            rec: *rec,
            kind: if deferred { Kind::Deferred } else { Kind::Text },
            for_outputs: false,
            tag: 0,
        }
        .encoded_len()
    }

    /// The size a call site's record with `args_len` bytes of arguments
    /// takes in the ring (see `append_site`).
    #[inline(always)]
    pub fn site_len(args_len: usize) -> usize {
        align8(record::HEADER_LEN + args_len)
    }
}
