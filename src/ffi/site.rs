//! Internal: the machinery behind the macros. Per call site descriptors
//! (`vlog_site`), the analysis of a site's format on its first call, the
//! entry that records a format's captured arguments, and the `%n` check the
//! header makes before every vsnprintf. None of it is API: the header's
//! macros use it, and its layout is the ABI `vlog_abi_check` guards.

use std::ffi::{c_char, c_int, CStr};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering};

use super::{c_bytes, guarded, may_act_anywhere, measured, no_cancel, source_arg};
use crate::deferred::{self, kind, Captured, MAX_ARGS};
use crate::logger;
use crate::logger::emit::{self, Call, CallSite, Message, Outcome};
use crate::priority::Priority;
use crate::ring::sites::Site;
use crate::source::vlog_source;
use crate::sys::keeping_errno;
use crate::text::printf;

/// Internal: a call site not analysed yet.
pub const VLOG_SITE_NEW: c_int = 0;
/// Internal: the call site's messages are recorded as format and arguments.
pub const VLOG_SITE_DEFERRED: c_int = 1;
/// Internal: the call site's format is one vlog does not render itself: its
/// messages are formatted at the call.
pub const VLOG_SITE_FORMAT: c_int = 2;
/// Internal: the call site's format has a `%n`: it is never handed to printf.
pub const VLOG_SITE_UNSAFE: c_int = 3;
/// Internal: the most arguments a deferred call site captures.
pub const VLOG_SITE_MAX_ARGS: usize = 32;
const _: () = assert!(VLOG_SITE_MAX_ARGS == MAX_ARGS);
const _: () = assert!(
    VLOG_ARG_INT == kind::INT
        && VLOG_ARG_UINT == kind::UINT
        && VLOG_ARG_LONG == kind::LONG
        && VLOG_ARG_ULONG == kind::ULONG
        && VLOG_ARG_DOUBLE == kind::DOUBLE
        && VLOG_ARG_STRING == kind::STRING
        && VLOG_ARG_POINTER == kind::POINTER
        && VLOG_ARG_ERRNO == kind::ERRNO
        && VLOG_ARG_COUNT == kind::COUNT
);
/// Internal: vlog_write_args could not keep the arguments (longer than a
/// record holds): the caller formats the message itself.
pub const VLOG_FORMAT_AT_CALL: c_int = -2;

/// Internal: how an argument is fetched with va_arg: `int`.
pub const VLOG_ARG_INT: u8 = 1;
/// `unsigned int`.
pub const VLOG_ARG_UINT: u8 = 2;
/// `long` (also `long long`, `intmax_t`, `ssize_t`, `ptrdiff_t`: all 64 bits).
pub const VLOG_ARG_LONG: u8 = 3;
/// `unsigned long` (also `unsigned long long`, `uintmax_t`, `size_t`).
pub const VLOG_ARG_ULONG: u8 = 4;
/// `double`.
pub const VLOG_ARG_DOUBLE: u8 = 5;
/// `const char *`, copied by value (NULL allowed).
pub const VLOG_ARG_STRING: u8 = 6;
/// `void *`.
pub const VLOG_ARG_POINTER: u8 = 7;
/// `%m`: nothing is fetched; pass strerror(errno) as it was at the call.
pub const VLOG_ARG_ERRNO: u8 = 8;
/// `int`: a `*` width or precision.
pub const VLOG_ARG_COUNT: u8 = 9;

/// Internal: a call site, one per VLOG_* macro use (a static the macro
/// declares). The library fills it on the site's first call. Its layout is
/// part of the ABI (VLOG_ABI_VERSION).
#[repr(C)]
pub struct vlog_site {
    /// VLOG_SITE_NEW, VLOG_SITE_DEFERRED, VLOG_SITE_FORMAT or VLOG_SITE_UNSAFE;
    /// written last.
    pub state: AtomicI32,
    /// How many arguments the format takes, and how each is fetched.
    pub nargs: u8,
    /// 1 when the format has a %m, so the caller saves errno for it.
    pub has_errno: u8,
    pub kinds: [u8; VLOG_SITE_MAX_ARGS],
    /// For each string argument, how much of it may be read: its literal
    /// precision, 0xFFFE for a `*` precision (the argument before it), 0xFFFF
    /// for all of it. Used by the library only.
    pub precision: [u16; VLOG_SITE_MAX_ARGS],
    /// The format the site was analysed for; a call with another format
    /// pointer is formatted at the call.
    pub fmt: *const c_char,
    /// Its length in bytes, so calls need no strlen; the same for the call
    /// site's file and function names.
    pub fmt_len: usize,
    pub file: *const c_char,
    pub file_len: usize,
    pub func: *const c_char,
    pub func_len: usize,
    pub line: c_int,
    /// The site's entry in the current ring's call-site dictionary (ring id
    /// and offset) and the source it names, so its records carry only the
    /// arguments. Written under the logger's lock.
    pub entry: AtomicU64,
    pub entry_source: AtomicUsize,
}

/// Internal: one captured argument: `bits` holds integers (sign- or zero-extended to 64
/// bits), doubles (their bit pattern) and pointers; `str` holds strings.
#[repr(C)]
pub struct vlog_arg {
    pub bits: u64,
    pub str: *const c_char,
}

/// Internal, for the macros: analyses `fmt` for call site `site` (in `file`
/// at `line`, function `func`) and returns the site's state:
/// VLOG_SITE_DEFERRED when vlog can record its messages as format and
/// arguments (see VLOG_ARG_*), VLOG_SITE_UNSAFE when it has a `%n`, else
/// VLOG_SITE_FORMAT. A site another thread prepared first keeps what it has,
/// and its state is returned. The site keeps `fmt`, `file`, `line` and
/// `func`, so later calls need not pass them: `site` must stay valid while
/// messages are logged through it, and the strings as long as the site is
/// used (string literals). errno is left as it was. Takes the logger lock.
/// NULL: `site` or `fmt` gives VLOG_SITE_FORMAT (the site stays
/// unprepared), `file` and `func` are "" and "?"; ownership: the site keeps the pointers (string literals);
/// errors: none; async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_site_prepare(
    site: *mut vlog_site,
    fmt: *const c_char,
    file: *const c_char,
    line: c_int,
    func: *const c_char,
) -> c_int {
    no_cancel(|| {
        if site.is_null() || fmt.is_null() {
            return VLOG_SITE_FORMAT;
        }
        // The call's own %m needs errno as the caller left it.
        keeping_errno(|| guarded(VLOG_SITE_FORMAT, || prepare(site, fmt, file, line, func)))
    })
}

fn prepare(
    site: *mut vlog_site,
    fmt: *const c_char,
    file: *const c_char,
    line: c_int,
    func: *const c_char,
) -> c_int {
    // From a signal handler that interrupted vlog on this thread the lock
    // is not to be had: format that call, and leave the site for a later
    // one (the message itself is then dropped and counted once, as nested).
    if logger::inside() {
        return VLOG_SITE_FORMAT;
    }
    // The lock makes concurrent first calls of one site take turns; enter
    // marks this thread inside, for a signal handler that interrupts it.
    logger::enter(|_| {
        // SAFETY: non-NULL, and the caller passes its own live site.
        let site = unsafe { &mut *site };
        // Another thread prepared it while this one waited for the lock;
        // its calls may be reading the fields now.
        let current = site.state.load(Ordering::Acquire);
        if current != VLOG_SITE_NEW {
            return current;
        }
        // SAFETY: non-NULL and NUL-terminated per the contract.
        let format = unsafe { CStr::from_ptr(fmt) }.to_bytes();
        let mut kinds = [0u8; MAX_ARGS];
        let mut precision = [deferred::PRECISION_NONE; MAX_ARGS];
        let state = match deferred::signature(format, &mut kinds, &mut precision) {
            _ if printf::writes_back(format) => VLOG_SITE_UNSAFE,
            // 32-bit targets would need `long` and `long long` told apart.
            Ok(n) if cfg!(target_pointer_width = "64") => {
                site.nargs = n as u8;
                site.kinds = kinds;
                site.precision = precision;
                site.has_errno = kinds[..n].contains(&kind::ERRNO) as u8;
                VLOG_SITE_DEFERRED
            }
            _ => VLOG_SITE_FORMAT,
        };
        // The format, names and line are kept for every state: the macros
        // pass them only on the first call, and a FORMAT site's calls with
        // this format need no %n check of their own.
        site.fmt = fmt;
        site.fmt_len = format.len();
        site.file = file;
        // SAFETY: NULL or NUL-terminated, per the contract.
        site.file_len = unsafe { c_bytes(file, b"") }.len();
        site.func = func;
        // SAFETY: as above.
        site.func_len = unsafe { c_bytes(func, b"") }.len();
        site.line = line;
        site.state.store(state, Ordering::Release);
        state
    })
    .unwrap_or(VLOG_SITE_FORMAT)
}

/// Internal, for the macros: records a message of call site `site`
/// (prepared, VLOG_SITE_DEFERRED; it holds the file, line and function) with
/// its `nargs` captured arguments, if the filters select it. The text is
/// made only when the record is read: by an output (at once), vlog_dump, the
/// crash handler or vlog-dump. Strings are copied now. Returns 1 if
/// recorded, 0 if filtered out, -1 on an error (a NULL or unprepared site, a
/// wrong argument count), VLOG_FORMAT_AT_CALL if the arguments do not fit a
/// record: then format the message and call vlog_write. errno is left as it
/// was. Never allocates; takes one lock.
/// NULL: `src` is the default source, `site` an error (-1), a string
/// argument "(null)"; ownership: the arguments are copied, nothing kept;
/// errors: -1, never errno; async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_write_args(
    src: *const vlog_source,
    prio: c_int,
    site: *const vlog_site,
    args: *const vlog_arg,
    nargs: c_int,
) -> c_int {
    if may_act_anywhere() {
        return write_args_uncancelled(src, prio, site, args, nargs);
    }
    write_args(src, prio, site, args, nargs)
}

/// `write_args` for a thread whose cancellation could act anywhere: with
/// cancellation off, and put back in this frame, which holds nothing to
/// drop by then.
#[cold]
#[inline(never)]
fn write_args_uncancelled(
    src: *const vlog_source,
    prio: c_int,
    site: *const vlog_site,
    args: *const vlog_arg,
    nargs: c_int,
) -> c_int {
    no_cancel(|| write_args(src, prio, site, args, nargs))
}

/// The body of [`vlog_write_args`]: the recording call, one function from the C
/// entry to the ring, that the entry brackets for cancellation.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn write_args(
    src: *const vlog_source,
    prio: c_int,
    site: *const vlog_site,
    args: *const vlog_arg,
    nargs: c_int,
) -> c_int {
    if site.is_null() {
        return -1;
    }
    keeping_errno(|| {
        guarded(-1, || {
            // SAFETY: non-NULL, a live site per the contract.
            let site = unsafe { &*site };
            let count = site.nargs as usize;
            if site.state.load(Ordering::Acquire) != VLOG_SITE_DEFERRED
                || nargs as usize != count
                || (count > 0 && args.is_null())
            {
                return -1;
            }
            // At most MAX_ARGS: nargs is a u8 that prepare set from a
            // signature of at most that many.
            let count = count.min(MAX_ARGS);
            let raw: &[vlog_arg] = if count == 0 {
                &[]
            } else {
                // SAFETY: the caller passes `nargs` initialised arguments.
                unsafe { std::slice::from_raw_parts(args, count) }
            };
            // Each argument captured once: strings measured here, and the
            // core gets slices. Only `count` slots are written (the array is
            // not cleared on every call).
            let mut slots = [const { MaybeUninit::<Captured>::uninit() }; MAX_ARGS];
            let mut size = deferred::ArgsLen::default();
            for (i, arg) in raw.iter().enumerate() {
                let captured = match site.kinds[i] {
                    kind::INT | kind::LONG => Captured::Signed(arg.bits as i64),
                    kind::COUNT => {
                        // A width or precision no reader renders itself: the
                        // message is formatted at the call instead.
                        if !deferred::count_fits(arg.bits as i64) {
                            return VLOG_FORMAT_AT_CALL;
                        }
                        Captured::Signed(arg.bits as i64)
                    }
                    kind::UINT | kind::ULONG => Captured::Unsigned(arg.bits),
                    kind::DOUBLE => Captured::Double(f64::from_bits(arg.bits)),
                    kind::POINTER => Captured::Pointer(arg.bits),
                    _ if arg.str.is_null() => Captured::Str(None),
                    _ => {
                        let precision = site.precision[i];
                        // SAFETY: a string argument is readable up to its NUL
                        // or, with a precision, up to that many bytes: what
                        // printf requires of %s. strnlen reads no further.
                        let bytes = unsafe {
                            let len = if precision == deferred::PRECISION_NONE {
                                libc::strlen(arg.str)
                            } else {
                                // The `*` precision is the argument before.
                                let star = i.checked_sub(1).map(|j| raw[j].bits as i64);
                                match deferred::string_bound(precision, star) {
                                    Some(max) => libc::strnlen(arg.str, max),
                                    None => libc::strlen(arg.str),
                                }
                            };
                            std::slice::from_raw_parts(arg.str.cast::<u8>(), len)
                        };
                        Captured::Str(Some(bytes))
                    }
                };
                size.add(slots[i].write(captured));
            }
            // SAFETY: the loop wrote the first `count` slots (raw has
            // `count` arguments and kinds MAX_ARGS >= count entries).
            let captured =
                unsafe { std::slice::from_raw_parts(slots.as_ptr().cast::<Captured>(), count) };
            let call = Call {
                source: source_arg(src),
                priority: Priority::clamped(prio),
                message: Message::Args {
                    site,
                    entry: &site.entry,
                    entry_source: &site.entry_source,
                    args: captured,
                    args_len: size.finish(),
                },
            };
            match emit::emit(&call) {
                Outcome::Recorded => 1,
                Outcome::Dropped => 0,
                Outcome::FormatAtCall => VLOG_FORMAT_AT_CALL,
            }
        })
    })
}

/// Internal, for the header: 1 if `fmt` may be handed to printf, 0 if it has
/// a `%n` conversion (which would write through an argument: vlog never lets
/// that run) or is NULL. The header calls this before every vsnprintf.
/// NULL: 0; ownership: the string is not kept; errors: none;
/// async-signal-safe: yes.
#[no_mangle]
pub extern "C" fn vlog_format_is_safe(fmt: *const c_char) -> c_int {
    if fmt.is_null() {
        return 0;
    }
    guarded(0, || {
        // SAFETY: non-NULL and NUL-terminated per the contract.
        let bytes = unsafe { CStr::from_ptr(fmt) }.to_bytes();
        c_int::from(!printf::writes_back(bytes))
    })
}

impl CallSite for vlog_site {
    fn describe(&self) -> Site<'_> {
        // SAFETY: a prepared site holds its format, file and function (NULL or
        // NUL-terminated, per vlog_site_prepare's contract, and living as long
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
        }
    }
}
