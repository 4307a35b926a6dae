//! The crash handler's C API.

use std::ffi::c_int;

use super::{config_call, no_cancel};
use crate::crash::{self, target};
use crate::logger;

/// Installs the crash handler now, with the dump going where `VLOG_DUMP`
/// says (stderr by default, and also when `VLOG_DUMP=off`: calling this is
/// an explicit request). `vlog_init()` does this unless `VLOG_DUMP=off`. On
/// SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS and SIGTRAP the handler
/// writes a header line, a backtrace of the crashing thread and the ring,
/// then calls the handler installed before it, or dies by the default action
/// (same exit status, same core). Every thread that logs gets an alternate
/// signal stack (unless it has one), so stack overflows are dumped too.
/// Idempotent. Returns 0, or -1 with `vlog_last_error()` set.
/// NULL: takes no pointer; ownership: nothing kept; errors: -1 and
/// vlog_last_error(); async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_install_crash_handler() -> c_int {
    no_cancel!(|| config_call(|| logger::config_call::configure(|s| s.install_crash_handler(true))))
}

/// Makes signal `signum` write a dump (header and ring, no backtrace) to the
/// dump destination without ending the process, like `VLOG_DUMP_SIGNAL`.
/// Fatal signals and numbers outside 1..64 are refused. Returns 0, or -1
/// with `vlog_last_error()` set.
/// NULL: takes no pointer; ownership: nothing kept; errors: -1 and
/// vlog_last_error(); async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_set_dump_signal(signum: c_int) -> c_int {
    no_cancel!(|| {
        config_call(|| {
            target::check_dump_signal(signum).and_then(crash::requested::install_dump_signal)
        })
    })
}
