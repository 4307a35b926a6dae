//! A failed check: the record `VLOG_CHECK`, `VLOG_DCHECK` and `VLOG_FATAL`
//! make when the program's assumption does not hold, and the end of the
//! process that follows it (see `logger::fatal`).

use std::ffi::c_char;

use super::sites::site_origin;
use super::{guarded, no_cancel};
use crate::fields::Names;
use crate::logger::emit::{Call, Message};
use crate::logger::fatal;
use crate::priority::Priority;
use crate::site::vlog__site;

/// Internal, for VLOG_CHECK, VLOG_DCHECK and VLOG_FATAL: takes vlog's lock
/// for good (no thread records after this: their calls wait for the end),
/// records the message of `len` bytes at `msg` (cut from `full_len`) that
/// call site `site` formatted, as an error of the site's source whatever
/// the filters say, with the backtrace of the call (VLOG_BACKTRACE, as
/// VLOG_BACKTRACE's), has the outputs write it (2 s at most), then calls
/// abort(3): the crash handler, if installed, writes the lines the files
/// and stderr had not written and a dump that ends with this record, and
/// the process ends by SIGABRT. Never returns. From a signal handler that
/// interrupted vlog on this thread the record is dropped and counted
/// (vlog_stats.dropped_nested); the abort stays.
/// NULL: `site` records nothing (the process still aborts), `msg`
/// "(null)"; ownership: the bytes are copied, nothing kept; errors: none,
/// it aborts; async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog__check_failed(
    site: *const vlog__site,
    msg: *const c_char,
    len: usize,
    full_len: usize,
) -> ! {
    // No cancel acts on the way: the process ends here.
    let body = || guarded((), || record(site, msg, len, full_len));
    no_cancel!(quietly body);
    // SAFETY: abort(3) may be called anywhere; it does not return.
    unsafe { libc::abort() }
}

fn record(site: *const vlog__site, msg: *const c_char, len: usize, full_len: usize) {
    let Some(origin) = site_origin(site) else {
        return;
    };
    let text: &[u8] = if msg.is_null() {
        b"(null)"
    } else {
        // SAFETY: `len` readable bytes, per the contract.
        unsafe { std::slice::from_raw_parts(msg.cast::<u8>(), len) }
    };
    // Taken before the lock, as every backtrace is (the loader's lock);
    // none from a handler nested in vlog, whose record is dropped.
    let taken = super::backtrace::backtrace(
        !crate::logger::inside(),
        vlog__check_failed as *const () as usize,
    );
    fatal::last(&Call {
        source: origin.source,
        site: origin.site,
        priority: Priority::Error,
        message: Message::Text {
            file: origin.file,
            line: origin.line,
            func: origin.func,
            text,
            full_len: full_len.max(text.len()),
            fields: &[],
            names: Names::Caller,
            dump: None,
        },
        fatal: true,
        frames: taken.as_ref().map(|t| t.bytes()),
    });
}
