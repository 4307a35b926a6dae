//! The program's own handlers, kept behind vlog's: a daemon started with
//! libvlog-syslog.so that installs a handler for a fatal signal after vlog
//! did (or resets every signal to SIG_DFL at its start) would otherwise
//! take the crash dump away.

use std::ffi::c_int;
use std::sync::atomic::Ordering;

use super::signals::FATAL_SIGNALS;
use super::{HANDED_BACK, PREVIOUS, TAKEN};

/// A program's sigaction(2) for a signal whose handler is vlog's, made
/// through libvlog-syslog.so (which puts sigaction and signal in front of
/// glibc's): the program's handler becomes the one vlog hands the signal
/// to after the dump, and vlog's stays installed; `old` gets what the
/// program had before, as if vlog were not there. So a daemon that sets
/// its own crash handler (or resets every signal to SIG_DFL) after vlog
/// started still gets a dump first. False when vlog does not hold `sig`
/// now (not a fatal signal it took, or one handed back to the program's
/// handler just now, whose next vlog call takes it again): the program's
/// call then goes to the kernel. Async-signal-safe.
///
/// # Safety
/// `act` and `old` are NULL or valid for reading and writing a sigaction.
pub unsafe fn adopt(sig: c_int, act: *const libc::sigaction, old: *mut libc::sigaction) -> bool {
    let held = |sig: c_int| {
        (1..65).contains(&sig)
            && TAKEN[sig as usize].load(Ordering::SeqCst)
            && !HANDED_BACK[sig as usize].load(Ordering::SeqCst)
    };
    // A dump signal the program takes for itself is its own, as without
    // the library.
    if !FATAL_SIGNALS.contains(&sig) || !held(sig) {
        return false;
    }
    let slot = PREVIOUS[sig as usize].as_mut_ptr();
    // SAFETY: the slot was filled when vlog took the signal; `old` and
    // `act` are valid per the caller, and a sigaction is plain data. A
    // handler reading the slot while it is written sees the old or the new
    // disposition's words, as a program racing its own sigaction with a
    // signal would.
    unsafe {
        if !old.is_null() {
            *old = *slot;
        }
        if !act.is_null() {
            *slot = *act;
        }
    }
    true
}
