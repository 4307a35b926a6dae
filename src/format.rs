//! The text line, rendered without allocation:
//!
//! `2026-11-30 13:45:12.345+0000: 4242: debug : qemu.monitor : qemuMonitorSend:123 : message`
//!
//! libvirt's line with the source added. In names and messages, control bytes
//! (C0, DEL, and the C1 controls U+0080-U+009F, which some terminals obey as
//! escape sequences), bytes that are not UTF-8 and the backslash itself are
//! escaped (`\n`, `\t`, `\r`, `\\`, `\xHH`): one message is always one line,
//! no terminal escape sequence reaches a terminal raw, and what the line shows
//! tells exactly which bytes were logged.

use crate::fields::Value;
use crate::record::{Record, MESSAGE_MAX, NAME_MAX};

/// Where rendered bytes go.
pub trait Sink {
    fn put(&mut self, bytes: &[u8]);
}

/// The longest line [`render_line`] can produce: every escaped byte takes at most
/// four bytes (a field's integer, eight bytes encoded, at most 20 digits).
pub const LINE_MAX: usize = 96 + 4 * (2 * NAME_MAX + MESSAGE_MAX + crate::fields::ENCODED_MAX);

/// The longest line [`render_json`] can produce: a byte takes at most six
/// (`\u00XX`), names and message included.
pub const JSON_LINE_MAX: usize =
    256 + 6 * (3 * NAME_MAX + MESSAGE_MAX + crate::fields::ENCODED_MAX);

impl Sink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

/// A fixed stack buffer that hands full chunks to `flush`: for writing to a file
/// descriptor from a signal handler, where nothing may allocate.
pub struct ChunkSink<F: FnMut(&[u8])> {
    buf: [u8; 4096],
    len: usize,
    flush: F,
}

impl<F: FnMut(&[u8])> ChunkSink<F> {
    pub fn new(flush: F) -> ChunkSink<F> {
        ChunkSink {
            buf: [0; 4096],
            len: 0,
            flush,
        }
    }

    pub fn finish(&mut self) {
        if self.len > 0 {
            (self.flush)(&self.buf[..self.len]);
            self.len = 0;
        }
    }
}

impl<F: FnMut(&[u8])> Sink for ChunkSink<F> {
    fn put(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.len == self.buf.len() {
                self.finish();
            }
            let n = bytes.len().min(self.buf.len() - self.len);
            self.buf[self.len..self.len + n].copy_from_slice(&bytes[..n]);
            self.len += n;
            bytes = &bytes[n..];
        }
    }
}

/// A message buffer of MESSAGE_MAX bytes that keeps what fits and counts the
/// rest, so that a message longer than that ends with the visible marker
/// ` [truncated: N bytes]` (N being its full length) and never overflows.
pub struct Bounded<'a> {
    buf: &'a mut [u8],
    len: usize,
    total: usize,
}

impl<'a> Bounded<'a> {
    pub fn new(buf: &'a mut [u8]) -> Bounded<'a> {
        Bounded {
            buf,
            len: 0,
            total: 0,
        }
    }

    /// Records that the message was `total` bytes long in all, more than was
    /// put (the caller had already cut it).
    pub fn claim(&mut self, total: usize) {
        self.total = self.total.max(total);
    }

    /// The message, cut with the marker if it did not fit.
    pub fn finish(self) -> &'a [u8] {
        const OPEN: &[u8] = b" [truncated: ";
        const CLOSE: &[u8] = b" bytes]";
        let cap = self.buf.len();
        if self.total <= cap && self.total == self.len {
            return &self.buf[..self.len];
        }
        let digits = self.total.checked_ilog10().unwrap_or(0) as usize + 1;
        let keep = self.len.min(cap - OPEN.len() - digits - CLOSE.len());
        let mut marker = Bounded::new(&mut self.buf[keep..]);
        marker.put(OPEN);
        put_decimal(self.total as u64, 1, &mut marker);
        marker.put(CLOSE);
        let end = keep + marker.len;
        &self.buf[..end]
    }
}

impl Sink for Bounded<'_> {
    fn put(&mut self, bytes: &[u8]) {
        self.total += bytes.len();
        let n = bytes.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&bytes[..n]);
        self.len += n;
    }
}

/// Renders `rec` as one text line ending in `\n`.
pub fn render_line(rec: &Record, out: &mut impl Sink) {
    put_timestamp(rec.time_ns, out);
    out.put(b": ");
    put_decimal(rec.tid as u64, 1, out);
    out.put(b": ");
    out.put(rec.priority.name().as_bytes());
    out.put(b" : ");
    put_escaped(rec.source, out);
    out.put(b" : ");
    put_escaped(rec.func, out);
    out.put(b":");
    put_decimal(rec.line as u64, 1, out);
    out.put(b" : ");
    put_escaped(rec.message, out);
    put_fields_text(rec.fields, out);
    out.put(b"\n");
}

/// ` [NAME=value NUMBER=42]` for encoded `fields` (nothing for none), values
/// escaped as a message is.
pub fn put_fields_text(fields: &[u8], out: &mut impl Sink) {
    let Some(fields) = crate::fields::decode(fields).filter(|f| !f.is_empty()) else {
        return;
    };
    let mut sep: &[u8] = b" [";
    for field in fields.iter() {
        out.put(sep);
        sep = b" ";
        out.put(field.name);
        out.put(b"=");
        match field.value {
            Value::Str(s) => put_escaped(s, out),
            Value::Int(n) => put_signed_decimal(n, out),
        }
    }
    out.put(b"]");
}

fn put_signed_decimal(n: i64, out: &mut impl Sink) {
    if n < 0 {
        out.put(b"-");
    }
    put_decimal(n.unsigned_abs(), 1, out);
}

/// Renders `rec` as one JSON object on one line. Strings are always valid
/// UTF-8 JSON: invalid bytes become U+FFFD, control characters are escaped.
/// `pid` is given by the JSON outputs (a record does not keep it).
pub fn render_json(rec: &Record, pid: Option<u32>, out: &mut impl Sink) {
    out.put(b"{\"seq\":");
    put_decimal(rec.seq, 1, out);
    out.put(b",\"time\":\"");
    put_timestamp(rec.time_ns, out);
    out.put(b"\",\"time_ns\":");
    put_decimal(rec.time_ns, 1, out);
    if let Some(pid) = pid {
        out.put(b",\"pid\":");
        put_decimal(pid as u64, 1, out);
    }
    out.put(b",\"tid\":");
    put_decimal(rec.tid as u64, 1, out);
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
    if let Some(fields) = crate::fields::decode(rec.fields).filter(|f| !f.is_empty()) {
        let mut sep: &[u8] = b",\"fields\":{";
        for field in fields.iter() {
            out.put(sep);
            sep = b",";
            put_json_string(field.name, out);
            out.put(b":");
            match field.value {
                Value::Str(s) => put_json_string(s, out),
                Value::Int(n) => put_signed_decimal(n, out),
            }
        }
        out.put(b"}");
    }
    out.put(b"}\n");
}

fn put_json_string(bytes: &[u8], out: &mut impl Sink) {
    out.put(b"\"");
    for chunk in bytes.utf8_chunks() {
        let valid = chunk.valid().as_bytes();
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
                _ => {
                    i += 1;
                    continue;
                }
            };
            out.put(&valid[start..i]);
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
        if !chunk.invalid().is_empty() {
            out.put("\u{FFFD}".as_bytes());
        }
    }
    out.put(b"\"");
}

/// True if any of the eight bytes in `w` is a control byte, DEL, `"` or `\`
/// (bytes from 0x80 up are UTF-8 already checked, and left alone; they make
/// this true too, and are then looked at one by one).
fn needs_json_escape(w: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let has_zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH != 0;
    let below_space = w.wrapping_sub(ONES * 0x20) & !w & HIGH != 0;
    below_space
        || has_zero(w ^ (ONES * b'"' as u64))
        || has_zero(w ^ (ONES * b'\\' as u64))
        || has_zero(w ^ (ONES * 0x7f))
        || w & HIGH != 0
}

/// `YYYY-MM-DD HH:MM:SS.mmm+0000`, always UTC (libvirt's form).
pub fn put_timestamp(time_ns: u64, out: &mut impl Sink) {
    let secs = time_ns / 1_000_000_000;
    let millis = (time_ns / 1_000_000) % 1000;
    let (year, month, day) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    put_decimal(year as u64, 4, out);
    out.put(b"-");
    put_decimal(month as u64, 2, out);
    out.put(b"-");
    put_decimal(day as u64, 2, out);
    out.put(b" ");
    put_decimal(rem / 3600, 2, out);
    out.put(b":");
    put_decimal(rem / 60 % 60, 2, out);
    out.put(b":");
    put_decimal(rem % 60, 2, out);
    out.put(b".");
    put_decimal(millis, 3, out);
    out.put(b"+0000");
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian
/// calendar (Howard Hinnant's algorithm), so no libc time call is needed.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// (year, month, day) to days since 1970-01-01: the inverse of
/// `civil_from_days`.
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (month as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Parses `YYYY-MM-DD HH:MM:SS[.fff]` (or with `T`), UTC, or `@SECONDS`, into
/// nanoseconds since the epoch.
pub fn parse_time(s: &str) -> Option<u64> {
    if let Some(secs) = s.strip_prefix('@') {
        return secs.parse::<u64>().ok()?.checked_mul(1_000_000_000);
    }
    let b = s.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b' ' | b'T') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<u32>().ok();
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, min, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || min > 59 || sec > 60 {
        return None;
    }
    let mut nanos = 0u64;
    if let Some(frac) = s.get(19..).filter(|f| !f.is_empty()) {
        let digits = frac.strip_prefix('.')?;
        if digits.is_empty() || digits.len() > 9 || !digits.bytes().all(|d| d.is_ascii_digit()) {
            return None;
        }
        nanos = digits.parse::<u64>().ok()? * 10u64.pow(9 - digits.len() as u32);
    }
    let days = days_from_civil(year as i64, month, day);
    let secs = days * 86_400 + (hour * 3600 + min * 60 + sec) as i64;
    u64::try_from(secs)
        .ok()?
        .checked_mul(1_000_000_000)?
        .checked_add(nanos)
}

/// `value` in decimal, zero-padded to at least `width` digits.
pub fn put_decimal(mut value: u64, width: usize, out: &mut impl Sink) {
    let mut digits = [b'0'; 20];
    let mut i = digits.len();
    while value > 0 || digits.len() - i < width.max(1) {
        i -= 1;
        digits[i] = b'0' + (value % 10) as u8;
        value /= 10;
    }
    out.put(&digits[i..]);
}

/// `0x` and `value` in lower-case hexadecimal.
pub fn put_hex(value: u64, out: &mut impl Sink) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut digits = [0u8; 16];
    let mut i = digits.len();
    let mut v = value;
    loop {
        i -= 1;
        digits[i] = HEX[(v & 15) as usize];
        v >>= 4;
        if v == 0 {
            break;
        }
    }
    out.put(b"0x");
    out.put(&digits[i..]);
}

fn put_escaped(bytes: &[u8], out: &mut impl Sink) {
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
/// control byte, DEL, a backslash, or a byte from 0x80 up.
fn needs_text_escape(w: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let has_zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH != 0;
    let below_space = w.wrapping_sub(ONES * 0x20) & !w & HIGH != 0;
    below_space
        || has_zero(w ^ (ONES * b'\\' as u64))
        || has_zero(w ^ (ONES * 0x7f))
        || w & HIGH != 0
}

fn put_byte_escape(b: u8, out: &mut impl Sink) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.put(&[b'\\', b'x', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::priority::Priority;

    fn line(rec: &Record) -> String {
        let mut v = Vec::new();
        render_line(rec, &mut v);
        String::from_utf8(v).unwrap()
    }

    fn sample() -> Record<'static> {
        Record {
            seq: 0,
            // 2026-11-30 13:45:12.345 UTC
            time_ns: 1_796_046_312_345_999_999,
            tid: 4242,
            line: 123,
            priority: Priority::Debug,
            source: b"qemu.monitor",
            file: b"monitor.c",
            func: b"qemuMonitorSend",
            message: b"sent 12 bytes to fd 7",
            fields: b"",
            kind: crate::record::Kind::Text,
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
    fn hex() {
        let mut v = Vec::new();
        put_hex(0, &mut v);
        put_hex(0xdead_beef, &mut v);
        put_hex(u64::MAX, &mut v);
        assert_eq!(v, b"0x00xdeadbeef0xffffffffffffffff");
    }

    #[test]
    fn json_is_valid_utf8_with_escapes() {
        let rec = Record {
            message: b"quote\" back\\ nl\n ctl\x01 del\x7f bad\xff\xfe \xc3\xa9",
            ..sample()
        };
        let mut v = Vec::new();
        render_json(&rec, None, &mut v);
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
            "\"message\":\"quote\\\" back\\\\ nl\\n ctl\\u0001 del\\u007f bad\u{FFFD}\u{FFFD} \u{e9}\"}\n"
        ), "{s}");
    }

    #[test]
    fn time_parsing() {
        assert_eq!(
            parse_time("2026-11-30 13:45:12.345"),
            Some(1_796_046_312_345_000_000)
        );
        assert_eq!(
            parse_time("2026-11-30T13:45:12"),
            Some(1_796_046_312_000_000_000)
        );
        assert_eq!(parse_time("@1796046312"), Some(1_796_046_312_000_000_000));
        for bad in [
            "",
            "2026-11-30",
            "2026-13-01 00:00:00",
            "2026-11-30 13:45:12.",
            "x",
        ] {
            assert_eq!(parse_time(bad), None, "{bad}");
        }
        for days in [-1000, 0, 11_016, 20_787, 100_000] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }

    #[test]
    fn calendar() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_787), (2026, 11, 30));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
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
        render_line(&rec, &mut v);
        assert!(v.len() <= LINE_MAX, "{} > {LINE_MAX}", v.len());
    }

    #[test]
    fn chunk_sink_splits_and_keeps_everything() {
        let mut got = Vec::new();
        let mut sink = ChunkSink::new(|b: &[u8]| got.extend_from_slice(b));
        let data: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        sink.put(&data[..5000]);
        sink.put(&data[5000..]);
        sink.finish();
        assert_eq!(got, data);
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
                        c if (c as u32) < 0x20 || c as u32 == 0x7f => {
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
        let alphabet = b"ab \"\\\n\x01\x1f\x7f\x80\xc3\xa9\xe2\x82\xac\xff~ ";
        for len in 0..200 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    // Mostly plain letters, so long runs take the fast path.
                    if state.is_multiple_of(4) {
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
                    if state.is_multiple_of(3) {
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
