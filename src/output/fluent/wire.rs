//! What goes on the wire: an event from a record, a chunk's name, a
//! receiver's acknowledgement.

use crate::fields::{self, Value};
use crate::record::{Record, MESSAGE_MAX, NAME_MAX};
use crate::sys;
use crate::text::frames;
use crate::text::line::put_escaped;
use crate::text::msgpack::{
    put_array_header, put_event_time, put_hex_str, put_int, put_map_header, put_str,
    put_str_header, put_uint,
};
use crate::text::Sink;

/// The keys every event has besides its fields.
const KEYS: usize = 11;
/// The largest event: every string may triple (each byte not UTF-8 becomes
/// U+FFFD), and every header is at most 5 bytes; a dump's bytes are two
/// hex digits each.
pub const EVENT_MAX: usize = 3 * (MESSAGE_MAX + fields::ENCODED_MAX + 3 * NAME_MAX + NAME_MAX)
    + 2 * (fields::WITH_BYTES_MAX - fields::ENCODED_MAX)
    + fields::frames::FRAMES_MAX * (1 + frames::FRAME_TEXT_MAX)
    + 64 * (KEYS + 3 + fields::MAX_FIELDS);

/// 16 hex digits, leading zeros kept.
pub fn put_hex_fixed(n: u64, out: &mut impl Sink) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut digits = [0u8; 16];
    for (i, d) in digits.iter_mut().enumerate() {
        *d = HEX[((n >> (60 - 4 * i)) & 15) as usize];
    }
    out.put(&digits);
}

/// 16 hex digits back into their number.
pub fn parse_hex(digits: &[u8]) -> Option<u64> {
    std::str::from_utf8(digits)
        .ok()
        .and_then(|d| u64::from_str_radix(d, 16).ok())
}

/// One `{"ack": ID}` at the start of `buf`: the ID and the bytes it took;
/// None when it is not whole yet; Err when it is not an ack.
pub fn parse_ack(buf: &[u8]) -> Result<Option<(&[u8], usize)>, ()> {
    const HEAD: &[u8] = &[0x81, 0xa3, b'a', b'c', b'k'];
    let n = buf.len().min(HEAD.len());
    if buf[..n] != HEAD[..n] {
        return Err(());
    }
    let Some(&kind) = buf.get(HEAD.len()) else {
        return Ok(None);
    };
    let (len, at) = match kind {
        0xa0..=0xbf => ((kind & 0x1f) as usize, HEAD.len() + 1),
        0xd9 => match buf.get(HEAD.len() + 1) {
            Some(&l) => (l as usize, HEAD.len() + 2),
            None => return Ok(None),
        },
        // bin 8: some receivers send the chunk back as binary.
        0xc4 => match buf.get(HEAD.len() + 1) {
            Some(&l) => (l as usize, HEAD.len() + 2),
            None => return Ok(None),
        },
        _ => return Err(()),
    };
    match buf.get(at..at + len) {
        Some(id) => Ok(Some((id, at + len))),
        None => Ok(None),
    }
}

/// The keys of the record's own that a field's name could be (a field in
/// OpenTelemetry's form is lower case): such a field is written under its
/// journald form instead (`source` as SOURCE), which no other field of the
/// record has (`fields::same_name`), so no key is given twice and none
/// speaks for the event.
const OWN_KEYS: [&[u8]; 13] = [
    b"message",
    b"priority",
    b"severity",
    b"source",
    b"file",
    b"line",
    b"func",
    b"pid",
    b"tid",
    b"seq",
    b"ident",
    b"context",
    b"id",
];

/// `[time, record]`, from the record, into `out`.
pub fn encode_event(rec: &Record, ident: &[u8], out: &mut Vec<u8>) {
    // The keys as MessagePack fixstrs, written as they are.
    let decoded = fields::decode(rec.fields);
    let n_fields = decoded.as_ref().map_or(0, |f| f.iter().count());
    put_array_header(2, out);
    put_event_time(rec.time_ns, out);
    let keys = KEYS + usize::from(rec.context) + usize::from(rec.id != 0) + n_fields;
    put_map_header(keys, out);
    out.extend_from_slice(b"\xa7message");
    put_str(rec.message, out);
    out.extend_from_slice(b"\xa8priority");
    put_str(rec.priority.name().as_bytes(), out);
    out.extend_from_slice(b"\xa8severity");
    put_uint(u64::from(rec.priority.syslog_severity()), out);
    out.extend_from_slice(b"\xa6source");
    put_str(rec.source, out);
    out.extend_from_slice(b"\xa4file");
    put_str(rec.file, out);
    out.extend_from_slice(b"\xa4line");
    put_uint(u64::from(rec.line), out);
    out.extend_from_slice(b"\xa4func");
    put_str(rec.func, out);
    out.extend_from_slice(b"\xa3pid");
    put_uint(u64::from(sys::process_id()), out);
    out.extend_from_slice(b"\xa3tid");
    put_uint(u64::from(rec.tid), out);
    out.extend_from_slice(b"\xa3seq");
    put_uint(rec.seq, out);
    out.extend_from_slice(b"\xa5ident");
    put_str(ident, out);
    if rec.context {
        // `context: true` (MessagePack's true is 0xc3).
        out.extend_from_slice(b"\xa7context\xc3");
    }
    if rec.id != 0 {
        out.extend_from_slice(b"\xa2id");
        put_str(&crate::text::num::id_hex(rec.id), out);
    }
    if let Some(fields) = decoded {
        for field in fields.iter() {
            let key = fields::otel_key(field.name).unwrap_or(field.name);
            let mut upper = [0u8; fields::NAME_MAX];
            if OWN_KEYS.contains(&key) {
                put_str(fields::journald_name(key, &mut upper), out);
            } else {
                put_str(key, out);
            }
            match field.value {
                Value::Str(s) => put_str(s, out),
                Value::Int(n) => put_int(n, out),
                Value::Bytes(b) => put_hex_str(b, out),
                // A string of the frames' lines, their data escaped as
                // the text line escapes it (valid UTF-8, as msgpack's
                // strings are).
                Value::Frames(f) => {
                    let escaped = |b: &[u8], out: &mut _| put_escaped(b, out);
                    let len = frames::value_len(f, b"\n", put_escaped);
                    put_str_header(len, out);
                    frames::put_value(f, b"\n", escaped, out);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fields::Field;
    use crate::priority::Priority;

    #[test]
    fn the_largest_event_fits_its_buffer() {
        // Every string at its longest and not UTF-8 (each byte tripled),
        // every field a string.
        let bad = [0xffu8; MESSAGE_MAX];
        let name = [0xfeu8; NAME_MAX];
        let value = [0xfdu8; 100];
        let names: Vec<Vec<u8>> = (0..fields::MAX_FIELDS)
            .map(|i| format!("F{i:02}").into_bytes())
            .collect();
        let list: Vec<Field> = names
            .iter()
            .map(|n| Field {
                name: n,
                value: Value::Str(&value),
            })
            .collect();
        let mut encoded = Vec::with_capacity(fields::WITH_BYTES_MAX);
        fields::encode(list.into_iter(), &mut encoded);
        let bytes = [0xffu8; fields::BYTES_MAX + 1];
        fields::bytes_after(fields::Dump::of(&bytes), &mut encoded);
        let rec = Record {
            seq: u64::MAX,
            time_ns: u64::MAX,
            tid: u32::MAX,
            line: u32::MAX,
            priority: Priority::Error,
            source: &name,
            file: &name,
            func: &name,
            message: &bad,
            fields: &encoded,
            context: false,
            id: 0,
        };
        let mut out = Vec::new();
        encode_event(&rec, &name, &mut out);
        assert!(out.len() <= EVENT_MAX, "{} > {EVENT_MAX}", out.len());
        assert!(out.len() > 3 * MESSAGE_MAX, "{out:?}");
    }

    /// A record with short values, and these encoded fields.
    fn record(fields: &[u8]) -> Record<'_> {
        Record {
            seq: 1,
            time_ns: 2,
            tid: 3,
            line: 4,
            priority: Priority::Info,
            source: b"s",
            file: b"f",
            func: b"fn",
            message: b"m",
            fields,
            context: false,
            id: 0,
        }
    }

    #[test]
    fn the_keys_written_as_they_are_are_what_put_str_makes() {
        let rec = record(b"");
        let mut out = Vec::new();
        encode_event(&rec, b"id", &mut out);
        let mut want = Vec::new();
        put_array_header(2, &mut want);
        put_event_time(2, &mut want);
        put_map_header(KEYS, &mut want);
        for (key, value) in [("message", &b"m"[..]), ("priority", b"info")] {
            put_str(key.as_bytes(), &mut want);
            put_str(value, &mut want);
        }
        put_str(b"severity", &mut want);
        put_uint(6, &mut want);
        put_str(b"source", &mut want);
        put_str(b"s", &mut want);
        put_str(b"file", &mut want);
        put_str(b"f", &mut want);
        put_str(b"line", &mut want);
        put_uint(4, &mut want);
        put_str(b"func", &mut want);
        put_str(b"fn", &mut want);
        put_str(b"pid", &mut want);
        put_uint(u64::from(sys::process_id()), &mut want);
        put_str(b"tid", &mut want);
        put_uint(3, &mut want);
        put_str(b"seq", &mut want);
        put_uint(1, &mut want);
        put_str(b"ident", &mut want);
        put_str(b"id", &mut want);
        assert_eq!(out, want);
        // A call site's message id: one more key, `id`, as put_str makes it.
        let mut with_id = Vec::new();
        encode_event(
            &Record {
                id: 0xabcdef01,
                ..rec
            },
            b"id",
            &mut with_id,
        );
        // The map's header (a fixmap) after the array's (1 byte) and the
        // event time (10): one key more.
        want[1 + 10] += 1;
        put_str(b"id", &mut want);
        put_str(b"abcdef01", &mut want);
        assert_eq!(with_id, want);
    }

    /// A field named as one of the event's own keys (OpenTelemetry's form
    /// is lower case) is written in journald's form: no key twice, none
    /// speaking for the event.
    #[test]
    fn a_field_named_as_an_own_key_is_written_in_journalds_form() {
        let mut encoded = Vec::new();
        crate::fields::encode(
            [
                Field {
                    name: b"source",
                    value: Value::Str(b"forged"),
                },
                Field {
                    name: b"pid",
                    value: Value::Int(1),
                },
                Field {
                    name: b"http.method",
                    value: Value::Str(b"GET"),
                },
            ]
            .into_iter(),
            &mut encoded,
        );
        let rec = record(&encoded);
        let mut out = Vec::new();
        encode_event(&rec, b"id", &mut out);
        let mut tail = Vec::new();
        put_str(b"SOURCE", &mut tail);
        put_str(b"forged", &mut tail);
        put_str(b"PID", &mut tail);
        put_int(1, &mut tail);
        put_str(b"http.method", &mut tail);
        put_str(b"GET", &mut tail);
        assert!(out.ends_with(&tail), "{:?}", String::from_utf8_lossy(&out));
        let count = |key: &[u8]| {
            let mut k = Vec::new();
            put_str(key, &mut k);
            out.windows(k.len()).filter(|w| *w == &k[..]).count()
        };
        assert_eq!((count(b"source"), count(b"pid")), (1, 1));
    }

    #[test]
    fn acknowledgements_are_read_whole_or_not_at_all() {
        let mut ack = vec![0x81, 0xa3, b'a', b'c', b'k', 0xa2, b'i', b'd'];
        assert_eq!(parse_ack(&ack), Ok(Some((&b"id"[..], 8))));
        for cut in 0..ack.len() {
            assert_eq!(parse_ack(&ack[..cut]), Ok(None), "{cut}");
        }
        ack.extend_from_slice(&[0x81]);
        assert_eq!(parse_ack(&ack), Ok(Some((&b"id"[..], 8))));
        // str 8 and bin 8 forms.
        let long = [&[0x81, 0xa3, b'a', b'c', b'k', 0xd9, 32][..], &[b'x'; 32]].concat();
        assert_eq!(parse_ack(&long).unwrap().unwrap().0.len(), 32);
        let bin = [0x81, 0xa3, b'a', b'c', b'k', 0xc4, 1, b'z'];
        assert_eq!(parse_ack(&bin), Ok(Some((&b"z"[..], 8))));
        // Anything else is not an acknowledgement.
        for bad in [
            &[0x80][..],
            &[0x81, 0xa3, b'n', b'a', b'k'],
            &[0x81, 0xa3, b'a', b'c', b'k', 0x05],
        ] {
            assert_eq!(parse_ack(bad), Err(()), "{bad:?}");
        }
        assert_eq!(parse_hex(b"00000000000000ff"), Some(255));
        assert_eq!(parse_hex(b"zz"), None);
    }
}
