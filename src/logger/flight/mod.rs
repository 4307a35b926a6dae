//! The flight recorder's call, top to bottom: a deferred call site's
//! message, recorded as the words the macro captured (a kind-4 record, see
//! `ring::record`; with the fields its thread carries, kind 6), whether no
//! output prints it, vlog's writer thread does, or its caller writes it (an
//! error, a `?sync` output's line, any with the writer thread off). The
//! lock is held only to reserve the record (its place, its sequence number,
//! room made by evicting the oldest, and for a printed line its mark); the
//! record is copied after the lock is let go of, and committed (see
//! `ring::slot`), and then the writer thread is woken for a printed line,
//! or the caller has the outputs write every line up to its own. So threads
//! that log at once queue only for the reservation, and the time, the
//! thread id, the words, the strings, the thread's fields (encoded once
//! when they change, `thread_fields`), the checksum, the wake and the write
//! are each thread's own work. A line the outputs' walk passed over while
//! its thread was copying it is printed by that thread as it commits
//! (`ring::record::PASSED_OVER`).
//!
//! Anything else takes the general way (`emit`): a line printed before the
//! writer thread started (the general way starts it), a record that
//! reports what a site's limit left out (a field of vlog's), a ring file
//! (shared with other processes, whose records are written whole under
//! its lock), a site new to the ring's dictionary that does not fit it, a
//! record that would overwrite lines the outputs have not written.

mod reserve;

use std::sync::atomic::{AtomicU64, Ordering};

use super::writer::HINTS;
use super::{lock, printer, State, INSIDE, STATE};
use crate::priority::Priority;
use crate::record::MESSAGE_MAX;
use crate::ring::reader::Region;
use crate::ring::record::{align8, HEADER_LEN};
use crate::ring::slot::{PassedOver, WordsHead};
use crate::ring::{ahead, published, Blocked};
use crate::sys::cancel;
use crate::sys::lock::Guard;
use crate::{crash, stats, sys};
pub(super) use reserve::site_entry;
pub use reserve::{CallSite, Words};
use reserve::{Mark, Reserved};

/// How long a call waits for the record in flight whose room it needs
/// (see `View::wait_committed_within`).
pub const WAIT_NS: u64 = crate::ring::view::WAIT_NS;

/// The largest message part a kind-4 record carries: as much as a text
/// message. A call with more takes the general way, which makes its text
/// and cuts it with the marker.
pub const WORDS_MAX: usize = MESSAGE_MAX;

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

/// Which reservation the lock's holder makes first (`record_with`).
const RING_ONLY: u8 = 0;
const PRINTED: u8 = 1;
const WRITTEN: u8 = 2;

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
/// thread marked inside vlog ([`enter`]). A ring-only record or one the
/// writer thread prints: never allocates, makes no system call but the
/// clock's and, when a thread waits for the lock or for a record in flight
/// or wakes the writer thread, futex(2) and sched_yield(2): no
/// cancellation point. A line its caller writes: the outputs' writes too,
/// their cancellation points acting as the call returns (`sys::cancel`).
/// errno is left as it was.
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

/// A line the writer thread prints, or one its caller writes: the same
/// record, marked, apart (the copies of `lowest` and `sync_from` read here
/// are hints; the lock's holder decides).
#[inline(always)]
fn record_carrying(call: &Words, fields: &[u8]) -> Flight {
    let priority = call.priority as u8;
    if priority >= HINTS.prints_from.load(Ordering::Relaxed) {
        return if priority >= HINTS.caller_writes_from.load(Ordering::Relaxed) {
            record_written(call, fields)
        } else {
            record_printed(call, fields)
        };
    }
    record_with::<RING_ONLY>(call, fields)
}

/// [`record`] for a line vlog's writer thread prints: the same loop, its
/// own copy, whose lock holder takes the printed line's way first.
/// (Inlined, and its reservation inlined into it: apart, each cost the
/// caller 8 to 26 instructions more and the lock's holder 14 more,
/// callgrind, vlog-file-burst.)
#[inline(always)]
fn record_printed(call: &Words, fields: &[u8]) -> Flight {
    record_with::<PRINTED>(call, fields)
}

/// [`record`] for a line its caller writes, apart: it costs a write(2),
/// and the ring-only call keeps its code small. The general way at once
/// while no record can take this one (a ring file, no ring).
#[inline(never)]
fn record_written(call: &Words, fields: &[u8]) -> Flight {
    if !HINTS.callers_record.load(Ordering::Relaxed) {
        return Flight::General;
    }
    record_with::<WRITTEN>(call, fields)
}

/// The record's way, `WAY` saying which reservation the lock's holder
/// makes first: reserved under the lock, copied after it, and then for a
/// marked record its writer thread woken, or its line written by this
/// thread. A printed line whose room a stalled record holds goes the
/// general way, which keeps it. `fields`: the thread's, encoded, after the
/// words (their length in a word before them).
#[inline(always)]
fn record_with<const WAY: u8>(call: &Words, fields: &[u8]) -> Flight {
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
            let reserved = match WAY {
                RING_ONLY => state.reserve_words(call, len),
                PRINTED => state.reserve_marked::<false>(call, len),
                _ => state.reserve_marked::<true>(call, len),
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
                if mark == Mark::RingOnly {
                    slot.commit_words(&head, call.words, call.strings, fields);
                } else {
                    let end = slot.end();
                    match slot.commit_marked_words(&head, call.words, call.strings, fields) {
                        // Passed over by the outputs' walk, which has
                        // gone on past it: printed now, out of turn.
                        Err(passed) => print_passed_over(passed, call.priority),
                        Ok(()) if mark == Mark::Written => write_own(end, call.priority),
                        Ok(()) => {}
                    }
                    if mark != Mark::Written {
                        // Woken once the record is committed: it finds the
                        // line whole.
                        printer::wake(mark == Mark::PrintedUrgently);
                    }
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

/// After the lock, for a line its caller writes: the outputs write every
/// line up to the end of this one (`end`). What they had to report is
/// noted under the lock (a second take, only then). errno is kept: the
/// write may change it, and the caller's is its own.
#[inline(never)]
fn write_own(end: u64, priority: Priority) {
    sys::keeping_errno(|| {
        crash::altstack::before_writing(priority == Priority::Error);
        let said = printer::caller::write_upto(end);
        if !said.is_empty() || printer::caller::handed_off() {
            super::relock(|state| state.after_writing(said));
        }
    })
}

/// A line the outputs' walk passed over while this thread was copying it
/// (stopped for 100 ms in the middle): committed and printed now, out of
/// turn, under the logger's lock, from the ring that holds it (replaced
/// meanwhile, maybe): in flight until the lock is taken, so neither
/// evicted nor unmapped, and under the lock no other thread evicts or
/// unmaps. Output I/O under the lock, as for a line printed past a ring
/// a stopped thread holds: only after such a stop.
#[cold]
#[inline(never)]
fn print_passed_over(passed: PassedOver, priority: Priority) {
    sys::keeping_errno(|| {
        crash::altstack::before_writing(priority == Priority::Error);
        super::relock(|state| state.print_passed_over(passed));
    })
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

/// The lock, for a thread that has to wait for it: futex(2) may change
/// errno, which the caller's `%m` and the caller itself still need.
#[cold]
#[inline(never)]
fn lock_waiting() -> Guard<'static, State> {
    sys::keeping_errno(lock)
}

/// Waits, without the lock, for the record in flight at `at` to be
/// committed (see `View::wait_committed_within`); false when it was not
/// within the wait. Its writer needs no lock to finish it. A record
/// already waited for in vain is not waited for again (its writer is
/// stopped for long): each call that needs its room is dropped at once
/// until it is committed.
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
