//! A record as one JSON object on one line, rendered without allocation:
//! the JSON outputs and `vlog-dump --json` share it. Always valid UTF-8 JSON:
//! bytes that are not UTF-8 become U+FFFD, control characters (C0, DEL and
//! C1) are escaped, and plain ASCII goes by eight bytes at a time.

use super::frames::{self, FramesAs};
use super::hexdump::put_hex;
use super::num::{id_hex, put_decimal, put_signed};
use super::plain::{self, all_plain};
use super::sink::Sink;
use super::time::Clock;
use crate::fields::{self, Value};
use crate::record::{Record, MESSAGE_MAX, NAME_MAX};

/// The longest line [`render_json`] can produce: a byte takes at most six
/// (`\u00XX`), names and message included; a byte kept as a byte, two.
pub const JSON_LINE_MAX: usize = 272
    + 6 * (3 * NAME_MAX + MESSAGE_MAX + fields::ENCODED_MAX)
    + 6 * (fields::WITH_BYTES_MAX - fields::ENCODED_MAX)
    + fields::frames::FRAMES_MAX * (2 + frames::FRAME_TEXT_MAX / 4 * 6);

/// Bytes kept as bytes, as a string of lowercase hex.
fn put_hex_string(bytes: &[u8], out: &mut impl Sink) {
    out.put(b"\"");
    put_hex(bytes, out);
    out.put(b"\"");
}

/// Renders `rec` as one JSON object on one line. Strings are always valid
/// UTF-8 JSON: invalid bytes become U+FFFD, control characters are escaped.
/// `pid` is given by the JSON outputs (a record does not keep it); `clock`
/// keeps the date of the last second shown (see [`Clock`]).
pub fn render_json<S: Sink>(rec: &Record, pid: Option<u32>, clock: &mut Clock, out: &mut S) {
    render_json_framed(rec, pid, clock, FramesAs::Text, out)
}

/// [`render_json`], a backtrace shown as `shown` says.
pub fn render_json_framed<S: Sink>(
    rec: &Record,
    pid: Option<u32>,
    clock: &mut Clock,
    shown: FramesAs,
    out: &mut S,
) {
    out.put(b"{\"seq\":");
    put_decimal(rec.seq, 1, out);
    if rec.context {
        out.put(b",\"context\":true");
    }
    if rec.id != 0 {
        out.put(b",\"id\":\"");
        out.put(&id_hex(rec.id));
        out.put(b"\"");
    }
    out.put(b",\"time\":\"");
    clock.put_timestamp(rec.time_ns, out);
    out.put(b"\",\"time_ns\":");
    put_decimal(rec.time_ns, 1, out);
    if let Some(pid) = pid {
        out.put(b",\"pid\":");
        put_decimal(pid as u64, 1, out);
    }
    out.put(b",\"tid\":");
    clock.put_thread(rec.tid, out);
    out.put(b",\"priority\":\"");
    out.put(rec.priority.name().as_bytes());
    out.put(b"\",\"source\":");
    put_json_string(rec.source, out);
    out.put(b",\"file\":");
    put_json_string(rec.file, out);
    out.put(b",\"line\":");
    put_decimal(rec.line as u64, 1, out);
    out.put(b",\"func\":");
    put_json_string(rec.func, out);
    out.put(b",\"message\":");
    put_json_string(rec.message, out);
    if let Some(fields) = fields::decode(rec.fields).filter(|f| !f.is_empty()) {
        let put_value = |value: Value, out: &mut S| match value {
            Value::Str(s) => put_json_string(s, out),
            Value::Int(n) => put_signed(n, out),
            Value::Bytes(b) => put_hex_string(b, out),
            Value::Frames(f) if shown == FramesAs::Encoded => put_hex_string(f, out),
            // A string of the frames' lines.
            Value::Frames(f) => {
                out.put(b"\"");
                frames::put_value(f, b"\\n", put_json_inside, out);
                out.put(b"\"");
            }
        };
        // Trace context at the top, under OpenTelemetry's names.
        for field in fields.iter() {
            if let Some(key) = fields::otel_key(field.name) {
                out.put(b",\"");
                out.put(key);
                out.put(b"\":");
                put_value(field.value, out);
            }
        }
        let mut sep: &[u8] = b",\"fields\":{";
        for field in fields.iter().filter(|f| fields::otel_key(f.name).is_none()) {
            out.put(sep);
            sep = b",";
            put_json_string(field.name, out);
            out.put(b":");
            put_value(field.value, out);
        }
        if sep.len() == 1 {
            out.put(b"}");
        }
    }
    out.put(b"}\n");
}

#[inline(always)]
pub fn put_json_string(bytes: &[u8], out: &mut impl Sink) {
    // The usual string: ASCII with nothing to escape (the test flags bytes
    // from 0x80 up too).
    if all_plain(bytes, needs_json_escape) {
        out.put(b"\"");
        out.put(bytes);
        out.put(b"\"");
    } else {
        put_json_escaped(bytes, out);
    }
}

/// [`put_json_string`] of bytes of which some need an escape or are not
/// ASCII: out of line, so that the plain case saves no registers.
#[inline(never)]
fn put_json_escaped(bytes: &[u8], out: &mut impl Sink) {
    out.put(b"\"");
    put_json_inside(bytes, out);
    out.put(b"\"");
}

/// What [`put_json_string`] writes of `bytes` between its quotes.
pub fn put_json_inside(bytes: &[u8], out: &mut impl Sink) {
    // ASCII needs no UTF-8 walk.
    if bytes.is_ascii() {
        put_json_valid(bytes, out);
        return;
    }
    for chunk in bytes.utf8_chunks() {
        put_json_valid(chunk.valid().as_bytes(), out);
        if !chunk.invalid().is_empty() {
            out.put("\u{FFFD}".as_bytes());
        }
    }
}

/// Valid UTF-8 `valid` with the JSON escapes.
fn put_json_valid(valid: &[u8], out: &mut impl Sink) {
    let mut start = 0;
    let mut i = 0;
    while i < valid.len() {
        // Plain bytes go by eight at a time: most messages are ASCII text
        // with nothing to escape.
        if let Some(word) = valid.get(i..i + 8) {
            if !needs_json_escape(u64::from_le_bytes(word.try_into().unwrap())) {
                i += 8;
                continue;
            }
        }
        let b = valid[i];
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\t' => b"\\t",
            b'\r' => b"\\r",
            0..=0x1f | 0x7f => b"",
            // A C1 control (U+0080-U+009F), which some terminals obey as
            // an escape sequence: escaped like C0, so a JSON line shown on
            // a terminal is as safe as a text line.
            0xc2 if valid.get(i + 1).is_some_and(|n| (0x80..0xa0).contains(n)) => b"",
            _ => {
                i += 1;
                continue;
            }
        };
        out.put(&valid[start..i]);
        let b = if b == 0xc2 {
            i += 1;
            valid[i]
        } else {
            b
        };
        i += 1;
        start = i;
        if escape.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.put(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(b >> 4) as usize],
                HEX[(b & 15) as usize],
            ]);
        } else {
            out.put(escape);
        }
    }
    out.put(&valid[start..]);
}

/// True if any of the eight bytes in `w` is a control byte, DEL, `"` or `\`
/// (bytes from 0x80 up are UTF-8 already checked, and left alone; they make
/// this true too, and are then looked at one by one).
/// One mask, no branch, of `plain`'s terms.
#[inline(always)]
fn needs_json_escape(w: u64) -> bool {
    let quote_or_backslash = plain::equal_to(w, b'"') | plain::equal_to(w, b'\\');
    (plain::controls(w) | quote_or_backslash | plain::del_or_high(w)) & plain::HIGH != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::record::sample;

    /// The word test agrees with the byte test on every byte value at every
    /// position.
    #[test]
    fn word_test_is_exact() {
        let plain = |b: u8| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\';
        for pos in 0..8 {
            for b in 0..=255u8 {
                for base in [
                    *b"abcdefgh",
                    [0x7f, 0x20, 0x1f, 0x80, 0xff, b'"', 0x5c, 0x21],
                ] {
                    let mut bytes = base;
                    bytes[pos] = b;
                    let want = !bytes.iter().all(|&b| plain(b));
                    assert_eq!(
                        needs_json_escape(u64::from_le_bytes(bytes)),
                        want,
                        "{bytes:x?}"
                    );
                }
            }
        }
    }

    #[test]
    fn json_is_valid_utf8_with_escapes() {
        let rec = Record {
            message: b"quote\" back\\ nl\n ctl\x01 del\x7f bad\xff\xfe \xc3\xa9 csi\xc2\x9b",
            ..sample()
        };
        let mut v = Vec::new();
        render_json(&rec, None, &mut Clock::new(), &mut v);
        let s = String::from_utf8(v).unwrap();
        assert!(
            s.starts_with("{\"seq\":0,\"time\":\"2026-11-30 13:45:12.345+0000\""),
            "{s}"
        );
        assert!(
            s.contains("\"priority\":\"debug\",\"source\":\"qemu.monitor\""),
            "{s}"
        );
        assert!(s.ends_with(
            "\"message\":\"quote\\\" back\\\\ nl\\n ctl\\u0001 del\\u007f bad\u{FFFD}\u{FFFD} \u{e9} csi\\u009b\"}\n"
        ), "{s}");
        // A call site's message id, after the sequence number.
        let mut v = Vec::new();
        let rec = Record {
            id: 0x0000_00af,
            ..sample()
        };
        render_json(&rec, None, &mut Clock::new(), &mut v);
        let s = String::from_utf8(v).unwrap();
        assert!(
            s.starts_with("{\"seq\":0,\"id\":\"000000af\",\"time\":"),
            "{s}"
        );
    }

    /// The word-at-a-time scan finds exactly what the byte-at-a-time rule
    /// would: every string comes out the same as from the plain definition.
    #[test]
    fn json_fast_path_matches_the_plain_rule() {
        fn plain(bytes: &[u8]) -> Vec<u8> {
            let mut out = b"\"".to_vec();
            for chunk in bytes.utf8_chunks() {
                for c in chunk.valid().chars() {
                    match c {
                        '"' => out.extend_from_slice(b"\\\""),
                        '\\' => out.extend_from_slice(b"\\\\"),
                        '\n' => out.extend_from_slice(b"\\n"),
                        '\t' => out.extend_from_slice(b"\\t"),
                        '\r' => out.extend_from_slice(b"\\r"),
                        c if (c as u32) < 0x20 || (0x7f..0xa0).contains(&(c as u32)) => {
                            out.extend_from_slice(format!("\\u{:04x}", c as u32).as_bytes())
                        }
                        c => out.extend_from_slice(c.to_string().as_bytes()),
                    }
                }
                if !chunk.invalid().is_empty() {
                    out.extend_from_slice("\u{FFFD}".as_bytes());
                }
            }
            out.push(b'"');
            out
        }
        let mut state = 0x1234_5678_9abc_def1u64;
        let alphabet = b"ab \"\\\n\x01\x1f\x7f\x80\xc2\x9b\xc3\xa9\xe2\x82\xac\xff~ ";
        for len in 0..200 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    // Mostly plain letters, so long runs take the fast path.
                    if state % 4 == 0 {
                        alphabet[(state >> 8) as usize % alphabet.len()]
                    } else {
                        b'a' + (state >> 16) as u8 % 26
                    }
                })
                .collect();
            let mut fast = Vec::new();
            put_json_string(&bytes, &mut fast);
            assert_eq!(fast, plain(&bytes), "{bytes:?}");
        }
    }
}
