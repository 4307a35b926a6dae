//! The walk over a ring's oldest records that eviction makes: where each
//! ends, whether one is still in flight (never passed), how many there
//! were. Shared by the lock's holder (`evict`) and a walker without the
//! lock (`ahead`).

use std::sync::atomic::{AtomicU64, Ordering};

use super::record;

// A committed record's word is odd, every other even: the walk's one test.
const _: () = assert!(
    record::PAD_MARK & 1 == 0
        && record::ABANDONED & 1 == 0
        && record::PASSED_OVER & 1 == 0
        && record::commit_value(0) & 1 == 1
);

/// Where a walk over the oldest records ([`walk`]) ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// At or past its end (or the tail).
    End,
    /// At a record still in flight, which is never passed.
    InFlight,
    /// At a length no record has: the walk goes no further.
    Damaged,
}

/// What a walk found: where it ended, why, and how many records it passed
/// (pads not counted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Walked {
    pub head: u64,
    pub records: u64,
    pub stop: Stop,
}

/// Walks the records from position `head` (a record boundary) until one
/// ends at or past `end`, one is in flight, or a length is damaged.
/// Bounded by `end - head`: every step is 8 bytes or more.
///
/// # Safety
/// `data` points at the `data_size` bytes of a ring's data area, mapped
/// while the walk runs, whose record words are stored atomically. (Bytes
/// that change under the walk, which a walker without the lock may see,
/// are only wrong lengths: its result is checked before it is used.)
#[inline(always)]
pub(super) unsafe fn walk(data: *const u8, data_size: usize, mut head: u64, end: u64) -> Walked {
    // Records and pads passed, and pads among them (one a lap).
    let mut passed = 0u64;
    let mut pads = 0u64;
    let mut off = (head % data_size as u64) as usize;
    let mut stop = Stop::End;
    // A lap's stretch at a time, from `off` to the data area's end or to
    // `end`, whichever comes first: inside it, one compare a record tells
    // where to stop, and `head` moves once.
    'stretches: while head < end {
        let from = off;
        let stretch_end = off + (end - head).min((data_size - off) as u64) as usize;
        loop {
            // SAFETY: a record boundary inside the data area (`off` is below
            // `stretch_end`, at most the data size), 8-aligned: its first
            // word holds a commit word (or a pad's mark) and a length, the
            // commit word stored atomically.
            let word = unsafe { AtomicU64::from_ptr(data.add(off).cast_mut().cast()) };
            // [R7] Acquire: pairs with [W7] in Slot::commit; what a copy
            // wrote is done before these bytes are reused.
            let [c0, c1, c2, c3, l0, l1, l2, l3] = word.load(Ordering::Acquire).to_ne_bytes();
            let (commit, len) = (
                u32::from_ne_bytes([c0, c1, c2, c3]),
                u32::from_ne_bytes([l0, l1, l2, l3]) as usize,
            );
            // A committed record's word is odd; in flight (0, or passed
            // over by the outputs), abandoned and a pad's mark are even:
            // one test for the rare ones.
            if commit & 1 == 0 {
                if record::in_flight(commit) {
                    head += (off - from) as u64;
                    stop = Stop::InFlight;
                    break 'stretches;
                }
                pads += u64::from(commit == record::PAD_MARK);
            }
            // A record or a pad: 8 bytes or more, a multiple of 8, within
            // the data area (checked once the stretch ends: a length past it
            // ends the stretch).
            if len == 0 || len % 8 != 0 {
                off = data_size + 1;
                break;
            }
            passed += 1;
            off += len;
            if off >= stretch_end {
                break;
            }
        }
        if off > data_size {
            stop = Stop::Damaged;
            break;
        }
        head += (off - from) as u64;
        if off == data_size {
            off = 0;
        }
    }
    Walked {
        head,
        records: passed - pads,
        stop,
    }
}
