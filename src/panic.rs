//! Panics in vlog's Rust code are bugs, and none may unwind into C. This
//! module catches them and keeps their message; what to do about one (step
//! down, see `logger::step_down`) is the caller's business.
//!
//! vlog's panic hook replaces std's, once: the default hook prints to fd 2,
//! which may no longer be stderr in a daemon; this one only keeps the
//! message for the one report that is made of it.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, Once};

static MESSAGE: Mutex<String> = Mutex::new(String::new());

fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            if let Ok(mut message) = MESSAGE.try_lock() {
                *message = info.to_string().replace('\n', " ");
            }
        }))
    });
}

/// Runs `f`; a panic comes back as `Err` with its message.
pub fn catch<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    install_hook();
    catch_unwind(AssertUnwindSafe(f)).map_err(|_| take_message())
}

#[cold]
fn take_message() -> String {
    MESSAGE
        .try_lock()
        .map(|mut m| std::mem::take(&mut *m))
        .unwrap_or_default()
}

/// Runs `f` and swallows a panic: for signal and fork handlers, which can do
/// nothing else about one (stepping down takes the logger's lock, which the
/// interrupted thread may hold).
pub fn swallow(f: impl FnOnce()) {
    install_hook();
    let _ = catch_unwind(AssertUnwindSafe(f));
}
