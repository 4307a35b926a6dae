//! What the writer keeps for the records marked for the outputs
//! (`record::FOR_OUTPUTS`): where the outputs stopped, and whether an append
//! would overwrite a record they have not read ([W5]/[R5] in the overview).

use std::sync::atomic::Ordering;

use super::record::{self, align8, Kind, Stored};
use super::writer::Ring;
use crate::record::Record;

/// How many bytes of records may wait for the outputs while a
/// configuration call is under way (`Ring::bound_unprinted`). Such a call
/// has the outputs write what waits under the outputs in force, with the
/// logger's lock held (those lines are theirs), and every thread that logs
/// waits for it: with 8 MiB waiting a logging call waited 21-25 ms
/// (`bench-c/resolve.sh` with `VLOG_BUFFER_SIZE=8M`). Outside such calls
/// the whole ring absorbs a burst.
pub const UNPRINTED_MAX: u64 = 64 * 1024;

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

    /// How far the newest record may lie past what the outputs printed
    /// while a record marked for them waits: the data area, or
    /// [`UNPRINTED_MAX`] of it while bounded.
    #[inline(always)]
    pub fn unprinted_limit(&self) -> u64 {
        self.unprinted_limit
    }

    /// Whether the ring is half full of records the outputs have not read
    /// (half of [`Ring::unprinted_limit`]): then vlog's writer thread,
    /// woken for a printed record, writes without letting the burst gather
    /// (`logger::printer::wake`). The one rule, which
    /// [`Ring::reserve_marked_in_room`] decides as it reserves.
    #[inline(always)]
    pub fn urgent(&self) -> bool {
        self.unprinted_bytes() > self.urgent_over
    }

    /// Bounds (or no longer) what may wait for the outputs to
    /// [`UNPRINTED_MAX`]: a thread whose record would end past it has the
    /// outputs write first, without the logger's lock, as one that would
    /// overwrite an unwritten line does.
    pub fn bound_unprinted(&mut self, bounded: bool) {
        let size = self.data_size as u64;
        self.unprinted_limit = if bounded {
            size.min(UNPRINTED_MAX)
        } else {
            size
        };
        self.urgent_over = self.unprinted_limit / 2;
    }

    /// Whether appending a record of `len` bytes would overwrite a record
    /// marked for the outputs that they have not printed yet, or end more
    /// than [`Ring::unprinted_limit`] past what they printed: then the
    /// caller has them print first (the ring never loses a line it
    /// accepted for them, and a configuration call has little to write).
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
        let limit = self.unprinted_limit;
        let tail = h.tail.load(Ordering::Relaxed);
        // Even after a pad (shorter than the record), the record ends
        // within two of its lengths of the tail: the common case, decided
        // without a division.
        if tail + 2 * len as u64 <= printed + limit {
            return false;
        }
        let off = tail % size;
        // A record that does not fit before the end pads to it first.
        let end = if off + len as u64 > size {
            tail + (size - off) + len as u64
        } else {
            tail + len as u64
        };
        end.saturating_sub(limit) > printed
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A record marked for the outputs may wait behind the whole ring, or,
    /// bounded, behind at most `UNPRINTED_MAX` bytes in a large ring (a
    /// configuration call then has that much at most to write under the
    /// lock); once printed, nothing waits.
    #[test]
    fn what_waits_for_the_outputs_is_bounded_while_asked() {
        let cases = [
            (1 << 20, true, UNPRINTED_MAX),
            (32 << 10, true, 32 << 10),
            (1 << 20, false, 1 << 20),
        ];
        for (size, bounded, limit) in cases {
            let mut ring = Ring::new(size).unwrap();
            ring.bound_unprinted(bounded);
            assert_eq!(ring.unprinted_limit(), limit);
            let rec = Record::sample(b"a line for the outputs");
            let len = Ring::call_len(&rec, false);
            let mut appended = 0;
            while !ring.would_overwrite_unprinted(len) {
                ring.append_call(&rec, false, true).unwrap();
                appended += 1;
                assert!(
                    appended * len as u64 <= limit,
                    "{appended} records of {len} bytes"
                );
            }
            let waiting = ring.unprinted_bytes();
            assert!(
                waiting + 2 * len as u64 > limit && waiting <= limit,
                "{waiting} bytes wait in a ring of {size}"
            );
            ring.view().set_printed(ring.marked_end());
            assert!(!ring.would_overwrite_unprinted(len));
        }
    }
}
