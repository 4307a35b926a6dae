//! The C side of structured fields: `vlog_field` and `vlog_write_fields`.

// Called from C, where `unsafe` means nothing; every pointer is checked.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use std::ffi::{c_char, c_int, CStr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::ffi::api::source_or_default;
use crate::ffi::{c_bytes, guarded, set_last_error};
use crate::fields::{self, Field, Value};
use crate::logger::{self, Message};
use crate::priority::Priority;
use crate::source::vlog_source;
use crate::sys::keeping_errno;

/// One structured field of a message (libvirt's metadata): a name and a
/// string or integer value. Names are journald's: 1 to 64 uppercase letters,
/// digits and underscores, not starting with an underscore or a digit.
#[repr(C)]
pub struct vlog_field {
    pub key: *const c_char,
    /// The value when `is_num` is 0 (NULL is logged as "(null)").
    pub str: *const c_char,
    /// The value when `is_num` is not 0.
    pub num: i64,
    pub is_num: c_int,
}

/// Fields whose name was not valid (`vlog_stats.bad_fields`).
pub static BAD_FIELDS: AtomicU64 = AtomicU64::new(0);
static BAD_REPORTED: AtomicBool = AtomicBool::new(false);

/// What a field with a bad name becomes: the message keeps a trace of it.
const BAD_FIELD: &[u8] = b"VLOG_BAD_FIELD_NAME";

/// As vlog_write, with `nfields` structured fields at `fields` (NULL when
/// `nfields` is 0). The fields are looked at only if the message is recorded:
/// they are stored in the ring record beside the text, shown by vlog_dump and
/// vlog-dump, and printed by every output (text lines: ` [NAME=value ...]`;
/// JSON outputs: a "fields" object). A field whose name is not valid is kept
/// as VLOG_BAD_FIELD_NAME with the name as its value, counted in
/// vlog_stats.bad_fields and reported once on stderr; at most 32 fields and
/// 4 KiB of them are kept. Returns 1 if recorded, 0 if filtered out, -1 on a
/// NULL `fields` with `nfields` > 0 (vlog_last_error says so) or an internal
/// error. errno is left as it was. Never allocates once running; takes one
/// lock. Not async-signal-safe.
#[no_mangle]
pub extern "C" fn vlog_write_fields(
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
    if nfields > 0 && fields.is_null() {
        set_last_error("fields is NULL but nfields is not 0");
        return -1;
    }
    keeping_errno(|| {
        guarded(-1, || {
            let list: &[vlog_field] = if nfields == 0 {
                &[]
            } else {
                // SAFETY: the caller passes `nfields` initialised fields.
                unsafe { std::slice::from_raw_parts(fields, nfields) }
            };
            let encode = |out: &mut Vec<u8>| fields::encode(list.iter().map(field), out);
            let text: &[u8] = if msg.is_null() {
                b"(null)"
            } else {
                // SAFETY: the caller passes `len` readable bytes at `msg`.
                unsafe { std::slice::from_raw_parts(msg.cast::<u8>(), len) }
            };
            let m = Message {
                source: source_or_default(src),
                priority: Priority::clamped(prio),
                // SAFETY: NULL or NUL-terminated strings, per the API contract.
                file: unsafe { c_bytes(file, b"") },
                line: line.max(0) as u32,
                // SAFETY: as above.
                func: unsafe { c_bytes(func, b"?") },
                text,
                full_len: full_len.max(text.len()),
                encode: None,
                fields: (nfields > 0).then_some(&encode as &dyn Fn(&mut Vec<u8>)),
            };
            // SAFETY: the caller keeps the source alive until it unregisters it.
            c_int::from(unsafe { logger::emit(&m) } == logger::Outcome::Recorded)
        })
    })
}

/// A C field as the encoder takes it; a bad name is replaced, counted and
/// reported (once per process).
fn field(f: &vlog_field) -> Field<'_> {
    // SAFETY: NULL or NUL-terminated, per the contract.
    let name = unsafe { c_bytes(f.key, b"(null)") };
    if !fields::valid_name(name) {
        BAD_FIELDS.fetch_add(1, Ordering::Relaxed);
        if !BAD_REPORTED.swap(true, Ordering::Relaxed) {
            logger::warn(&format!(
                "invalid field name '{}' (use A-Z, 0-9 and _, not first _ or digit, at most 64): \
                 kept as {}; later ones are counted in vlog_stats.bad_fields",
                String::from_utf8_lossy(name),
                String::from_utf8_lossy(BAD_FIELD)
            ));
        }
        return Field {
            name: BAD_FIELD,
            value: Value::Str(name),
        };
    }
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
