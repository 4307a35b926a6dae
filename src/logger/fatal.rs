//! A failed check (`VLOG_CHECK`, `VLOG_FATAL`): its record is the last the
//! process makes, and nothing it does waits for long. The logger's lock is
//! taken first and kept (no thread records after the check: their calls
//! wait for the end of the process, their messages never accepted), the
//! check recorded under it whatever the filters say (over lines the outputs
//! have not written, rather than waiting for them), and the outputs given
//! [`WRITE_MS`] to write up to it: vlog's writer thread woken and waited
//! for (never the outputs' lock, which it may hold stuck on a full pipe),
//! or, without one (`VLOG_WRITER=caller`), a walk of this thread's that
//! tries the outputs' lock until then. What is not written by then is the
//! crash handler's, which writes the lines not written yet to the files
//! and stderr before its dump, under its watchdog. The caller then aborts.

use super::{printer, Entered};
use crate::ring::published;
use crate::{stats, sys};

/// How long a failed check has the outputs write before it aborts.
pub const WRITE_MS: u64 = 2000;

/// Records `call` (which has `fatal` set) as the process's last record,
/// keeps the logger's lock, and has the outputs write up to it (for
/// [`WRITE_MS`] at most). From a signal handler that interrupted vlog on
/// this thread the lock cannot be had: the record is dropped and counted,
/// as a nested one.
pub fn last(call: &super::emit::Call) {
    debug_assert!(call.fatal);
    let Some(mut entered) = Entered::new() else {
        stats::add(&stats::NESTED_DROPPED, 1);
        return;
    };
    let state = entered.state();
    let upto = match state.record_fatal(call) {
        // The room is held by a record in flight (another thread reserved
        // it, and copies it without the lock, which this call keeps):
        // waited for, or, its thread stopped, gone past as a caller's call
        // goes past it (`emit::finish`).
        Err(Some(at)) => {
            state.ring_stalled = !super::flight::wait_for(at);
            let again = state.record_fatal(call);
            state.ring_stalled = false;
            again.ok()
        }
        done => done.ok(),
    };
    let writer_thread = !entered.state().writer_off;
    // Published for the lock-free readers (a crash dump), never unlocked,
    // and this thread marked inside for good: a call it makes from here
    // on (a handler's) is dropped as nested, never waits for itself.
    super::publish(&mut entered.guard);
    std::mem::forget(entered);
    let Some(upto) = upto else {
        return;
    };
    let deadline = sys::monotonic_ns() + WRITE_MS * 1_000_000;
    if !writer_thread {
        printer::caller::write_upto_by(upto, deadline);
        return;
    }
    printer::wake(true);
    let written = || published::read(|view| view.is_none_or(|v| v.printed() >= upto));
    while !written() && sys::monotonic_ns() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}
