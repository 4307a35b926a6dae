//! syslog(3) taken over: what the C part of libvlog-syslog.so
//! (`preload/vlog-syslog.c`, which defines `openlog`, `syslog`,
//! `__syslog_chk` and the rest in front of glibc's) reads and calls. The
//! C part checks the mask and the source's level inline, before it
//! formats anything, and hands over finished messages.
//!
//! The statics are declared by the C part itself, not by `vlog.h`: they
//! are nobody else's business.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicI32, AtomicPtr, Ordering};

use super::{config_call, guarded, in_call, may_act_anywhere, no_cancel};
use crate::logger::{self, emit::Outcome};
use crate::preload;
use crate::source::{vlog_source, Live};
use crate::sys::{self, keeping_errno, syslog as openlog};

/// Internal, for libvlog-syslog.so: setlogmask(3)'s mask (LOG_UPTO(7)
/// until the program sets one).
#[no_mangle]
#[allow(non_upper_case_globals)]
pub static vlog__syslog_mask: AtomicI32 = AtomicI32::new(0xff);

/// Internal, for libvlog-syslog.so: the source of the ident in force
/// (NULL until the library starts); every source stored here lives for
/// ever.
#[no_mangle]
#[allow(non_upper_case_globals)]
pub static vlog__syslog_source: AtomicPtr<vlog_source> = AtomicPtr::new(std::ptr::null_mut());

/// Internal, for libvlog-syslog.so: vlog's priority for each syslog
/// severity, 0 (emergency) to 7 (debug).
#[no_mangle]
#[allow(non_upper_case_globals)]
pub static vlog__syslog_priority: [c_int; 8] = preload::PRIORITIES;

fn use_source(source: Live) {
    vlog__syslog_source.store(
        std::ptr::from_ref(source.get()).cast_mut(),
        Ordering::Release,
    );
}

/// Internal, for libvlog-syslog.so's constructor: marks the process as one
/// whose syslog(3) calls vlog takes (the defaults become the preload's:
/// every message recorded, and sent on where glibc would have sent it),
/// then starts vlog as `vlog_init` does: the environment read, the ring
/// made, the crash handler installed. Returns 0, or 1 in a setuid/setgid
/// process (AT_SECURE), where the library only passes messages on to
/// glibc and vlog is not started.
/// NULL: takes no pointer; ownership: nothing kept; errors: bad variables
/// warned about on stderr, as vlog_init; async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog__syslog_start() -> c_int {
    if sys::secure_mode() {
        return 1;
    }
    crate::control::install();
    no_cancel!(|| {
        openlog::mark_preloaded();
        guarded((), || {
            if let Some(source) = preload::source_for(openlog::program_name_bytes()) {
                use_source(source);
            }
        });
        let _ = config_call(|| {
            logger::config_call::configure(|s| {
                s.ensure_init();
                Ok(())
            })
        });
        0
    })
}

/// Internal, for libvlog-syslog.so's openlog(3): keeps `ident` (the
/// pointer, as glibc does: its bytes are read at each message), `option`
/// and `facility` with glibc's rules, and makes the ident's source the
/// one messages are recorded under.
/// Nothing here waits: a call from a signal handler that interrupted
/// another keeps the source in force. An ident seen before takes no lock
/// and allocates nothing; a new one allocates its source once (malloc).
/// NULL: `ident` NULL keeps the ident in force; ownership: `ident` must
/// stay valid until the next openlog or closelog, as for glibc; errors:
/// none (a source that cannot be made now leaves the one before);
/// async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog__syslog_openlog(
    ident: *const c_char,
    option: c_int,
    facility: c_int,
) {
    in_call!(|| {
        keeping_errno(|| {
            guarded((), || {
                openlog::openlog(ident, option, facility);
                if !ident.is_null() {
                    // SAFETY: a non-NULL ident is a NUL-terminated string, per
                    // openlog's contract.
                    let name = unsafe { CStr::from_ptr(ident) }.to_bytes();
                    if let Some(source) = preload::source_for(name) {
                        use_source(source);
                    }
                }
            })
        })
    })
}

/// Internal, for libvlog-syslog.so's closelog(3): forgets the ident, as
/// glibc does (messages are then the program's name's).
/// NULL: takes no pointer; ownership: the ident is no longer read;
/// errors: none; async-signal-safe: yes.
#[no_mangle]
pub extern "C-unwind" fn vlog__syslog_closelog() {
    in_call!(|| {
        keeping_errno(|| {
            guarded((), || {
                openlog::closelog();
                if let Some(source) = preload::source_for(openlog::program_name_bytes()) {
                    use_source(source);
                }
            })
        })
    })
}

/// Internal, for libvlog-syslog.so's setlogmask(3): sets the mask unless
/// `mask` is 0, and returns the one before, as glibc does.
/// NULL: takes no pointer; ownership: nothing kept; errors: none;
/// async-signal-safe: yes.
#[no_mangle]
pub extern "C" fn vlog__syslog_setlogmask(mask: c_int) -> c_int {
    if mask == 0 {
        vlog__syslog_mask.load(Ordering::Relaxed)
    } else {
        vlog__syslog_mask.swap(mask, Ordering::Relaxed)
    }
}

/// Internal, for libvlog-syslog.so's sigaction(2) and signal(2): when vlog
/// holds `sig` (a fatal signal its crash handler took), the program's handler
/// `act` (a `struct sigaction`) becomes the one vlog calls after its
/// dump, `old` gets the
/// program's previous one, and 1 is returned; otherwise 0, and the call is
/// the kernel's to make.
/// NULL: `act` NULL only asks, `old` NULL is not written; ownership:
/// `*act` is copied; errors: none (0); async-signal-safe: yes.
#[no_mangle]
pub extern "C-unwind" fn vlog__syslog_sigaction(
    sig: c_int,
    act: *const c_void,
    old: *mut c_void,
) -> c_int {
    in_call!(|| {
        // SAFETY: NULL or valid `struct sigaction` pointers (void here, so the
        // header needs no <signal.h>), per the contract of sigaction(2) that
        // the C part forwards.
        c_int::from(unsafe { crate::crash::adopt::adopt(sig, act.cast(), old.cast()) })
    })
}

/// Internal, for libvlog-syslog.so's syslog(3) and its other forms:
/// records a message the mask and the filters let through, already
/// formatted: `len` bytes at `msg`, `full_len` the length before it was
/// cut. `pri` is the call's (a facility of 0 is openlog's), kept in the
/// fields SYSLOG_FACILITY and SYSLOG_SEVERITY; the record's priority is
/// the severity's (see vlog-syslog(7)). Returns 1 if recorded, 0 if not (a
/// filter, or a call from a signal handler that interrupted vlog on this
/// thread, which is counted), -1 on an internal error. errno is left as it
/// was. Not async-signal-safe, as glibc's syslog is not, but a call from a
/// signal handler that interrupted vlog on this thread is dropped and
/// counted, never waited for.
/// NULL: `msg` is "(null)"; ownership: the bytes are copied; errors: -1,
/// never errno; async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog__syslog_write(
    pri: c_int,
    msg: *const c_char,
    len: usize,
    full_len: usize,
) -> c_int {
    // As vlog_write_fields: only a thread whose cancellation could act at
    // any instruction needs it off for the whole call; the outputs turn it
    // off around their writes themselves.
    if may_act_anywhere() {
        return no_cancel!(|| write(pri, msg, len, full_len));
    }
    in_call!(body write(pri, msg, len, full_len))
}

/// The body of [`vlog__syslog_write`].
#[inline(never)]
fn write(pri: c_int, msg: *const c_char, len: usize, full_len: usize) -> c_int {
    keeping_errno(|| {
        guarded(-1, || {
            let pri = if pri & openlog::FACILITY_MASK == 0 {
                pri | openlog::facility()
            } else {
                pri
            };
            let text: &[u8] = if msg.is_null() {
                b"(null)"
            } else {
                // SAFETY: the caller passes `len` readable bytes at `msg`.
                unsafe { std::slice::from_raw_parts(msg.cast::<u8>(), len) }
            };
            let source = vlog__syslog_source.load(Ordering::Acquire);
            let source = if source.is_null() {
                Live::default_source()
            } else {
                // SAFETY: only `use_source` stores here, and only sources
                // of `preload::source_for`, which are kept for ever.
                unsafe { Live::new(&*source) }
            };
            c_int::from(preload::record(source, pri, text, full_len) == Outcome::Recorded)
        })
    })
}
