//! The flight recorder's call, top to bottom: a deferred call site's message
//! that no output prints or that vlog's writer thread prints, recorded as
//! the words the macro captured (a kind-4 record, see `ring::record`; with
//! the fields its thread carries, kind 6). The
//! lock is held only to reserve the record (its place, its sequence number,
//! room made by evicting the oldest, and for a printed line its mark); the
//! record is copied after the lock is let go of, and committed (see
//! `ring::slot`), and then the writer thread is woken for a printed line.
//! So threads that log at once queue only for the reservation, and the
//! time, the thread id, the words, the strings, the thread's fields (encoded
//! once when they change, `thread_fields`), the checksum and the wake are
//! each thread's own work.
//!
//! Anything else takes the general way (`emit`): a line its caller writes
//! (an error, a `?sync` output's, any while the writer thread is off or not
//! started yet: copied after the lock, its record could be passed over as
//! unfinished, after 100 ms, by another thread's walk while its own thread
//! stalls before the commit, and its call would return with the line
//! written by no one; DESIGN.md section 6), a record that reports what a
//! site's limit left out (a field of vlog's), a ring
//! file (shared with other processes, whose records are written whole
//! under its lock), a site new to the ring's dictionary that does not fit
//! it, a record that would overwrite lines the outputs have not written.

use std::sync::atomic::{AtomicU64, Ordering};

use super::writer::HINTS;
use super::{lock, printer, State, INSIDE, STATE};
use crate::priority::Priority;
use crate::record::MESSAGE_MAX;
use crate::ring::reader::Region;
use crate::ring::record::{align8, HEADER_LEN};
use crate::ring::sites::Site;
use crate::ring::slot::{Slot, WordsHead};
use crate::ring::Ring;
use crate::ring::{ahead, published, Blocked};
use crate::site::vlog__site;
use crate::source::Live;
use crate::sys::cancel;
use crate::sys::lock::Guard;
use crate::{crash, stats, sys};

/// How long a call waits for the record in flight whose room it needs
/// (see `View::wait_committed_within`).
pub const WAIT_NS: u64 = crate::ring::view::WAIT_NS;

/// The largest message part a kind-4 record carries: as much as a text
/// message. A call with more takes the general way, which makes its text
/// and cuts it with the marker.
pub const WORDS_MAX: usize = MESSAGE_MAX;

/// A deferred call site's call, as the boundary hands it over: the words the
/// macro captured (a string's replaced by its length) and the strings'
/// bytes, `message_len` in all.
pub struct Words<'a> {
    pub site: &'a vlog__site,
    pub source: Live,
    pub priority: Priority,
    pub words: &'a [u64],
    pub strings: &'a [&'a [u8]],
    pub message_len: usize,
}

/// A deferred call site's names, line and format, as the logger asks for
/// them: only on the site's first record in a ring and when the message is
/// printed. (Measured at the boundary, which prepared the site.)
pub trait CallSite {
    /// The site's file, function, line and format (with an empty source
    /// name: the logger fills it in).
    fn describe(&self) -> Site<'_>;
}

/// What became of a call on this path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flight {
    Recorded,
    /// Dropped: the oldest record, whose room it needed, stayed in flight
    /// past the wait (counted in `dropped_in_flight`).
    Dropped,
    /// The general way takes it.
    General,
}

/// Whether a reserved record is marked for the outputs, and then how the
/// writer thread is woken for it after the lock (see `printer::wake`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mark {
    RingOnly,
    Printed,
    /// The ring is half full of lines not yet written: the writer thread
    /// writes without letting the burst gather.
    PrintedUrgently,
}

impl Mark {
    /// A printed record's mark: how the writer thread is woken for it.
    #[inline(always)]
    fn printed(urgent: bool) -> Mark {
        if urgent {
            Mark::PrintedUrgently
        } else {
            Mark::Printed
        }
    }
}

/// What the lock's holder decided.
enum Reserved {
    /// The record's place, its site's dictionary entry, and whether it is
    /// marked for the outputs.
    Slot(Slot, u32, Mark),
    /// The room is held by a record in flight; whether this record would
    /// have been marked for the outputs.
    Blocked(Blocked, bool),
    General,
}

/// Marks this thread inside vlog for a flight recorder's call, unless it
/// already is (a signal handler that interrupted vlog on it): false then,
/// and the message is dropped and counted. Marked until [`leave`], with no
/// guard to drop: the caller's frame keeps no landing pad for a cancel
/// acting in a signal handler to unwind through. Meanwhile a signal handler
/// that logs is dropped: it would wait for the lock this thread holds, or
/// for the record this thread copies to make room.
#[inline(always)]
pub fn enter() -> bool {
    if INSIDE.with(|inside| inside.replace(true)) {
        stats::add(&stats::NESTED_DROPPED, 1);
        return false;
    }
    true
}

/// Ends what [`enter`] began.
#[inline(always)]
pub fn leave() {
    INSIDE.with(|inside| inside.set(false));
}

/// Records `call` (its level and limit were decided by the caller), on a
/// thread marked inside vlog ([`enter`]). Never
/// allocates, makes no system call but the clock's and, when a thread
/// waits for the lock or for a record in flight or wakes the writer
/// thread, futex(2) and sched_yield(2): no cancellation point, and errno
/// is left as it was.
#[inline(always)]
pub fn record(call: &Words) -> Flight {
    if call.message_len > WORDS_MAX {
        return Flight::General;
    }
    // A thread's own fields: the same record with them after the words
    // (kind 6), apart.
    if super::thread_fields::active() {
        return record_carrying_fields(call);
    }
    record_carrying(call, &[])
}

/// [`record`] for a thread with fields of its own, `fields` their
/// encoding.
#[inline(never)]
fn record_carrying_fields(call: &Words) -> Flight {
    super::thread_fields::with_encoded(|fields| match fields {
        Some(fields) => record_carrying(call, fields),
        None => Flight::General,
    })
}

/// A line its caller writes: the general way's. A line the writer thread
/// prints: the same record, marked, apart (the copies of `lowest` and
/// `sync_from` read here are hints; the lock's holder decides).
#[inline(always)]
fn record_carrying(call: &Words, fields: &[u8]) -> Flight {
    let priority = call.priority as u8;
    if priority >= HINTS.prints_from.load(Ordering::Relaxed) {
        return if priority >= HINTS.caller_writes_from.load(Ordering::Relaxed) {
            Flight::General
        } else {
            record_printed(call, fields)
        };
    }
    record_with::<false>(call, fields)
}

/// [`record`] for a line vlog's writer thread prints: the same loop, its
/// own copy, whose lock holder takes the printed line's way first.
/// (Inlined, and its reservation inlined into it: apart, each cost the
/// caller 8 to 26 instructions more and the lock's holder 14 more,
/// callgrind, vlog-file-burst.)
#[inline(always)]
fn record_printed(call: &Words, fields: &[u8]) -> Flight {
    record_with::<true>(call, fields)
}

/// The record's way, `PRINTED` saying which reservation the lock's holder
/// makes: reserved under the lock, copied after it, and a marked record's
/// writer thread woken then. A printed line whose room a stalled record
/// holds goes the general way, which keeps it. `fields`: the thread's,
/// encoded, after the words (their length in a word before them).
#[inline(always)]
fn record_with<const PRINTED: bool>(call: &Words, fields: &[u8]) -> Flight {
    let message_len = match fields.len() {
        0 => call.message_len,
        n => 8 + call.message_len + n,
    };
    let len = align8(HEADER_LEN + message_len);
    // The time of the call, before the lock: records are numbered in the
    // order they took the lock, and a thread that waited for it carries
    // the time it asked.
    let time_ns = sys::realtime_ns();
    let tid = sys::thread_id();
    loop {
        if !crash::settled() {
            return Flight::General;
        }
        let reserved = {
            let mut state = STATE.try_lock().unwrap_or_else(lock_waiting);
            #[cfg(all(vlog_lock_profile, target_arch = "x86_64"))]
            sys::profile::toggle_collect();
            let reserved = if PRINTED {
                state.reserve_printed(call, len)
            } else {
                state.reserve_words(call, len)
            };
            drop(state);
            #[cfg(all(vlog_lock_profile, target_arch = "x86_64"))]
            sys::profile::toggle_collect();
            reserved
        };
        match reserved {
            Reserved::Slot(slot, entry, mark) => {
                let head = WordsHead {
                    len: len as u32,
                    seq: slot.seq(),
                    time_ns,
                    tid,
                    entry,
                    priority: call.priority,
                    for_outputs: mark != Mark::RingOnly,
                    message_len: message_len as u32,
                    with_fields: !fields.is_empty(),
                    tag: sys::process_tag(),
                };
                slot.commit_words(&head, call.words, call.strings, fields);
                if mark != Mark::RingOnly {
                    // Woken once the record is committed: it finds the
                    // line whole.
                    printer::wake(mark == Mark::PrintedUrgently);
                    // A printing call is a cancellation point, as stdio's
                    // are: a pending cancel acts as it returns.
                    cancel::passed();
                }
                // Room was made lately: the next stretch is walked here,
                // without the lock, for the holder that next needs room.
                if ahead::wanted() {
                    walk_ahead();
                }
                return Flight::Recorded;
            }
            Reserved::General => return Flight::General,
            Reserved::Blocked(at, printed) => {
                if !wait_for(at) {
                    // A line an output prints is kept: the general way
                    // prints it past the stalled ring.
                    if printed {
                        return Flight::General;
                    }
                    stats::add(&stats::IN_FLIGHT_DROPPED, 1);
                    return Flight::Dropped;
                }
            }
        }
    }
}

/// Walks the published ring's oldest records for the holder that next
/// makes room (`ring::ahead`), if a walk is wanted and no other thread
/// walks. Makes no system call and takes no lock.
#[cold]
#[inline(never)]
fn walk_ahead() {
    ahead::walk_with(|| {
        // Before the pointer: the id of the ring read or of an earlier one
        // (whose walk the current ring drops), never a later one's.
        let id = published::id();
        published::read(|view| {
            let view = view.filter(published::private)?;
            let (from, found) = view.walk_ahead();
            Some((id, from, found))
        })
    });
}

/// Waits, without the lock, for the record in flight at `at` to be
/// committed (see `View::wait_committed_within`); false when it was not within the
/// wait. Its writer needs no lock to finish it.
/// The lock, for a thread that has to wait for it: futex(2) may change
/// errno, which the caller's `%m` and the caller itself still need.
#[cold]
#[inline(never)]
fn lock_waiting() -> Guard<'static, State> {
    sys::keeping_errno(lock)
}

/// A record already waited for in vain is not waited for again (its
/// writer is stopped for long): each call that needs its room is dropped
/// at once until it is committed.
#[cold]
#[inline(never)]
pub fn wait_for(at: Blocked) -> bool {
    // The position, plus one (0: none), of the last record waited for in
    // vain.
    static STALLED: AtomicU64 = AtomicU64::new(0);
    // sched_yield(2) and the clock leave errno as it was when they
    // succeed; kept all the same, as every call that logs keeps it.
    sys::keeping_errno(|| {
        published::read(|view| {
            // A ring replaced since: the call tries again in the new one.
            view.filter(|v| v.id() == at.ring).is_none_or(|v| {
                let off = (at.pos % v.data_size()) as usize;
                if STALLED.load(Ordering::Relaxed) == at.pos + 1 {
                    return v.is_committed(off);
                }
                let done = v.wait_committed_within(off, WAIT_NS) != 0;
                if !done {
                    STALLED.store(at.pos + 1, Ordering::Relaxed);
                }
                done
            })
        })
    })
}

impl State {
    /// Under the lock: the record's place, or why the general way takes
    /// the call: everything the lock's holder does between taking it and
    /// letting go of it. The common case first, decided with a few
    /// compares: no replaced ring to free, no output that prints the
    /// message, the site known to this ring, room for the record without
    /// evicting (so none that the outputs have not printed either).
    #[inline(always)]
    fn reserve_words(&mut self, call: &Words, len: usize) -> Reserved {
        // (Fields apart, not `prints`: the ring is borrowed meanwhile.)
        let State {
            ring,
            retired,
            lowest,
            ..
        } = self;
        if let Some(ring) = ring.as_mut() {
            if (call.priority as u8) < *lowest && retired.is_empty() {
                if let Some(entry) = known_entry(ring, call.source, call.site) {
                    if let Some(slot) = ring.reserve_slot_in_room(len) {
                        return Reserved::Slot(slot, entry, Mark::RingOnly);
                    }
                }
            }
        }
        self.reserve_words_making_room(call, len)
    }

    /// [`State::reserve_words`] for a line an output prints: the same
    /// record, marked, when vlog's writer thread writes it, no line it has
    /// not written is in the way and nothing is evicted; the writer thread
    /// woken.
    #[inline(always)]
    fn reserve_printed(&mut self, call: &Words, len: usize) -> Reserved {
        if self.retired.is_empty() && self.writer_prints(call.priority) {
            if let Some(ring) = self.ring.as_mut() {
                if let Some(entry) = known_entry(ring, call.source, call.site) {
                    if let Some((slot, urgent)) = ring.reserve_marked_in_room(len) {
                        return Reserved::Slot(slot, entry, Mark::printed(urgent));
                    }
                }
            }
        }
        self.reserve_words_making_room(call, len)
    }

    /// [`State::reserve_words`] past the common case: replaced rings freed,
    /// the site added to the dictionary, room made.
    #[cold]
    #[inline(never)]
    fn reserve_words_making_room(&mut self, call: &Words, len: usize) -> Reserved {
        // What every holder does before letting go (see `publish`), but
        // the ring readers find: a reservation does not replace it.
        if !self.retired.is_empty() {
            published::free_unread(&mut self.retired);
        }
        // A line an output prints: the same record, marked, if vlog's
        // writer thread writes it. One its caller writes (an error, a
        // `?sync` output, no writer thread) takes the general way, which
        // writes it after the lock.
        let printed = self.prints(call.priority);
        if printed && !self.writer_prints(call.priority) {
            return Reserved::General;
        }
        let Some(ring) = self.ring.as_mut() else {
            return Reserved::General;
        };
        if !ring.is_private() || ring.would_overwrite_unprinted(len) {
            return Reserved::General;
        }
        let Some(entry) = site_entry(ring, call.source, call.site) else {
            return Reserved::General;
        };
        match ring.reserve_slot(len, printed) {
            Ok(slot) if printed => Reserved::Slot(slot, entry, Mark::printed(ring.urgent())),
            Ok(slot) => Reserved::Slot(slot, entry, Mark::RingOnly),
            Err(at) => Reserved::Blocked(at, printed),
        }
    }
}

/// The site's dictionary entry in `ring`, if it has one there already.
#[inline(always)]
fn known_entry(ring: &Ring, source: Live, site: &vlog__site) -> Option<u32> {
    let cached = site.entry.load(Ordering::Relaxed);
    ((cached >> 32) as u32 == ring.id()
        && site.entry_source.load(Ordering::Relaxed) == source.addr())
    .then_some(cached as u32)
}

/// The offset of the site's dictionary entry in `ring`, adding the site on
/// its first record there; None when the dictionary has no room for it.
#[inline]
pub(super) fn site_entry(ring: &mut Ring, source: Live, site: &vlog__site) -> Option<u32> {
    known_entry(ring, source, site).or_else(|| add_site(ring, source, site))
}

/// A site's first record in this ring: its entry is added.
#[cold]
fn add_site(ring: &mut Ring, source: Live, site: &vlog__site) -> Option<u32> {
    let described = Site {
        source: source.get().name_bytes(),
        ..site.describe()
    };
    let offset = ring.add_site(&described)?;
    site.entry.store(
        u64::from(ring.id()) << 32 | u64::from(offset),
        Ordering::Relaxed,
    );
    site.entry_source.store(source.addr(), Ordering::Relaxed);
    Some(offset)
}
