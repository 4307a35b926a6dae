//! The ring that lock-free readers in this process find: `vlog_dump` and the
//! crash handler take no lock, so they find the current ring through an
//! atomic pointer and announce themselves in a count, and a ring that is
//! replaced is unmapped only once no reader is inside it.
//!
//! [W4]/[R4]: the writer stores the new pointer, then frees the old ring
//! only once it sees the count at zero (at that call or a later one; it
//! never waits); a reader adds itself to the count, then loads the pointer.
//! Both sides use SeqCst, so that one of them always sees the other (a
//! reader that loaded the old pointer is counted before the writer looks at
//! the count).

use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering};

use super::layout::Header;
use super::reader::{self, Cursor, Entry, Region};
use super::view::View;
use super::writer::Ring;

static PUBLISHED: AtomicPtr<Header> = AtomicPtr::new(ptr::null_mut());
/// Whether this process's outputs read the published ring (see
/// `Ring::prints_here`): a process that shares another's ring file never
/// writes that process's lines, nor moves where its outputs stopped.
static PRINTS_HERE: AtomicBool = AtomicBool::new(true);
/// The published ring's header when it is in this process's private
/// memory (not a ring file; null otherwise): see `Region::whole`. A
/// pointer, not a flag: a reader that loaded the pointer of the ring being
/// replaced must not take the new ring's trust for it (a ring file
/// replaced by memory would be read as trusted).
static PRIVATE: AtomicPtr<Header> = AtomicPtr::new(ptr::null_mut());
static READERS: AtomicUsize = AtomicUsize::new(0);
/// The published ring's id (`Ring::id`, never reused; 0: none), stored
/// after the pointer: whoever loads it before the pointer finds that ring
/// or a later one, never an earlier ring that had its address.
static PUBLISHED_ID: AtomicU32 = AtomicU32::new(0);

/// Makes `ring` the one readers find (None: no ring).
pub fn publish(ring: Option<&Ring>) {
    let now = ring.map_or(ptr::null(), Ring::as_raw);
    if PUBLISHED.load(Ordering::SeqCst).cast_const() != now {
        // Before the pointer: a reader that finds the new ring finds
        // whose outputs read it.
        PRINTS_HERE.store(ring.is_none_or(Ring::prints_here), Ordering::SeqCst);
        let private = ring
            .filter(|r| r.is_private())
            .map_or(ptr::null(), Ring::as_raw);
        PRIVATE.store(private.cast_mut(), Ordering::SeqCst);
        // [W4] the pointer, then the count.
        PUBLISHED.store(now.cast_mut(), Ordering::SeqCst);
        PUBLISHED_ID.store(ring.map_or(0, Ring::id), Ordering::SeqCst);
    }
}

/// The id of the ring published now (0: none), for a reader that must tell
/// the ring it reads from any other ring that had its address: loaded
/// before [`read`] loads the pointer, it is that ring's id or an earlier
/// ring's, never a later one's.
pub fn id() -> u32 {
    PUBLISHED_ID.load(Ordering::SeqCst)
}

/// Whether this process's outputs read the published ring.
pub fn prints_here() -> bool {
    PRINTS_HERE.load(Ordering::SeqCst)
}

/// Whether `view`, read through [`read`], is of a ring in this process's
/// private memory: the one published as such, compared by address (it
/// stays mapped while the reader is in [`read`], so no other ring has it).
pub fn private(view: &View) -> bool {
    PRIVATE.load(Ordering::SeqCst).addr() == view.id()
}

/// In a forked child whose ring is its parent's too (a ring file): its
/// outputs no longer read it (see `Ring::after_fork`).
pub fn after_fork(ring: Option<&Ring>) {
    PRINTS_HERE.store(ring.is_none_or(Ring::prints_here), Ordering::SeqCst);
}

/// Frees the rings in `retired` (none of them published) if no reader is
/// inside any ring now and no writer is copying a record into it;
/// otherwise keeps them for a later call. Never waits:
/// a reader may be blocked for long (`vlog_dump` to a full pipe).
pub fn free_unread(retired: &mut Vec<Ring>) {
    debug_assert!(retired
        .iter()
        .all(|r| PUBLISHED.load(Ordering::SeqCst).cast_const() != r.as_raw()));
    // [W4] the pointer was stored (publish) before the count is read here.
    if READERS.load(Ordering::SeqCst) == 0 {
        // A ring a writer still copies a record into stays mapped until
        // the record is committed (see `slot`).
        retired.retain_mut(Ring::copies_in_flight);
    }
}

/// Leaves the count when dropped, even if the reader panics.
struct Reading;

impl Drop for Reading {
    fn drop(&mut self) {
        READERS.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Runs `f` on a view of the current ring, without the lock. No allocation,
/// no lock: safe in a signal handler.
pub fn read<R>(f: impl FnOnce(Option<View>) -> R) -> R {
    // [R4] the count, then the pointer.
    READERS.fetch_add(1, Ordering::SeqCst);
    let _reading = Reading;
    let header = PUBLISHED.load(Ordering::SeqCst);
    let view = if header.is_null() {
        None
    } else {
        // SAFETY: a published ring is freed only after it is unpublished and
        // the count, which we joined before loading the pointer, drops to
        // zero ([W4]/[R4]).
        Some(unsafe { View::from_raw(header) })
    };
    f(view)
}

/// Visits the current ring's records, oldest first, as [`reader::read`]
/// does; false when there is no ring.
pub fn walk(visit: impl FnMut(Entry)) -> bool {
    read(|view| view.map(|v| reader::read(&v, visit)).is_some())
}

/// Where a reader that goes on across calls stopped (`follow`, a dump sent
/// a part at a time): the ring it read, and where in it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Place {
    ring: usize,
    cursor: Cursor,
}

/// Visits the current ring's records after `place`, at most about `budget`
/// bytes of the ring (see [`reader::read_from`]), and moves `place` past
/// them. A ring that replaced the one `place` was in is read from its
/// oldest record. Some(true) when the walk reached the newest record, None
/// without a ring. No allocation, no lock.
pub fn walk_from(place: &mut Place, budget: u64, visit: impl FnMut(Entry)) -> Option<bool> {
    read(|view| {
        let view = view?;
        let ring = view.id();
        if place.ring != ring {
            *place = Place {
                ring,
                cursor: Cursor::default(),
            };
        }
        let tail = view.tail();
        place.cursor = reader::read_from(&view, place.cursor, budget, visit);
        Some(place.cursor.pos().is_some_and(|pos| pos >= tail))
    })
}

/// In a forked child, which has only the forking thread: no reader can be
/// inside the ring.
pub fn forget_readers_after_fork() {
    READERS.store(0, Ordering::SeqCst);
}
