//! fork: the lock is taken before fork and released on both sides, so a
//! child forked while another thread logs can log at once (its copy of the
//! lock is not held by a thread the child does not have).

use std::cell::RefCell;
use std::sync::{MutexGuard, Once};

use super::{lock, State};
use crate::ring::published;
use crate::{diag, panic, sys};

thread_local! {
    /// The lock, held by the forking thread from `prepare` until the parent
    /// or child handler releases it.
    static FORK_GUARD: RefCell<Option<MutexGuard<'static, State>>> = const { RefCell::new(None) };
}

// A panic must not unwind into libc's fork; these run in the middle of it,
// so they only swallow one.
extern "C" fn prepare() {
    panic::swallow(|| {
        let guard = lock();
        FORK_GUARD.with(|slot| *slot.borrow_mut() = Some(guard));
    });
}

extern "C" fn parent() {
    panic::swallow(|| {
        FORK_GUARD.with(|slot| slot.borrow_mut().take());
    });
}

extern "C" fn child() {
    panic::swallow(|| {
        // The child has only this thread: no reader can be inside the ring,
        // and the cached thread id belongs to the parent.
        published::forget_readers_after_fork();
        sys::forget_ids_after_fork();
        FORK_GUARD.with(|slot| {
            // A TCP connection to a collector is the parent's: two processes
            // writing one stream could interleave frames. The child makes
            // its own.
            if let Some(state) = slot.borrow_mut().as_mut() {
                state.outputs.iter_mut().for_each(|o| o.after_fork());
            }
            slot.borrow_mut().take()
        });
    });
}

/// Installs the handlers once per process.
pub fn register_handlers() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if !sys::at_fork(prepare, parent, child) {
            diag::warn(
                "cannot register fork handlers: a child forked while another thread logs may block",
            );
        }
    });
}
