//! Starting and stopping vlog, and what a program can ask of the library it
//! was linked with: its version, and whether it has the layout of
//! `vlog_source` and `vlog__site` that the program's header compiled in.

use std::ffi::{c_char, c_int, c_uint};
use std::sync::atomic::{AtomicBool, Ordering};

use super::{cancellation_point, config_call, guarded, no_cancel};
use crate::logger;
use crate::site::vlog__site;
use crate::source::vlog_source;

/// The library's version: major, minor, patch (the header's
/// `VLOG_VERSION_*`; `vlog_version()` gives the library's).
#[allow(dead_code)] // read only by cbindgen and a const assert (see lib.rs)
pub const VLOG_VERSION_MAJOR: c_uint = 0;
#[allow(dead_code)] // read only by cbindgen and a const assert (see lib.rs)
pub const VLOG_VERSION_MINOR: c_uint = 1;
#[allow(dead_code)] // read only by cbindgen and a const assert (see lib.rs)
pub const VLOG_VERSION_PATCH: c_uint = 0;

/// The layout of the structures the macros compile into programs
/// (`vlog_source`, `vlog__site`). A header and a library of another ABI
/// version do not work together; `VLOG_INIT` checks it when the program (or
/// the library holding it) is loaded. 2: the site keeps how much of each
/// string argument may be read. 3: the macros capture each argument as one
/// word with its type's class. 4: each site is a static known at compile
/// time (in the `vlog_sites` section), with its own level, limit and id;
/// the macros' machinery is named `vlog__`.
pub const VLOG_ABI_VERSION: c_uint = 4;

#[allow(dead_code)] // read only by cbindgen and a const assert (see lib.rs)
const fn parse(s: &str) -> c_uint {
    let b = s.as_bytes();
    let mut n = 0;
    let mut i = 0;
    while i < b.len() {
        n = n * 10 + (b[i] - b'0') as c_uint;
        i += 1;
    }
    n
}

// The header's numbers are Cargo's: one version, stated once in Cargo.toml.
const _: () = assert!(VLOG_VERSION_MAJOR == parse(env!("CARGO_PKG_VERSION_MAJOR")));
const _: () = assert!(VLOG_VERSION_MINOR == parse(env!("CARGO_PKG_VERSION_MINOR")));
const _: () = assert!(VLOG_VERSION_PATCH == parse(env!("CARGO_PKG_VERSION_PATCH")));

/// Reads the environment (the `VLOG_*` variables of vlog(7)) and sets up
/// the ring and outputs, then installs the crash handler and the dump
/// signal unless `VLOG_DUMP=off` (see `vlog_install_crash_handler`).
/// Calling it is optional: the first call of any vlog function does the
/// same, and so does the start of a program that has a `VLOG_*` variable set
/// (`VLOG_INIT`'s constructor), so a dump signal works before the first
/// message. Idempotent: only the first of these reads the environment. A bad
/// variable prints one warning line on stderr naming it and keeps that
/// variable's default; the other variables apply. In a setuid/setgid
/// process the environment is ignored. Returns 0 when everything the
/// environment asks for is in force; 1 when vlog refused some of it (a bad
/// value, a file it may not write, a ring it could not make), the rest
/// applying as without the call: `vlog_last_error()` then names the first
/// refusal (`ignoring VLOG_LEVEL: invalid level 'loud': ...`), and every
/// later `vlog_init()` says the same until `vlog_shutdown()`; -1 on an
/// internal error. Two refusals come too late for it: a `VLOG_CONTROL`
/// whose `?group=` is a name is opened by vlog's thread after the call
/// returns (its refusal is said on stderr only), and in a setuid/setgid
/// process, where every variable is ignored by design, it returns 0.
/// NULL: takes no pointer; ownership: nothing kept; errors: 1 or -1 and
/// vlog_last_error(), each refusal also warned about on stderr;
/// async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_init() -> c_int {
    cancellation_point!(|| {
        // Read inside the logger's guard: a signal handler that calls
        // vlog_init while this one reads it is turned away, never left
        // waiting for the lock this thread holds.
        let mut refused = None;
        let done = config_call(|| {
            logger::config_call::configure(|s| {
                s.ensure_init();
                refused = crate::diag::refused_at_start();
                Ok(())
            })
        });
        match refused {
            Some(why) if done == 0 => {
                super::set_last_error(&why);
                1
            }
            _ => done,
        }
    })
}

/// Closes the control socket (as `vlog_control_stop`), flushes (as
/// `vlog_flush`, a fluent output's batches sent first) and closes the
/// outputs, frees the ring and forgets every source:
/// vlog returns to its state before the first call, and a later call starts
/// it again from the environment. Safe to call more than once. Called from
/// a signal handler that interrupted vlog on the same thread, it does
/// nothing.
/// NULL: takes no pointer; ownership: sources stay their owners', and vlog
/// holds none; errors: none; async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_shutdown() {
    cancellation_point!(|| {
        guarded((), || {
            let _ = crate::control::stop();
            logger::ticker::drain(logger::ticker::Drain::Asked);
            let _ = logger::apply::flush();
            logger::enter(|s| s.shutdown());
            // The levels are unknown until vlog starts again.
            logger::watchers::tell();
        })
    })
}

/// The library's version as "MAJOR.MINOR.PATCH", which the header's
/// VLOG_VERSION_* give for the header a program was built with.
/// NULL: never returns NULL; ownership: the string belongs to vlog and lives
/// for ever; errors: none; async-signal-safe: yes.
#[no_mangle]
pub extern "C" fn vlog_version() -> *const c_char {
    const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
    VERSION.as_ptr().cast()
}

/// At the start of a program (`VLOG_INIT`'s constructor), sets vlog up if a
/// `VLOG_*` variable asks for something, so that what it asks (a dump
/// signal above all) holds before the program's first message. Once.
fn start_if_configured() {
    static LOOKED: AtomicBool = AtomicBool::new(false);
    if LOOKED.swap(true, Ordering::Relaxed) || crate::sys::secure_mode() {
        return;
    }
    let configured = guarded(false, || {
        std::env::vars_os().any(|(name, _)| name.as_encoded_bytes().starts_with(b"VLOG_"))
    });
    if configured {
        let _ = config_call(|| {
            logger::config_call::configure(|s| {
                s.ensure_init();
                Ok(())
            })
        });
    }
}

/// Internal, for VLOG_INIT: checks that the program calling it was built
/// against a header with this library's ABI: `abi` is the header's
/// VLOG_ABI_VERSION, `source_size` and `site_size` its sizeof(vlog_source)
/// and sizeof(vlog__site). Returns 0 when they match; otherwise prints one
/// line on stderr saying what to rebuild (once per process) and returns -1,
/// and `VLOG_INIT` then turns the file's source off, so a mismatched program
/// logs nothing rather than corrupting memory. `VLOG_INIT` calls this from a
/// constructor; there is no need to call it yourself.
/// NULL: takes no pointer; ownership: nothing kept; errors: -1 and one line
/// on stderr; async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_abi_check(
    abi: c_uint,
    source_size: usize,
    site_size: usize,
) -> c_int {
    no_cancel!(|| {
        let ours = (
            VLOG_ABI_VERSION,
            std::mem::size_of::<vlog_source>(),
            std::mem::size_of::<vlog__site>(),
        );
        if (abi, source_size, site_size) == ours {
            start_if_configured();
            return 0;
        }
        static REPORTED: AtomicBool = AtomicBool::new(false);
        if REPORTED.swap(true, Ordering::Relaxed) {
            return -1;
        }
        guarded(-1, || {
            crate::diag::warn(&format!(
                "this program (or a library it loaded) was built with vlog.h for ABI {abi} \
                     (vlog_source {source_size} bytes, vlog__site {site_size} bytes), but the vlog \
                     library it runs with has ABI {} ({} and {} bytes): rebuild it against the \
                     installed vlog.h; until then its messages are not logged",
                ours.0, ours.1, ours.2
            ));
            -1
        })
    })
}
