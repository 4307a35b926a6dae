//! Recording finished messages: `vlog_write` and `vlog_write_fields`, which
//! the header's function forms call after formatting, and the structured
//! field type.

use std::ffi::{c_char, c_int, c_void, CStr};

use super::{c_bytes, guarded, in_call, may_act_anywhere, no_cancel, set_last_error, source_arg};
use crate::fields::{Dump, Field, Names, Value, MAX_FIELDS};
use crate::logger::emit::{self, Call, Message, Outcome};
use crate::logger::pending::Finished;
use crate::priority::Priority;
use crate::site::LiveSite;
use crate::source::{vlog_source, Live};
use crate::sys::keeping_errno;

/// Debug messages: the most verbose priority.
#[allow(dead_code)] // read only by cbindgen and a const assert (see lib.rs)
pub const VLOG_PRIO_DEBUG: c_int = 1;
/// Informational messages.
#[allow(dead_code)] // read only by cbindgen and a const assert (see lib.rs)
pub const VLOG_PRIO_INFO: c_int = 2;
/// Warnings: the default level.
#[allow(dead_code)] // read only by cbindgen and a const assert (see lib.rs)
pub const VLOG_PRIO_WARN: c_int = 3;
/// Errors: the least verbose priority.
#[allow(dead_code)] // read only by cbindgen and a const assert (see lib.rs)
pub const VLOG_PRIO_ERROR: c_int = 4;
/// The longest message kept whole, in bytes. Longer messages are cut to this
/// length, ending with ` [truncated: N bytes]` where N is the full length.
#[allow(dead_code)] // read only by cbindgen and a const assert (see lib.rs)
pub const VLOG_MESSAGE_MAX: usize = 8192;
const _: () = assert!(VLOG_MESSAGE_MAX == crate::record::MESSAGE_MAX);
/// The most bytes a VLOG_HEXDUMP record keeps; how many more were given is
/// its field VLOG_HEXDUMP_OMITTED.
#[allow(dead_code)] // read only by cbindgen and a const assert (see lib.rs)
pub const VLOG_HEXDUMP_MAX: usize = 4096;
const _: () = assert!(VLOG_HEXDUMP_MAX == crate::fields::BYTES_MAX);
// The numbers C passes are the core's priorities.
const _: () = assert!(
    VLOG_PRIO_DEBUG == Priority::Debug as c_int
        && VLOG_PRIO_INFO == Priority::Info as c_int
        && VLOG_PRIO_WARN == Priority::Warning as c_int
        && VLOG_PRIO_ERROR == Priority::Error as c_int
);

/// One structured field of a message (libvirt's metadata): a name and a
/// string or integer value. Names are journald's form (HTTP_METHOD) or
/// OpenTelemetry's (http.method): 1 to 64 of letters, digits, `_` and `.`,
/// starting with a letter (vlog(7), FIELDS).
#[repr(C)]
pub struct vlog_field {
    pub key: *const c_char,
    /// The value when `is_num` is 0 (NULL is logged as "(null)").
    pub str: *const c_char,
    /// The value when `is_num` is not 0.
    pub num: i64,
    pub is_num: c_int,
}

/// Records a finished message of `len` bytes at `msg` (it need not be
/// NUL-terminated and may contain any bytes) if the filters select it: into
/// the ring, and to every output whose priority it meets, each line with one
/// write(2). `full_len` is the length the message had before the caller cut
/// it (pass `len` when it is whole); a message cut short, or longer than
/// VLOG_MESSAGE_MAX, is stored with a ` [truncated: N bytes]` marker. `prio`
/// outside 1..4 is clamped. Returns 1 if the message was recorded, 0 if the
/// filters dropped it (or it was logged from inside vlog on the same thread,
/// as from a signal handler, and dropped to avoid a deadlock), -1 on an
/// internal error. errno is left as it was (an output's failure is reported
/// once on vlog's diagnostics instead). Never allocates once running; takes
/// one lock.
/// NULL: `src` is the default source, `file` "", `func` "?", `msg`
/// "(null)"; ownership: the bytes are copied, nothing kept; errors: -1, never
/// errno; async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_write(
    src: *const vlog_source,
    prio: c_int,
    file: *const c_char,
    line: c_int,
    func: *const c_char,
    msg: *const c_char,
    len: usize,
    full_len: usize,
) -> c_int {
    no_cancel!(|| {
        vlog_write_fields(
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
    })
}

/// As vlog_write, with `nfields` structured fields at `fields`. The fields
/// of a recorded message are stored in the ring record beside the text, shown by vlog_dump and vlog-dump, and
/// printed by every output (text lines: ` [NAME=value ...]`; JSON outputs: a
/// "fields" object), each name once. A name that is not valid, or that
/// journald or vlog gives every entry (MESSAGE, PRIORITY,
/// SYSLOG_IDENTIFIER, CODE_LINE, OBJECT_PID, VLOG_SOURCE, ...: vlog(7),
/// FIELDS), is not kept under it: the first such becomes
/// VLOG_BAD_FIELD_NAME with the name as its value, later ones are left out;
/// a name given twice keeps its first value. Each field not kept is counted
/// in vlog_stats.bad_fields, the first reported once on stderr (a message
/// the filters drop is neither stored nor counted); at most 32 fields and
/// 4096 bytes of them are kept, the thread's own with their room kept: a
/// value too large is cut to fit, ending in " [truncated: N bytes]"
/// (counted in bad_fields, the first reported once; vlog(3), LIMITS).
/// Returns 1 if recorded, 0 if filtered out, -1 on a
/// NULL `fields` with `nfields` > 0 (vlog_last_error says so) or an internal
/// error. errno is left as it was. Never allocates once running; takes one
/// lock.
/// NULL: as vlog_write, and `fields` may be NULL when `nfields` is 0, a
/// field's NULL string is "(null)"; ownership: everything is copied, nothing
/// kept; errors: -1, never errno; async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_write_fields(
    src: *const vlog_source,
    prio: c_int,
    file: *const c_char,
    line: c_int,
    func: *const c_char,
    msg: *const c_char,
    len: usize,
    full_len: usize,
    fields: *const vlog_field,
    nfields: usize,
) -> c_int {
    if may_act_anywhere() {
        return no_cancel!(|| {
            write_fields(
                src, prio, file, line, func, msg, len, full_len, fields, nfields,
            )
        });
    }
    in_call!(body write_fields(
        src, prio, file, line, func, msg, len, full_len, fields, nfields,
    ))
}

/// The body of [`vlog_write_fields`]: the recording call, one function from the C
/// entry to the ring, that the entry brackets for cancellation.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn write_fields(
    src: *const vlog_source,
    prio: c_int,
    file: *const c_char,
    line: c_int,
    func: *const c_char,
    msg: *const c_char,
    len: usize,
    full_len: usize,
    fields: *const vlog_field,
    nfields: usize,
) -> c_int {
    // A program that logs only through the function forms may start vlog
    // here: its VLOG_CONTROL is served.
    crate::control::install();
    if nfields > 0 && fields.is_null() {
        set_last_error("fields is NULL but nfields is not 0");
        return -1;
    }
    keeping_errno(|| {
        guarded(-1, || {
            let origin = Origin {
                source: source_arg(src),
                site: None,
                // SAFETY: NULL or NUL-terminated strings, per the API
                // contract.
                file: unsafe { c_bytes(file, b"") },
                line: line.max(0) as u32,
                // SAFETY: as above.
                func: unsafe { c_bytes(func, b"?") },
                frames: None,
            };
            // SAFETY: as the caller's contract says of each.
            unsafe { emit_text(origin, prio, msg, len, full_len, fields, nfields) }
        })
    })
}

/// As vlog_write, with `size` bytes at `data` kept as bytes (a packet, a
/// buffer): copied into the record as they are, no text made of them at
/// the call. Text lines (stderr, files, vlog_dump, vlog-dump, a crash
/// dump) show them after the message's line as `hexdump -C` does; the
/// JSON, journald, syslog and fluent outputs as the field VLOG_HEXDUMP, a
/// string of lowercase hex (vlog(3), VLOG_HEXDUMP). At most
/// VLOG_HEXDUMP_MAX bytes are kept; how many more were given is the field
/// VLOG_HEXDUMP_OMITTED. Nothing is read when the filters drop the
/// message. Returns 1 if recorded, 0 if filtered out, -1 on a NULL `data`
/// with `size` > 0 (vlog_last_error says so) or an internal error. errno
/// is left as it was. Never allocates once running; takes one lock.
/// NULL: as vlog_write, and `data` may be NULL when `size` is 0;
/// ownership: the bytes are copied, nothing kept; errors: -1, never errno;
/// async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_write_hexdump(
    src: *const vlog_source,
    prio: c_int,
    file: *const c_char,
    line: c_int,
    func: *const c_char,
    msg: *const c_char,
    len: usize,
    full_len: usize,
    data: *const c_void,
    size: usize,
) -> c_int {
    if may_act_anywhere() {
        return no_cancel!(|| {
            write_hexdump(src, prio, file, line, func, msg, len, full_len, data, size)
        });
    }
    in_call!(body write_hexdump(src, prio, file, line, func, msg, len, full_len, data, size))
}

/// The body of [`vlog_write_hexdump`], bracketed by the entry as
/// [`write_fields`] is.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn write_hexdump(
    src: *const vlog_source,
    prio: c_int,
    file: *const c_char,
    line: c_int,
    func: *const c_char,
    msg: *const c_char,
    len: usize,
    full_len: usize,
    data: *const c_void,
    size: usize,
) -> c_int {
    crate::control::install();
    if size > 0 && data.is_null() {
        set_last_error("data is NULL but size is not 0");
        return -1;
    }
    keeping_errno(|| {
        guarded(-1, || {
            let origin = Origin {
                source: source_arg(src),
                site: None,
                // SAFETY: NULL or NUL-terminated strings, per the API
                // contract.
                file: unsafe { c_bytes(file, b"") },
                line: line.max(0) as u32,
                // SAFETY: as above.
                func: unsafe { c_bytes(func, b"?") },
                frames: None,
            };
            // SAFETY: `data` is `size` readable bytes, per the contract;
            // only the first VLOG_HEXDUMP_MAX are read.
            let dump = unsafe { dump_arg(data, size) };
            // SAFETY: as the caller's contract says of `msg`.
            let finished =
                unsafe { emit_message(origin, prio, msg, len, full_len, &[], Some(dump)) };
            c_int::from(finished.complete() == Outcome::Recorded)
        })
    })
}

/// The bytes at `data` a record keeps (at most VLOG_HEXDUMP_MAX of the
/// `size`), the rest counted: no more is ever read.
///
/// # Safety
/// `data` is NULL with `size` 0, or `size` readable bytes.
pub(super) unsafe fn dump_arg<'a>(data: *const c_void, size: usize) -> Dump<'a> {
    if data.is_null() {
        return Dump::of(b"");
    }
    let kept = Dump::kept(size);
    // SAFETY: per the caller, and `kept` <= `size`.
    let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), kept) };
    Dump::given(bytes, size)
}

/// Where a finished message comes from: its source, the call site that
/// made it (if a macro did), and its names.
pub(super) struct Origin<'a> {
    pub source: Live,
    pub site: Option<LiveSite>,
    pub file: &'a [u8],
    pub line: u32,
    pub func: &'a [u8],
    /// The call's backtrace, if it keeps one (`backtrace`).
    pub frames: Option<&'a [u8]>,
}

/// Records a finished message of `len` bytes at `msg` (cut from
/// `full_len`) with `nfields` C fields: the one way every entry that takes
/// one makes its call.
///
/// # Safety
/// `msg` is NULL or `len` readable bytes; `fields` points at `nfields`
/// initialised fields (or `nfields` is 0).
pub(super) unsafe fn emit_text(
    origin: Origin,
    prio: c_int,
    msg: *const c_char,
    len: usize,
    full_len: usize,
    fields: *const vlog_field,
    nfields: usize,
) -> c_int {
    // SAFETY: per the contract.
    let (finished, beyond) =
        unsafe { record_text(origin, prio, msg, len, full_len, fields, nfields) };
    // Written here, once the fields' list is off the stack.
    let recorded = finished.complete() == Outcome::Recorded;
    if recorded && beyond > 0 {
        // The fields beyond the 32 a record keeps, counted as every field
        // not kept is (a message the filters drop counts none).
        crate::stats::add(&crate::stats::BAD_FIELDS, beyond as u64);
    }
    c_int::from(recorded)
}

/// [`emit_text`]'s record, with its line still to write, and how many of
/// the fields were beyond the 32 a record keeps. Not inlined: the list of
/// fields is in this frame alone.
///
/// # Safety
/// As for [`emit_text`].
#[inline(never)]
unsafe fn record_text(
    origin: Origin,
    prio: c_int,
    msg: *const c_char,
    len: usize,
    full_len: usize,
    fields: *const vlog_field,
    nfields: usize,
) -> (Finished, usize) {
    let mut list = [Field {
        name: b"",
        value: Value::Int(0),
    }; MAX_FIELDS];
    // SAFETY: per the contract.
    let n = unsafe { fields_of(fields, nfields, &mut list) };
    // SAFETY: per the contract.
    let finished = unsafe { emit_message(origin, prio, msg, len, full_len, &list[..n], None) };
    (finished, nfields - n)
}

/// Records a finished message of `len` bytes at `msg` (cut from
/// `full_len`) with `fields`, or the bytes of `dump`: whether it was
/// recorded. [`emit_text`] for C's fields; an entry that takes a dump
/// calls this itself, so that the fields' list is not on its stack (a call
/// has 8 KiB of the caller's, and a dump's output write goes deeper than a
/// field's).
///
/// # Safety
/// `msg` is NULL or `len` readable bytes.
#[inline(always)]
pub(super) unsafe fn emit_message(
    origin: Origin,
    prio: c_int,
    msg: *const c_char,
    len: usize,
    full_len: usize,
    fields: &[Field],
    dump: Option<Dump>,
) -> Finished {
    let text: &[u8] = if msg.is_null() {
        b"(null)"
    } else {
        // SAFETY: per the contract.
        unsafe { std::slice::from_raw_parts(msg.cast::<u8>(), len) }
    };
    let call = Call {
        source: origin.source,
        site: origin.site,
        priority: Priority::clamped(prio),
        message: Message::Text {
            file: origin.file,
            line: origin.line,
            func: origin.func,
            text,
            full_len: full_len.max(text.len()),
            fields,
            names: Names::Caller,
            dump,
        },
        fatal: false,
        frames: origin.frames,
    };
    emit::emit_then_write(&call)
}

/// The first (at most 32) of the `n` C fields at `fields` as slices in
/// `list`; returns how many. Only the fields that are kept are looked at.
///
/// # Safety
/// `fields` points at `n` initialised fields (or `n` is 0), whose strings
/// outlive `list`.
unsafe fn fields_of<'a>(
    fields: *const vlog_field,
    n: usize,
    list: &mut [Field<'a>; MAX_FIELDS],
) -> usize {
    if n == 0 || fields.is_null() {
        return 0;
    }
    // SAFETY: per the caller.
    let given: &'a [vlog_field] = unsafe { std::slice::from_raw_parts(fields, n) };
    for (slot, f) in list.iter_mut().zip(given) {
        *slot = field(f);
    }
    n.min(MAX_FIELDS)
}

/// A C field as slices; its name is checked by the core, when the message is
/// recorded.
fn field(f: &vlog_field) -> Field<'_> {
    // SAFETY: NULL or NUL-terminated, per the contract.
    let name = unsafe { c_bytes(f.key, b"(null)") };
    let value = if f.is_num != 0 {
        Value::Int(f.num)
    } else if f.str.is_null() {
        Value::Str(b"(null)")
    } else {
        // SAFETY: non-NULL and NUL-terminated, per the contract.
        Value::Str(unsafe { CStr::from_ptr(f.str) }.to_bytes())
    };
    Field { name, value }
}
