//! A failed check (`VLOG_CHECK`, `VLOG_FATAL`): its record is the last the
//! process makes. Recorded whatever the filters say and written to every
//! output before anything else (an error's line is the caller's to write:
//! `emit::emit_last`); then, here, what the outputs hold for their peers
//! is sent and the logger's lock taken for good, so that no thread records
//! after it: their calls wait for the end of the process, their messages
//! never accepted. A thread that recorded between the check and the lock
//! has the check recorded once more, in the ring alone (the outputs have
//! it), so a crash dump's last record is the check. The caller then
//! aborts.

use std::sync::atomic::{AtomicU64, Ordering};

use super::message::Call;
use super::{ticker, Entered};
use crate::ring::Ring;

/// Where the failed check's record starts in the ring (`u64::MAX`: none).
static RECORDED_AT: AtomicU64 = AtomicU64::new(u64::MAX);

/// Notes where the failed check's record was put (under the lock).
pub(super) fn recorded_at(pos: u64) {
    RECORDED_AT.store(pos, Ordering::Relaxed);
}

/// The failed check `call` was recorded: its peers sent, the logger is
/// closed with it the ring's newest record, and its lock kept (the caller's
/// next step is abort(3)). From a signal handler that interrupted vlog on
/// this thread the lock cannot be had: nothing more is done.
pub(super) fn close(call: &Call) {
    ticker::drain(ticker::Drain::Exit);
    let Some(mut entered) = Entered::new() else {
        return;
    };
    let state = entered.state();
    let newest = state.ring.as_ref().map(Ring::last);
    if newest.is_some() && newest != Some(RECORDED_AT.load(Ordering::Relaxed)) {
        // The ring alone: the outputs wrote the check already.
        state.record_unprinted(call);
    }
    // Published for the lock-free readers (a crash dump), never unlocked,
    // and this thread marked inside for good: a call it makes from here
    // on (a handler's) is dropped as nested, never waits for itself.
    super::publish(&mut entered.guard);
    std::mem::forget(entered);
}
