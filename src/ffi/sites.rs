//! Internal: the macros' calls about call sites as a whole. An object
//! hands its `vlog_sites` section over when it is loaded and takes it back
//! when it is unloaded; a site's first call asks its level; a limited
//! site's call asks whether it is recorded; a site whose message was
//! formatted at the call records it as the site's.

use std::ffi::{c_char, c_int, c_void};
use std::ptr::NonNull;

use super::backtrace::{backtrace, Taken};
use super::write::{dump_arg, emit_message, emit_text, vlog_field, Origin};
use super::{before_the_record, guarded, in_call, may_act_anywhere, no_cancel};
use crate::logger;
use crate::logger::emit::Outcome;
use crate::priority::Priority;
use crate::site::{vlog__site, LiveSite, Section, SITE_BACKTRACE};
use crate::source::Live;
use crate::sys::{self, keeping_errno};

/// The site a C call names, proved once here.
///
/// # Safety
/// `site` is non-NULL and one of the macros' sites, which live as long as
/// their object, and the catalog forgets them before it goes.
pub(super) unsafe fn site_arg<'a>(site: *const vlog__site) -> (LiveSite, &'a vlog__site) {
    // SAFETY: per the caller.
    let site = unsafe { &*site };
    // SAFETY: as above.
    (unsafe { LiveSite::new(site) }, site)
}

/// The source of a site (the default source for a site that names none).
pub(super) fn site_source(site: &vlog__site) -> Live {
    site.source().unwrap_or_else(Live::default_source)
}

/// Internal, for `VLOG_INIT`'s constructor: hands the library the call
/// sites of the object being loaded, the pointers from `start` to `stop`
/// (its `vlog_sites` section), so that each is listed and configured
/// before its first call. Each of an object's files hands the same
/// section over; the first is kept. Does not start vlog (the program's
/// `main` may still set its `VLOG_*` variables).
/// NULL: either bound NULL (an object with no sites) does nothing;
/// ownership: the library reads the sites until `vlog__sites_unregister`;
/// errors: none (no memory: the sites are learnt on their first calls);
/// async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog__sites_register(
    start: *const *const vlog__site,
    stop: *const *const vlog__site,
) {
    no_cancel!(|| {
        let Some(first) = NonNull::new(start.cast_mut()) else {
            return;
        };
        if stop.is_null() || stop < start {
            return;
        }
        guarded((), || {
            // SAFETY: both bound the same section, per the contract.
            let len = unsafe { stop.offset_from(start) } as usize;
            // SAFETY: the linker's section of the object, which stays
            // loaded until its destructor takes the section back.
            let section = unsafe { Section::new(first, len) };
            logger::enter(|state| state.add_section(section));
        })
    })
}

/// Internal, for `VLOG_INIT`'s destructor: the object whose section
/// starts at `start` is being unloaded; the library forgets its sites.
/// NULL: nothing; ownership: the library no longer reads the section;
/// errors: none; async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog__sites_unregister(start: *const *const vlog__site) {
    no_cancel!(|| {
        let Some(first) = NonNull::new(start.cast_mut()) else {
            return;
        };
        guarded((), || {
            // Nested inside vlog on this thread (unloading from a signal
            // handler, which dlclose does not allow anyway), the lock is
            // not to be had: the section stays.
            logger::enter(|state| state.remove_section(first));
        })
    })
}

/// Internal, for the macros: learns of `site` if it is new (starting vlog
/// on the program's first call) and returns 1 if a call of priority `prio`
/// from it is recorded, else 0. The macros call this only when the inline
/// check cannot decide (the site's level is 0). `prio` outside 1..4 is
/// clamped. errno is left as it was.
/// NULL: 0; ownership: `site` must live as long as its object (a macro's
/// static); errors: none (0); async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog__site_enabled(site: *const vlog__site, prio: c_int) -> c_int {
    crate::control::install();
    before_the_record!(|| {
        if site.is_null() {
            return 0;
        }
        keeping_errno(|| {
            guarded(0, || {
                // SAFETY: non-NULL, a macro's site per the contract.
                let (live, _) = unsafe { site_arg(site) };
                let level = logger::levels::site_level(live);
                c_int::from(Priority::clamped(prio) as c_int >= level)
            })
        })
    })
}

/// Internal, for the macros: whether a call of priority `prio` from
/// `site`, which passed the filters, is recorded, as the site's limit (or
/// `VLOG_RATELIMIT`) says: 1 if so, 0 if it is left out (counted, and
/// reported by the site's next record). Lock-free; reads a coarse clock;
/// reaches no cancellation point.
/// NULL: 1; ownership: nothing kept; errors: none; async-signal-safe: yes.
#[no_mangle]
pub extern "C-unwind" fn vlog__site_admit(site: *const vlog__site, prio: c_int) -> c_int {
    if site.is_null() {
        return 1;
    }
    // An asynchronous cancel could act at any instruction, and unwind into
    // the panic guard: turned off around it (as for a recording call). A
    // deferred one never acts here, but the call is marked all the same: a
    // signal handler that logs while it runs must leave the cancel to this
    // call, not act on it in the handler and unwind through the guard.
    if may_act_anywhere() {
        return no_cancel!(|| admit(site, prio));
    }
    in_call!(body admit(site, prio))
}

#[inline(never)]
fn admit(site: *const vlog__site, prio: c_int) -> c_int {
    guarded(1, || {
        // SAFETY: non-NULL, a macro's site per the contract.
        let (_, site) = unsafe { site_arg(site) };
        c_int::from(site.admit(prio, sys::coarse_ms))
    })
}

/// Internal, for the header: records the message of `len` bytes at `msg`
/// (cut from `full_len`), with `nfields` fields, that call site `site`
/// formatted at the call, as vlog_write_fields does, with the site's
/// source, file, line and function, and its level instead of its
/// source's. Returns 1 if recorded, 0 if filtered out, -1 on an error.
/// NULL: `site` an error (-1), `msg` "(null)", `fields` as in
/// vlog_write_fields; ownership: everything is copied, nothing kept;
/// errors: -1, never errno; async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog__write_site(
    site: *const vlog__site,
    prio: c_int,
    msg: *const c_char,
    len: usize,
    full_len: usize,
    fields: *const vlog_field,
    nfields: usize,
) -> c_int {
    if nfields > 0 && fields.is_null() {
        return -1;
    }
    // SAFETY: as the caller's contract says of each.
    let record =
        |origin: Origin| unsafe { emit_text(origin, prio, msg, len, full_len, fields, nfields) };
    let entry = vlog__write_site as *const () as usize;
    if may_act_anywhere() {
        return no_cancel!(|| write_site(site, entry, false, record));
    }
    in_call!(body write_site(site, entry, false, record))
}

/// Internal, for VLOG_HEXDUMP: records the message of `len` bytes at `msg`
/// (cut from `full_len`) that call site `site` formatted at the call, with
/// `size` bytes at `data` kept as bytes, as vlog_write_hexdump does, with
/// the site's names and level. Returns 1 if recorded, 0 if filtered out,
/// -1 on an error.
/// NULL: `site` an error (-1), `msg` "(null)", `data` an error (-1) unless
/// `size` is 0; ownership: everything is copied, nothing kept; errors: -1,
/// never errno; async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog__write_site_hexdump(
    site: *const vlog__site,
    prio: c_int,
    msg: *const c_char,
    len: usize,
    full_len: usize,
    data: *const c_void,
    size: usize,
) -> c_int {
    if size > 0 && data.is_null() {
        return -1;
    }
    let record = |origin: Origin| {
        // SAFETY: `data` is `size` readable bytes (or NULL with 0), per
        // the contract.
        let dump = unsafe { dump_arg(data, size) };
        // SAFETY: as the caller's contract says of `msg`.
        let finished = unsafe { emit_message(origin, prio, msg, len, full_len, &[], Some(dump)) };
        c_int::from(finished.complete() == Outcome::Recorded)
    };
    let entry = vlog__write_site_hexdump as *const () as usize;
    if may_act_anywhere() {
        return no_cancel!(|| write_site(site, entry, false, record));
    }
    in_call!(body write_site(site, entry, false, record))
}

/// Internal, for VLOG_BACKTRACE: records the message of `len` bytes at
/// `msg` (cut from `full_len`) that call site `site` formatted at the
/// call, as vlog__write_site does without fields, with the backtrace of
/// the call (the return addresses of the frames that called this
/// function, at most 32, and the loaded objects they are in). Returns 1
/// if recorded, 0 if filtered out, -1 on an error. No allocation; the
/// backtrace takes the loader's lock (it is not taken under vlog's).
/// NULL: `site` an error (-1), `msg` "(null)"; ownership: everything is
/// copied, nothing kept; errors: -1, never errno; async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog__write_site_backtrace(
    site: *const vlog__site,
    prio: c_int,
    msg: *const c_char,
    len: usize,
    full_len: usize,
) -> c_int {
    let record = |origin: Origin| {
        // SAFETY: as the caller's contract says of `msg`.
        let finished = unsafe { emit_message(origin, prio, msg, len, full_len, &[], None) };
        c_int::from(finished.complete() == Outcome::Recorded)
    };
    let entry = vlog__write_site_backtrace as *const () as usize;
    if may_act_anywhere() {
        return no_cancel!(|| write_site(site, entry, true, record));
    }
    in_call!(body write_site(site, entry, true, record))
}

/// Makes the call `record` with call site `site`'s names (and its level
/// and report, through it): the one way a message formatted at a call
/// site's call is recorded. With the call's backtrace when `backtrace_wanted`
/// says so or a `bt:` filter marked the site: `entry` is the exported
/// function the program called. Each entry has its own copy, so that
/// one's stack holds only what it needs.
#[inline(never)]
fn write_site(
    site: *const vlog__site,
    entry: usize,
    backtrace_wanted: bool,
    record: impl FnOnce(Origin) -> c_int,
) -> c_int {
    keeping_errno(|| {
        guarded(-1, || {
            let Some(origin) = site_origin(site) else {
                return -1;
            };
            // None for a call nested in a signal handler: it is dropped.
            let wanted = (backtrace_wanted || site_marked(site)) && !logger::inside();
            let taken = backtrace(wanted, entry);
            let frames = taken.as_ref().map(Taken::bytes);
            record(Origin { frames, ..origin })
        })
    })
}

/// Whether a `bt:` filter marked `site` (non-NULL: `site_origin` said so).
fn site_marked(site: *const vlog__site) -> bool {
    // SAFETY: non-NULL, a macro's site per the contract.
    let (_, s) = unsafe { site_arg(site) };
    s.state.load(std::sync::atomic::Ordering::Relaxed) & SITE_BACKTRACE != 0
}

/// Where call site `site`'s message comes from (None for NULL), counted as
/// one of its recorded calls.
pub(super) fn site_origin<'a>(site: *const vlog__site) -> Option<Origin<'a>> {
    if site.is_null() {
        return None;
    }
    // SAFETY: non-NULL, a macro's site per the contract.
    let (live, s) = unsafe { site_arg(site) };
    s.recorded
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = s.described();
    Some(Origin {
        source: site_source(s),
        site: Some(live),
        file: d.file,
        line: d.line,
        func: d.func,
        frames: None,
    })
}
