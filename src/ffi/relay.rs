//! A child process's output relayed into vlog: `vlog_relay_*`. The relay
//! itself is `crate::relay`; this module owns its memory and its lock, and
//! keeps a signal handler that feeds a relay its own thread is feeding from
//! waiting for itself.

use std::cell::Cell;
use std::ffi::{c_char, c_int, CStr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::{cancellation_point, guarded, in_call, no_cancel, set_last_error};
use crate::priority::Priority;
use crate::relay::watch::Watch;
use crate::relay::{self, Relay};
use crate::sys::{self, keeping_errno};

/// A relay: what a child process writes (its stderr, a pipe), recorded line
/// by line as messages of one source. Made by `vlog_relay_new`, freed by
/// `vlog_relay_close`; opaque.
#[allow(non_camel_case_types)] // its C name
pub struct vlog_relay {
    relay: Arc<Mutex<Relay>>,
    /// The thread reading a descriptor into it (`vlog_relay_watch`).
    watch: Mutex<Option<Watch>>,
    /// Calls dropped because this thread was inside a relay call already.
    nested: AtomicU64,
    /// The process that made it: in a forked child the lock may be held by
    /// a thread the child does not have, so the child leaves it alone.
    pid: u32,
}

/// What a relay has seen and done (`vlog_relay_get_stats`).
#[repr(C)]
#[derive(Default)]
pub struct vlog_relay_stats {
    /// Bytes fed.
    pub bytes: u64,
    /// Lines ended (a line cut into pieces counts once).
    pub lines: u64,
    /// Pieces of lines longer than VLOG_MESSAGE_MAX, each recorded with the
    /// field FRAGMENT=1, 2, ...
    pub fragments: u64,
    /// Messages recorded.
    pub recorded: u64,
    /// Lines the filters dropped (the source off when the line started, or
    /// the line's level below the source's).
    pub filtered: u64,
    /// Lines the logger could not take, and feeds dropped because they were
    /// made from inside vlog on the same thread (a signal handler).
    pub dropped: u64,
    /// Lines not well formed for the form they started in (JSON that is
    /// not, a non-string `@level`, `@message` or `@timestamp`).
    pub malformed: u64,
}

/// How many of a child's last bytes `vlog_relay_tail` can give back.
#[allow(dead_code)] // read only by cbindgen and a const assert (see lib.rs)
pub const VLOG_RELAY_TAIL_MAX: usize = 4096;
const _: () = assert!(VLOG_RELAY_TAIL_MAX == relay::TAIL_MAX);

thread_local! {
    static IN_RELAY: Cell<bool> = const { Cell::new(false) };
}

/// Why a relay call was not made.
enum Refused {
    /// This thread is inside a relay call already (a signal handler that
    /// interrupted one); counted as dropped.
    Nested,
    /// This process is a fork of the one that made the relay.
    Forked,
}

impl Refused {
    /// Says why, as the error of a call of `function`.
    fn say(&self, function: &str) {
        set_last_error(&match self {
            Refused::Nested => format!(
                "{function}: called from inside a relay call on the same thread \
                 (a signal handler); dropped"
            ),
            Refused::Forked => format!(
                "{function}: the relay belongs to the process that made it, and this \
                 is a fork of it"
            ),
        });
    }
}

/// This thread inside a relay call, until dropped.
struct Inside;

impl Drop for Inside {
    fn drop(&mut self) {
        IN_RELAY.with(|inside| inside.set(false));
    }
}

/// Enters a relay call unless this process is not the one that made the
/// relay, or this thread is inside a relay call already (counted as
/// dropped).
fn enter(r: &vlog_relay) -> Result<Inside, Refused> {
    if sys::process_id() != r.pid {
        return Err(Refused::Forked);
    }
    if IN_RELAY.with(|inside| inside.replace(true)) {
        r.nested.fetch_add(1, Ordering::Relaxed);
        return Err(Refused::Nested);
    }
    Ok(Inside)
}

/// Runs `f` on the relay from a relay call already entered.
fn with_relay_entered<R>(r: &vlog_relay, f: impl FnOnce(&mut Relay) -> R) -> R {
    let mut relay = r.relay.lock().unwrap_or_else(|p| p.into_inner());
    f(&mut relay)
}

/// Runs `f` on the relay, inside a relay call (see [`enter`]).
fn with_relay<R>(r: &vlog_relay, f: impl FnOnce(&mut Relay) -> R) -> Result<R, Refused> {
    let _inside = enter(r)?;
    let mut relay = r.relay.lock().unwrap_or_else(|p| p.into_inner());
    Ok(f(&mut relay))
}

/// Makes a relay that records what it is fed as messages of the source
/// named `source` (filters apply to it as to any source: `1:child.qemu`),
/// a line that names no level of its own at `default_prio` (clamped to
/// 1..4). The name has 1 to 255 bytes, no spaces or control characters. Which
/// line forms are read (hclog JSON, go-plugin's `[LEVEL]` prefixes, `<N>`
/// syslog prefixes, vlog's and libvirt's text lines) and what each becomes
/// is in vlog(3). Allocates about 30 KiB once; feeding never allocates.
/// A relay belongs to the process that made it: in a forked child, calls
/// on it fail, and `vlog_relay_close` frees the child's copy.
/// NULL: `source` NULL is an error; ownership: the name is copied, and the
/// relay is the caller's until `vlog_relay_close`; errors: NULL, with
/// vlog_last_error set; async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_relay_new(
    source: *const c_char,
    default_prio: c_int,
) -> *mut vlog_relay {
    in_call!(|| {
        crate::control::install();
        keeping_errno(|| {
            guarded(std::ptr::null_mut(), || {
                if source.is_null() {
                    set_last_error("vlog_relay_new: the source name is NULL");
                    return std::ptr::null_mut();
                }
                // SAFETY: non-NULL and NUL-terminated per the API contract.
                let name = unsafe { CStr::from_ptr(source) }.to_bytes();
                match Relay::new(name, Priority::clamped(default_prio)) {
                    Ok(relay) => Box::into_raw(Box::new(vlog_relay {
                        relay: Arc::new(Mutex::new(relay)),
                        watch: Mutex::new(None),
                        nested: AtomicU64::new(0),
                        pid: sys::process_id(),
                    })),
                    Err(relay::NotMade(why)) => {
                        set_last_error(&format!("vlog_relay_new: {why}"));
                        std::ptr::null_mut()
                    }
                }
            })
        })
    })
}

/// Feeds the relay `len` bytes at `buf`, as they came from the child (any
/// bytes, any split: a line may come in many calls, and many lines in
/// one). Each line that ends is recorded (or filtered) before this returns;
/// a line longer than VLOG_MESSAGE_MAX is recorded in pieces. errno is left
/// as it was.
/// NULL: `relay` NULL, or `buf` NULL with `len` above 0, is an error;
/// ownership: the bytes are copied or recorded, nothing kept; errors: -1
/// with vlog_last_error set, also when called from inside a relay call on
/// the same thread (a signal handler; the bytes are dropped and counted)
/// and in a forked child (a relay is its maker's); async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_relay_feed(
    relay: *mut vlog_relay,
    buf: *const c_char,
    len: usize,
) -> c_int {
    no_cancel!(|| {
        keeping_errno(|| {
            guarded(-1, || {
                // SAFETY: a relay from vlog_relay_new not yet closed, per the
                // API contract (NULL checked).
                let Some(r) = (unsafe { relay.as_ref() }) else {
                    set_last_error("vlog_relay_feed: the relay is NULL");
                    return -1;
                };
                if buf.is_null() && len > 0 {
                    set_last_error("vlog_relay_feed: the buffer is NULL");
                    return -1;
                }
                let bytes: &[u8] = if len == 0 {
                    &[]
                } else {
                    // SAFETY: non-NULL, `len` readable bytes per the contract.
                    unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) }
                };
                match with_relay(r, |relay| relay.feed(bytes)) {
                    Ok(()) => 0,
                    Err(why) => {
                        why.say("vlog_relay_feed");
                        -1
                    }
                }
            })
        })
    })
}

/// Sets field `key` to the string `value` on every record this relay makes
/// from now on (a job's or a request's id for the child's lines), or
/// removes it when `value` is NULL; as vlog_thread_field_set does for a
/// thread, with the same rules and limits (8 fields, 512 bytes of values),
/// for the lines a watching thread of vlog's records too. A child's own
/// field of the same name is left out (counted in bad_fields): the
/// daemon's word wins. Returns 0, or -1 with vlog_last_error set and
/// nothing changed.
/// NULL: `relay` or `key` NULL is an error, `value` NULL removes the
/// field; ownership: both copied, nothing kept; errors: -1 with
/// vlog_last_error set, also from inside a relay call on the same thread
/// and in a forked child; async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_relay_field_set(
    relay: *mut vlog_relay,
    key: *const c_char,
    value: *const c_char,
) -> c_int {
    no_cancel!(|| {
        guarded(-1, || {
            // SAFETY: a relay from vlog_relay_new not yet closed, per the
            // API contract (NULL checked).
            let Some(r) = (unsafe { relay.as_ref() }) else {
                set_last_error("vlog_relay_field_set: the relay is NULL");
                return -1;
            };
            if key.is_null() {
                set_last_error("vlog_relay_field_set: the key is NULL");
                return -1;
            }
            // SAFETY: NUL-terminated strings per the contract, read now.
            let key = unsafe { std::ffi::CStr::from_ptr(key) }.to_bytes();
            // SAFETY: as above; NULL removes.
            let value = (!value.is_null()).then(|| unsafe { std::ffi::CStr::from_ptr(value) });
            let value = value.map(|v| crate::fields::Value::Str(v.to_bytes()));
            match with_relay(r, |relay| relay.set_field(key, value)) {
                Ok(Ok(())) => 0,
                Ok(Err(why)) => {
                    set_last_error(why.why());
                    -1
                }
                Err(why) => {
                    why.say("vlog_relay_field_set");
                    -1
                }
            }
        })
    })
}

/// Copies the last bytes the child wrote into `buf`, oldest first: as many
/// as fit in `len`, at most VLOG_RELAY_TAIL_MAX, whatever became of their
/// lines (the text that says why a child failed). Returns how many.
/// NULL: `relay` NULL, or `buf` NULL, gives 0; ownership: the bytes are
/// the caller's, not NUL-terminated; errors: none (0, also from inside a
/// relay call on the same thread, and in a forked child); async-signal-safe:
/// no.
#[no_mangle]
pub extern "C-unwind" fn vlog_relay_tail(
    relay: *const vlog_relay,
    buf: *mut c_char,
    len: usize,
) -> usize {
    in_call!(|| {
        keeping_errno(|| {
            guarded(0, || {
                // SAFETY: as in vlog_relay_feed.
                let Some(r) = (unsafe { relay.as_ref() }) else {
                    return 0;
                };
                if buf.is_null() {
                    return 0;
                }
                // SAFETY: non-NULL, `len` writable bytes per the contract.
                let out = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len) };
                with_relay(r, |relay| relay.tail(out)).unwrap_or(0)
            })
        })
    })
}

/// Fills `stats` with the relay's counters. Returns 0, or -1.
/// NULL: `relay` or `stats` NULL is an error; ownership: `stats` is the
/// caller's; errors: -1 with vlog_last_error set, also from inside a relay
/// call on the same thread; async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_relay_get_stats(
    relay: *const vlog_relay,
    stats: *mut vlog_relay_stats,
) -> c_int {
    in_call!(|| {
        keeping_errno(|| {
            guarded(-1, || {
                // SAFETY: as in vlog_relay_feed; `stats` NULL or writable.
                let (Some(r), Some(out)) = (unsafe { relay.as_ref() }, unsafe { stats.as_mut() })
                else {
                    set_last_error("vlog_relay_get_stats: the relay or the stats is NULL");
                    return -1;
                };
                let s = match with_relay(r, |relay| relay.stats()) {
                    Ok(s) => s,
                    Err(why) => {
                        why.say("vlog_relay_get_stats");
                        return -1;
                    }
                };
                *out = vlog_relay_stats {
                    bytes: s.bytes,
                    lines: s.lines,
                    fragments: s.fragments,
                    recorded: s.recorded,
                    filtered: s.filtered,
                    dropped: s.dropped + r.nested.load(Ordering::Relaxed),
                    malformed: s.malformed,
                };
                0
            })
        })
    })
}

/// Reads `fd` into the relay on a thread of vlog's own, with every signal
/// blocked, until end of file or a read error: for a daemon without an
/// event loop of its own. The thread reads a duplicate of `fd` (close-on-
/// exec, never 0, 1 or 2), so the caller may close `fd` at once; a relay
/// reads at most one descriptor, and feeding it meanwhile interleaves with
/// the thread's lines.
/// NULL: `relay` NULL is an error; ownership: `fd` stays the caller's;
/// errors: -1 with vlog_last_error set (`fd` not open, a second descriptor,
/// no thread to be had or `VLOG_WRITER=caller`, from inside a relay call on the same thread, in a
/// forked child); async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_relay_watch(relay: *mut vlog_relay, fd: c_int) -> c_int {
    no_cancel!(|| {
        keeping_errno(|| {
            guarded(-1, || {
                // SAFETY: as in vlog_relay_feed.
                let Some(r) = (unsafe { relay.as_ref() }) else {
                    set_last_error("vlog_relay_watch: the relay is NULL");
                    return -1;
                };
                let _inside = match enter(r) {
                    Ok(inside) => inside,
                    Err(why) => {
                        why.say("vlog_relay_watch");
                        return -1;
                    }
                };
                // Asked before the relay's lock is taken: the logger's is
                // never taken under it.
                let allowed = crate::logger::config_call::configure(|s| {
                    s.ensure_init();
                    s.thread_allowed("vlog_relay_watch")
                });
                if let Err(e) = allowed {
                    set_last_error(&e.message);
                    return -1;
                }
                let mut slot = r.watch.lock().unwrap_or_else(|p| p.into_inner());
                if slot.is_some() {
                    set_last_error("vlog_relay_watch: the relay reads a descriptor already");
                    return -1;
                }
                match Watch::start(Arc::clone(&r.relay), fd) {
                    Ok(w) => {
                        *slot = Some(w);
                        0
                    }
                    Err(e) => {
                        set_last_error(&format!(
                            "vlog_relay_watch: cannot read descriptor {fd}: {e}"
                        ));
                        -1
                    }
                }
            })
        })
    })
}

/// Records what is left of a last line that did not end, and frees the
/// relay; its source leaves the registry. A thread reading a descriptor
/// (`vlog_relay_watch`) first takes what the descriptor has now (at most 1
/// MiB), without waiting for more, and ends.
/// NULL: ignored; ownership: `relay` is invalid afterwards; errors: none
/// (from inside a relay call on the same thread the relay is left as it
/// is, still the caller's; in a forked child its copy is freed, the last
/// line left to the parent); async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_relay_close(relay: *mut vlog_relay) {
    cancellation_point!(|| {
        keeping_errno(|| {
            guarded((), || {
                if relay.is_null() {
                    return;
                }
                // SAFETY: as in vlog_relay_feed.
                let r = unsafe { &*relay };
                let watch = || r.watch.lock().unwrap_or_else(|p| p.into_inner()).take();
                match enter(r) {
                    Ok(_inside) => {
                        // The thread takes what the descriptor has now and
                        // records a last unfinished line.
                        if let Some(w) = watch() {
                            w.stop();
                        }
                        with_relay_entered(r, Relay::finish);
                    }
                    // A fork's copy: freed without taking its locks (which a
                    // thread the child does not have may hold, its reader
                    // among them); its last line is the parent's to record.
                    Err(Refused::Forked) => {
                        if let Ok(mut slot) = r.watch.try_lock() {
                            if let Some(w) = slot.take() {
                                w.abandon();
                            }
                        }
                    }
                    Err(Refused::Nested) => return,
                }
                // SAFETY: made by Box::into_raw in vlog_relay_new, and the
                // caller gives it up now (no call of this thread is inside
                // it: with_relay just said so).
                drop(unsafe { Box::from_raw(relay) });
            })
        })
    })
}
