//! Structured fields: key/value pairs attached to a message (libvirt calls
//! them metadata), kept in the ring record beside the text and printed by the
//! outputs in their own way (text line, JSON object).
//!
//! A name is journald's form (`HTTP_METHOD`: uppercase letters, digits and
//! underscores) or OpenTelemetry's (`http.method`, `user.id`: letters,
//! digits, underscores and dots between words): 1 to 64 bytes, starting
//! with a letter (journald keeps names starting with an underscore for
//! itself). Every output writes a name as it was given but journald, which
//! takes it upper case with dots as underscores ([`journald_name`]); so
//! two names that journald would take as one are one name here
//! ([`same_name`]): the second is never silently renamed onto the first,
//! it is left out and counted. A field never takes a name that journald or
//! vlog gives the entry itself ([`RESERVED`]), in either form, which would
//! let it speak for the entry (`journalctl -t`, its priority). A record's
//! names are made unique when it is made ([`encode_checked`]), so every
//! output carries each key once. Encoded:
//!
//! ```text
//! u8 count, then per field: u8 name length, name, then
//! tag 0: u32 length, string bytes    tag 1: i64 integer
//! tag 2: u32 length, bytes kept as bytes (vlog's own: see `bytes`)
//! tag 3: u32 length, a backtrace (vlog's own: see `frames`)
//! ```

use std::sync::atomic::{AtomicBool, Ordering};

use crate::stats;

mod bytes;
pub mod frames;
mod names;
pub use bytes::{Dump, BYTES_MAX};
pub use frames::Frames;
pub use names::{
    is_reserved, journald_name, otel_key, same_name, valid_name, NAME_MAX, RESERVED,
    RESERVED_PREFIXES,
};

/// At most this many fields are kept per message.
pub const MAX_FIELDS: usize = 32;
/// The encoded fields of one message take at most this many bytes; string
/// values are cut to fit.
pub const ENCODED_MAX: usize = 4096;
/// The most a record's encoded fields take: the budget, and the bytes of a
/// dump (`bytes`) and a backtrace (`frames`) beside it.
pub const WITH_BYTES_MAX: usize = ENCODED_MAX + bytes::ROOM + frames::ROOM;

const TAG_STR: u8 = 0;
const TAG_INT: u8 = 1;
const TAG_BYTES: u8 = 2;
const TAG_FRAMES: u8 = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    Str(&'a [u8]),
    Int(i64),
    /// Bytes kept as bytes (a dump, `bytes`): never text, shown as hex.
    Bytes(&'a [u8]),
    /// A backtrace's encoding (`frames`), checked whole when read: a
    /// slice, so that a field stays small (32 of them are on a call's
    /// stack).
    Frames(&'a [u8]),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field<'a> {
    pub name: &'a [u8],
    pub value: Value<'a>,
}

/// What a list of fields is filled with before it is filled.
const NO_FIELD: Field<'static> = Field {
    name: b"",
    value: Value::Int(0),
};

/// What a field with a bad name becomes: the message keeps a trace of it.
pub const BAD_FIELD: &[u8] = b"VLOG_BAD_FIELD_NAME";

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
    /// A relayed child's line: the first `own` fields the daemon's (the
    /// relay's own, checked when set), which keep their room whatever the
    /// child's take; the others the child's, checked.
    Relayed { own: usize },
}

impl Names {
    /// How many of the first fields keep their room (see [`Kept`]).
    pub fn kept_first(self) -> usize {
        match self {
            Names::VlogFirst => 1,
            Names::Relayed { own } => own,
            Names::Caller | Names::Vlog => 0,
        }
    }
}

/// Why a caller's field was not kept as given, for the one report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    Invalid,
    Reserved,
    /// Its value did not fit in what the record's fields may take
    /// ([`ENCODED_MAX`]) beside the fields that keep their room: cut, with
    /// [`CUT_MARK`] and its length at the end, or left out when not even
    /// that fits (`usize`: the value's length).
    TooLarge(usize),
}

/// The end of a field value cut to fit the budget:
/// `" [truncated: N bytes]"`, N the value's whole length, as a message's.
pub const CUT_MARK: &[u8] = b" [truncated: ";

/// Which fields of a record keep their room whatever the others take: vlog's
/// own report (`VLOG_SUPPRESSED`) and the fields carried for the caller (a
/// thread's, a relay's own), which a call's large field must never push
/// out. Counted from the front and from the back of the list.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Kept {
    pub first: usize,
    pub last: usize,
}

/// Encodes a caller's fields into `out` (see [`encode`]), each name once:
/// a name that is not valid, or [`RESERVED`], is not kept; the first such
/// becomes [`BAD_FIELD`] with the name as its value, the others are
/// dropped; a name given twice is dropped (the first value is kept). Each
/// field not kept is counted (`vlog_stats.bad_fields`), and `report` is
/// called for the first refused name of the process, to say so once.
/// Fields from vlog itself ([`Names::Vlog`]) are kept as they are.
///
/// The budget: at most [`MAX_FIELDS`] fields and [`ENCODED_MAX`] bytes in
/// all. The fields `kept` names have their room first; the others take
/// what is left in order, a string value that does not fit cut to fit
/// with [`CUT_MARK`], a field whose name does not fit left out: each
/// counted in `bad_fields`, the first of the process reported once.
pub fn encode_checked(
    list: &[Field],
    names: Names,
    kept_room: Kept,
    out: &mut Vec<u8>,
    mut report: impl FnMut(&[u8], Refusal),
) {
    static REPORTED: AtomicBool = AtomicBool::new(false);
    static REPORTED_CUT: AtomicBool = AtomicBool::new(false);
    let mut kept = [(NO_FIELD, false); MAX_FIELDS];
    let mut n = 0;
    let mut marked = false;
    let mut dropped = 0;
    // The count first: the fields that keep their room keep their place
    // among the 32, the others give way from their end.
    let protected = |i: usize| i < kept_room.first || i + kept_room.last >= list.len();
    let room_for_others =
        MAX_FIELDS.saturating_sub(kept_room.first.min(list.len()) + kept_room.last.min(list.len()));
    let mut others = 0;
    for (i, field) in list.iter().enumerate() {
        let keeps_room = protected(i);
        if !keeps_room {
            others += 1;
            if others > room_for_others {
                dropped += 1;
                continue;
            }
        }
        if n == MAX_FIELDS {
            dropped += 1;
            continue;
        }
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
                    report(field.name, why);
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
        if kept[..n].iter().any(|(k, _)| same_name(k.name, field.name)) {
            dropped += u64::from(refused.is_none());
            continue;
        }
        kept[n] = (field, keeps_room);
        n += 1;
    }
    let mut first_cut = None;
    let cut = encode_within(&kept[..n], out, |field| {
        first_cut.get_or_insert((field.name, field.value));
    });
    if let Some((name, Value::Str(value))) = first_cut {
        if !REPORTED_CUT.swap(true, Ordering::Relaxed) {
            report(name, Refusal::TooLarge(value.len()));
        }
    }
    if dropped + cut > 0 {
        stats::add(&stats::BAD_FIELDS, dropped + cut);
    }
}

/// The bytes `field` takes encoded, whole.
fn encoded_size(field: &Field) -> usize {
    1 + field.name.len()
        + 1
        + match field.value {
            Value::Int(_) => 8,
            Value::Str(s) | Value::Bytes(s) => 4 + s.len(),
            Value::Frames(f) => 4 + f.len(),
        }
}

/// Encodes `fields` (names already valid and unique, at most
/// MAX_FIELDS) into `out` within ENCODED_MAX bytes, the room of those
/// marked true taken first: returns how many of the others were cut or
/// left out, each passed to `cut`. When the others do not all fit, the
/// largest are cut to one size, the largest that lets everything fit, so
/// one huge value never starves a small one beside it.
fn encode_within<'a>(
    fields: &[(Field<'a>, bool)],
    out: &mut Vec<u8>,
    mut cut: impl FnMut(&Field<'a>),
) -> u64 {
    let start = out.len();
    out.push(0);
    let sizes = fields.iter().map(|(f, keeps)| (encoded_size(f), *keeps));
    let reserved: usize = sizes.clone().filter(|s| s.1).map(|s| s.0).sum();
    let others = || sizes.clone().filter(|s| !s.1).map(|s| s.0);
    let avail = (ENCODED_MAX - 1).saturating_sub(reserved);
    let fits = |cap: usize| others().map(|s| s.min(cap)).sum::<usize>() <= avail;
    let cap = if fits(usize::MAX) {
        usize::MAX
    } else {
        // The largest cap that fits (fits(0) holds: 0 <= avail).
        let (mut lo, mut hi) = (0, others().max().unwrap_or(0));
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if fits(mid) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        lo
    };
    let mut count = 0u8;
    let mut not_whole = 0;
    for (field, keeps) in fields {
        let size = encoded_size(field);
        let room = ENCODED_MAX - (out.len() - start);
        if size <= room && (*keeps || size <= cap) {
            put_field(
                &mut |b| out.extend_from_slice(b),
                field.name,
                field.value,
                None,
            );
            count += 1;
            continue;
        }
        not_whole += 1;
        cut(field);
        // Only a string can be cut: its start, then the mark with its
        // whole length, if at least a byte of it fits beside them.
        if let Value::Str(s) = field.value {
            let mut mark = [0u8; 48];
            let mark = cut_mark(s.len(), &mut mark);
            let header = 1 + field.name.len() + 1 + 4;
            let size = cap.min(room);
            if size > header + mark.len() {
                let keep = size - header - mark.len();
                put_field(
                    &mut |b| out.extend_from_slice(b),
                    field.name,
                    Value::Str(&s[..keep]),
                    Some(mark),
                );
                count += 1;
            }
        }
    }
    out[start] = count;
    not_whole
}

/// [`CUT_MARK`], the length and " bytes]", in `buf` (no allocation: this
/// is the recording path).
fn cut_mark(len: usize, buf: &mut [u8; 48]) -> &[u8] {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = len;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let mut n = 0;
    for part in [CUT_MARK, &digits[at..], b" bytes]"] {
        buf[n..n + part.len()].copy_from_slice(part);
        n += part.len();
    }
    &buf[..n]
}

/// Appends one field through `out`; a string value followed by `mark`.
fn put_field(out: &mut impl FnMut(&[u8]), name: &[u8], value: Value, mark: Option<&[u8]>) {
    out(&[name.len() as u8]);
    out(name);
    match value {
        Value::Int(n) => {
            out(&[TAG_INT]);
            out(&n.to_ne_bytes());
        }
        Value::Str(s) => {
            let mark = mark.unwrap_or_default();
            out(&[TAG_STR]);
            out(&((s.len() + mark.len()) as u32).to_ne_bytes());
            out(s);
            out(mark);
        }
        Value::Bytes(b) => {
            out(&[TAG_BYTES]);
            out(&(b.len() as u32).to_ne_bytes());
            out(b);
        }
        Value::Frames(f) => {
            out(&[TAG_FRAMES]);
            out(&(f.len() as u32).to_ne_bytes());
            out(f);
        }
    }
}

/// The encoding of `fields` (names valid and unique) in `out`, whole,
/// without allocating: the bytes [`encode`] makes of them when they all
/// fit. Its length; None when there are more than [`MAX_FIELDS`] or they
/// do not fit in `out` or [`ENCODED_MAX`] (nothing is cut here). For a
/// set made once and carried on many records (a thread's own fields).
pub fn encode_whole_into<'a>(
    fields: impl Iterator<Item = Field<'a>>,
    out: &mut [u8],
) -> Option<usize> {
    let room = out.len().min(ENCODED_MAX);
    let (mut n, mut fits, mut count) = (1, room > 0, 0);
    let mut fill = |bytes: &[u8]| match out[..room].get_mut(n..n + bytes.len()) {
        Some(dst) if fits => {
            dst.copy_from_slice(bytes);
            n += bytes.len();
        }
        _ => fits = false,
    };
    for field in fields {
        count += 1;
        put_field(&mut fill, field.name, field.value, None);
    }
    (fits && count <= MAX_FIELDS).then(|| {
        out[0] = count as u8;
        n
    })
}

/// Appends the encoding of `fields` (names already valid and unique) to
/// `out`, which has ENCODED_MAX bytes of room reserved, so nothing is
/// allocated. Fields past MAX_FIELDS are left out; a string value that does
/// not fit is cut with [`CUT_MARK`] (vlog's own records: an operator's
/// change, what a thread carries; see [`encode_checked`] for a caller's).
pub fn encode<'a>(fields: impl Iterator<Item = Field<'a>>, out: &mut Vec<u8>) {
    let mut list = [(NO_FIELD, false); MAX_FIELDS];
    let mut n = 0;
    for field in fields.take(MAX_FIELDS) {
        list[n] = (field, false);
        n += 1;
    }
    encode_within(&list[..n], out, |_| {});
}

/// Appends `dump` to the fields encoded in `out` (empty: none yet), within
/// [`bytes::ROOM`] more bytes: nothing is allocated where `out` has that room.
/// Its names are vlog's own (the `VLOG_` prefix no caller may use), so
/// they never meet a caller's.
pub fn bytes_after(dump: Dump, out: &mut Vec<u8>) {
    if out.is_empty() {
        out.push(0);
    }
    let mut put = |b: &[u8]| out.extend_from_slice(b);
    put_field(&mut put, bytes::HEXDUMP, Value::Bytes(dump.bytes), None);
    let mut added = 1;
    if dump.omitted > 0 {
        let omitted = i64::try_from(dump.omitted).unwrap_or(i64::MAX);
        put_field(&mut put, bytes::OMITTED, Value::Int(omitted), None);
        added += 1;
    }
    out[0] += added;
}

/// Appends a backtrace (`encoded` as `frames::Encoder` made it, at most
/// [`frames::ENCODED_MAX`] bytes) to the fields encoded in `out` (empty:
/// none yet), within [`frames::ROOM`] more bytes, as [`bytes_after`] does.
pub fn frames_after(encoded: &[u8], out: &mut Vec<u8>) {
    debug_assert!(encoded.len() <= frames::ENCODED_MAX);
    if out.is_empty() {
        out.push(0);
    }
    out.push(frames::BACKTRACE.len() as u8);
    out.extend_from_slice(frames::BACKTRACE);
    out.push(TAG_FRAMES);
    out.extend_from_slice(&(encoded.len() as u32).to_ne_bytes());
    out.extend_from_slice(encoded);
    out[0] += 1;
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
        TAG_STR | TAG_BYTES | TAG_FRAMES => {
            let len = u32::from_ne_bytes(rest.get(..4)?.try_into().ok()?) as usize;
            let s = rest.get(4..4 + len)?;
            let value = match tag {
                TAG_STR => Value::Str(s),
                TAG_BYTES => Value::Bytes(s),
                _ => Value::Frames(Frames::decode(s)?.encoded()),
            };
            Some((Field { name, value }, &rest[4 + len..]))
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

    /// A set encoded whole into a fixed array is what `encode` makes of
    /// it; more than fits, or than MAX_FIELDS, is None, never cut.
    #[test]
    fn encoded_whole_into_an_array_is_what_encode_makes() {
        let list = [
            Field {
                name: b"REQUEST_ID",
                value: Value::Str(b"r-17"),
            },
            Field {
                name: b"ATTEMPT",
                value: Value::Int(-2),
            },
        ];
        let mut want = Vec::with_capacity(ENCODED_MAX);
        encode(list.iter().copied(), &mut want);
        let mut out = [0xAAu8; 64];
        let n = encode_whole_into(list.iter().copied(), &mut out).unwrap();
        assert_eq!(&out[..n], &want[..]);
        assert_eq!(
            encode_whole_into(list.iter().copied(), &mut out[..n - 1]),
            None
        );
        assert_eq!(encode_whole_into(std::iter::empty(), &mut out[..0]), None);
        let many = [list[1]; MAX_FIELDS + 1];
        let mut big = [0u8; 1024];
        assert_eq!(encode_whole_into(many.iter().copied(), &mut big), None);
        assert!(encode_whole_into(many[..MAX_FIELDS].iter().copied(), &mut big).is_some());
    }

    #[test]
    fn names() {
        for good in [
            "VM",
            "PID",
            "A1",
            "X_Y",
            &"A".repeat(64),
            "vm",
            "http.method",
            "user.id",
            "http.response.status_code",
            "Http.Method2",
        ] {
            assert!(valid_name(good.as_bytes()), "{good}");
        }
        for bad in [
            "",
            "_VM",
            "1VM",
            "V-M",
            "V M",
            "É",
            &"A".repeat(65),
            ".vm",
            "vm.",
            "http..method",
            "1.a",
            "a=b",
            "a]b",
        ] {
            assert!(!valid_name(bad.as_bytes()), "{bad}");
        }
    }

    /// OpenTelemetry's names are journald's upper case with dots as
    /// underscores: one name in either form, reserved in either form.
    #[test]
    fn opentelemetry_names_are_journalds_in_another_form() {
        assert!(same_name(b"http.method", b"HTTP_METHOD"));
        assert!(same_name(b"Http_Method", b"http.method"));
        assert!(!same_name(b"http.method", b"HTTP_METHODS"));
        for name in [
            &b"message"[..],
            b"code.file",
            b"vlog.seq",
            b"object.pid",
            b"priority",
        ] {
            assert!(is_reserved(name), "{}", String::from_utf8_lossy(name));
        }
        assert!(!is_reserved(b"http.method") && !is_reserved(b"vlo"));
        assert_eq!(otel_key(b"TRACE_ID"), Some(&b"trace_id"[..]));
        assert_eq!(otel_key(b"trace_id"), Some(&b"trace_id"[..]));
        // The second of two names journald would take as one is left out
        // and counted, never renamed onto the first.
        let list = [
            Field {
                name: b"http.method",
                value: Value::Str(b"GET"),
            },
            Field {
                name: b"HTTP_METHOD",
                value: Value::Str(b"POST"),
            },
            Field {
                name: b"user.id",
                value: Value::Int(42),
            },
        ];
        let before = stats::get(&stats::BAD_FIELDS);
        let mut buf = Vec::new();
        encode_checked(&list, Names::Caller, Kept::default(), &mut buf, |_, _| {});
        let kept: Vec<Field> = decode(&buf).unwrap().iter().collect();
        assert_eq!(kept, [list[0], list[2]]);
        assert!(stats::get(&stats::BAD_FIELDS) > before);
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
        encode_checked(&list, Names::Caller, Kept::default(), &mut buf, |n, why| {
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
        encode_checked(&own, Names::Vlog, Kept::default(), &mut buf, |_, _| {});
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
        bad[2] = b'-'; // a name no one may give
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

    fn str_of<'a>(fields: &[Field<'a>], name: &[u8]) -> Option<&'a [u8]> {
        fields.iter().find_map(|f| match f.value {
            Value::Str(s) if f.name == name => Some(s),
            _ => None,
        })
    }

    /// A call's large field is cut with a mark that says so, counted and
    /// said once; the fields that keep their room (vlog's first, a
    /// thread's last) and a later small one of the call's are all there.
    #[test]
    fn a_large_field_is_cut_with_a_mark_and_pushes_out_no_kept_field() {
        let big = vec![b'b'; 5000];
        let list = [
            Field {
                name: b"VLOG_SUPPRESSED",
                value: Value::Int(3),
            },
            Field {
                name: b"BODY",
                value: Value::Str(&big),
            },
            Field {
                name: b"STATUS",
                value: Value::Str(b"ok"),
            },
            Field {
                name: b"REQUEST_ID",
                value: Value::Str(b"r-42"),
            },
        ];
        let before = stats::get(&stats::BAD_FIELDS);
        let mut buf = Vec::with_capacity(ENCODED_MAX);
        let mut said = Vec::new();
        encode_checked(
            &list,
            Names::VlogFirst,
            Kept { first: 1, last: 1 },
            &mut buf,
            |n, why| said.push((n.to_vec(), why)),
        );
        assert!(buf.len() <= ENCODED_MAX, "{}", buf.len());
        let kept: Vec<Field> = decode(&buf).unwrap().iter().collect();
        let names: Vec<&[u8]> = kept.iter().map(|f| f.name).collect();
        assert_eq!(
            names,
            [&b"VLOG_SUPPRESSED"[..], b"BODY", b"STATUS", b"REQUEST_ID"],
            "{kept:?}"
        );
        assert_eq!(str_of(&kept, b"STATUS"), Some(&b"ok"[..]));
        let body = str_of(&kept, b"BODY").unwrap();
        assert!(body.ends_with(b" [truncated: 5000 bytes]"), "{body:?}");
        assert!(body.starts_with(b"bbbb"));
        assert_eq!(str_of(&kept, b"REQUEST_ID"), Some(&b"r-42"[..]));
        // BODY, cut, counted.
        assert!(stats::get(&stats::BAD_FIELDS) > before);
        // Said once a process: the first cut, if no other test said it.
        assert!(said.len() <= 1, "{said:?}");
        if let Some((name, why)) = said.first() {
            assert_eq!(
                (name.as_slice(), *why),
                (&b"BODY"[..], Refusal::TooLarge(5000))
            );
        }
    }

    /// 32 fields of a call leave room, in number too, for a thread's.
    #[test]
    fn a_calls_many_fields_leave_a_kept_fields_place() {
        let own: Vec<Field> = (0..40)
            .map(|_| Field {
                name: b"K",
                value: Value::Int(1),
            })
            .collect();
        let names: Vec<Vec<u8>> = (0..40).map(|i| format!("K{i}").into_bytes()).collect();
        let mut list: Vec<Field> = own
            .iter()
            .zip(&names)
            .map(|(f, n)| Field { name: n, ..*f })
            .collect();
        list.push(Field {
            name: b"TRACE_ID",
            value: Value::Str(b"0af7651916cd43dd8448eb211c80319c"),
        });
        let mut buf = Vec::with_capacity(ENCODED_MAX);
        encode_checked(
            &list,
            Names::Caller,
            Kept { first: 0, last: 1 },
            &mut buf,
            |_, _| {},
        );
        let kept: Vec<Field> = decode(&buf).unwrap().iter().collect();
        assert_eq!(kept.len(), MAX_FIELDS);
        assert_eq!(kept.last().unwrap().name, b"TRACE_ID");
    }

    /// Two huge values share the room; a small one beside them is whole.
    #[test]
    fn huge_values_share_the_room() {
        let big = vec![b'x'; ENCODED_MAX];
        let list = [
            Field {
                name: b"A",
                value: Value::Str(&big),
            },
            Field {
                name: b"B",
                value: Value::Str(&big),
            },
            Field {
                name: b"N",
                value: Value::Int(7),
            },
        ];
        let mut buf = Vec::with_capacity(ENCODED_MAX);
        encode_checked(&list, Names::Caller, Kept::default(), &mut buf, |_, _| {});
        let kept: Vec<Field> = decode(&buf).unwrap().iter().collect();
        let names: Vec<&[u8]> = kept.iter().map(|f| f.name).collect();
        assert_eq!(names, [&b"A"[..], b"B", b"N"]);
        assert!(buf.len() <= ENCODED_MAX);
        let a = str_of(&kept, b"A").unwrap();
        assert!(a.ends_with(b" [truncated: 4096 bytes]"), "{}", a.len());
        assert_eq!(a.len(), str_of(&kept, b"B").unwrap().len());
    }

    #[test]
    fn a_dump_follows_the_fields_and_reads_back() {
        let mut out = Vec::new();
        let field = Field {
            name: b"VM",
            value: Value::Str(b"guest1"),
        };
        encode([field].into_iter(), &mut out);
        bytes_after(Dump::of(&[0, 1, 255]), &mut out);
        let read: Vec<_> = decode(&out).unwrap().iter().collect();
        assert_eq!(read.len(), 2, "{read:?}");
        assert_eq!(read[0], field);
        assert_eq!(read[1].name, bytes::HEXDUMP);
        assert_eq!(read[1].value, Value::Bytes(&[0, 1, 255]));
    }

    #[test]
    fn bytes_beyond_the_most_kept_are_counted() {
        let big = vec![7u8; BYTES_MAX + 10];
        let mut out = Vec::new();
        bytes_after(Dump::of(&big), &mut out);
        let read: Vec<_> = decode(&out).unwrap().iter().collect();
        assert_eq!(read[0].value, Value::Bytes(&big[..BYTES_MAX]));
        assert_eq!(read[1].name, bytes::OMITTED);
        assert_eq!(read[1].value, Value::Int(10));
        assert!(
            out.len() <= bytes::ROOM + 1,
            "{} > {}",
            out.len(),
            bytes::ROOM + 1
        );
    }

    #[test]
    fn a_dump_beside_a_full_budget_fits_the_room_reserved() {
        let value = vec![b'v'; ENCODED_MAX];
        let list: Vec<_> = (0..MAX_FIELDS)
            .map(|_| Field {
                name: b"BIG",
                value: Value::Str(&value),
            })
            .collect();
        let mut out = Vec::new();
        encode(list.into_iter(), &mut out);
        assert!(out.len() <= ENCODED_MAX);
        bytes_after(Dump::of(&[1u8; BYTES_MAX + 1]), &mut out);
        assert!(out.len() <= ENCODED_MAX + bytes::ROOM, "{}", out.len());
        assert!(decode(&out).is_some());
    }
}
