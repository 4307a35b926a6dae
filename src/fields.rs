//! Structured fields: key/value pairs attached to a message (libvirt calls
//! them metadata), kept in the ring record beside the text and printed by the
//! outputs in their own way (text line, JSON object).
//!
//! Names follow journald's rules, so they can be passed on unchanged: 1 to 64
//! bytes of uppercase letters, digits and underscores, not starting with an
//! underscore (journald keeps those for itself) or a digit; and a field
//! never takes a name that journald or vlog gives the entry itself
//! ([`RESERVED`]), which would let it speak for the entry (`journalctl -t`,
//! its priority). A record's names are made unique when it is made
//! ([`encode_checked`]), so every output carries each key once. Encoded:
//!
//! ```text
//! u8 count, then per field: u8 name length, name, then
//! tag 0: u32 length, string bytes    tag 1: i64 integer
//! ```

use std::sync::atomic::{AtomicBool, Ordering};

use crate::stats;

pub const NAME_MAX: usize = 64;
/// At most this many fields are kept per message.
pub const MAX_FIELDS: usize = 32;
/// The encoded fields of one message take at most this many bytes; string
/// values are cut to fit.
pub const ENCODED_MAX: usize = 4096;

const TAG_STR: u8 = 0;
const TAG_INT: u8 = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    Str(&'a [u8]),
    Int(i64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field<'a> {
    pub name: &'a [u8],
    pub value: Value<'a>,
}

/// What a field with a bad name becomes: the message keeps a trace of it.
pub const BAD_FIELD: &[u8] = b"VLOG_BAD_FIELD_NAME";

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
/// (`VLOG_SOURCE`, [`BAD_FIELD`], an error's context's `VLOG_CONTEXT`,
/// `VLOG_SEQ` and `VLOG_TIME`).
pub const RESERVED_PREFIXES: &[&[u8]] = &[b"OBJECT_", b"COREDUMP_", b"VLOG_"];

/// The key the JSON and fluent outputs write a field under when
/// OpenTelemetry names it: trace context in logs that are not OTLP
/// (`trace_id`, `span_id`, `trace_flags`), at the top of the entry. A
/// thread's `vlog_thread_traceparent` sets these fields.
pub fn otel_key(name: &[u8]) -> Option<&'static [u8]> {
    match name {
        b"TRACE_ID" => Some(b"trace_id"),
        b"SPAN_ID" => Some(b"span_id"),
        b"TRACE_FLAGS" => Some(b"trace_flags"),
        _ => None,
    }
}

/// Whether `name` is one of the [`RESERVED`] names or starts with one of
/// the [`RESERVED_PREFIXES`].
pub fn is_reserved(name: &[u8]) -> bool {
    RESERVED.contains(&name) || RESERVED_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Who named a record's fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Names {
    /// A caller, or a child through a relay: names are checked.
    Caller,
    /// vlog itself (libvlog-syslog.so's `SYSLOG_FACILITY`): trusted.
    Vlog,
    /// The first field vlog's (what a call site's limit left out), the
    /// others a caller's.
    VlogFirst,
}

/// Why a caller's field was not kept under its name, for the one report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    Invalid,
    Reserved,
}

/// Encodes a caller's fields into `out` (see [`encode`]), each name once:
/// a name that is not valid, or [`RESERVED`], is not kept; the first such
/// becomes [`BAD_FIELD`] with the name as its value, the others are
/// dropped; a name given again is dropped (the first value is kept). Each
/// field not kept is counted (`vlog_stats.bad_fields`), and `report` is
/// called for the first refused name of the process, to say so once.
/// Fields from vlog itself ([`Names::Vlog`]) are kept as they are.
pub fn encode_checked(
    list: &[Field],
    names: Names,
    out: &mut Vec<u8>,
    report: impl FnOnce(&[u8], Refusal),
) {
    static REPORTED: AtomicBool = AtomicBool::new(false);
    let mut kept = [Field {
        name: b"",
        value: Value::Int(0),
    }; MAX_FIELDS];
    let mut n = 0;
    let mut marked = false;
    let mut dropped = 0;
    let mut report = Some(report);
    for (i, field) in list.iter().take(MAX_FIELDS).enumerate() {
        let refused = match names {
            Names::Vlog => None,
            Names::VlogFirst if i == 0 => None,
            _ if !valid_name(field.name) => Some(Refusal::Invalid),
            _ if is_reserved(field.name) => Some(Refusal::Reserved),
            _ => None,
        };
        let field = match refused {
            Some(why) => {
                dropped += 1;
                if !REPORTED.swap(true, Ordering::Relaxed) {
                    if let Some(report) = report.take() {
                        report(field.name, why);
                    }
                }
                if std::mem::replace(&mut marked, true) {
                    continue;
                }
                Field {
                    name: BAD_FIELD,
                    value: Value::Str(field.name),
                }
            }
            None => *field,
        };
        if kept[..n].iter().any(|k| k.name == field.name) {
            dropped += u64::from(refused.is_none());
            continue;
        }
        kept[n] = field;
        n += 1;
    }
    if dropped > 0 {
        stats::add(&stats::BAD_FIELDS, dropped);
    }
    encode(kept[..n].iter().copied(), out);
}

/// True for a name journald would accept as it is.
pub fn valid_name(name: &[u8]) -> bool {
    // One table lookup a byte: every recorded field's name is checked.
    const ALLOWED: [bool; 256] = {
        let mut table = [false; 256];
        let mut b = 0;
        while b < 256 {
            table[b] =
                (b as u8).is_ascii_uppercase() || (b as u8).is_ascii_digit() || b == b'_' as usize;
            b += 1;
        }
        table
    };
    (1..=NAME_MAX).contains(&name.len())
        && !matches!(name[0], b'_' | b'0'..=b'9')
        && name.iter().all(|&b| ALLOWED[b as usize])
}

/// Appends the encoding of `fields` (names already valid) to `out`, which
/// has ENCODED_MAX bytes of room reserved, so nothing is allocated. Fields past
/// MAX_FIELDS are left out; string values are cut to keep within ENCODED_MAX.
pub fn encode<'a>(fields: impl Iterator<Item = Field<'a>>, out: &mut Vec<u8>) {
    let start = out.len();
    out.push(0);
    let mut count = 0u8;
    for field in fields.take(MAX_FIELDS) {
        let room = ENCODED_MAX - (out.len() - start);
        let fixed = 1 + field.name.len() + 1 + 8;
        if room < fixed {
            break;
        }
        out.push(field.name.len() as u8);
        out.extend_from_slice(field.name);
        match field.value {
            Value::Int(n) => {
                out.push(TAG_INT);
                out.extend_from_slice(&n.to_ne_bytes());
            }
            Value::Str(s) => {
                let s = &s[..s.len().min(room - fixed + 4)];
                out.push(TAG_STR);
                out.extend_from_slice(&(s.len() as u32).to_ne_bytes());
                out.extend_from_slice(s);
            }
        }
        count += 1;
    }
    out[start] = count;
}

/// The fields encoded in `bytes`, if the encoding is whole and every name
/// valid: a damaged record is refused, never shown with made-up fields.
pub fn decode(bytes: &[u8]) -> Option<Fields<'_>> {
    let fields = Fields { bytes };
    let mut n = 0;
    let mut rest = bytes.get(1..)?;
    while let Some((field, tail)) = next(rest) {
        valid_name(field.name).then_some(())?;
        rest = tail;
        n += 1;
    }
    (rest.is_empty() && n == bytes[0] as usize).then_some(fields)
}

fn next(bytes: &[u8]) -> Option<(Field<'_>, &[u8])> {
    let (&name_len, rest) = bytes.split_first()?;
    let name = rest.get(..name_len as usize)?;
    let (&tag, rest) = rest[name_len as usize..].split_first()?;
    match tag {
        TAG_INT => {
            let n = i64::from_ne_bytes(rest.get(..8)?.try_into().ok()?);
            Some((
                Field {
                    name,
                    value: Value::Int(n),
                },
                &rest[8..],
            ))
        }
        TAG_STR => {
            let len = u32::from_ne_bytes(rest.get(..4)?.try_into().ok()?) as usize;
            let s = rest.get(4..4 + len)?;
            Some((
                Field {
                    name,
                    value: Value::Str(s),
                },
                &rest[4 + len..],
            ))
        }
        _ => None,
    }
}

/// Validated encoded fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fields<'a> {
    bytes: &'a [u8],
}

impl<'a> Fields<'a> {
    pub fn is_empty(&self) -> bool {
        self.bytes.first().is_none_or(|&n| n == 0)
    }

    pub fn iter(&self) -> impl Iterator<Item = Field<'a>> + 'a {
        let mut rest = self.bytes.get(1..).unwrap_or_default();
        std::iter::from_fn(move || {
            let (field, tail) = next(rest)?;
            rest = tail;
            Some(field)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for good in ["VM", "PID", "A1", "X_Y", &"A".repeat(64)] {
            assert!(valid_name(good.as_bytes()), "{good}");
        }
        for bad in ["", "_VM", "1VM", "vm", "V-M", "V M", "É", &"A".repeat(65)] {
            assert!(!valid_name(bad.as_bytes()), "{bad}");
        }
    }

    #[test]
    fn refused_and_repeated_names_are_kept_once() {
        let list = [
            Field {
                name: b"REQUEST",
                value: Value::Str(b"first"),
            },
            Field {
                name: b"PRIORITY",
                value: Value::Str(b"0"),
            },
            Field {
                name: b"REQUEST",
                value: Value::Str(b"second"),
            },
            Field {
                name: b"a-bad-name",
                value: Value::Int(1),
            },
            Field {
                name: b"VLOG_BAD_FIELD_NAME",
                value: Value::Int(2),
            },
        ];
        let before = stats::get(&stats::BAD_FIELDS);
        let mut buf = Vec::new();
        let mut said = None;
        encode_checked(&list, Names::Caller, &mut buf, |n, why| {
            said = Some((n.to_vec(), why))
        });
        let kept: Vec<Field> = decode(&buf).unwrap().iter().collect();
        assert_eq!(
            kept,
            [
                list[0],
                Field {
                    name: BAD_FIELD,
                    value: Value::Str(b"PRIORITY")
                }
            ]
        );
        assert!(stats::get(&stats::BAD_FIELDS) >= before + 4);
        if let Some((name, why)) = said {
            assert_eq!(
                (name.as_slice(), why),
                (&b"PRIORITY"[..], Refusal::Reserved)
            );
        }
        // Another process's, and what `journalctl -u` matches.
        for name in [
            &b"OBJECT_SYSTEMD_UNIT"[..],
            b"COREDUMP_EXE",
            b"UNIT",
            b"USER_UNIT",
        ] {
            assert!(is_reserved(name), "{}", String::from_utf8_lossy(name));
        }
        assert!(!is_reserved(b"OBJECTIVE") && !is_reserved(b"UNITS"));
        // vlog's own are kept as they are.
        let own = [Field {
            name: b"SYSLOG_FACILITY",
            value: Value::Int(3),
        }];
        buf.clear();
        encode_checked(&own, Names::Vlog, &mut buf, |_, _| {});
        assert_eq!(decode(&buf).unwrap().iter().collect::<Vec<_>>(), own);
    }

    #[test]
    fn round_trip_and_damage() {
        let fields = [
            Field {
                name: b"VM",
                value: Value::Str(b"guest 1"),
            },
            Field {
                name: b"PID",
                value: Value::Int(-42),
            },
        ];
        let mut buf = Vec::with_capacity(ENCODED_MAX);
        encode(fields.iter().copied(), &mut buf);
        let decoded = decode(&buf).unwrap();
        assert_eq!(decoded.iter().collect::<Vec<_>>(), fields);
        for cut in 0..buf.len() {
            assert!(decode(&buf[..cut]).is_none(), "cut at {cut}");
        }
        let mut bad = buf.clone();
        bad[2] = b'v'; // a lowercase name
        assert!(decode(&bad).is_none());
    }

    #[test]
    fn limits() {
        let long = vec![b'x'; 10_000];
        let many: Vec<Field> = (0..40)
            .map(|_| Field {
                name: b"K",
                value: Value::Str(&long),
            })
            .collect();
        let mut buf = Vec::with_capacity(ENCODED_MAX);
        encode(many.iter().copied(), &mut buf);
        assert!(buf.len() <= ENCODED_MAX, "{buf:?}");
        assert!(decode(&buf).is_some());
    }
}
