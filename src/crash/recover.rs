//! Faults the program recovers from.
//!
//! A program whose own handler for a fatal signal takes `SA_SIGINFO` can see
//! where the fault was, and may be about to mend it: a garbage collector's
//! or a database's write barrier (a page made writable in the handler),
//! libsigsegv, guard pages that grow a stack. Such a handler gets the
//! signal first, before any dump, and a fault it recovers from costs the
//! program one note per process at most. vlog's handler stays in place
//! meanwhile, and the fault is dumped as the crash it is when the program's
//! handler falls to the default action: it sets `SIG_DFL` to re-raise the
//! signal (through the kernel, or through the preload library's
//! sigaction), is a one-shot one (`SA_RESETHAND`) and the fault comes again,
//! or calls abort(), whose SIGABRT is dumped. A handler that returns without
//! mending the fault has it again, as without vlog: nothing tells that
//! apart, from outside, from a write barrier that faults on the same store
//! over and over and mends it each time.
//!
//! A plain handler (`sa_handler`) cannot know the address, and is most
//! often a crash reporter that ends the process: it gets the signal after
//! the dump. A handler that ends the process itself (`_exit`) once it has
//! the signal first leaves no dump; a ring file (`VLOG_BUFFER_FILE`) still
//! holds the records. Everything here is async-signal-safe.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering};

use super::signals;
use crate::text::num::put_hex;
use crate::text::Sink;

/// Whether the program's disposition `previous` gets a fault before the
/// dump (see the overview).
pub fn program_first(previous: &libc::sigaction) -> bool {
    previous.sa_sigaction != libc::SIG_DFL
        && previous.sa_sigaction != libc::SIG_IGN
        && previous.sa_flags & libc::SA_SIGINFO != 0
}

/// The faulting address, or 0.
///
/// # Safety
/// `info` is NULL or the kernel's siginfo for this signal.
unsafe fn address(info: *mut libc::siginfo_t) -> u64 {
    if info.is_null() {
        0
    } else {
        // SAFETY: per the caller.
        unsafe { (*info).si_addr() as u64 }
    }
}

/// Whether the note was written: once per process, so that a program that
/// recovers from faults all day does not grow the dump file.
static NOTED: AtomicBool = AtomicBool::new(false);

/// Says, once per process, that a fault went to the program's handler
/// first; to where dumps go, never waiting (see `dump::say_line`).
///
/// # Safety
/// `info` is NULL or the kernel's siginfo for this signal.
pub unsafe fn note(sig: c_int, info: *mut libc::siginfo_t) {
    if NOTED.swap(true, Ordering::SeqCst) {
        return;
    }
    // SAFETY: per the caller.
    let addr = unsafe { address(info) };
    super::dump::say_line(|line| {
        line.put(b"vlog: ");
        line.put(signals::name(sig));
        line.put(b" at address ");
        put_hex(addr, line);
        line.put(b" went to the program's own handler first, which may recover from it; vlog dumps it if the program falls to the default action (faults it hands to its handler are not noted again)");
    });
}
