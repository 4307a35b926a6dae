//! Sources from C: the one a file declares with `VLOG_INIT`, registered by
//! its first call and unregistered when its object is unloaded.

use std::ffi::c_int;

use super::{before_the_record, guarded, no_cancel, source_arg};
use crate::logger::{self, levels};
use crate::priority::Priority;
use crate::source::{vlog_source, UNKNOWN};
use crate::sys::keeping_errno;

/// Internal, for `VLOG_INIT`: forgets `src` (and any call site of it the
/// library learnt of on its own), so the library no longer updates it.
/// `VLOG_INIT` calls this from a destructor, so a source in a library that is dlclose'd
/// leaves nothing behind. Unknown sources are ignored.
/// NULL: ignored; ownership: `src` stays the caller's, and vlog no longer
/// holds it; errors: none; async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog__source_unregister(src: *const vlog_source) {
    no_cancel!(|| {
        if src.is_null() {
            return;
        }
        guarded((), || {
            let source = source_arg(src);
            // Nested inside vlog on this thread (unloading a library from a
            // signal handler, which dlclose does not allow anyway), the lock is
            // not to be had: the source stays registered.
            logger::enter(|s| s.unregister(source.get()));
        })
    })
}

/// Internal, for the header: registers `src` if it is not yet known, and
/// returns 1 if a message of priority `prio` from it is recorded, else 0.
/// `vlog()` and `vlogv()` call this only when the inline check
/// cannot decide. `prio` outside 1..4 is clamped. Registering initialises
/// vlog lazily. errno is left as it was.
/// NULL: the default source; ownership: `src` must stay valid until
/// `vlog__source_unregister(src)`; errors: none (0); async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog__source_enabled(src: *const vlog_source, prio: c_int) -> c_int {
    before_the_record!(|| {
        keeping_errno(|| {
            guarded(0, || {
                let source = source_arg(src);
                let mut level = source.get().level();
                if level == UNKNOWN {
                    level = levels::register(source);
                }
                c_int::from(Priority::clamped(prio) as c_int >= level)
            })
        })
    })
}
