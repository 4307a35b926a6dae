//! Process-wide counters that several stages add to and `vlog_get_stats`
//! reads. Relaxed atomics: each is a count, never a signal between threads.

use std::sync::atomic::{AtomicU64, Ordering};

/// Lines an output could not write (`vlog_stats.output_lines_lost`).
pub static LINES_LOST: AtomicU64 = AtomicU64::new(0);
/// Structured fields whose name was not valid (`vlog_stats.bad_fields`).
pub static BAD_FIELDS: AtomicU64 = AtomicU64::new(0);
/// Messages logged while the same thread was already inside vlog (from a
/// signal handler, say), dropped instead of deadlocking
/// (`vlog_stats.dropped_nested`).
pub static NESTED_DROPPED: AtomicU64 = AtomicU64::new(0);

/// Messages dropped because the record whose room they needed was still
/// being copied by its writer after the wait (a thread stopped in the
/// middle of one, in a signal handler or a debugger):
/// `vlog_stats.dropped_in_flight`.
pub static IN_FLIGHT_DROPPED: AtomicU64 = AtomicU64::new(0);

/// Times a thread that logs found its record would overwrite lines the
/// outputs had not written yet (a ring too small for the burst), and had
/// them written first (the control socket's `stats`).
pub static CALLER_WROTE: AtomicU64 = AtomicU64::new(0);

/// Errors' contexts printed (one per output that printed at least one
/// record of one), the records printed in them, and contexts left out
/// because their error site had one within the interval (one per output).
pub static CONTEXTS: AtomicU64 = AtomicU64::new(0);
pub static CONTEXT_RECORDS: AtomicU64 = AtomicU64::new(0);
pub static CONTEXTS_SUPPRESSED: AtomicU64 = AtomicU64::new(0);

/// Records that were to keep a backtrace and kept none: every slot one is
/// built in was taken (the control socket's `stats`).
pub static BACKTRACES_LOST: AtomicU64 = AtomicU64::new(0);

/// Calls a call site's limit left out (`vlog_stats.suppressed`).
pub static SUPPRESSED: AtomicU64 = AtomicU64::new(0);

pub fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

pub fn get(counter: &AtomicU64) -> u64 {
    counter.load(Ordering::Relaxed)
}
