//! Panics in vlog's Rust code are bugs, and none may unwind into C. This
//! module catches them and keeps their message; what to do about one (step
//! down, see `logger::step_down`) is the caller's business.
//!
//! vlog's panic hook goes in front of the one in place, once: for a panic
//! inside vlog's catch, it only keeps the message for the one report that
//! is made of it (the default hook prints to fd 2, which may no longer be
//! stderr in a daemon); any other panic goes to the hook that was there. A
//! Rust program with vlog built in (bridge/, `embedded`) keeps its own
//! panics' messages.

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, Once};

static MESSAGE: Mutex<String> = Mutex::new(String::new());

thread_local! {
    /// How deep this thread is in vlog's catches.
    static CATCHING: Cell<u32> = const { Cell::new(0) };
}

fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let theirs = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if CATCHING.try_with(Cell::get).unwrap_or(0) == 0 {
                return theirs(info);
            }
            if let Ok(mut message) = MESSAGE.try_lock() {
                *message = info.to_string().replace('\n', " ");
            }
        }))
    });
}

/// `catch_unwind`, this thread marked as in vlog's catch meanwhile.
fn caught<R>(f: impl FnOnce() -> R) -> std::thread::Result<R> {
    install_hook();
    // One lookup of the thread's mark (a shared library's thread-local is a
    // call away); a thread being torn down has none left, and its panics go
    // to the hook that was there.
    let mut f = Some(f);
    let mut run = || catch_unwind(AssertUnwindSafe(f.take().expect("run once")));
    CATCHING
        .try_with(|mark| {
            mark.set(mark.get() + 1);
            let result = run();
            mark.set(mark.get() - 1);
            result
        })
        .unwrap_or_else(|_| run())
}

/// Runs the program's code `f` (a levels' watcher) from inside vlog's
/// catch: a panic there is the program's, for its hook (it does not
/// unwind into vlog: `f` is a C function).
pub fn foreign<R>(f: impl FnOnce() -> R) -> R {
    let outer = CATCHING.try_with(|mark| mark.replace(0)).unwrap_or(0);
    let result = f();
    let _ = CATCHING.try_with(|mark| mark.set(outer));
    result
}

/// Runs `f`; a panic comes back as `Err` with its message.
pub fn catch<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    caught(f).map_err(|_| take_message())
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
    let _ = caught(f);
}
