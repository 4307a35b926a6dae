//! vlog's levels as the bridge keeps them: the lowest priority vlog keeps
//! from any source, told by vlog whenever its levels change
//! (`vlog_watch_levels`), which `log`'s max level and `tracing`'s interest
//! follow.

use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::OnceLock;

use crate::sys;
use crate::Error;

/// What vlog last said; UNKNOWN until it did (every call asks vlog).
static LOWEST: AtomicI32 = AtomicI32::new(sys::UNKNOWN);

/// The lowest priority vlog keeps (`sys::UNKNOWN`: not known).
pub fn lowest() -> c_int {
    LOWEST.load(Ordering::SeqCst)
}

extern "C" fn told(lowest: c_int, _arg: *mut c_void) {
    // A panic must not cross into vlog (a C frame).
    let _ = std::panic::catch_unwind(|| {
        LOWEST.store(lowest, Ordering::SeqCst);
        #[cfg(feature = "log")]
        crate::log::levels_changed(lowest);
        #[cfg(feature = "tracing")]
        crate::tracing::levels_changed();
    });
}

/// Has vlog tell the bridge of its levels (once per process and copy of
/// the bridge; later calls return what the first did).
pub fn watch() -> Result<(), Error> {
    static WATCHING: OnceLock<Result<(), Error>> = OnceLock::new();
    WATCHING
        .get_or_init(|| {
            // SAFETY: `told` is a function of this program's, for ever.
            if unsafe { sys::vlog_watch_levels(Some(told), std::ptr::null_mut()) } == 0 {
                return Ok(());
            }
            // SAFETY: vlog_last_error never returns NULL, and its string
            // stays valid until this thread's next failing call.
            let why = unsafe { CStr::from_ptr(sys::vlog_last_error()) };
            Err(Error(format!(
                "vlog refused to tell its levels: {}",
                why.to_string_lossy()
            )))
        })
        .clone()
}
