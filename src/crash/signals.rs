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

pub fn name(sig: c_int) -> &'static [u8] {
    match sig {
        libc::SIGSEGV => b"SIGSEGV",
        libc::SIGBUS => b"SIGBUS",
        libc::SIGILL => b"SIGILL",
        libc::SIGFPE => b"SIGFPE",
        libc::SIGABRT => b"SIGABRT",
        libc::SIGSYS => b"SIGSYS",
        libc::SIGTRAP => b"SIGTRAP",
        _ => b"signal",
    }
}
