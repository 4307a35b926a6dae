//! Signal handlers (extern "C" entry points into crate::crash) and the crash
//! handler's C API.

// Called by the kernel or from C, where `unsafe` means nothing.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use std::ffi::{c_int, c_void};

use crate::crash;
use crate::ffi::{config_call, guarded_in_handler};
use crate::logger;

/// The handler for fatal signals.
pub extern "C" fn on_fatal_signal(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    // SAFETY: installed by crash::install as a SA_SIGINFO handler, so these
    // are the kernel's arguments.
    guarded_in_handler(|| unsafe { crash::on_fatal(sig, info, ctx) })
}

/// SIGALRM during a crash dump: the dump took too long.
pub extern "C" fn on_watchdog(_sig: c_int, _info: *mut libc::siginfo_t, _ctx: *mut c_void) {
    guarded_in_handler(crash::on_watchdog)
}

/// The `VLOG_DUMP_SIGNAL` handler: dump and carry on, leaving errno as it was.
pub extern "C" fn on_dump_signal(_sig: c_int, _info: *mut libc::siginfo_t, _ctx: *mut c_void) {
    crate::sys::keeping_errno(|| guarded_in_handler(crash::write_requested_dump))
}

/// Installs the crash handler now, with the dump going where `VLOG_DUMP` says
/// (stderr by default, and also when `VLOG_DUMP=off`: calling this is an
/// explicit request). `vlog_init()` does this unless `VLOG_DUMP=off`. On
/// SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS and SIGTRAP the handler
/// writes a header line, a backtrace of the crashing thread and the ring, then
/// calls the handler installed before it, or dies by the default action (same
/// exit status, same core). Every thread that logs gets an alternate signal
/// stack (unless it has one), so stack overflows are dumped too. Idempotent.
/// Returns 0, or -1 with `vlog_last_error()` set. Not async-signal-safe.
#[no_mangle]
pub extern "C" fn vlog_install_crash_handler() -> c_int {
    config_call(|| logger::with_state(|s| s.install_crash_handler(true)))
}

/// Makes signal `signum` write a dump (header and ring, no backtrace) to the
/// dump destination without ending the process, like `VLOG_DUMP_SIGNAL`.
/// Fatal signals and numbers outside 1..64 are refused. Returns 0, or -1 with
/// `vlog_last_error()` set. Not async-signal-safe.
#[no_mangle]
pub extern "C" fn vlog_set_dump_signal(signum: c_int) -> c_int {
    config_call(|| crash::check_dump_signal(signum).and_then(crash::install_dump_signal))
}
