//! The C boundary. Every `extern "C"` function lives below this module; each
//! checks its pointers and catches panics, so no panic and no NULL dereference
//! reaches the caller.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, Once};

use crate::config::ConfigError;

pub mod api;
pub mod crash;
pub mod deferred;
pub mod fields;
pub mod fork;

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(message: &str) {
    // Interior NULs cannot come from our messages, but never fail over one.
    let text = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = text);
}

/// The calling thread's last error message, valid until its next failing call.
fn last_error_ptr() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// Runs a configuration call: 0 on success; -1 with the thread's last error set
/// when it fails or panics.
fn config_call(f: impl FnOnce() -> Result<(), ConfigError>) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => {
            set_last_error(&e.message);
            -1
        }
        Err(_) => {
            crate::logger::after_panic(&take_panic_message());
            set_last_error("internal error in vlog (a panic was caught); nothing was changed");
            -1
        }
    }
}

/// Runs `f`, turning a panic into `on_panic`. A panic is a bug in vlog: the
/// logger then steps down to a safe mode (see `logger::after_panic`) and says
/// so once. Public (hidden) for the test that proves it.
#[doc(hidden)]
pub fn guarded<R>(on_panic: R, f: impl FnOnce() -> R) -> R {
    quiet_panics();
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => {
            crate::logger::after_panic(&take_panic_message());
            on_panic
        }
    }
}

/// `guarded` for signal handlers: the panic is swallowed and nothing else is
/// done (stepping down takes the logger's lock, which the interrupted thread
/// may hold).
fn guarded_in_handler(f: impl FnOnce()) {
    quiet_panics();
    let _ = catch_unwind(AssertUnwindSafe(f));
}

static PANIC_MESSAGE: Mutex<String> = Mutex::new(String::new());

/// Replaces the panic hook of vlog's copy of std, once: the default hook
/// prints to fd 2 (which may not be stderr any more) on every panic; this one
/// keeps the message for the one report `after_panic` makes.
fn quiet_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            if let Ok(mut message) = PANIC_MESSAGE.lock() {
                *message = info.to_string().replace('\n', " ");
            }
        }))
    });
}

fn take_panic_message() -> String {
    PANIC_MESSAGE
        .lock()
        .map(|mut m| std::mem::take(&mut *m))
        .unwrap_or_default()
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
