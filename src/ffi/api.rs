//! The exported C API. cbindgen copies these doc comments into vlog_gen.h.

// These functions are called from C, where `unsafe` means nothing; each one
// checks its pointers for NULL and documents what else it trusts.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use std::ffi::{c_char, c_int};

use crate::ffi::{config_call, config_str, guarded, last_error_ptr};
use crate::logger;
use crate::priority::Priority;
use crate::source::{vlog_default_source, vlog_source, UNKNOWN};
use crate::sys::keeping_errno;

/// Debug messages: the most verbose priority.
pub const VLOG_PRIO_DEBUG: c_int = 1;
/// Informational messages.
pub const VLOG_PRIO_INFO: c_int = 2;
/// Warnings: the default level.
pub const VLOG_PRIO_WARN: c_int = 3;
/// Errors: the least verbose priority.
pub const VLOG_PRIO_ERROR: c_int = 4;
/// The longest message kept whole, in bytes. Longer messages are cut to this
/// length, ending with ` [truncated: N bytes]` where N is the full length.
pub const VLOG_MESSAGE_MAX: usize = 8192;
const _: () = assert!(VLOG_MESSAGE_MAX == crate::record::MESSAGE_MAX);

/// Counters of the ring, filled by `vlog_get_stats`.
#[repr(C)]
pub struct vlog_stats {
    /// Size of the ring's data area in bytes; 0 when there is no ring.
    pub buffer_size: u64,
    /// Records ever written to the ring (the next sequence number).
    pub records: u64,
    /// Records overwritten by newer ones (or left out when the ring was resized).
    pub lost: u64,
    /// Messages dropped because they were logged while the same thread was
    /// already inside vlog (for example from a signal handler).
    pub dropped_nested: u64,
    /// Lines that an output could not write (a full disk, a reader gone, a
    /// full pipe, fd 2 closed); the messages are still in the ring.
    pub output_lines_lost: u64,
    /// Structured fields whose name was not valid (kept as
    /// VLOG_BAD_FIELD_NAME).
    pub bad_fields: u64,
}

pub(crate) fn source_or_default<'a>(src: *const vlog_source) -> &'a vlog_source {
    if src.is_null() {
        &vlog_default_source
    } else {
        // SAFETY: a non-NULL source is a live vlog_source per the API contract
        // (declared with VLOG_INIT or VLOG_SOURCE_INITIALIZER).
        unsafe { &*src }
    }
}

/// Reads the environment (`VLOG_LEVEL`, `VLOG_FILTERS`, `VLOG_OUTPUTS`,
/// `VLOG_BUFFER_SIZE`, `VLOG_DUMP`, `VLOG_DUMP_SIGNAL`) and sets up the ring
/// and outputs, then installs the crash handler unless `VLOG_DUMP=off` (see
/// `vlog_install_crash_handler`). Idempotent: only the first call (or the
/// first log call, which initialises lazily but installs no signal handler)
/// reads the environment. A bad variable prints one warning line on stderr naming it and
/// keeps that variable's default. In a setuid/setgid process the environment is
/// ignored. Returns 0 (-1 only on an internal error; see `vlog_last_error`).
/// Not async-signal-safe.
#[no_mangle]
pub extern "C" fn vlog_init() -> c_int {
    config_call(|| {
        logger::with_state(|s| {
            if let Err(e) = s.install_crash_handler(false) {
                logger::warn(&format!("no crash dumps: {e}"));
            }
        });
        Ok(())
    })
}

/// Registers `src` (NULL: the default source) if it is not yet known, and returns
/// 1 if a message of priority `prio` from it is recorded, else 0. The header's
/// macros and `vlog()` call this only when the inline check cannot decide.
/// `prio` outside 1..4 is clamped. Registering initialises vlog lazily.
/// `src` must stay valid until `vlog_source_unregister(src)`. errno is left
/// as it was. Not async-signal-safe.
#[no_mangle]
pub extern "C" fn vlog_source_enabled(src: *const vlog_source, prio: c_int) -> c_int {
    keeping_errno(|| {
        guarded(0, || {
            let source = source_or_default(src);
            let mut level = source.level();
            if level == UNKNOWN {
                // SAFETY: the caller keeps the source alive until it unregisters it.
                level = unsafe { logger::register(source) };
            }
            c_int::from(Priority::clamped(prio) as c_int >= level)
        })
    })
}

/// 1 if `fmt` may be handed to printf, 0 if it has a `%n` conversion (which
/// would write through an argument: vlog never lets that run) or is NULL. The
/// header calls this before every vsnprintf. Async-signal-safe.
#[no_mangle]
pub extern "C" fn vlog_format_is_safe(fmt: *const c_char) -> c_int {
    if fmt.is_null() {
        return 0;
    }
    guarded(0, || {
        // SAFETY: non-NULL and NUL-terminated per the contract.
        let bytes = unsafe { std::ffi::CStr::from_ptr(fmt) }.to_bytes();
        c_int::from(!crate::printf::writes_back(bytes))
    })
}

/// Forgets `src`, so the library no longer updates it. `VLOG_INIT` calls this
/// from a destructor, so a source in a library that is dlclose'd leaves nothing
/// behind. NULL and unknown sources are ignored. Not async-signal-safe.
#[no_mangle]
pub extern "C" fn vlog_source_unregister(src: *const vlog_source) {
    if src.is_null() {
        return;
    }
    guarded((), || {
        let source = source_or_default(src);
        logger::with_state(|s| s.unregister(source));
    })
}

/// Records a finished message of `len` bytes at `msg` (it need not be
/// NUL-terminated and may contain any bytes) if the filters select it: into the
/// ring, and to every output whose priority it meets, each line with one
/// write(2). `full_len` is the length the message had before the caller cut it
/// (pass `len` when it is whole); a message cut short, or longer than
/// VLOG_MESSAGE_MAX, is stored with a ` [truncated: N bytes]` marker.
/// NULL `src` means the default source; NULL `file`, `func` or `msg` are logged
/// as empty, "?" or "(null)". `prio` outside 1..4 is clamped. Returns 1 if the
/// message was recorded, 0 if the filters dropped it (or it was logged from
/// inside vlog on the same thread, as from a signal handler, and dropped to
/// avoid a deadlock), -1 on an internal error. errno is left as it was (an
/// output's failure is reported once on vlog's diagnostics instead). Never
/// allocates once running; takes one lock. Not async-signal-safe.
#[no_mangle]
pub extern "C" fn vlog_write(
    src: *const vlog_source,
    prio: c_int,
    file: *const c_char,
    line: c_int,
    func: *const c_char,
    msg: *const c_char,
    len: usize,
    full_len: usize,
) -> c_int {
    // The same message with no fields.
    crate::ffi::fields::vlog_write_fields(
        src,
        prio,
        file,
        line,
        func,
        msg,
        len,
        full_len,
        std::ptr::null(),
        0,
    )
}

/// Sets the default level: the lowest priority recorded for sources that no
/// filter matches (1-4; other values fail). Every source's cached level is
/// updated, and the default stderr output (when no outputs were set) follows
/// the new level. Returns 0, or -1 with `vlog_last_error()` set and nothing
/// changed. Not async-signal-safe.
#[no_mangle]
pub extern "C" fn vlog_set_level(level: c_int) -> c_int {
    config_call(|| {
        let level = Priority::from_number(level.max(0) as u64).ok_or_else(|| {
            crate::config::ConfigError::new(format!(
                "invalid level {level}: use 1 (debug) to 4 (error)"
            ))
        })?;
        logger::with_state(|s| s.set_level(level));
        Ok(())
    })
}

/// Replaces the filters with `filters`, in `VLOG_FILTERS` syntax (libvirt's:
/// space-separated `[+]PRIO:MATCH`; "" removes all filters). The whole string is
/// parsed first: on any bad token it returns -1, `vlog_last_error()` names the
/// token, and the previous filters stay in force. NULL is an error. Returns 0 on
/// success. The string is not kept. Not async-signal-safe.
#[no_mangle]
pub extern "C" fn vlog_set_filters(filters: *const c_char) -> c_int {
    config_call(|| {
        // SAFETY: NULL or a NUL-terminated string, per the API contract.
        let spec = unsafe { config_str(filters, "filters") }?;
        logger::with_state(|s| s.set_filters(spec))
    })
}

/// Replaces the outputs with `outputs`, in `VLOG_OUTPUTS` syntax
/// (`PRIO:stderr`, `PRIO:file:PATH`; "" restores the default, stderr at the
/// default level). Files are opened (created 0600, appended to) before anything
/// changes; on any bad token or unopenable file it returns -1 with
/// `vlog_last_error()` set and the previous outputs stay in force. NULL is an
/// error. Returns 0 on success. Not async-signal-safe.
#[no_mangle]
pub extern "C" fn vlog_set_outputs(outputs: *const c_char) -> c_int {
    config_call(|| {
        // SAFETY: NULL or a NUL-terminated string, per the API contract.
        let spec = unsafe { config_str(outputs, "outputs") }?;
        logger::with_state(|s| s.set_outputs(spec))
    })
}

/// Resizes the ring to `size` bytes (0 removes it; otherwise 16 KiB to 1 GiB,
/// rounded up to a multiple of 8). The newest records that fit are carried over
/// with their sequence numbers; the rest count as lost. Returns 0, or -1 with
/// `vlog_last_error()` set and the old ring kept. Not async-signal-safe.
#[no_mangle]
pub extern "C" fn vlog_set_buffer_size(size: usize) -> c_int {
    config_call(|| logger::with_state(|s| s.set_buffer_size(size)))
}

/// The message of the calling thread's last failed vlog call ("" if none). The
/// string belongs to vlog and stays valid until the thread's next failing call;
/// copy it to keep it. Never NULL. Not async-signal-safe.
#[no_mangle]
pub extern "C" fn vlog_last_error() -> *const c_char {
    guarded(c"internal error".as_ptr(), last_error_ptr)
}

/// Writes the ring to `fd` as text lines, oldest first, in the output line
/// format. Reads without taking any lock and validates every record (commit
/// word, checksum, sequence); a damaged record is reported by a line starting
/// `vlog:` instead of being printed, as are records overwritten while the dump
/// ran. Async-signal-safe: no allocation, no lock, only write(2). Returns the
/// number of records written (0 without a ring), or -1 if a write failed
/// (errno tells why).
#[no_mangle]
pub extern "C" fn vlog_dump(fd: c_int) -> c_int {
    guarded(-1, || match crate::dump::ring_to_fd(fd) {
        Some(count) => c_int::try_from(count).unwrap_or(c_int::MAX),
        None => -1,
    })
}

/// Reopens every file output by its path, for log rotation: call it after
/// moving the files away (for example from a SIGHUP handler's deferred work).
/// A file that cannot be reopened keeps its old descriptor. Returns 0, or -1
/// with `vlog_last_error()` naming the first failure. Not async-signal-safe.
#[no_mangle]
pub extern "C" fn vlog_reopen() -> c_int {
    config_call(|| logger::with_state(|s| s.reopen()))
}

/// Every line is written with write(2) before the logging call returns, so
/// nothing is buffered in vlog; this makes file outputs durable
/// (fdatasync). Returns 0, or -1 with `vlog_last_error()` set. Not
/// async-signal-safe.
#[no_mangle]
pub extern "C" fn vlog_flush() -> c_int {
    config_call(|| logger::with_state(|s| s.flush()))
}

/// Flushes and closes the outputs, frees the ring and forgets every source:
/// vlog returns to its state before the first call, and a later call starts it
/// again from the environment. Safe to call more than once. Not
/// async-signal-safe.
#[no_mangle]
pub extern "C" fn vlog_shutdown() {
    guarded((), || logger::with_state(|s| s.shutdown()))
}

/// Fills `*stats` with the ring's and the outputs' counters. Returns 0, or -1 if `stats` is NULL.
/// Takes the lock; not async-signal-safe.
#[no_mangle]
pub extern "C" fn vlog_get_stats(stats: *mut vlog_stats) -> c_int {
    if stats.is_null() {
        crate::ffi::set_last_error("stats is NULL");
        return -1;
    }
    guarded(-1, || {
        let ring = logger::with_state(|s| s.stats());
        let out = vlog_stats {
            buffer_size: ring.size,
            records: ring.recorded,
            lost: ring.lost,
            dropped_nested: logger::nested_dropped(),
            output_lines_lost: crate::output::LINES_LOST.load(std::sync::atomic::Ordering::Relaxed),
            bad_fields: crate::ffi::fields::BAD_FIELDS.load(std::sync::atomic::Ordering::Relaxed),
        };
        // SAFETY: non-NULL, and the caller passes a writable vlog_stats.
        unsafe { stats.write(out) };
        0
    })
}
