//! The C boundary: every exported function, one module per C noun. Each
//! checks its pointers, turns them into references or slices once, catches
//! every panic, and hands the core only what it has proved valid; the core
//! below is safe Rust.
//!
//! | module | C names |
//! | --- | --- |
//! | `init` | `vlog_init`, `vlog_shutdown`, `vlog_version`, `vlog_abi_check` |
//! | `config` | `vlog_set_level`, `vlog_set_filters`, `vlog_set_context`, `vlog_set_ratelimit`, `vlog_set_outputs`, `vlog_set_buffer_size`, `vlog_reopen`, `vlog_flush`, `vlog_last_error` |
//! | `write` | `vlog_write`, `vlog_write_fields`, `vlog_write_hexdump`, `vlog_field`, `VLOG_PRIO_*`, `VLOG_MESSAGE_MAX`, `VLOG_HEXDUMP_MAX` |
//! | `thread` | `vlog_thread_field_set`, `vlog_thread_field_set_int`, `vlog_thread_fields_clear`, `vlog_thread_traceparent` |
//! | `dump` | `vlog_dump`, `vlog_get_stats`, `vlog_stats` |
//! | `crash` | `vlog_install_crash_handler`, `vlog_set_dump_signal` |
//! | `control` | `vlog_control_start`, `vlog_control_open`, `vlog_control_handle`, `vlog_control_stop` |
//! | `relay` | `vlog_relay_new`, `vlog_relay_feed`, `vlog_relay_field_set`, `vlog_relay_watch`, `vlog_relay_tail`, `vlog_relay_get_stats`, `vlog_relay_close`, `vlog_relay`, `vlog_relay_stats`, `VLOG_RELAY_TAIL_MAX` |
//! | `source` | `vlog_source`, `vlog_default_source`, and the macros' `vlog__source_unregister`, `vlog__source_enabled` |
//! | `site` | the macros' machinery: `vlog__site_prepare`, `vlog__record`, `vlog__format_is_safe`, `VLOG__SITE_*`, `VLOG__ARG_*`, `VLOG__CLASS_*` (the `vlog__site` type is `crate::site`'s) |
//! | `words` | the flight recorder's capture behind `vlog__record`: a call site's plan, and the words and strings handed to the logger |
//! | `sites` | the macros' calls about sites as a whole: `vlog__sites_register`, `vlog__sites_unregister`, `vlog__site_enabled`, `vlog__site_admit`, `vlog__write_site`, `vlog__write_site_hexdump`, `vlog__write_site_backtrace`; their backtraces are `backtrace`'s |
//! | `check` | the macros' failed check: `vlog__check_failed` (`VLOG_CHECK`, `VLOG_DCHECK`, `VLOG_FATAL`) |
//! | `syslog` | libvlog-syslog.so's: `vlog__syslog_start`, `vlog__syslog_openlog`, `vlog__syslog_closelog`, `vlog__syslog_setlogmask`, `vlog__syslog_write`, and the statics its filter reads |
//! | `abi3` | the names the macros of ABI 3 called, kept so that a program built with them loads, is told to rebuild, and logs nothing (not in the header) |
//!
//! The modules are declared in that order, which is the order cbindgen
//! writes them into `vlog_gen.h`: the API first, the machinery last.
//!
//! Every exported function's doc comment ends with one line in a fixed
//! form: `NULL: ...; ownership: ...; errors: ...; async-signal-safe: yes|no.`
//! (tests/architecture.rs checks it).
//!
//! The top of the crate: imports the logger and anything below it; nothing
//! imports it but the crate root's hidden re-exports.

use std::cell::UnsafeCell;
use std::ffi::{c_char, c_int, CStr};

use crate::error::ConfigError;
use crate::logger;
use crate::panic;
use crate::source::{vlog_source, Live};
use crate::sys::cancel;

// In the order of the table above, each apart (so that rustfmt keeps
// the order): cbindgen writes the functions in it.
pub mod init;

pub mod config;

pub mod write;

pub mod thread;

pub mod dump;

pub mod crash;

pub mod control;

pub mod relay;

pub mod source;

pub mod site;

pub mod words;

pub mod sites;

pub mod check;

pub mod syslog;

pub mod abi3;

mod backtrace;

/// The longest error message kept (longer ones are cut, with "...").
const LAST_ERROR_MAX: usize = 1024;

thread_local! {
    // A fixed buffer with no destructor: it never allocates (a refusal from
    // a signal handler must not), and it works during and after the
    // thread's exit, when thread-locals with destructors are gone (a
    // pthread_key destructor that calls vlog).
    static LAST_ERROR: UnsafeCell<[u8; LAST_ERROR_MAX]> = const {
        UnsafeCell::new([0; LAST_ERROR_MAX])
    };
}

fn set_last_error(message: &str) {
    LAST_ERROR.with(|buf| {
        // SAFETY: this thread's own buffer, and no reference to it is held:
        // the pointer `last_error_ptr` hands out is C's to read until this
        // thread's next failing call, which this is.
        let buf = unsafe { &mut *buf.get() };
        let bytes = message.as_bytes();
        let room = LAST_ERROR_MAX - 1;
        let (n, cut) = if bytes.len() > room {
            (room - 3, true)
        } else {
            (bytes.len(), false)
        };
        buf[..n].copy_from_slice(&bytes[..n]);
        let mut end = n;
        if cut {
            buf[n..n + 3].copy_from_slice(b"...");
            end += 3;
        }
        buf[end] = 0;
        // Interior NULs cannot come from our messages; if one did, C would
        // see the message up to it.
    })
}

/// The calling thread's last error message, valid until its next failing
/// call.
fn last_error_ptr() -> *const c_char {
    LAST_ERROR.with(|buf| buf.get().cast::<c_char>().cast_const())
}

/// Runs a configuration call: 0 on success; -1 with the thread's last error
/// set when it fails or panics.
fn config_call(f: impl FnOnce() -> Result<(), ConfigError>) -> c_int {
    crate::control::install();
    match panic::catch(f) {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => {
            set_last_error(&e.message);
            -1
        }
        Err(message) => {
            logger::apply::step_down(&message);
            set_last_error("internal error in vlog (a panic was caught); nothing was changed");
            -1
        }
    }
}

/// Runs `f`, turning a panic into `on_panic`. A panic is a bug in vlog: the
/// logger then steps down to a safe mode (see `logger::apply::step_down`)
/// and says so once. Public (hidden) for the test that proves it.
pub fn guarded<R>(on_panic: R, f: impl FnOnce() -> R) -> R {
    match panic::catch(f) {
        Ok(r) => r,
        Err(message) => {
            logger::apply::step_down(&message);
            on_panic
        }
    }
}

/// Runs the body of an entry point, a closure, with cancellation off (see
/// `sys::cancel`): none is cancelled halfway. Every entry point that can
/// reach a cancellation point (a write, an open, a close, fdatasync) or
/// takes the lock runs its body here, as the whole of an `extern "C-unwind"`
/// function, so a cancel that acts when cancelability comes back, or as the
/// call returns, unwinds straight into the C caller: the body has returned
/// and dropped everything it held by then, in a frame of its own, and its
/// result is a plain C value. A deferred cancel acts as the call returns if
/// the body passed a cancellation point (it wrote a warning to stderr, for
/// instance).
///
/// A macro, not a function taking the closure: a closure held across the
/// calls around it would give the entry's frame a landing pad in a debug
/// build, and a cancel acting in a signal handler that interrupted the
/// entry before its mark cannot unwind through a frame that has one.
macro_rules! no_cancel {
    ($body:expr) => {{
        let call = $crate::sys::cancel::enter();
        let old = $crate::sys::cancel::off();
        let result = $crate::sys::cancel::apart($body);
        let act = $crate::sys::cancel::leave(call);
        $crate::sys::cancel::restore(old);
        if act {
            $crate::sys::cancel::act();
        }
        result
    }};
    // Never acting (see `before_the_record`).
    (quietly $body:expr) => {{
        let call = $crate::sys::cancel::enter();
        let old = $crate::sys::cancel::off();
        let result = $crate::sys::cancel::apart($body);
        $crate::sys::cancel::leave_quietly(call);
        $crate::sys::cancel::restore(old);
        result
    }};
}
pub(crate) use no_cancel;

/// `no_cancel!` for the calls a logging macro makes before the one that
/// records (`vlog__site_enabled`, `vlog__site_prepare`): they never act on
/// a cancel, even one whose point they passed (the first call of a program
/// sets vlog up and opens its outputs), or the message would be lost; the
/// recording call that follows acts as it returns, its message kept.
macro_rules! before_the_record {
    ($body:expr) => {
        $crate::ffi::no_cancel!(quietly $body)
    };
}
pub(crate) use before_the_record;

/// `no_cancel!` for a call whose work is I/O (opening outputs, syncing,
/// the control socket, joining a thread): a cancellation point as POSIX
/// has them, acting only as the call returns.
macro_rules! cancellation_point {
    ($body:expr) => {
        $crate::ffi::no_cancel!(|| {
            $crate::sys::cancel::passed();
            ($body)()
        })
    };
}
pub(crate) use cancellation_point;

/// The body of an entry point that leaves cancellation as it is: a
/// recording call on a thread whose cancellation is deferred (or off), or
/// a call that only reads or sets state. A pending cancel acts as the call
/// returns if the call passed a cancellation point (it printed; see
/// `sys::cancel`).
///
/// `in_call!(body f(args))` calls a body function, marked
/// `#[inline(never)]` so that its landing pads stay in its own frame,
/// directly: the recording calls' form, which builds no closure.
macro_rules! in_call {
    (body $f:ident($($arg:expr),* $(,)?)) => {{
        let call = $crate::sys::cancel::enter();
        let result = $f($($arg),*);
        if $crate::sys::cancel::leave(call) {
            $crate::sys::cancel::act();
        }
        result
    }};
    ($body:expr) => {{
        let call = $crate::sys::cancel::enter();
        let result = $crate::sys::cancel::apart($body);
        if $crate::sys::cancel::leave(call) {
            $crate::sys::cancel::act();
        }
        result
    }};
}
pub(crate) use in_call;

/// Whether a recording call must run under `no_cancel`: only for a thread
/// whose cancellation could act at any instruction (see `sys::cancel`). A
/// recording call reaches a cancellation point only to print, and the
/// outputs turn cancellation off around their writes themselves; so the
/// common thread pays a load and a test, and the recording body stays one
/// function from the C entry to the ring.
#[inline(always)]
fn may_act_anywhere() -> bool {
    cancel::may_act_anywhere()
}

/// The source a C call names: NULL is the default source.
fn source_arg(src: *const vlog_source) -> Live {
    if src.is_null() {
        return Live::default_source();
    }
    // SAFETY: a non-NULL source is a live vlog_source that stays valid until
    // it is unregistered, per the API contract (declared with VLOG_INIT or
    // VLOG_SOURCE_INITIALIZER, which unregisters it from a destructor).
    unsafe { Live::new(&*src) }
}

/// A configuration string from C: NULL and invalid UTF-8 are errors.
///
/// # Safety
/// `s` is NULL or a NUL-terminated string.
unsafe fn config_str<'a>(s: *const c_char, what: &str) -> Result<&'a str, ConfigError> {
    if s.is_null() {
        return Err(ConfigError::new(format!("{what} is NULL")));
    }
    // SAFETY: non-NULL and NUL-terminated per the caller.
    let bytes = unsafe { CStr::from_ptr(s) };
    bytes
        .to_str()
        .map_err(|_| ConfigError::new(format!("{what} is not valid UTF-8")))
}

/// Bytes of an optional C string: NULL reads as `fallback`.
///
/// # Safety
/// `s` is NULL or a NUL-terminated string that outlives the result.
unsafe fn c_bytes(s: *const c_char, fallback: &[u8]) -> &[u8] {
    if s.is_null() {
        fallback
    } else {
        // SAFETY: non-NULL and NUL-terminated per the caller.
        unsafe { CStr::from_ptr(s) }.to_bytes()
    }
}

/// The `len` bytes at `s`, or none when `s` is NULL.
///
/// # Safety
/// `s` is NULL or points at `len` readable bytes that outlive the result.
unsafe fn measured<'a>(s: *const c_char, len: usize) -> &'a [u8] {
    if s.is_null() {
        return b"";
    }
    // SAFETY: forwarded from the caller.
    unsafe { std::slice::from_raw_parts(s.cast::<u8>(), len) }
}
