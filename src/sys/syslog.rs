//! What openlog(3) sets, kept as glibc keeps it, for the output that sends
//! a program's messages where its syslog(3) calls would have sent them
//! (`PRIO:syslog`): the ident by pointer (glibc does not copy it, and a
//! program may rely on that), the options and the facility; and the local
//! time's offset from UTC, which glibc's timestamp is in.
//!
//! Every value is an atomic: openlog may be called from a signal handler
//! that interrupted a message, and nothing here takes a lock.

use std::ffi::{c_char, c_int};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, AtomicPtr, Ordering};

/// openlog's ident, or NULL (then glibc uses the program's short name).
static IDENT: AtomicPtr<c_char> = AtomicPtr::new(std::ptr::null_mut());
/// openlog's options (LOG_PID, LOG_PERROR, ...).
static OPTION: AtomicI32 = AtomicI32::new(0);
/// openlog's facility, already shifted (LOG_USER until openlog says).
static FACILITY: AtomicI32 = AtomicI32::new(libc::LOG_USER);
/// Whether libvlog-syslog.so took over this process's syslog(3) calls.
static PRELOADED: AtomicBool = AtomicBool::new(false);

/// The fields a syslog(3) call's record carries: the facility (0 to 23,
/// journald's SYSLOG_FACILITY) and the severity (0 to 7) it was called
/// with, which vlog's four priorities do not keep apart.
pub const FACILITY_FIELD: &[u8] = b"SYSLOG_FACILITY";
pub const SEVERITY_FIELD: &[u8] = b"SYSLOG_SEVERITY";

/// The facilities a program may name: LOG_KERN to LOG_LOCAL7, shifted.
pub const FACILITY_MASK: c_int = 0x03f8;
/// The severities, 0 (emergency) to 7 (debug).
pub const SEVERITY_MASK: c_int = 0x07;

/// openlog(3) as glibc does it: a NULL ident keeps the one set before, a
/// facility with bits outside the facility mask keeps the one before.
pub fn openlog(ident: *const c_char, option: c_int, facility: c_int) {
    if !ident.is_null() {
        IDENT.store(ident.cast_mut(), Ordering::Release);
    }
    OPTION.store(option, Ordering::Relaxed);
    if facility & !FACILITY_MASK == 0 {
        FACILITY.store(facility, Ordering::Relaxed);
    }
}

/// closelog(3) as glibc does it: the ident is forgotten (back to the
/// program's name); the options and the facility stay.
pub fn closelog() {
    IDENT.store(std::ptr::null_mut(), Ordering::Release);
}

pub fn option() -> c_int {
    OPTION.load(Ordering::Relaxed)
}

pub fn facility() -> c_int {
    FACILITY.load(Ordering::Relaxed)
}

/// Runs `f` with the ident glibc would write now: openlog's string as it
/// is at this moment, or the program's short name. Read at each message,
/// as glibc reads it; at most 1024 bytes. (A closure, not a slice to
/// keep: the string is the program's, valid only while openlog's contract
/// holds.)
pub fn with_ident<R>(f: impl FnOnce(&[u8]) -> R) -> R {
    let ident = IDENT.load(Ordering::Acquire);
    let ident = if ident.is_null() {
        program_name()
    } else {
        ident.cast_const()
    };
    // SAFETY: openlog's contract (glibc's too) is that the ident stays a
    // valid string while it is in use; strnlen reads no further than its
    // NUL or the bound. The program's name lives as long as the process.
    let bytes = unsafe {
        let len = libc::strnlen(ident, 1024);
        std::slice::from_raw_parts(ident.cast::<u8>(), len)
    };
    f(bytes)
}

extern "C" {
    /// glibc's short program name (argv[0] after its last slash), which
    /// its syslog(3) uses when openlog gave no ident.
    static program_invocation_short_name: *const c_char;
}

fn program_name() -> *const c_char {
    // SAFETY: glibc sets it before any constructor runs and never frees it.
    let name = unsafe { program_invocation_short_name };
    if name.is_null() {
        c"".as_ptr()
    } else {
        name
    }
}

/// The program's name, as a source name for messages logged before any
/// openlog.
pub fn program_name_bytes() -> &'static [u8] {
    // SAFETY: as in `program_name`: a string that lives for ever.
    unsafe { std::ffi::CStr::from_ptr(program_name()) }.to_bytes()
}

/// Marks this process as one whose syslog(3) calls libvlog-syslog.so
/// takes: the defaults are then the preload's (see `logger::apply`).
pub fn mark_preloaded() {
    PRELOADED.store(true, Ordering::Relaxed);
}

pub fn preloaded() -> bool {
    PRELOADED.load(Ordering::Relaxed)
}

/// The 15-minute span of UTC the cached offset was found for (high bits)
/// and the offset in seconds plus 2^19 (the low 20 bits), in one word so a
/// reader never pairs a span with another span's offset. Every time zone
/// changes its offset at a multiple of 15 minutes of UTC, so one lookup per
/// span is exact.
static OFFSET: AtomicI64 = AtomicI64::new(-1);
const SPAN_SECS: i64 = 900;
const OFFSET_BITS: u32 = 20;
const OFFSET_BIAS: i64 = 1 << (OFFSET_BITS - 1);

/// The local time's offset from UTC at `secs` (seconds since the epoch),
/// in seconds: what glibc's localtime_r says, asked at most once per 15
/// minutes. (localtime_r takes glibc's time zone lock, as glibc's own
/// syslog(3) does at every message; here it happens once per span.)
pub fn utc_offset(secs: i64) -> i64 {
    let span = secs.div_euclid(SPAN_SECS);
    let cached = OFFSET.load(Ordering::Relaxed);
    if cached >= 0 && cached >> OFFSET_BITS == span {
        return (cached & ((1 << OFFSET_BITS) - 1)) - OFFSET_BIAS;
    }
    let t: libc::time_t = secs;
    // SAFETY: an all-zero tm is valid; localtime_r writes it or fails.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are to locals valid for the call.
    let offset = if unsafe { libc::localtime_r(&t, &mut tm) }.is_null() {
        0
    } else {
        // Offsets are within a day; anything else is not a time zone.
        tm.tm_gmtoff.clamp(-86_399, 86_399)
    };
    if span >= 0 {
        OFFSET.store(
            span << OFFSET_BITS | (offset + OFFSET_BIAS),
            Ordering::Relaxed,
        );
    }
    offset
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_is_cached_per_span() {
        let now = 1_796_046_312;
        let first = utc_offset(now);
        assert_eq!(utc_offset(now + 1), first);
        let packed = OFFSET.load(Ordering::Relaxed);
        assert_eq!(packed >> OFFSET_BITS, now / SPAN_SECS);
    }
}
