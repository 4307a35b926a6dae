//! The signals the crash handler takes, and their names in a dump.

use std::ffi::c_int;

/// The signals that end a process with a dump: each is caught, dumped,
/// then handed on.
pub const FATAL_SIGNALS: [c_int; 7] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGABRT,
    libc::SIGSYS,
    libc::SIGTRAP,
];

/// The signal's name in a dump: the one table of names (`sys::signal`).
pub fn name(sig: c_int) -> &'static [u8] {
    crate::sys::signal::name(sig).map_or(b"signal", str::as_bytes)
}

/// The signals a fault raises synchronously, on the thread that faulted.
/// The kernel cannot hold one back: a blocked one kills the process with
/// its default action, and the handler never runs. So a mask that blocks
/// them (a daemon that blocks every signal to read them from a signalfd)
/// only takes the crash dump away. SIGABRT is not among them: abort(3)
/// unblocks it itself.
const FAULTS: [c_int; 6] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGSYS,
    libc::SIGTRAP,
];

/// Unblocks [`FAULTS`] in the calling thread (one rt_sigprocmask), so that
/// its crash reaches vlog's handler: at a thread's first call with the
/// handler installed, then every 1024 calls and at each line it writes
/// itself (an error), in case the program blocked every signal since.
/// Async-signal-safe.
pub fn unblock_faults() {
    // SAFETY: an all-zero sigset_t is a valid set for sigemptyset to fill.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid sigset_t; the calls only change it and this
    // thread's mask.
    unsafe {
        libc::sigemptyset(&mut set);
        for sig in FAULTS {
            libc::sigaddset(&mut set, sig);
        }
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
    }
}
