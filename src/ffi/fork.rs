//! pthread_atfork handlers: the lock is taken before fork and released on both
//! sides, so a child forked while another thread logs can log at once.

use std::sync::Once;

use crate::ffi::guarded_in_handler;
use crate::logger;

// A panic must not unwind into libc's fork; these run in the middle of it, so
// they only swallow one (see guarded_in_handler).
extern "C" fn prepare() {
    guarded_in_handler(logger::fork_prepare);
}

extern "C" fn parent() {
    guarded_in_handler(logger::fork_parent);
}

extern "C" fn child() {
    guarded_in_handler(logger::fork_child);
}

/// Installs the handlers once per process.
pub fn register_handlers() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: the handlers are plain functions that live as long as the
        // program; pthread_atfork only stores them.
        let rc = unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
        if rc != 0 {
            logger::warn(
                "cannot register fork handlers: a child forked while another thread logs may block",
            );
        }
    });
}
