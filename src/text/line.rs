//! The text line, rendered without allocation:
//!
//! `2026-11-30 13:45:12.345+0000: 4242: debug : qemu.monitor : qemuMonitorSend:123 : message`
//!
//! libvirt's line with the source added. In names and messages, control bytes
//! (C0, DEL, and the C1 controls U+0080-U+009F, which some terminals obey as
//! escape sequences), bytes that are not UTF-8 and the backslash itself are
//! escaped (`\n`, `\t`, `\r`, `\\`, `\xHH`): one message is always one line,
//! no terminal escape sequence reaches a terminal raw, and what the line shows
//! tells exactly which bytes were logged. A record that keeps bytes
//! (`VLOG_HEXDUMP`) has them after its line as `hexdump -C` shows them:
//! lines of plain ASCII that start with an offset, never a date.

use super::frames::{self, FramesAs, Piece};
use super::hexdump::{self, put_hex, put_hexdump};
use super::num::{put_decimal, put_signed};
use super::plain::{self, all_plain};
use super::sink::Sink;
use super::time::Clock;
use crate::fields::{self, Value};
use crate::record::{Record, MESSAGE_MAX, NAME_MAX};

/// The longest line [`render_line`] can produce: every escaped byte takes at most
/// four bytes (a field's integer, eight bytes encoded, at most 20 digits),
/// and a dump's lines (which are more than [`put_fields_text`] makes of the
/// same bytes as hex).
pub const LINE_MAX: usize = 112
    + 4 * (2 * NAME_MAX + MESSAGE_MAX + fields::ENCODED_MAX)
    + hexdump::text_max(fields::BYTES_MAX)
    + 4 * (fields::WITH_BYTES_MAX - fields::ENCODED_MAX - fields::BYTES_MAX)
    + fields::frames::FRAMES_MAX * (frames::FRAME_TEXT_MAX + 3);

/// What follows the priority's name in the line of a record printed as an
/// error's context (`debug (context) : ...`): in the line's head, where no
/// message or name can put it.
pub const CONTEXT_MARK: &[u8] = b" (context)";

/// Renders `rec` as one text line ending in `\n`; `clock` keeps the date of
/// the last second shown (see [`Clock`]).
pub fn render_line(rec: &Record, clock: &mut Clock, out: &mut impl Sink) {
    render_line_framed(rec, clock, FramesAs::Text, out)
}

/// [`render_line`], a backtrace shown as `shown` says.
pub fn render_line_framed(rec: &Record, clock: &mut Clock, shown: FramesAs, out: &mut impl Sink) {
    clock.put_timestamp(rec.time_ns, out);
    out.put(b": ");
    clock.put_thread(rec.tid, out);
    out.put(b": ");
    out.put(rec.priority.name().as_bytes());
    if rec.context {
        out.put(CONTEXT_MARK);
    }
    out.put(b" : ");
    put_escaped(rec.source, out);
    out.put(b" : ");
    put_escaped(rec.func, out);
    out.put(b":");
    put_decimal(rec.line as u64, 1, out);
    out.put(b" : ");
    put_escaped(rec.message, out);
    let (dump, backtrace) = put_fields(rec.fields, false, out);
    out.put(b"\n");
    match (backtrace, shown) {
        (Some(backtrace), FramesAs::Text) => {
            frames::put_lines(backtrace, |b, out| put_escaped(b, out), out)
        }
        (Some(backtrace), FramesAs::Encoded) => {
            out.put(frames::ENCODED_LINE);
            put_hex(backtrace, out);
            out.put(b"\n");
        }
        (None, _) => {}
    }
    if let Some(bytes) = dump {
        put_hexdump(bytes, out);
    }
}

/// ` [NAME=value NUMBER=42]` for encoded `fields` (nothing for none), values
/// escaped as a message is. A value that could be read as more than one
/// (empty, or holding a space, `=`, `[`, `]` or `"`: a request's id from
/// outside such as `x USER=root`) is quoted as logfmt quotes it, its `"`
/// written `\"`: what a field says is data, never more fields. Bytes kept
/// as bytes are written as hex.
pub fn put_fields_text(fields: &[u8], out: &mut impl Sink) {
    put_fields(fields, true, out);
}

/// [`put_fields_text`]; bytes and frames left out unless `bytes` (the
/// text line shows them after itself: they are returned, found in the one
/// decoding a line makes of its fields).
fn put_fields<'a>(
    fields: &'a [u8],
    bytes: bool,
    out: &mut impl Sink,
) -> (Option<&'a [u8]>, Option<&'a [u8]>) {
    let Some(fields) = fields::decode(fields).filter(|f| !f.is_empty()) else {
        return (None, None);
    };
    let mut sep: &[u8] = b" [";
    let (mut dump, mut backtrace) = (None, None);
    for field in fields.iter() {
        match (field.value, bytes) {
            (Value::Bytes(b), false) => {
                dump.get_or_insert(b);
                continue;
            }
            (Value::Frames(f), false) => {
                backtrace.get_or_insert(f);
                continue;
            }
            _ => {}
        }
        out.put(sep);
        sep = b" ";
        out.put(field.name);
        out.put(b"=");
        match field.value {
            Value::Str(s) if s.is_empty() || s.iter().any(|b| b" =[]\"".contains(b)) => {
                out.put(b"\"");
                put_escaped_quoted(s, out);
                out.put(b"\"");
            }
            Value::Str(s) => put_escaped(s, out),
            Value::Int(n) => put_signed(n, out),
            Value::Bytes(b) => put_hex(b, out),
            // One line: the frames apart by `; `, as a value that holds a
            // space is, quoted.
            Value::Frames(f) => {
                out.put(b"\"");
                frames::pieces(f, b"; ", &mut |piece| match piece {
                    Piece::Own(b) => out.put(b),
                    Piece::Data(b) => put_escaped_quoted(b, out),
                });
                out.put(b"\"");
            }
        }
    }
    if sep == b" " {
        out.put(b"]");
    }
    (dump, backtrace)
}

/// `bytes` escaped as a message is, and its `"` as `\"`: inside a quoted
/// value.
fn put_escaped_quoted(bytes: &[u8], out: &mut impl Sink) {
    let mut parts = bytes.split(|&b| b == b'"');
    if let Some(first) = parts.next() {
        put_escaped(first, out);
    }
    for part in parts {
        out.put(b"\\\"");
        put_escaped(part, out);
    }
}

/// Writes text that came from outside and is bound for a terminal (a reply
/// vlog-ctl prints, a command's last bytes vlog-relay shows) with what a
/// terminal would obey escaped as [`put_escaped`] escapes it (C0 controls,
/// DEL, C1 controls, bytes that are not UTF-8, as `\r` or `\xHH`), and
/// its newlines and tabs kept. Unlike a message in a text line, the
/// backslash is kept: such text is often vlog's own lines, escaped
/// already. Every text vlog prints goes through one of these two.
pub fn put_for_terminal(bytes: &[u8], out: &mut impl Sink) {
    if all_plain(bytes, needs_text_escape) {
        out.put(bytes);
    } else {
        put_escaped_slowly::<true>(bytes, out);
    }
}

/// Writes `bytes` escaped as the text line escapes names and messages.
#[inline(always)]
pub fn put_escaped(bytes: &[u8], out: &mut impl Sink) {
    if all_plain(bytes, needs_text_escape) {
        out.put(bytes);
    } else {
        put_escaped_slowly::<false>(bytes, out);
    }
}

/// [`put_escaped`] (or, `TERMINAL`, [`put_for_terminal`]) of bytes of
/// which some need an escape: out of line, so that the plain case saves no
/// registers.
#[inline(never)]
fn put_escaped_slowly<const TERMINAL: bool>(bytes: &[u8], out: &mut impl Sink) {
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        // Plain printable ASCII goes by eight bytes at a time.
        if let Some(word) = bytes.get(i..i + 8) {
            if !needs_text_escape(u64::from_le_bytes(word.try_into().unwrap())) {
                i += 8;
                continue;
            }
        }
        let b = bytes[i];
        let kept = match b {
            b'\\' | b'\n' | b'\t' if TERMINAL => 1,
            b'\\' | 0x7f => 0,
            0x20..=0x7e => 1,
            0x80..=0xff => utf8_kept(&bytes[i..]),
            _ => 0,
        };
        if kept > 0 {
            i += kept;
            continue;
        }
        out.put(&bytes[start..i]);
        match b {
            b'\n' => out.put(b"\\n"),
            b'\t' => out.put(b"\\t"),
            b'\r' => out.put(b"\\r"),
            b'\\' => out.put(b"\\\\"),
            _ => {
                put_byte_escape(b, out);
                // A C1 control is two bytes, both shown.
                if b == 0xc2 && bytes.get(i + 1).is_some_and(|n| (0x80..0xa0).contains(n)) {
                    i += 1;
                    put_byte_escape(bytes[i], out);
                }
            }
        }
        i += 1;
        start = i;
    }
    out.put(&bytes[start..]);
}

/// The length of the UTF-8 character at the start of `bytes` if it is kept as
/// it is; 0 if it is escaped: a byte that does not start a valid sequence, or
/// a C1 control (U+0080-U+009F, encoded C2 80-C2 9F; the caller escapes both
/// bytes, seeing 0xC2).
fn utf8_kept(bytes: &[u8]) -> usize {
    let head = &bytes[..bytes.len().min(4)];
    let valid = match std::str::from_utf8(head) {
        Ok(s) => s,
        Err(e) => std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default(),
    };
    match valid.chars().next() {
        Some(c) if (c as u32) > 0x9f => c.len_utf8(),
        _ => 0,
    }
}

/// True if any of the eight bytes in `w` is not plain printable ASCII: a
/// control byte, DEL, a backslash, or a byte from 0x80 up (one mask, no
/// branch, of `plain`'s terms).
#[inline(always)]
fn needs_text_escape(w: u64) -> bool {
    (plain::controls(w) | plain::equal_to(w, b'\\') | plain::del_or_high(w)) & plain::HIGH != 0
}

fn put_byte_escape(b: u8, out: &mut impl Sink) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.put(&[b'\\', b'x', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_for_a_terminal_keeps_newlines_tabs_and_backslashes() {
        let mut out = Vec::new();
        put_for_terminal(b"a\x1b]0;t\x07\nb\x9b1m \xc2\x9d\r\t\\n\n\x7f", &mut out);
        assert_eq!(out, b"a\\x1b]0;t\\x07\nb\\x9b1m \\xc2\\x9d\\r\t\\n\n\\x7f");
    }

    #[test]
    fn a_field_value_never_reads_as_more_fields() {
        use crate::fields::{encode, Field, Value};
        let mut encoded = Vec::with_capacity(fields::ENCODED_MAX);
        let field = |name: &'static [u8], value: &'static [u8]| Field {
            name,
            value: Value::Str(value),
        };
        encode(
            [
                field(b"ID", b"x USER=root"),
                field(b"Q", b"say \"hi\"\n"),
                field(b"EMPTY", b""),
                field(b"PLAIN", b"r-42"),
                field(b"B", b"a]b"),
            ]
            .into_iter(),
            &mut encoded,
        );
        let mut out = Vec::new();
        put_fields_text(&encoded, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#" [ID="x USER=root" Q="say \"hi\"\n" EMPTY="" PLAIN=r-42 B="a]b"]"#
        );
    }

    fn line(rec: &Record) -> String {
        let mut v = Vec::new();
        render_line(rec, &mut Clock::new(), &mut v);
        String::from_utf8(v).unwrap()
    }

    use crate::record::sample;

    /// The word test agrees with the byte test on every byte value at every
    /// position, and on random words (where borrows and carries cross bytes).
    #[test]
    fn word_test_is_exact() {
        let plain = |b: u8| (0x20..0x7f).contains(&b) && b != b'\\';
        let check = |bytes: [u8; 8]| {
            let want = !bytes.iter().all(|&b| plain(b));
            assert_eq!(
                needs_text_escape(u64::from_le_bytes(bytes)),
                want,
                "{bytes:x?}"
            );
        };
        for pos in 0..8 {
            for b in 0..=255u8 {
                let mut bytes = *b"abcdefgh";
                bytes[pos] = b;
                check(bytes);
                let mut edges = [0x7fu8, 0x20, 0x1f, 0x80, 0xff, 0x5c, 0x5d, 0x5b];
                edges[pos] = b;
                check(edges);
            }
        }
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Mostly printable bytes, some of each kind that is not.
            let mut bytes = x.to_le_bytes();
            for b in bytes.iter_mut() {
                if *b & 0xe0 != 0xe0 {
                    *b = 0x20 + (*b % 0x5f);
                }
            }
            check(bytes);
        }
    }

    #[test]
    fn libvirt_line() {
        assert_eq!(
            line(&sample()),
            "2026-11-30 13:45:12.345+0000: 4242: debug : qemu.monitor : qemuMonitorSend:123 : sent 12 bytes to fd 7\n"
        );
    }

    #[test]
    fn escapes_control_bytes() {
        let rec = Record {
            message: b"a\nb\tc\rd\x1b[31me\x7f\x00\\ \xc2\x9b2J \xff\xc3 \xc3\xa9 \xe2\x82\xac",
            ..sample()
        };
        // C0 and C1 controls, DEL, the backslash and bytes that are not UTF-8
        // are escaped; other UTF-8 (é, €) is kept.
        assert!(
            line(&rec).ends_with(
                ": a\\nb\\tc\\rd\\x1b[31me\\x7f\\x00\\\\ \\xc2\\x9b2J \\xff\\xc3 \u{e9} \u{20ac}\n"
            ),
            "{}",
            line(&rec)
        );
    }

    #[test]
    fn worst_case_fits_line_max() {
        let msg = vec![0u8; MESSAGE_MAX];
        let name = vec![1u8; NAME_MAX];
        let rec = Record {
            message: &msg,
            source: &name,
            func: &name,
            tid: u32::MAX,
            line: u32::MAX,
            time_ns: u64::MAX,
            ..sample()
        };
        let mut v = Vec::new();
        render_line(&rec, &mut Clock::new(), &mut v);
        assert!(v.len() <= LINE_MAX, "{} > {LINE_MAX}", v.len());
        // With every field's byte escaped in four, and a dump whose lines
        // never repeat.
        let value = vec![0u8; 100];
        let names: Vec<Vec<u8>> = (0..fields::MAX_FIELDS)
            .map(|i| format!("F{i:02}").into_bytes())
            .collect();
        let list = names.iter().map(|n| fields::Field {
            name: n,
            value: Value::Str(&value),
        });
        let mut encoded = Vec::new();
        fields::encode(list, &mut encoded);
        let bytes: Vec<u8> = (0..fields::BYTES_MAX).map(|i| (i % 251) as u8).collect();
        fields::bytes_after(fields::Dump::of(&bytes), &mut encoded);
        let rec = Record {
            fields: &encoded,
            ..rec
        };
        v.clear();
        render_line(&rec, &mut Clock::new(), &mut v);
        assert!(v.len() <= LINE_MAX, "{} > {LINE_MAX}", v.len());
        assert!(v.len() > LINE_MAX / 2, "{}", v.len());
        let mut one_line = Vec::new();
        put_fields_text(&encoded, &mut one_line);
        assert!(one_line.len() < LINE_MAX - 4 * (2 * NAME_MAX + MESSAGE_MAX));
        assert!(!one_line.contains(&b'\n'));
    }

    #[test]
    fn a_dump_follows_its_line_and_its_fields_stay_on_the_line() {
        let mut encoded = Vec::new();
        fields::encode(
            [fields::Field {
                name: b"VM",
                value: Value::Str(b"g1"),
            }]
            .into_iter(),
            &mut encoded,
        );
        fields::bytes_after(fields::Dump::of(b"AB"), &mut encoded);
        let rec = Record {
            fields: &encoded,
            ..sample()
        };
        assert!(
            line(&rec).ends_with(
                " : sent 12 bytes to fd 7 [VM=g1]\n\
                 00000000  41 42                                             |AB|\n\
                 00000002\n"
            ),
            "{}",
            line(&rec)
        );
        // Where one line is all there is (syslog), the bytes are hex.
        let mut text = Vec::new();
        put_fields_text(&encoded, &mut text);
        assert_eq!(text, b" [VM=g1 VLOG_HEXDUMP=4142]");
        // A dump alone makes no brackets.
        let mut alone = Vec::new();
        fields::bytes_after(fields::Dump::of(b""), &mut alone);
        let rec = Record {
            fields: &alone,
            ..sample()
        };
        assert!(
            line(&rec).ends_with(" : sent 12 bytes to fd 7\n"),
            "{}",
            line(&rec)
        );
    }

    /// The text escaping, word at a time, does what the rule says, on random
    /// strings of controls, backslashes, ASCII and valid, C1 and broken UTF-8.
    #[test]
    fn text_escaping_matches_the_plain_rule() {
        fn plain(bytes: &[u8]) -> Vec<u8> {
            let mut out = Vec::new();
            for chunk in bytes.utf8_chunks() {
                for c in chunk.valid().chars() {
                    match c {
                        '\n' => out.extend_from_slice(b"\\n"),
                        '\t' => out.extend_from_slice(b"\\t"),
                        '\r' => out.extend_from_slice(b"\\r"),
                        '\\' => out.extend_from_slice(b"\\\\"),
                        c if (c as u32) < 0x20 || (0x7f..=0x9f).contains(&(c as u32)) => {
                            let mut buf = [0; 4];
                            for b in c.encode_utf8(&mut buf).bytes() {
                                out.extend_from_slice(format!("\\x{b:02x}").as_bytes());
                            }
                        }
                        c => out.extend_from_slice(c.to_string().as_bytes()),
                    }
                }
                for b in chunk.invalid() {
                    out.extend_from_slice(format!("\\x{b:02x}").as_bytes());
                }
            }
            out
        }
        let alphabet =
            b"\\\n\t\r\x01\x1b\x7f\xc2\x9b\xc2\xa0\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xff\x80 ";
        let mut state = 0x0bad_cafe_dead_beefu64;
        for len in 0..300 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    if state % 3 == 0 {
                        alphabet[(state >> 8) as usize % alphabet.len()]
                    } else {
                        b'a' + (state >> 16) as u8 % 26
                    }
                })
                .collect();
            let mut fast = Vec::new();
            put_escaped(&bytes, &mut fast);
            assert_eq!(fast, plain(&bytes), "{bytes:?}");
        }
    }
}
