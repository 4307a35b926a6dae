//! Fields a thread carries on every record it makes (`logger::thread_fields`):
//! `vlog_thread_field_set`, `vlog_thread_field_set_int`,
//! `vlog_thread_fields_clear`, `vlog_thread_traceparent`.

use std::ffi::{c_char, c_int, CStr};

use super::{guarded, no_cancel, set_last_error};
use crate::fields::Value;
use crate::logger::thread_fields::{self, Refused};

/// Runs a change of this thread's fields: 0, or -1 with
/// `vlog_last_error()` saying why (static text: nothing is allocated).
fn change(f: impl FnOnce() -> Result<(), Refused>) -> c_int {
    no_cancel!(|| {
        guarded(-1, || match thread_fields::changing(f) {
            Ok(()) => 0,
            Err(why) => {
                set_last_error(why.why());
                -1
            }
        })
    })
}

/// The bytes of a C string the caller passed, or None for NULL.
///
/// # Safety
/// `s` is NULL or a NUL-terminated string that outlives the result.
unsafe fn bytes<'a>(s: *const c_char) -> Option<&'a [u8]> {
    // SAFETY: non-NULL and NUL-terminated per the caller.
    (!s.is_null()).then(|| unsafe { CStr::from_ptr(s) }.to_bytes())
}

/// Sets field `key` to the string `value` on every record this thread
/// makes from now on (replacing its value), or removes it when `value` is
/// NULL. The record carries it as it carries a call's own `VLOG_FIELD_STR`
/// (in the ring and every output, under the same name rules); a call's own
/// field of the same name wins. At most 8 fields per thread and 512 bytes
/// of string values in all; nothing is read or copied for a call the
/// filters drop. A thread's fields go with it when it exits; a forked
/// child keeps the forking thread's. Returns 0, or -1 with
/// `vlog_last_error()` set and nothing changed: a NULL or invalid `key`
/// (journald's HTTP_METHOD or OpenTelemetry's http.method: 1 to 64 of
/// letters, digits, _ and ., starting with a letter; vlog(7), FIELDS), a
/// name journald or vlog gives every entry (MESSAGE, PRIORITY, VLOG_...), a
/// ninth field, values past 512 bytes, or a call from a signal handler
/// that interrupted vlog on this thread.
/// NULL: `key` an error, `value` removes the field; ownership: both copied,
/// nothing kept; errors: -1 and vlog_last_error(); async-signal-safe: yes.
#[no_mangle]
pub extern "C-unwind" fn vlog_thread_field_set(key: *const c_char, value: *const c_char) -> c_int {
    // SAFETY: NUL-terminated strings or NULL, per the API contract; read
    // within this call.
    let (key, value) = unsafe { (bytes(key), bytes(value)) };
    change(|| thread_fields::set(key.ok_or(Refused::Name)?, value.map(Value::Str)))
}

/// As vlog_thread_field_set, with an integer value (as `VLOG_FIELD_INT`).
/// NULL: `key` an error; ownership: `key` copied, nothing kept; errors: -1
/// and vlog_last_error(); async-signal-safe: yes.
#[no_mangle]
pub extern "C-unwind" fn vlog_thread_field_set_int(key: *const c_char, value: i64) -> c_int {
    // SAFETY: a NUL-terminated string or NULL, per the API contract.
    let key = unsafe { bytes(key) };
    change(|| thread_fields::set(key.ok_or(Refused::Name)?, Some(Value::Int(value))))
}

/// Removes every field this thread set. Returns 0, or -1 (with
/// `vlog_last_error()`) from a signal handler that interrupted vlog on this
/// thread.
/// NULL: takes no pointer; ownership: nothing kept; errors: -1 and
/// vlog_last_error(); async-signal-safe: yes.
#[no_mangle]
pub extern "C-unwind" fn vlog_thread_fields_clear() -> c_int {
    change(thread_fields::clear)
}

/// Sets TRACE_ID, SPAN_ID and TRACE_FLAGS on this thread from a W3C
/// `traceparent` header (Trace Context: `00-` 32 lowercase hex digits `-`
/// 16 `-` 2, as `00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01`;
/// a later version may carry more after a `-`). The JSON and fluent outputs
/// write them as `trace_id`, `span_id` and `trace_flags`, the names
/// OpenTelemetry gives trace context in logs that are not OTLP. Returns 0,
/// or -1 with `vlog_last_error()` set and nothing changed: NULL, a header
/// that is not a valid traceparent (version ff, uppercase or other
/// non-hex digits, a trace or span id of zeros, a wrong length), or as
/// vlog_thread_field_set.
/// NULL: an error; ownership: copied, nothing kept; errors: -1 and
/// vlog_last_error(); async-signal-safe: yes.
#[no_mangle]
pub extern "C-unwind" fn vlog_thread_traceparent(header: *const c_char) -> c_int {
    // SAFETY: a NUL-terminated string or NULL, per the API contract.
    let header = unsafe { bytes(header) };
    change(|| thread_fields::set_traceparent(header.unwrap_or(b"")))
}
