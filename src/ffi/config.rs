//! Configuration calls: each parses its whole argument first and changes
//! everything or nothing; a refusal is -1 with `vlog_last_error()` naming
//! the bad token.

use std::ffi::{c_char, c_int, c_void};

use super::{
    cancellation_point, config_call, config_str, guarded, in_call, last_error_ptr, no_cancel,
};
use crate::error::ConfigError;
use crate::logger;
use crate::priority::Priority;

/// Sets the default level: the lowest priority recorded for sources that no
/// filter matches (1-4; other values fail). Every source's cached level is
/// updated, and the default stderr output (when no outputs were set) follows
/// the new level. Returns 0, or -1 with `vlog_last_error()` set and nothing
/// changed.
/// NULL: takes no pointer; ownership: nothing kept; errors: -1 and
/// vlog_last_error(); async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_set_level(level: c_int) -> c_int {
    no_cancel!(|| {
        config_call(|| {
            let level = Priority::from_number(level.max(0) as u64).ok_or_else(|| {
                ConfigError::new(format!("invalid level {level}: use 1 (debug) to 4 (error)"))
            })?;
            logger::config_call::configure(|s| {
                s.set_level(level);
                Ok(())
            })
        })
    })
}

/// Replaces the filters with `filters`, in `VLOG_FILTERS` syntax (libvirt's:
/// space-separated `[+]PRIO:MATCH`, and matches on call sites:
/// `PRIO:file=NAME[:LINE]`, `PRIO:func=NAME`, `PRIO:id=ID`; the first
/// filter that matches a site decides; "" removes all filters). The whole
/// string is parsed first: on any bad token it returns -1,
/// `vlog_last_error()` names the token, and the previous filters stay in
/// force. Returns 0 on success.
/// NULL: an error (-1); ownership: the string is not kept; errors: -1 and
/// vlog_last_error(); async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_set_filters(filters: *const c_char) -> c_int {
    no_cancel!(|| {
        config_call(|| {
            // SAFETY: NULL or a NUL-terminated string, per the API contract.
            let spec = unsafe { config_str(filters, "filters") }?;
            logger::config_call::configure(|s| s.set_filters(spec))
        })
    })
}

/// Has `watcher(lowest, arg)` called now and after every change of the
/// levels (vlog_init, vlog_set_level, vlog_set_filters, vlog_set_outputs,
/// vlog_shutdown, the control socket, the configuration file read again),
/// `lowest` changed or not, for a cache of vlog's levels kept outside it
/// that decides whether a call reaches vlog at all, and asks vlog again
/// on each change: the Rust bridge keeps `log`'s max level and
/// `tracing`'s interest with it (vlog(7), RUST). `lowest` is the lowest
/// priority any source's records are kept at, the default level's or a
/// source filter's (1, debug, to 4, error; 5: none; 0: unknown, vlog is
/// not running: ask it each time). A watcher is called on the
/// thread that made the change, after vlog let go of its lock and left (it
/// may call vlog), never two calls at once: a change made while another
/// thread calls the watchers is told by that thread, which goes round again
/// with the newest value (so the first call may come from there, just after
/// this one returns). Watchers stay for the process's life, at most 16.
/// Returns 0, or -1 with `vlog_last_error()` set (all 16 taken, or called
/// from inside vlog on this thread, as from a signal handler).
/// NULL: `watcher` NULL is an error (-1), `arg` is passed as it is;
/// ownership: `arg` stays the caller's, never read by vlog, and `watcher`
/// must stay loaded; errors: -1 and vlog_last_error(); async-signal-safe:
/// no.
#[no_mangle]
pub extern "C-unwind" fn vlog_watch_levels(
    watcher: Option<extern "C" fn(lowest: c_int, arg: *mut c_void)>,
    arg: *mut c_void,
) -> c_int {
    no_cancel!(|| {
        config_call(|| {
            let watcher = watcher.ok_or_else(|| ConfigError::new("a NULL watcher"))?;
            logger::config_call::configure(|s| {
                s.ensure_init();
                if logger::watchers::add(watcher, arg) {
                    Ok(())
                } else {
                    Err(ConfigError::new(format!(
                        "{} watchers already: no more are taken",
                        logger::watchers::MAX_WATCHERS
                    )))
                }
            })
        })
    })
}

/// Sets what an error brings with it, in `VLOG_CONTEXT` syntax:
/// `N[/SECONDS] [all-threads] [off:MATCH] [off:file=NAME[:LINE]]
/// [off:func=NAME]`. An output that prints an error first prints up to N
/// records that came before it in the ring and that the output did not
/// print (by default the erring thread's since its last context; 0: none),
/// at most one context per error site every SECONDS (60), none for an
/// error whose source matches an `off:` MATCH or whose file, line or
/// function is named. The whole string is parsed first: on a bad token it
/// returns -1, `vlog_last_error()` names it, and the context in force
/// stays. Returns 0 on success.
/// NULL: an error (-1); ownership: the string is not kept; errors: -1 and
/// vlog_last_error(); async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_set_context(context: *const c_char) -> c_int {
    no_cancel!(|| {
        config_call(|| {
            // SAFETY: NULL or a NUL-terminated string, per the API contract.
            let spec = unsafe { config_str(context, "context") }?;
            logger::config_call::configure_writing(|s| s.set_context(spec))
        })
    })
}

/// Sets a rate limit for every call site that has none of its own, in
/// `VLOG_RATELIMIT` syntax: `[PRIO:]BURST/SECONDS` (from priority PRIO up,
/// all priorities when it is left out) or `off`. Each such site then
/// records at most BURST calls per SECONDS; the calls left out cost no
/// formatting and no copy, are counted in vlog_stats.suppressed, and the
/// site's next record says how many there were (the field
/// VLOG_SUPPRESSED). On a bad value it returns -1, `vlog_last_error()`
/// says why, and the limit in force stays. Returns 0 on success.
/// NULL: an error (-1); ownership: the string is not kept; errors: -1 and
/// vlog_last_error(); async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_set_ratelimit(ratelimit: *const c_char) -> c_int {
    no_cancel!(|| {
        config_call(|| {
            // SAFETY: NULL or a NUL-terminated string, per the API contract.
            let spec = unsafe { config_str(ratelimit, "ratelimit") }?;
            logger::config_call::configure(|s| s.set_ratelimit(spec))
        })
    })
}

/// Replaces the outputs with `outputs`, in `VLOG_OUTPUTS` syntax
/// (`PRIO:stderr`, `PRIO:file:PATH`, `PRIO:json:PATH`, `PRIO:json:stderr`,
/// `PRIO:journald`, `PRIO:syslog:IDENT`, `PRIO:syslog` (the program's own
/// syslog(3) destination), `PRIO:syslog:IDENT@udp://HOST:PORT`,
/// `PRIO:syslog:IDENT@tcp://HOST:PORT`, `PRIO:fluent:TAG@tcp://HOST:PORT`,
/// `PRIO:fluent:TAG@unix:/PATH` with options after `?`, as vlog(7) says;
/// "" restores the default, stderr at the default level). The whole string is parsed, then every file and
/// socket opened, before anything changes; on any bad token or output that
/// cannot be opened it returns -1 with `vlog_last_error()` set, and the
/// previous outputs stay in force. Returns 0 on success.
/// NULL: an error (-1); ownership: the string is not kept; errors: -1 and
/// vlog_last_error(); async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_set_outputs(outputs: *const c_char) -> c_int {
    cancellation_point!(|| {
        config_call(|| {
            // SAFETY: NULL or a NUL-terminated string, per the API contract.
            let spec = unsafe { config_str(outputs, "outputs") }?;
            logger::config_call::configure_writing(|s| s.set_outputs(spec))
        })
    })
}

/// Resizes the ring to `size` bytes (0 removes it; otherwise 16 KiB to
/// 1 GiB, rounded up to a multiple of 8). The newest records that fit are
/// carried over with their sequence numbers; the rest count as lost.
/// Returns 0, or -1 with `vlog_last_error()` set and the old ring kept.
/// NULL: takes no pointer; ownership: nothing kept; errors: -1 and
/// vlog_last_error(); async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_set_buffer_size(size: usize) -> c_int {
    no_cancel!(|| config_call(|| logger::config_call::configure_writing(
        |s| s.set_buffer_size(size)
    )))
}

/// Reopens every file output by its path, for log rotation: call it after
/// moving the files away (for example from a SIGHUP handler's deferred
/// work). A file that cannot be reopened keeps its old descriptor. Never
/// touches fd 2: whatever the program put there since (a client's socket
/// after it closed stdio) is not taken for stderr; see
/// `vlog_adopt_stderr`. Returns 0, or -1 with `vlog_last_error()` naming
/// the first failure.
/// NULL: takes no pointer; ownership: nothing kept; errors: -1 and
/// vlog_last_error(); async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_reopen() -> c_int {
    cancellation_point!(|| config_call(|| logger::config_call::configure_writing(|s| s.reopen())))
}

/// Takes fd 2 as it is now for the stderr vlog writes to (the stderr
/// output, its own warnings, crash dumps to stderr). vlog writes to fd 2
/// only while it is the file it was when vlog started; a program that
/// redirects stderr on purpose (dup2 of a log file onto fd 2) calls this
/// afterwards. Fd 2 closed means nothing is written there. Returns 0.
/// NULL: takes no pointer; ownership: nothing kept; errors: -1 only on an
/// internal error; async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_adopt_stderr() -> c_int {
    no_cancel!(|| {
        config_call(|| {
            logger::config_call::configure(|s| {
                s.adopt_stderr();
                Ok(())
            })
        })
    })
}

/// Writes every line recorded so far that vlog's writer thread has not
/// written yet (lines wait a few milliseconds for it; errors never do),
/// then sends a fluent output's batches, waiting while the receiver takes
/// them (at most a second without progress, five in all; other threads log
/// on meanwhile, vlog's lock is not held while it waits). Then file outputs
/// are made durable (fdatasync, also without vlog's lock: logging goes on
/// while the disk takes it). Call it before `_exit(2)`, which skips the exit
/// handler that does the same. Returns 0, or -1 with `vlog_last_error()`
/// set.
/// NULL: takes no pointer; ownership: nothing kept; errors: -1 and
/// vlog_last_error(); async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_flush() -> c_int {
    cancellation_point!(|| {
        config_call(|| {
            logger::ticker::drain(logger::ticker::Drain::Asked);
            logger::apply::flush()
        })
    })
}

/// The message of the calling thread's last failed vlog call ("" if none).
/// NULL: never returns NULL; ownership: the string belongs to vlog and stays
/// valid until the thread's next failing call (copy it to keep it); errors:
/// none; async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_last_error() -> *const c_char {
    in_call!(|| { guarded(c"internal error".as_ptr(), last_error_ptr) })
}
