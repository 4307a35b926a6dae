//! Who is told when the levels change (`vlog_watch_levels`): a cache of
//! vlog's levels kept outside it, such as `log`'s max level and
//! `tracing`'s interest in a Rust library's bridge (bridge/), which decide
//! before vlog is asked whether a call is made at all. Without being told,
//! such a cache would keep a Rust call filtered out after `vlog-ctl
//! filters` wanted it, or let every one through to be formatted.
//!
//! What they are told is the lowest priority a record from a source of
//! any name is kept at: the default level's and every source filter's
//! (the levels of sources the bridge has not named yet are among them). It
//! is stored under the logger's lock whenever the levels are written
//! (`State::refresh_sources`), and the watchers are told each time, the
//! value changed or not (`1:foo` replaced by `1:bar` leaves it at debug,
//! and a cache of each source's decision must be asked again). They are
//! called after a configuration call let go of the lock and left vlog: a
//! watcher calls back into vlog (to learn a source's level), which from
//! inside would be a nested call, dropped.
//!
//! Calls never wait for one another: a change made while another thread
//! is telling the watchers is told by that thread, which goes round again
//! (the last round reads the last value stored), so two changes on two
//! threads cannot leave a watcher with the older one. A watcher that
//! changes the levels itself is told again the same way.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};

use crate::source::UNKNOWN;
use crate::sys::StaticRef;

/// A watcher: called with the lowest priority kept (1 to 4; 5: none) and
/// its argument.
pub type Watcher = extern "C" fn(lowest: c_int, arg: *mut c_void);

/// How many watchers a process may have: one per copy of the bridge (a
/// Rust library linked into the program, each with its own `log`).
pub const MAX_WATCHERS: usize = 16;

/// A watcher and its argument (an address, kept as a number: vlog never
/// reads it), leaked: watchers are few and stay for the process's life.
struct Entry {
    watcher: Watcher,
    arg: usize,
}

static SLOTS: [StaticRef<Entry>; MAX_WATCHERS] = [const { StaticRef::new() }; MAX_WATCHERS];
/// Slots taken: a slot is filled before the count that shows it grows.
static TAKEN: AtomicUsize = AtomicUsize::new(0);
/// The lowest priority kept; UNKNOWN (0) until vlog starts and after it
/// shuts down, which a watcher takes as "ask vlog each time".
static LOWEST: AtomicI32 = AtomicI32::new(UNKNOWN);
/// A change not yet told (set by whoever made one).
static PENDING: AtomicBool = AtomicBool::new(false);
/// A thread is telling the watchers.
static TELLING: AtomicBool = AtomicBool::new(false);

/// Stores the lowest priority kept (under the logger's lock).
pub(super) fn set_lowest(lowest: i32) {
    LOWEST.store(lowest, Ordering::Release);
    PENDING.store(true, Ordering::Release);
}

/// Adds a watcher; false when all the slots are taken. Two threads adding
/// at once are serialised by the slot they claim.
pub fn add(watcher: Watcher, arg: *mut c_void) -> bool {
    let Ok(i) = TAKEN.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
        (n < MAX_WATCHERS).then_some(n + 1)
    }) else {
        return false;
    };
    SLOTS[i].set(Box::leak(Box::new(Entry {
        watcher,
        arg: arg as usize,
    })));
    PENDING.store(true, Ordering::Release);
    true
}

/// Tells the watchers of a change, if one is pending, on this thread,
/// which holds no lock of vlog's. Not from inside vlog (a signal handler
/// whose configuration call was refused as nested): a watcher's calls of
/// vlog would be dropped there, and it may take locks the interrupted code
/// holds; the change stays pending for the next configuration call.
pub fn tell() {
    if super::inside() {
        return;
    }
    while PENDING.load(Ordering::Acquire) {
        if TELLING.swap(true, Ordering::Acquire) {
            // The thread telling goes round again once it is done.
            return;
        }
        while PENDING.swap(false, Ordering::AcqRel) {
            let lowest = LOWEST.load(Ordering::Acquire);
            // A slot claimed and not yet filled is empty: its adder tells it.
            let taken = TAKEN.load(Ordering::Acquire).min(MAX_WATCHERS);
            for entry in SLOTS[..taken].iter().filter_map(StaticRef::get) {
                // The program's code, whose panics are its own.
                crate::panic::foreign(|| (entry.watcher)(lowest, entry.arg as *mut c_void));
            }
        }
        TELLING.store(false, Ordering::Release);
    }
}

/// In a forked child: the parent's thread that was telling is not there,
/// and what it had not told yet is the child's next configuration call's.
pub(super) fn after_fork_child() {
    if TELLING.swap(false, Ordering::Relaxed) {
        PENDING.store(true, Ordering::Relaxed);
    }
}
