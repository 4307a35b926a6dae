//! Eviction's walk, done ahead and without the lock. A full ring makes
//! room by moving its head past the oldest records, and finding where each
//! ends means reading its first word: one record evicted for each one
//! recorded, which the lock's holder did while others waited. Now, once
//! room has been made, the next thread that records walks the following
//! stretch (a 64th of the ring) after letting go of the lock, and leaves
//! what it found here; the holder that next needs room takes it in a few
//! instructions if it is the same ring (by its id: a ring mapped where a
//! freed one was has its address and starts at the same head 0) and the
//! head is still where the walk began (and walks itself otherwise: another
//! holder moved the head, the ring was replaced, no thread has walked yet).
//!
//! The walker reads the ring as the other lock-free readers do, through
//! the published ring (`published::read`, `View::walk_ahead`; the caller
//! in `logger::flight` finds it), and trusts nothing it found
//! until the holder has checked where it began: records it passed were
//! whole and committed when it passed them ([R7]), and stay so until the
//! head moves past them, which it has not if it is still where the walk
//! began.
//!
//! [W8]/[R8]: the walker stores what it found, then the state READY with
//! Release; the holder loads the state with Acquire before it reads what
//! was found. With [R7] in the walk, what the records' writers wrote is
//! done before the holder lets their bytes be reused.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};

use super::walk::{Stop, Walked};

/// No walk wanted (none needed yet, or one is found and not taken yet:
/// READY).
const IDLE: u8 = 0;
/// Room was just made: the next thread that records walks on.
const WANTED: u8 = 1;
/// A thread walks.
const WALKING: u8 = 2;
/// A walk is done: what it found waits for the holder.
const READY: u8 = 3;

pub(super) struct Ahead {
    state: AtomicU8,
    /// The walked ring's id (`Ring::id`: never reused, unlike its address).
    ring: AtomicU32,
    from: AtomicU64,
    to: AtomicU64,
    records: AtomicU64,
}

/// The process's one walk ahead: only the current ring makes room.
static AHEAD: Ahead = Ahead::new();

impl Ahead {
    pub(super) const fn new() -> Ahead {
        Ahead {
            state: AtomicU8::new(IDLE),
            ring: AtomicU32::new(0),
            from: AtomicU64::new(0),
            to: AtomicU64::new(0),
            records: AtomicU64::new(0),
        }
    }

    /// Under the lock, once room was made: the next stretch is wanted
    /// (unless a thread walks, or a walk waits to be taken).
    pub(super) fn want(&self) {
        let _ = self
            .state
            .compare_exchange(IDLE, WANTED, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// Under the lock, making room at `head` of ring `ring` (its id): the
    /// walk done ahead, if one waits and began there. One that began
    /// elsewhere is dropped.
    pub(super) fn take(&self, ring: u32, head: u64) -> Option<Walked> {
        // [R8] Acquire: pairs with [W8] in `walk_with`.
        if self.state.load(Ordering::Acquire) != READY {
            return None;
        }
        let found = (
            self.ring.load(Ordering::Relaxed),
            self.from.load(Ordering::Relaxed),
            self.to.load(Ordering::Relaxed),
            self.records.load(Ordering::Relaxed),
        );
        // Release: pairs with the next walker's Acquire claim, which
        // writes only after what was found here has been read.
        self.state.store(IDLE, Ordering::Release);
        let (r, from, to, records) = found;
        (r == ring && from == head).then_some(Walked {
            head: to,
            records,
            stop: Stop::End,
        })
    }

    /// Without the lock: if a walk is wanted and no other thread walks,
    /// walks with `walk` (which returns the ring's id, where it began and
    /// what it found) and leaves what it found for the holder. The ring is
    /// named by its id, not its address: a ring freed and another mapped
    /// where it was would otherwise take a walk over bytes it never had.
    fn walk_with(&self, walk: impl FnOnce() -> Option<(u32, u64, Walked)>) {
        if self
            .state
            .compare_exchange(WANTED, WALKING, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        match walk() {
            Some((ring, from, found)) if found.head > from && found.stop != Stop::Damaged => {
                self.ring.store(ring, Ordering::Relaxed);
                self.from.store(from, Ordering::Relaxed);
                self.to.store(found.head, Ordering::Relaxed);
                self.records.store(found.records, Ordering::Relaxed);
                // [W8] Release: pairs with [R8] in `take`.
                self.state.store(READY, Ordering::Release);
            }
            _ => self.state.store(IDLE, Ordering::Relaxed),
        }
    }
}

/// See [`Ahead::want`].
pub(super) fn want() {
    AHEAD.want();
}

/// See [`Ahead::take`].
pub(super) fn take(ring: u32, head: u64) -> Option<Walked> {
    AHEAD.take(ring, head)
}

/// Whether a walk is wanted: what the flight recorder's call looks at once
/// it has let go of the lock (one load).
#[inline(always)]
pub fn wanted() -> bool {
    AHEAD.state.load(Ordering::Relaxed) == WANTED
}

/// Without the lock: see [`Ahead::walk_with`]. (The caller walks the
/// published ring: `View::walk_ahead`.)
pub fn walk_with(walk: impl FnOnce() -> Option<(u32, u64, Walked)>) {
    AHEAD.walk_with(walk);
}

/// In a forked child: the thread that walked (if one did) is not there.
pub fn after_fork() {
    AHEAD.state.store(IDLE, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Record;
    use crate::ring::layout::MIN_SIZE;
    use crate::ring::record::HEADER_LEN;
    use crate::ring::view::View;
    use crate::ring::Ring;

    /// A walk over `ring` as `walk` does it, through a view of its own
    /// `Ahead` (the process's one is other tests' too).
    fn walk_over(ahead: &Ahead, ring: &Ring) {
        // SAFETY: the ring is alive and mapped while the view is used.
        let view = unsafe { View::from_raw(ring.as_raw()) };
        ahead.walk_with(|| {
            let (from, found) = view.walk_ahead();
            Some((ring.id(), from, found))
        });
    }

    fn filled(records: usize) -> Ring {
        let mut ring = Ring::new(MIN_SIZE).unwrap();
        for i in 0..records {
            ring.append(&Record::sample(format!("record {i}").as_bytes()))
                .unwrap();
        }
        ring
    }

    #[test]
    fn a_walk_is_made_only_when_wanted_and_taken_only_where_it_began() {
        let ring = filled(40);
        let id = ring.id();
        let ahead = Ahead::new();
        walk_over(&ahead, &ring);
        assert!(ahead.take(id, 0).is_none(), "walked without being wanted");

        ahead.want();
        walk_over(&ahead, &ring);
        // Another ring (one mapped where this one was, say), another head:
        // dropped, and nothing waits after.
        assert!(ahead.take(id + 1, 0).is_none());
        ahead.want();
        walk_over(&ahead, &ring);
        assert!(ahead.take(id, 8).is_none());
        assert!(ahead.take(id, 0).is_none(), "a dropped walk was kept");

        ahead.want();
        walk_over(&ahead, &ring);
        let found = ahead.take(id, 0).expect("the walk from the head");
        let size = MIN_SIZE as u64;
        assert!(
            found.head >= size / 64 && found.head < size / 64 + 256 && found.records >= 1,
            "{found:?}"
        );
        assert!(ahead.take(id, 0).is_none(), "taken twice");
    }

    #[test]
    fn a_walk_stops_at_a_record_in_flight() {
        let mut ring = Ring::new(MIN_SIZE).unwrap();
        ring.append(&Record::sample(b"first")).unwrap();
        let at = ring.header().tail.load(Ordering::Relaxed);
        let slot = ring.reserve_slot(HEADER_LEN, false).unwrap();
        for i in 0..40 {
            ring.append(&Record::sample(format!("record {i}").as_bytes()))
                .unwrap();
        }
        let id = ring.id();
        let ahead = Ahead::new();
        ahead.want();
        walk_over(&ahead, &ring);
        let found = ahead
            .take(id, 0)
            .expect("the walk up to the record in flight");
        assert_eq!((found.head, found.records), (at, 1), "{found:?}");
        drop(slot);
        // Abandoned now: passed like any record.
        ahead.want();
        walk_over(&ahead, &ring);
        let found = ahead.take(id, 0).unwrap();
        assert!(found.head > at && found.records >= 3, "{found:?}");
    }
}
