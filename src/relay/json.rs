//! The JSON a child writes, read without building anything: the members of a
//! line's top-level object, one at a time, each value checked and located
//! (its bytes in the line), never decoded unless asked. No recursion (a
//! depth counter and a bit stack of 64 levels) and no allocation; every loop
//! moves forward through the line, so a line costs at most its length.

use crate::text::plain::{self, all_plain};

/// The kind of a JSON value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Str,
    Number,
    Literal,
    /// An array or an object.
    Nested,
}

/// One member of the top-level object: its key and value as they stand in
/// the line (a string's bytes without its quotes, escapes not decoded).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member<'a> {
    pub key: &'a [u8],
    pub kind: Kind,
    pub value: &'a [u8],
}

/// The line is not one JSON object, or not only one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Malformed;

/// Deeper nesting than this is refused (as malformed).
const MAX_DEPTH: u32 = 64;

/// The members of the object that is the whole of `line`, in order; an
/// `Err` ends the walk at the first byte that is not JSON.
pub struct Members<'a> {
    b: &'a [u8],
    pos: usize,
    first: bool,
    done: bool,
}

impl<'a> Members<'a> {
    /// None unless `line` starts (after white space) with `{`.
    pub fn new(line: &'a [u8]) -> Option<Members<'a>> {
        let pos = skip_ws(line, 0);
        (line.get(pos) == Some(&b'{')).then_some(Members {
            b: line,
            pos: pos + 1,
            first: true,
            done: false,
        })
    }

    fn member(&mut self) -> Result<Option<Member<'a>>, Malformed> {
        let b = self.b;
        let mut pos = skip_ws(b, self.pos);
        // `{}`; after a comma another member must come.
        if self.first && b.get(pos) == Some(&b'}') {
            return self.end(pos + 1);
        }
        if b.get(pos) != Some(&b'"') {
            return Err(Malformed);
        }
        let key_end = string_end(b, pos + 1)?;
        let key = &b[pos + 1..key_end];
        pos = skip_ws(b, key_end + 1);
        if b.get(pos) != Some(&b':') {
            return Err(Malformed);
        }
        pos = skip_ws(b, pos + 1);
        let (kind, start, end, next) = value(b, pos)?;
        pos = skip_ws(b, next);
        match b.get(pos) {
            Some(b',') => {
                self.pos = pos + 1;
                self.first = false;
            }
            Some(b'}') => {
                self.end(pos + 1)?;
            }
            _ => return Err(Malformed),
        }
        Ok(Some(Member {
            key,
            kind,
            value: &b[start..end],
        }))
    }

    /// The closing brace at `after - 1`: only white space may follow.
    fn end(&mut self, after: usize) -> Result<Option<Member<'a>>, Malformed> {
        self.done = true;
        if skip_ws(self.b, after) == self.b.len() {
            Ok(None)
        } else {
            Err(Malformed)
        }
    }
}

impl<'a> Iterator for Members<'a> {
    type Item = Result<Member<'a>, Malformed>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.member() {
            Ok(Some(m)) => Some(Ok(m)),
            Ok(None) => None,
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

fn skip_ws(b: &[u8], mut pos: usize) -> usize {
    while matches!(b.get(pos), Some(b' ' | b'\t' | b'\r' | b'\n')) {
        pos += 1;
    }
    pos
}

/// Where the string whose first byte (after its quote) is at `pos` ends: the
/// index of its closing quote. Control bytes must be escaped; escapes must
/// be JSON's; bytes from 0x80 up are taken as they are.
fn string_end(b: &[u8], mut pos: usize) -> Result<usize, Malformed> {
    // The usual string: nothing escaped and no control byte before the
    // closing quote, tested eight bytes at a time.
    if let Some(len) = crate::sys::find_byte(b.get(pos..).unwrap_or_default(), b'"') {
        if all_plain(&b[pos..pos + len], escape_or_control) {
            return Ok(pos + len);
        }
    }
    loop {
        match *b.get(pos).ok_or(Malformed)? {
            b'"' => return Ok(pos),
            b'\\' => match *b.get(pos + 1).ok_or(Malformed)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => pos += 2,
                b'u' => {
                    let hex = b.get(pos + 2..pos + 6).ok_or(Malformed)?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) {
                        return Err(Malformed);
                    }
                    pos += 6;
                }
                _ => return Err(Malformed),
            },
            0..=0x1f => return Err(Malformed),
            _ => pos += 1,
        }
    }
}

/// True if any of the eight bytes in `w` is a backslash or a control byte
/// (below 0x20); bytes from 0x80 up are plain here. One mask, no branch, of
/// `text::plain`'s terms.
#[inline(always)]
fn escape_or_control(w: u64) -> bool {
    (plain::controls(w) | plain::equal_to(w, b'\\')) & plain::HIGH != 0
}

/// The value at `pos`: its kind, the bounds of its bytes (a string's
/// without the quotes) and where the text after it starts.
fn value(b: &[u8], pos: usize) -> Result<(Kind, usize, usize, usize), Malformed> {
    match *b.get(pos).ok_or(Malformed)? {
        b'"' => {
            let end = string_end(b, pos + 1)?;
            Ok((Kind::Str, pos + 1, end, end + 1))
        }
        b'{' | b'[' => {
            let end = nested_end(b, pos)?;
            Ok((Kind::Nested, pos, end, end))
        }
        b't' | b'f' | b'n' => {
            let word: &[u8] = match b[pos] {
                b't' => b"true",
                b'f' => b"false",
                _ => b"null",
            };
            if b[pos..].starts_with(word) {
                Ok((Kind::Literal, pos, pos + word.len(), pos + word.len()))
            } else {
                Err(Malformed)
            }
        }
        _ => {
            let end = number_end(b, pos)?;
            Ok((Kind::Number, pos, end, end))
        }
    }
}

/// The end of the number at `pos` (JSON's grammar: `-`, no leading zeros,
/// an optional fraction and exponent).
fn number_end(b: &[u8], mut pos: usize) -> Result<usize, Malformed> {
    let digits = |b: &[u8], mut p: usize| {
        let start = p;
        while b.get(p).is_some_and(u8::is_ascii_digit) {
            p += 1;
        }
        (p > start).then_some(p).ok_or(Malformed)
    };
    if b.get(pos) == Some(&b'-') {
        pos += 1;
    }
    if b.get(pos) == Some(&b'0') {
        pos += 1;
    } else {
        pos = digits(b, pos)?;
    }
    if b.get(pos) == Some(&b'.') {
        pos = digits(b, pos + 1)?;
    }
    if matches!(b.get(pos), Some(b'e' | b'E')) {
        pos += 1;
        if matches!(b.get(pos), Some(b'+' | b'-')) {
            pos += 1;
        }
        pos = digits(b, pos)?;
    }
    Ok(pos)
}

/// The end (one past the closing bracket) of the array or object at `pos`,
/// every value inside it checked. A bit stack remembers, per level, whether
/// it is an object (whose members need keys).
fn nested_end(b: &[u8], mut pos: usize) -> Result<usize, Malformed> {
    let mut objects: u64 = 0;
    let mut depth: u32 = 0;
    // Whether a value (or key) is expected next, and whether the container
    // may close here (just opened, or after a value).
    let open = |c: u8, objects: &mut u64, depth: &mut u32| -> Result<(), Malformed> {
        if *depth == MAX_DEPTH {
            return Err(Malformed);
        }
        *objects = (*objects << 1) | u64::from(c == b'{');
        *depth += 1;
        Ok(())
    };
    open(b[pos], &mut objects, &mut depth)?;
    pos += 1;
    let mut may_close = true;
    loop {
        pos = skip_ws(b, pos);
        let c = *b.get(pos).ok_or(Malformed)?;
        if matches!(c, b'}' | b']') {
            let is_object = objects & 1 == 1;
            if !may_close || (c == b'}') != is_object {
                return Err(Malformed);
            }
            objects >>= 1;
            depth -= 1;
            pos += 1;
            if depth == 0 {
                return Ok(pos);
            }
            pos = after_value(b, pos, &mut may_close)?;
            continue;
        }
        if objects & 1 == 1 {
            // A member: "key" :
            if c != b'"' {
                return Err(Malformed);
            }
            pos = skip_ws(b, string_end(b, pos + 1)? + 1);
            if b.get(pos) != Some(&b':') {
                return Err(Malformed);
            }
            pos = skip_ws(b, pos + 1);
        }
        match *b.get(pos).ok_or(Malformed)? {
            c @ (b'{' | b'[') => {
                open(c, &mut objects, &mut depth)?;
                pos += 1;
                may_close = true;
            }
            _ => {
                let (_, _, _, next) = value(b, pos)?;
                pos = after_value(b, next, &mut may_close)?;
            }
        }
    }
}

/// After a value inside a container: a comma (then another value must come)
/// or the closing bracket (left for the caller).
fn after_value(b: &[u8], pos: usize, may_close: &mut bool) -> Result<usize, Malformed> {
    let pos = skip_ws(b, pos);
    match b.get(pos) {
        Some(b',') => {
            *may_close = false;
            Ok(pos + 1)
        }
        Some(b'}' | b']') => {
            *may_close = true;
            Ok(pos)
        }
        _ => Err(Malformed),
    }
}

/// Appends the string `raw` (a string's bytes between its quotes, checked by
/// [`Members`]) decoded: escapes made bytes, `\u` escapes UTF-8, a lone
/// surrogate U+FFFD. Stops where `out` is full (its length says how far).
pub fn decode_into(raw: &[u8], out: &mut impl Extend<u8>) {
    let mut i = 0;
    while i < raw.len() {
        if raw[i] != b'\\' {
            let end = raw[i..]
                .iter()
                .position(|&c| c == b'\\')
                .map_or(raw.len(), |n| i + n);
            out.extend(raw[i..end].iter().copied());
            i = end;
            continue;
        }
        let Some(&e) = raw.get(i + 1) else {
            return;
        };
        i += 2;
        let byte = match e {
            b'b' => 8,
            b'f' => 12,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let (c, used) = unicode_escape(raw, i);
                i += used;
                let mut utf8 = [0u8; 4];
                out.extend(c.encode_utf8(&mut utf8).bytes());
                continue;
            }
            other => other, // " \ /
        };
        out.extend([byte]);
    }
}

/// The character of the `\u` escape whose hex digits start at `at`, and how
/// many bytes it took (4, or 10 for a surrogate pair).
fn unicode_escape(raw: &[u8], at: usize) -> (char, usize) {
    let hex = |at: usize| {
        raw.get(at..at + 4)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u32::from_str_radix(h, 16).ok())
    };
    let Some(high) = hex(at) else {
        return (char::REPLACEMENT_CHARACTER, 0);
    };
    if (0xD800..0xDC00).contains(&high) && raw.get(at + 4..at + 6) == Some(b"\\u") {
        if let Some(low) = hex(at + 6).filter(|l| (0xDC00..0xE000).contains(l)) {
            let c = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
            return (char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER), 10);
        }
    }
    (
        char::from_u32(high).unwrap_or(char::REPLACEMENT_CHARACTER),
        4,
    )
}

/// Appends a nested value's text (checked by [`Members`]) without the white
/// space outside its strings: arrays and objects are kept as compact JSON.
pub fn compact_into(raw: &[u8], out: &mut impl Extend<u8>) {
    let mut in_string = false;
    let mut i = 0;
    while i < raw.len() {
        let c = raw[i];
        if in_string {
            if c == b'\\' {
                out.extend(raw[i..(i + 2).min(raw.len())].iter().copied());
                i += 2;
                continue;
            }
            in_string = c != b'"';
        } else if matches!(c, b' ' | b'\t' | b'\r' | b'\n') {
            i += 1;
            continue;
        } else {
            in_string = c == b'"';
        }
        out.extend([c]);
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(line: &str) -> Result<Vec<(String, Kind, String)>, Malformed> {
        Members::new(line.as_bytes())
            .ok_or(Malformed)?
            .map(|m| {
                m.map(|m| {
                    (
                        String::from_utf8_lossy(m.key).into_owned(),
                        m.kind,
                        String::from_utf8_lossy(m.value).into_owned(),
                    )
                })
            })
            .collect()
    }

    #[test]
    fn reads_an_hclog_line() {
        let got = members(
            r#"{"@level":"debug","@timestamp":"2006-01-02T15:04:05.000000Z","@message":"hello","extra":"hi","numbers":[1,2,3]}"#,
        )
        .unwrap();
        assert_eq!(got.len(), 5);
        assert_eq!(got[0], ("@level".into(), Kind::Str, "debug".into()));
        assert_eq!(got[4], ("numbers".into(), Kind::Nested, "[1,2,3]".into()));
        let got = members(r#" { "a" : -1.5e+3 , "b":true,"c":null,"d":{"e":[{},[]]} } "#).unwrap();
        let kinds: Vec<Kind> = got.iter().map(|m| m.1).collect();
        assert_eq!(
            kinds,
            [Kind::Number, Kind::Literal, Kind::Literal, Kind::Nested]
        );
        assert_eq!(got[3].2, r#"{"e":[{},[]]}"#);
        assert_eq!(members("{}").unwrap(), []);
    }

    #[test]
    fn refuses_what_is_not_json() {
        for bad in [
            r#"{"a":1,}"#,
            r#"{"a":1 "b":2}"#,
            r#"{"a":01}"#,
            r#"{"a":1.}"#,
            r#"{"a":tru}"#,
            r#"{"a":"x"} trailing"#,
            r#"{"a":[1,]}"#,
            r#"{"a":[1 2]}"#,
            r#"{"a":{"b"}}"#,
            r#"{"a":{"b":1]}"#,
            r#"{"a":"\q"}"#,
            r#"{"a":"\u12"}"#,
            "{\"a\":\"raw\nnewline\"}",
            "{\"a\":\"nul\0\"}",
            r#"{"a":"unterminated}"#,
            r#"{"a""#,
            r#"{,}"#,
            r#"{"a":1"#,
            "{\"a\":",
            "{",
        ] {
            assert!(members(bad).is_err(), "{bad:?} was read");
        }
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(70), "]".repeat(70));
        assert!(members(&deep).is_err(), "too deep");
        let ok = format!("{{\"a\":{}{}}}", "[".repeat(60), "]".repeat(60));
        assert!(members(&ok).is_ok());
    }

    #[test]
    fn decodes_escapes() {
        let mut out = Vec::new();
        decode_into(br#"a\"b\\c\/d\n\t\u00e9\ud83d\ude00\ud800x"#, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "a\"b\\c/d\n\t\u{e9}\u{1f600}\u{fffd}x"
        );
        let mut out = Vec::new();
        compact_into(br#"{ "a b" : [ 1 , "x \" y" ] }"#, &mut out);
        assert_eq!(out, br#"{"a b":[1,"x \" y"]}"#);
    }

    /// The word test agrees with the byte test on every byte at every
    /// position, and on random words (where borrows cross bytes).
    #[test]
    fn word_test_is_exact() {
        let flagged = |b: u8| b < 0x20 || b == b'\\';
        for b in 0..=255u8 {
            for at in 0..8 {
                let mut w = [b'a'; 8];
                w[at] = b;
                assert_eq!(
                    escape_or_control(u64::from_le_bytes(w)),
                    flagged(b),
                    "{b:#x} at {at}"
                );
            }
        }
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            assert_eq!(
                escape_or_control(x),
                x.to_le_bytes().iter().any(|&b| flagged(b)),
                "{x:#x}"
            );
        }
    }

    /// Any bytes: the walk ends, within the line.
    #[test]
    fn never_runs_past_the_line() {
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let alphabet = b"{}[]\":,\\u0123456789abcdefntrl.-+eE \x00\x80";
        for _ in 0..20_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = (seed % 40) as usize;
            let mut line = vec![b'{'];
            let mut s = seed;
            for _ in 0..len {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                line.push(alphabet[(s >> 33) as usize % alphabet.len()]);
            }
            for m in Members::new(&line).unwrap().flatten() {
                let mut out = Vec::new();
                match m.kind {
                    Kind::Str => decode_into(m.value, &mut out),
                    _ => compact_into(m.value, &mut out),
                }
            }
        }
    }
}
