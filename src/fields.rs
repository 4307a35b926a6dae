//! Structured fields: key/value pairs attached to a message (libvirt calls
//! them metadata), kept in the ring record beside the text and printed by the
//! outputs in their own way (text line, JSON object).
//!
//! Names follow journald's rules, so they can be passed on unchanged: 1 to 64
//! bytes of uppercase letters, digits and underscores, not starting with an
//! underscore (journald keeps those for itself) or a digit. Encoded:
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

/// A field as the caller gave it, made fit to keep: a bad name is replaced
/// by [`BAD_FIELD`] with the name as its value, and counted
/// (`vlog_stats.bad_fields`). `report` is called with the first bad name
/// of the process, to say so once.
pub fn checked<'a>(name: &'a [u8], value: Value<'a>, report: impl FnOnce(&[u8])) -> Field<'a> {
    static REPORTED: AtomicBool = AtomicBool::new(false);
    if valid_name(name) {
        return Field { name, value };
    }
    stats::add(&stats::BAD_FIELDS, 1);
    if !REPORTED.swap(true, Ordering::Relaxed) {
        report(name);
    }
    Field {
        name: BAD_FIELD,
        value: Value::Str(name),
    }
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
        assert!(buf.len() <= ENCODED_MAX);
        assert!(decode(&buf).is_some());
    }
}
