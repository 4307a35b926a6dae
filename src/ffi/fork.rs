//! pthread_atfork handlers: the lock is taken before fork and released on both
//! sides, so a child forked while another thread logs can log at once.

use std::sync::Once;

use crate::logger;

extern "C" fn prepare() {
    logger::fork_prepare();
}

extern "C" fn parent() {
    logger::fork_parent();
}

extern "C" fn child() {
    logger::fork_child();
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
