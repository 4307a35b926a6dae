//! Internal: the machinery behind the macros. The analysis of a call
//! site's format on its first recorded call, the entry that records a
//! format's arguments as the macro captured them (one 64-bit word each),
//! and the `%n` check the header makes before every vsnprintf. None of it
//! is API: the header's macros use it, and the site's layout (`vlog__site`,
//! in `crate::site`) is the ABI `vlog_abi_check` guards.

use std::ffi::{c_char, c_int, CStr};
use std::mem::MaybeUninit;
use std::sync::atomic::Ordering;

use super::backtrace;
use super::sites::{site_arg, site_source};
use super::words::{self, plan_of, string_arg, PLAN_ERRNO};
use super::{before_the_record, c_bytes, guarded, in_call, may_act_anywhere, measured, no_cancel};
use crate::deferred::{self, kind, Captured, MAX_ARGS};
use crate::fields::Names;
use crate::logger;
use crate::logger::emit::{self, Call, Message, Outcome, SiteCall};
use crate::logger::flight::{self, CallSite};
use crate::priority::Priority;
use crate::ring::sites::Site;
use crate::site::{vlog__site, LiveSite, SITE_BACKTRACE, VLOG__SITE_MAX_ARGS};
use crate::sys::keeping_errno;
use crate::text::{printf, Bounded, Sink};

/// Internal: a call site not analysed yet.
pub const VLOG__SITE_NEW: c_int = 0;
/// Internal: the call site's messages are recorded as format and arguments.
pub const VLOG__SITE_DEFERRED: c_int = 1;
/// Internal: the call site's format is one vlog does not render itself: its
/// messages are formatted at the call.
pub const VLOG__SITE_FORMAT: c_int = 2;
/// Internal: the call site's format has a `%n`: it is never handed to printf.
pub const VLOG__SITE_UNSAFE: c_int = 3;
const _: () = assert!(VLOG__SITE_MAX_ARGS == MAX_ARGS);
const _: () = assert!(
    VLOG__ARG_INT == kind::INT
        && VLOG__ARG_UINT == kind::UINT
        && VLOG__ARG_LONG == kind::LONG
        && VLOG__ARG_ULONG == kind::ULONG
        && VLOG__ARG_DOUBLE == kind::DOUBLE
        && VLOG__ARG_STRING == kind::STRING
        && VLOG__ARG_POINTER == kind::POINTER
        && VLOG__ARG_ERRNO == kind::ERRNO
        && VLOG__ARG_COUNT == kind::COUNT
);
/// Internal: the class of a captured argument's C type, as the header's
/// `_Generic` tells it at compile time (2 bits per argument in
/// `vlog__site.classes`): an integer (after the integer promotions).
pub const VLOG__CLASS_INT: u64 = 1;
/// `float` or `double`.
pub const VLOG__CLASS_DOUBLE: u64 = 2;
/// Any pointer (strings included).
pub const VLOG__CLASS_POINTER: u64 = 3;

/// Internal: how an argument is fetched with va_arg: `int`.
#[allow(dead_code)] // read only by cbindgen and a const assert (see lib.rs)
pub const VLOG__ARG_INT: u8 = 1;
/// `unsigned int`.
#[allow(dead_code)] // read only by cbindgen and a const assert (see lib.rs)
pub const VLOG__ARG_UINT: u8 = 2;
/// `long` (also `long long`, `intmax_t`, `ssize_t`, `ptrdiff_t`: all 64 bits).
#[allow(dead_code)] // read only by cbindgen and a const assert (see lib.rs)
pub const VLOG__ARG_LONG: u8 = 3;
/// `unsigned long` (also `unsigned long long`, `uintmax_t`, `size_t`).
#[allow(dead_code)] // read only by cbindgen and a const assert (see lib.rs)
pub const VLOG__ARG_ULONG: u8 = 4;
/// `double`.
#[allow(dead_code)] // read only by cbindgen and a const assert (see lib.rs)
pub const VLOG__ARG_DOUBLE: u8 = 5;
/// `const char *`, copied by value (NULL allowed).
#[allow(dead_code)] // read only by cbindgen and a const assert (see lib.rs)
pub const VLOG__ARG_STRING: u8 = 6;
/// `void *`.
#[allow(dead_code)] // read only by cbindgen and a const assert (see lib.rs)
pub const VLOG__ARG_POINTER: u8 = 7;
/// `%m`: nothing is fetched; pass strerror(errno) as it was at the call.
#[allow(dead_code)] // read only by cbindgen and a const assert (see lib.rs)
pub const VLOG__ARG_ERRNO: u8 = 8;
/// `int`: a `*` width or precision.
#[allow(dead_code)] // read only by cbindgen and a const assert (see lib.rs)
pub const VLOG__ARG_COUNT: u8 = 9;

/// Internal, for the macros: analyses `fmt` for call site `site` and
/// returns the site's state: VLOG__SITE_DEFERRED when vlog can record its
/// messages as format and arguments (see VLOG__ARG_*), VLOG__SITE_UNSAFE
/// when it has a `%n`, else VLOG__SITE_FORMAT. A site another thread
/// prepared first keeps what it has, and its state is returned. A site
/// whose format was not known at compile time keeps `fmt` (a string
/// literal the inlined call passed); one whose format is another string
/// is formatted at each call. errno is left as it was. Takes the logger
/// lock.
/// NULL: `site` or `fmt` gives VLOG__SITE_FORMAT (the site stays
/// unprepared); ownership: the site keeps `fmt`, which must live as long
/// as the site (a string literal); errors: none; async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog__site_prepare(site: *mut vlog__site, fmt: *const c_char) -> c_int {
    crate::control::install();
    before_the_record!(|| {
        if site.is_null() || fmt.is_null() {
            return VLOG__SITE_FORMAT;
        }
        // The call's own %m needs errno as the caller left it.
        keeping_errno(|| guarded(VLOG__SITE_FORMAT, || prepare(site, fmt)))
    })
}

fn prepare(site: *mut vlog__site, fmt: *const c_char) -> c_int {
    // From a signal handler that interrupted vlog on this thread the lock
    // is not to be had: format that call, and leave the site for a later
    // one (the message itself is then dropped and counted once, as nested).
    if logger::inside() {
        return VLOG__SITE_FORMAT;
    }
    // The lock makes concurrent first calls of one site take turns; enter
    // marks this thread inside, for a signal handler that interrupts it.
    logger::enter(|state| {
        // SAFETY: non-NULL, and the caller passes its own live site.
        let site = unsafe { &mut *site };
        // Another thread prepared it while this one waited for the lock;
        // its calls may be reading the fields now.
        let current = site.state.load(Ordering::Acquire);
        if current != VLOG__SITE_NEW {
            return current;
        }
        // SAFETY: non-NULL and NUL-terminated per the contract.
        let format = unsafe { CStr::from_ptr(fmt) }.to_bytes();
        let known = site.fmt;
        // SAFETY: the macro stores NULL or a string literal.
        let same = known.is_null() || unsafe { c_bytes(known, b"") } == format;
        let mut kinds = [0u8; MAX_ARGS];
        let mut precision = [deferred::PRECISION_NONE; MAX_ARGS];
        let analysed = match deferred::signature(format, &mut kinds, &mut precision) {
            // Another format than the site's: each call formats its own.
            _ if !same => VLOG__SITE_FORMAT,
            _ if printf::writes_back(format) => VLOG__SITE_UNSAFE,
            // 32-bit targets would need `long` and `long long` told apart.
            Ok(n) if cfg!(target_pointer_width = "64") => {
                site.nargs = n as u8;
                site.kinds = kinds;
                site.precision = precision;
                site.plan = plan_of(&kinds[..n], &precision[..n]);
                let (nwords, classes) = classes_of(&kinds[..n]);
                site.nwords = nwords;
                site.classes = classes;
                VLOG__SITE_DEFERRED
            }
            _ => VLOG__SITE_FORMAT,
        };
        if same {
            // The call's own pointer (a literal the compiler did not merge
            // with the site's, or the first one an inlined call passed), so
            // that later calls match it; a FORMAT site's calls with it
            // need no %n check of their own.
            site.fmt = fmt;
            site.fmt_len = format.len();
        }
        // SAFETY: the macro stores string literals (NULL for none).
        site.file_len = unsafe { c_bytes(site.file, b"") }.len();
        // SAFETY: as above.
        site.func_len = unsafe { c_bytes(site.func, b"") }.len();
        if known.is_null() {
            // Its id is its format's now, which a filter may name.
            state.site_learned(site);
        }
        site.state.store(analysed, Ordering::Release);
        analysed
    })
    .unwrap_or(VLOG__SITE_FORMAT)
}

/// The number of arguments a call of a format with these kinds passes, and
/// the classes they must have (see `vlog__site.classes`).
fn classes_of(kinds: &[u8]) -> (u8, u64) {
    let mut classes = 0;
    let mut n = 0;
    for &k in kinds {
        let class = match k {
            kind::ERRNO => continue,
            kind::DOUBLE => VLOG__CLASS_DOUBLE,
            kind::STRING | kind::POINTER => VLOG__CLASS_POINTER,
            _ => VLOG__CLASS_INT,
        };
        classes |= class << (2 * n);
        n += 1;
    }
    (n as u8, classes)
}

/// Internal, for the macros: records a message of call site `site`
/// (prepared, VLOG__SITE_DEFERRED; it holds the source, format, file,
/// line and function) at `prio`, if the filters select it.
/// `words` are the call's `nwords` arguments as the macro captured them,
/// each evaluated once: integers sign- or zero-extended to 64 bits, doubles
/// as their bits, pointers and strings as addresses; `classes` says what C
/// type each had (VLOG__CLASS_*, 2 bits each, from `_Generic`). The text is
/// made only when the record is read, or here, by vlog's own printf, when an
/// output prints the message now, its arguments do not fit a record (the
/// text then cut with the truncation marker) or a `*` width or precision is
/// beyond 1000. Strings are read now, no further than their precision.
/// Arguments beyond the format's are ignored, as printf ignores them. A
/// call whose arguments do not match the format (too few, or of another
/// class) records the format itself with a marker instead of reading an
/// argument as what it is not. errno is left as it was; `%m` is the text
/// of errno at the call. Returns 1 if recorded, 0 if filtered out, -1 on
/// an error (a NULL or unprepared site, NULL `words` with `nwords` > 0).
/// Never allocates; takes one lock.
/// NULL: `site` an error (-1), a string argument "(null)"; ownership: the arguments are copied, nothing kept;
/// errors: -1, never errno; async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog__record(
    site: *const vlog__site,
    prio: c_int,
    words: *const u64,
    nwords: c_int,
    classes: u64,
) -> c_int {
    if may_act_anywhere() {
        return record_uncancelled(site, prio, words, nwords, classes);
    }
    // The bracket is the first thing even for the flight recorder's call,
    // which passes no cancellation point: a signal handler that interrupts
    // it and prints must hand a pending cancel on to it, not act inside it.
    in_call!(body record_any(site, prio, words, nwords, classes))
}

/// The body of [`vlog__record`]: the flight recorder's call, or else the
/// general way.
#[inline(never)]
fn record_any(
    site: *const vlog__site,
    prio: c_int,
    words: *const u64,
    nwords: c_int,
    classes: u64,
) -> c_int {
    if !flight::enter() {
        return 0;
    }
    // SAFETY: a macro's site per the contract (or NULL). Its plan, word
    // count and classes were written before its state was stored with
    // Release.
    let recorded = unsafe { site.as_ref() }
        .filter(|s| s.state.load(Ordering::Acquire) == VLOG__SITE_DEFERRED)
        .and_then(|s| words::record_words(s, prio, words, nwords, classes));
    flight::leave();
    match recorded {
        Some(rc) => rc,
        None => record(site, prio, words, nwords, classes),
    }
}

/// `record` for a thread whose cancellation could act anywhere: with
/// cancellation off, and put back in this frame, which holds nothing to
/// drop by then.
#[cold]
#[inline(never)]
fn record_uncancelled(
    site: *const vlog__site,
    prio: c_int,
    words: *const u64,
    nwords: c_int,
    classes: u64,
) -> c_int {
    no_cancel!(|| record(site, prio, words, nwords, classes))
}

/// The body of [`vlog__record`]: the recording call, one function from the C
/// entry to the ring, that the entry brackets for cancellation.
#[inline(never)]
fn record(
    site: *const vlog__site,
    prio: c_int,
    words: *const u64,
    nwords: c_int,
    classes: u64,
) -> c_int {
    if site.is_null() {
        return -1;
    }
    keeping_errno(|| {
        guarded(-1, || {
            // SAFETY: non-NULL, a macro's site per the contract.
            let (live, site) = unsafe { site_arg(site) };
            // A site a `bt:` filter marked is still deferred (a call from
            // a header that read its state before the mark comes here).
            let state = site.state.load(Ordering::Acquire);
            if state & !SITE_BACKTRACE != VLOG__SITE_DEFERRED {
                return -1;
            }
            let given = site.nwords as usize;
            if (nwords as usize != given || classes != site.classes)
                && !only_beyond_the_format(nwords, given, classes, site.classes)
            {
                return record_mismatch(live, site, prio);
            }
            if given > 0 && words.is_null() {
                return -1;
            }
            // At most MAX_ARGS: nargs is a u8 that prepare set from a
            // signature of at most that many.
            let count = (site.nargs as usize).min(MAX_ARGS);
            let words: &[u64] = if given == 0 {
                &[]
            } else {
                // SAFETY: the caller passes `nwords` initialised words.
                unsafe { std::slice::from_raw_parts(words, given) }
            };
            // Filled only for a %m: a buffer cleared on every call costs.
            let mut errno_buf;
            let errno_text: &[u8] = if site.plan & PLAN_ERRNO != 0 {
                errno_buf = [0u8; 128];
                errno_message(&mut errno_buf)
            } else {
                b""
            };
            // Each argument read once, strings measured here, and the core
            // gets slices. Only `count` slots are written (the array is not
            // cleared on every call).
            let mut slots = [const { MaybeUninit::<Captured>::uninit() }; MAX_ARGS];
            let mut size = deferred::ArgsLen::default();
            let mut next = words.iter();
            let mut last = 0u64;
            let mut counts_fit = true;
            for (i, slot) in slots.iter_mut().enumerate().take(count) {
                let k = site.kinds[i];
                if k == kind::ERRNO {
                    size.add(slot.write(Captured::Str(Some(errno_text))));
                    continue;
                }
                // `given` words for the `given` kinds that are not %m.
                let Some(&word) = next.next() else {
                    return -1;
                };
                let captured = match k {
                    kind::INT | kind::LONG => Captured::Signed(word as i64),
                    kind::COUNT => {
                        // A count no reader renders: the text is made now.
                        counts_fit &= deferred::count_fits(word as i32 as i64);
                        Captured::Signed(word as i64)
                    }
                    kind::UINT | kind::ULONG => Captured::Unsigned(word),
                    kind::DOUBLE => Captured::Double(f64::from_bits(word)),
                    kind::POINTER => Captured::Pointer(word),
                    _ if word == 0 => Captured::Str(None),
                    _ => {
                        let precision = site.precision[i];
                        // A `*` precision is the argument before (an int,
                        // as printf reads it).
                        let star = (i > 0).then_some(last as i32 as i64);
                        let bound = match precision {
                            deferred::PRECISION_NONE => None,
                            _ => deferred::string_bound(precision, star),
                        };
                        // SAFETY: a string argument of the call, non-NULL,
                        // with the precision its format gives it.
                        Captured::Str(Some(unsafe { string_arg(word, bound) }))
                    }
                };
                last = word;
                size.add(slot.write(captured));
            }
            // SAFETY: the loop wrote the first `count` slots.
            let captured =
                unsafe { std::slice::from_raw_parts(slots.as_ptr().cast::<Captured>(), count) };
            site.recorded.fetch_add(1, Ordering::Relaxed);
            let call = SiteCall {
                source: site_source(site),
                priority: Priority::clamped(prio),
                site: live,
                args: captured,
                args_len: size.finish().filter(|_| counts_fit),
            };
            if state & SITE_BACKTRACE != 0 {
                let entry = vlog__record as *const () as usize;
                return outcome_code(backtrace::record_site_call(call, entry));
            }
            outcome_code(emit::emit_site(call))
        })
    })
}

fn outcome_code(outcome: Outcome) -> c_int {
    match outcome {
        Outcome::Recorded => 1,
        Outcome::Dropped => 0,
    }
}

/// The text of errno as the call left it (as `%m` shows it), in `buf`.
fn errno_message(buf: &mut [u8; 128]) -> &[u8] {
    let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
    // SAFETY: buf is writable for its length; the XSI strerror_r writes a
    // NUL-terminated message into it (cut to fit).
    let rc = unsafe { libc::strerror_r(errno, buf.as_mut_ptr().cast(), buf.len()) };
    let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    if rc != 0 && len == 0 {
        return b"Unknown error";
    }
    &buf[..len]
}

/// Whether a call that does not have exactly its format's arguments has
/// them and more (evaluated by the call, ignored here as by printf): only
/// the format's own are checked and read. Out of the common path.
#[cold]
#[inline(never)]
fn only_beyond_the_format(nwords: c_int, given: usize, classes: u64, want: u64) -> bool {
    let mask = if given >= 32 {
        u64::MAX
    } else {
        (1u64 << (2 * given)) - 1
    };
    usize::try_from(nwords).is_ok_and(|n| n > given) && classes & mask == want
}

/// Records a call whose arguments are not the ones its format takes (their
/// number or their C types): the format itself, after a marker, with the
/// site's names. No argument is read.
#[cold]
#[inline(never)]
fn record_mismatch(live: LiveSite, site: &vlog__site, prio: c_int) -> c_int {
    let marker: &[u8] = b"[arguments do not match the format, not rendered] ";
    let described = site.describe();
    let mut buf = [0u8; 512];
    let mut text = Bounded::new(&mut buf);
    text.put(marker);
    text.put(described.format);
    // Cut with the marker if the format is that long.
    let text = text.finish();
    let call = Call {
        source: site_source(site),
        // The site's own: its level, its limit's report and its id.
        site: Some(live),
        priority: Priority::clamped(prio),
        message: Message::Text {
            file: described.file,
            line: described.line,
            func: described.func,
            text,
            full_len: text.len(),
            fields: &[],
            names: Names::Caller,
            dump: None,
        },
        fatal: false,
        frames: None,
    };
    outcome_code(emit::emit(&call))
}

/// Internal, for the header: 1 if `fmt` may be handed to printf, 0 if it has
/// a `%n` conversion (which would write through an argument: vlog never lets
/// that run) or is NULL. The header calls this before every vsnprintf.
/// NULL: 0; ownership: the string is not kept; errors: none;
/// async-signal-safe: yes.
#[no_mangle]
pub extern "C-unwind" fn vlog__format_is_safe(fmt: *const c_char) -> c_int {
    in_call!(|| {
        if fmt.is_null() {
            return 0;
        }
        guarded(0, || {
            // SAFETY: non-NULL and NUL-terminated per the contract.
            let bytes = unsafe { CStr::from_ptr(fmt) }.to_bytes();
            c_int::from(!printf::writes_back(bytes))
        })
    })
}

impl CallSite for vlog__site {
    fn describe(&self) -> Site<'_> {
        // SAFETY: a prepared site holds its format, file and function (NULL or
        // NUL-terminated, per vlog__site_prepare's contract, and living as long
        // as the site) with their lengths.
        let (format, file, func) = unsafe {
            (
                measured(self.fmt, self.fmt_len),
                measured(self.file, self.file_len),
                measured(self.func, self.func_len),
            )
        };
        Site {
            source: b"",
            file,
            func: if func.is_empty() { b"?" } else { func },
            line: self.line.max(0) as u32,
            format,
            id: self.id.load(Ordering::Relaxed),
        }
    }
}
