//! The messages a syslog output sends, rendered without allocation: RFC
//! 5424 for a collector (`render`), the traditional form for /dev/log
//! (`render_local`), and glibc's own for the program's destination
//! (`render_program`); an error's context marked in each.

use crate::fields::{self, Value};
use crate::record::Record;
use crate::stats;
use crate::sys::syslog as openlog;
use crate::text::frames;
use crate::text::line::{put_escaped, put_fields_text};
use crate::text::num::{decimal, put_decimal, put_signed};
use crate::text::time::{put_rfc3164, put_rfc3339};
use crate::text::Sink;

const SD_ID: &[u8] = b"vlog@32473";
/// The SD-ID OpenTelemetry's "Trace Context in non-OTLP Log Formats" gives
/// trace context in RFC 5424 (`[opentelemetry trace_id=".." span_id=".."
/// trace_flags=".."]`), so that a collector finds it where it looks.
const OTEL_SD_ID: &[u8] = b"opentelemetry";

/// The facility and severity a syslog(3) call gave, which a record
/// libvlog-syslog.so made carries as fields (`preload::record`).
fn call_pri(rec: &Record) -> Option<i64> {
    let mut facility = None;
    let mut severity = None;
    for field in fields::decode(rec.fields).iter().flat_map(|f| f.iter()) {
        match (field.name, field.value) {
            (openlog::FACILITY_FIELD, Value::Int(n)) => facility = Some(n),
            (openlog::SEVERITY_FIELD, Value::Int(n)) => severity = Some(n),
            _ => {}
        }
    }
    // The names are reserved (`fields::RESERVED`): only that record has
    // them, and only with a facility below 128 and a severity below 8.
    let (facility, severity) = facility.zip(severity)?;
    ((0..128).contains(&facility) && (0..8).contains(&severity)).then_some(facility * 8 + severity)
}

/// `<PRI>`: a syslog(3) call's own, as glibc would send it; for any other
/// record the output's facility and the record's severity (debug 7, info
/// 6, warning 4, error 3).
fn put_pri(rec: &Record, facility: u8, out: &mut impl Sink) {
    let pri = call_pri(rec)
        .unwrap_or(i64::from(facility) * 8 + i64::from(rec.priority.syslog_severity()));
    out.put(b"<");
    put_signed(pri, out);
    out.put(b">");
}

/// Writes the RFC 5424 message for `rec`, with `facility` for a record
/// that is not a syslog(3) call's.
pub fn render(
    rec: &Record,
    ident: &[u8],
    hostname: &[u8],
    pid: u32,
    facility: u8,
    out: &mut impl Sink,
) {
    put_pri(rec, facility, out);
    out.put(b"1 ");
    put_rfc3339(rec.time_ns, out);
    out.put(b" ");
    out.put(if hostname.is_empty() { b"-" } else { hostname });
    out.put(b" ");
    out.put(ident);
    out.put(b" ");
    put_decimal(pid as u64, 1, out);
    // MSGID: the call site's message id, when the record has one.
    out.put(b" ");
    if rec.id != 0 {
        out.put(&crate::text::num::id_hex(rec.id));
    } else {
        out.put(b"-");
    }
    out.put(b" [");
    out.put(SD_ID);
    // vlog's own names are ones no field may take (`fields::RESERVED`), and
    // a record's field names are unique: no SD-NAME is given twice.
    put_param(b"VLOG_SOURCE", rec.source, out);
    put_param(b"CODE_FILE", rec.file, out);
    let mut digits = [0u8; 20];
    put_param(b"CODE_LINE", decimal(rec.line as u64, &mut digits), out);
    put_param(b"CODE_FUNC", rec.func, out);
    if rec.context {
        // (The header's time is the record's own already.)
        put_param(b"VLOG_CONTEXT", b"1", out);
        put_param(b"VLOG_SEQ", decimal(rec.seq, &mut digits), out);
    }
    let list = fields::decode(rec.fields);
    for (i, field) in list.iter().flat_map(|f| f.iter()).enumerate() {
        if fields::otel_key(field.name).is_some() {
            continue;
        }
        let sd = sd_name(field.name);
        // Two long names that hash alike: the second is not merged into
        // the first's, it is left out and counted. (The earlier names are
        // made again rather than kept: a caller's stack may be small.)
        let earlier = list.iter().flat_map(|f| f.iter()).take(i);
        if earlier.map(|f| sd_name(f.name)).any(|e| e == sd) {
            stats::add(&stats::BAD_FIELDS, 1);
            continue;
        }
        put_value_param(&sd.0[..sd.1], field.value, out);
    }
    out.put(b"]");
    // Trace context in an element of its own, under OpenTelemetry's names
    // (a record has each field once: `vlog_thread_traceparent` sets them).
    let mut trace = list
        .iter()
        .flat_map(|f| f.iter())
        .filter_map(|f| Some((fields::otel_key(f.name)?, f.value)));
    if let Some((key, value)) = trace.next() {
        out.put(b"[");
        out.put(OTEL_SD_ID);
        put_value_param(key, value, out);
        for (key, value) in trace {
            put_value_param(key, value, out);
        }
        out.put(b"]");
    }
    out.put(b" ");
    put_escaped(rec.message, out);
}

/// Writes the message for the local syslog socket in the traditional form
/// (RFC 3164, as glibc's syslog() sends it), which the local daemons parse on
/// /dev/log: `<PRI>Mmm dd hh:mm:ss IDENT[PID]: MSG`; the fields follow the
/// message as in a text line. The PRI is `put_pri`'s, as over the network.
pub fn render_local(rec: &Record, ident: &[u8], pid: u32, facility: u8, out: &mut impl Sink) {
    put_pri(rec, facility, out);
    put_rfc3164(rec.time_ns, out);
    out.put(b" ");
    out.put(ident);
    out.put(b"[");
    put_decimal(pid as u64, 1, out);
    out.put(b"]: ");
    put_escaped(rec.message, out);
    put_fields_text(rec.fields, out);
    put_context_text(rec, out);
}

/// ` [VLOG_CONTEXT=1 VLOG_SEQ=N]` after the message of a record printed as
/// an error's context, in the forms that carry no fields of their own (the
/// time in front is the record's own).
fn put_context_text(rec: &Record, out: &mut impl Sink) {
    if rec.context {
        out.put(b" [VLOG_CONTEXT=1 VLOG_SEQ=");
        put_decimal(rec.seq, 1, out);
        out.put(b"]");
    }
}

/// Writes what glibc's syslog(3) sends to /dev/log for `rec`:
/// `<PRI>Mmm dd hh:mm:ss IDENT[PID]: MSG`, in local time, `[PID]` only with
/// LOG_PID, IDENT openlog's as it reads now. A syslog(3) call's message
/// (it has the fields SYSLOG_FACILITY and SYSLOG_SEVERITY) goes as its
/// bytes are, with the call's facility and severity, so the daemon on
/// /dev/log receives what it did before; any other record is escaped and
/// has its fields after it, as in `render_local`, with openlog's facility.
/// Returns where IDENT starts: what LOG_PERROR writes to stderr.
pub fn render_program(rec: &Record, pid: u32, out: &mut Vec<u8>) -> usize {
    let call = call_pri(rec);
    put_pri(rec, (openlog::facility() >> 3) as u8, out);
    let secs = (rec.time_ns / 1_000_000_000) as i64;
    let local = secs + openlog::utc_offset(secs);
    put_rfc3164(local.max(0) as u64 * 1_000_000_000, out);
    out.put(b" ");
    let ident_at = out.len();
    openlog::with_ident(|ident| out.put(ident));
    if openlog::option() & libc::LOG_PID != 0 {
        out.put(b"[");
        put_decimal(pid as u64, 1, out);
        out.put(b"]");
    }
    out.put(b": ");
    if call.is_some() {
        out.put(rec.message);
    } else {
        put_escaped(rec.message, out);
        put_fields_text(rec.fields, out);
    }
    put_context_text(rec, out);
    ident_at
}

/// An SD-NAME has at most 32 characters (RFC 5424 6.3.3).
const SD_NAME_MAX: usize = 32;

/// A field's name as an SD-NAME: as it is up to 32 characters; a longer
/// one is its first 23, `_` and 8 hex digits of a hash of the whole name
/// (FNV-1a), so two long names that start alike stay two names. A name of
/// 32 that already has that shape is hashed too, so that no name can take
/// the place of another's hash.
pub(super) fn sd_name(name: &[u8]) -> ([u8; SD_NAME_MAX], usize) {
    let mut out = [0u8; SD_NAME_MAX];
    let hash_shaped = name.len() == SD_NAME_MAX
        && name[23] == b'_'
        && name[24..]
            .iter()
            .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(b));
    if name.len() <= SD_NAME_MAX && !hash_shaped {
        out[..name.len()].copy_from_slice(name);
        return (out, name.len());
    }
    let hash = name.iter().fold(0x811c_9dc5u32, |h, &b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    out[..23].copy_from_slice(&name[..23]);
    out[23] = b'_';
    for (i, slot) in out[24..].iter_mut().enumerate() {
        *slot = b"0123456789ABCDEF"[(hash >> (28 - 4 * i)) as usize & 0xf];
    }
    (out, SD_NAME_MAX)
}

/// ` NAME="value"`, the value with `"`, `\` and `]` escaped by a backslash
/// (RFC 5424 6.3.3) and control bytes and bytes that are not UTF-8 as the
/// text line escapes them (`\n`, `\x1b`).
/// A field's SD-PARAM: a string as `put_param` writes it, an integer in
/// decimal.
fn put_value_param(name: &[u8], value: Value, out: &mut impl Sink) {
    match value {
        Value::Str(s) => put_param(name, s, out),
        Value::Int(n) => {
            out.put(b" ");
            out.put(name);
            out.put(b"=\"");
            put_signed(n, out);
            out.put(b"\"");
        }
        Value::Bytes(b) => {
            out.put(b" ");
            out.put(name);
            out.put(b"=\"");
            crate::text::hexdump::put_hex(b, out);
            out.put(b"\"");
        }
        // The frames apart by `; `, their data escaped as any value's.
        Value::Frames(f) => {
            out.put(b" ");
            out.put(name);
            out.put(b"=\"");
            frames::put_value(f, b"; ", put_param_inside, out);
            out.put(b"\"");
        }
    }
}

fn put_param(name: &[u8], value: &[u8], out: &mut impl Sink) {
    out.put(b" ");
    out.put(name);
    out.put(b"=\"");
    put_param_inside(value, out);
    out.put(b"\"");
}

/// What [`put_param`] writes of `value` between its quotes.
fn put_param_inside<S: Sink>(value: &[u8], out: &mut S) {
    let mut rest = value;
    while let Some(at) = rest.iter().position(|&b| matches!(b, b'"' | b']')) {
        put_escaped(&rest[..at], out);
        out.put(b"\\");
        out.put(&rest[at..=at]);
        rest = &rest[at + 1..];
    }
    put_escaped(rest, out);
}
