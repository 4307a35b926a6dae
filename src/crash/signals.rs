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
