//! Field names: the two forms vlog takes (journald's and OpenTelemetry's),
//! the one journald is given, and the names no field may take (see the
//! parent module's overview).

/// The longest name, in bytes.
pub const NAME_MAX: usize = 64;

/// Names no field of a caller's (nor a relayed child's) may take: journald's
/// own and trusted fields, those `journalctl -u` matches, and the ones vlog
/// gives every entry. Given to a field, they would add a second value to
/// the entry's own (the entry would then also answer `journalctl -t NAME`,
/// or `-u UNIT`), or be read as vlog's. (See also [`RESERVED_PREFIXES`].)
pub const RESERVED: &[&[u8]] = &[
    b"MESSAGE",
    b"MESSAGE_ID",
    b"PRIORITY",
    b"SYSLOG_IDENTIFIER",
    b"SYSLOG_FACILITY",
    b"SYSLOG_PID",
    b"SYSLOG_TIMESTAMP",
    b"SYSLOG_RAW",
    b"CODE_FILE",
    b"CODE_LINE",
    b"CODE_FUNC",
    b"ERRNO",
    b"UNIT",
    b"USER_UNIT",
    b"INVOCATION_ID",
    b"USER_INVOCATION_ID",
];

/// Prefixes no field's name may start with: journald's fields about
/// another process (`OBJECT_PID`, and the `OBJECT_SYSTEMD_UNIT` that
/// `journalctl -u` matches), systemd-coredump's, and vlog's own
/// (`VLOG_SOURCE`, `VLOG_BAD_FIELD_NAME`, an error's context's `VLOG_CONTEXT`,
/// `VLOG_SEQ` and `VLOG_TIME`).
pub const RESERVED_PREFIXES: &[&[u8]] = &[b"OBJECT_", b"COREDUMP_", b"VLOG_"];

/// The key the JSON and fluent outputs write a field under when
/// OpenTelemetry names it: trace context in logs that are not OTLP
/// (`trace_id`, `span_id`, `trace_flags`), at the top of the entry. A
/// thread's `vlog_thread_traceparent` sets these fields.
pub fn otel_key(name: &[u8]) -> Option<&'static [u8]> {
    const KEYS: [&[u8]; 3] = [b"trace_id", b"span_id", b"trace_flags"];
    KEYS.into_iter().find(|k| same_name(k, name))
}

/// Whether `name`, as journald takes it, is one of the [`RESERVED`] names
/// or starts with one of the [`RESERVED_PREFIXES`] (`message` and
/// `code.file` are MESSAGE and CODE_FILE to journald).
pub fn is_reserved(name: &[u8]) -> bool {
    RESERVED.iter().any(|r| same_name(r, name))
        || RESERVED_PREFIXES
            .iter()
            .any(|p| name.len() >= p.len() && same_name(p, &name[..p.len()]))
}

/// A name's byte as journald takes it: upper case, a dot (OpenTelemetry's
/// separator) an underscore. journald's own form is unchanged by it.
const fn journald_byte(b: u8) -> u8 {
    if b == b'.' {
        b'_'
    } else {
        b.to_ascii_uppercase()
    }
}

/// `name` in journald's form, made in `buf` (`http.method` is HTTP_METHOD);
/// a name longer than any field's (none is) as it is.
#[inline]
pub fn journald_name<'a>(name: &'a [u8], buf: &'a mut [u8; NAME_MAX]) -> &'a [u8] {
    match buf.get_mut(..name.len()) {
        Some(to) => {
            for (to, &from) in to.iter_mut().zip(name) {
                *to = journald_byte(from);
            }
            to
        }
        None => name,
    }
}

/// Whether two names are one for journald, and so for vlog: `http.method`,
/// `HTTP_METHOD` and `Http_Method` are one name.
pub fn same_name(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(&x, &y)| journald_byte(x) == journald_byte(y))
}

/// True for a name in journald's form or OpenTelemetry's (the parent module's
/// rule): 1 to 64 of letters, digits, `_` and `.`, the first a letter, a
/// dot never last nor beside another.
pub fn valid_name(name: &[u8]) -> bool {
    // One table lookup a byte: every recorded field's name is checked.
    const ALLOWED: [bool; 256] = {
        let mut table = [false; 256];
        let mut b = 0;
        while b < 256 {
            let c = b as u8;
            table[b] = c.is_ascii_alphanumeric() || c == b'_' || c == b'.';
            b += 1;
        }
        table
    };
    // One pass: a byte allowed, and no dot right after a dot.
    let mut previous = 0u8;
    (1..=NAME_MAX).contains(&name.len())
        && name[0].is_ascii_alphabetic()
        && name[name.len() - 1] != b'.'
        && name.iter().all(|&b| {
            let dots = b == b'.' && previous == b'.';
            previous = b;
            ALLOWED[b as usize] && !dots
        })
}
