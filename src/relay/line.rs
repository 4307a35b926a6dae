//! Which line is which, and what each becomes. A line is looked at in this
//! order, and the first form it has decides:
//!
//! 1. hclog JSON: an object (`{` first). `@level` gives the priority,
//!    `@message` the message; `@timestamp`, `@module` and `@caller` become
//!    CHILD_TIME, CHILD_MODULE and CHILD_CALLER, `@level` itself CHILD_LEVEL,
//!    and every other key a field of its own (see [`field_name`]): strings
//!    decoded, integers as integers, other numbers and `true`/`false`/`null`
//!    as their text, arrays and objects as compact JSON text. A line that is
//!    not one JSON object is a plain line, counted as malformed; so is a
//!    non-string `@message` or `@timestamp` (kept as its JSON text) or
//!    `@level` (the default priority).
//! 2. `<N>` first, N from 0 to 191: a syslog severity (N's low three bits;
//!    kernel and sd-daemon lines), kept as CHILD_SYSLOG_LEVEL.
//! 3. `[TRACE]`, `[DEBUG]`, `[INFO]`, `[WARN]`, `[WARNING]` or `[ERROR]`
//!    first, or after one first word that starts with a digit (hclog's text
//!    form, `2006-01-02T15:04:05.000Z [DEBUG] ...`, whose first word becomes
//!    CHILD_TIME): go-plugin's prefixes, the level kept as CHILD_LEVEL.
//! 4. vlog's text line (`DATE TIME: TID: PRIO : SOURCE : FUNC:LINE : MSG`)
//!    or libvirt's (the same without SOURCE): the priority named, and
//!    CHILD_TIME, CHILD_TID, CHILD_SOURCE (vlog's), CHILD_FUNC, CHILD_LINE.
//! 5. Anything else: the whole line, at the relay's default priority.
//!
//! [`level`] finds a line's priority without decoding or copying anything;
//! [`parse`] makes the message and fields of a line to be recorded, into a
//! buffer reserved once.

use super::json::{self, Kind, Malformed, Members};
use super::text::{prefixed, syslog_prefix, text_line};
use crate::fields::{Field, Value, MAX_FIELDS, NAME_MAX};
use crate::priority::Priority;

/// The form a line has (the module's list, in its order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    Hclog,
    Syslog,
    Prefixed,
    VlogLine,
    LibvirtLine,
    Plain,
}

/// What [`level`] finds: the form, the priority the line names (None: the
/// relay's default) and whether the line was malformed for its form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Level {
    pub form: Form,
    pub priority: Option<Priority>,
    pub malformed: bool,
}

impl Level {
    fn of(form: Form, priority: Option<Priority>) -> Level {
        Level {
            form,
            priority,
            malformed: false,
        }
    }
}

/// The line's form and level, nothing decoded: for hclog JSON, the members
/// up to `@level` are stepped over.
pub fn level(line: &[u8]) -> Level {
    if let Some(members) = Members::new(line) {
        return hclog_level(members);
    }
    if let Some((severity, _)) = syslog_prefix(line) {
        return Level::of(Form::Syslog, Some(Priority::from_syslog_severity(severity)));
    }
    if let Some(p) = prefixed(line) {
        return Level::of(Form::Prefixed, Priority::from_child_level(p.level));
    }
    if let Some(h) = text_line(line) {
        let form = if h.source.is_some() {
            Form::VlogLine
        } else {
            Form::LibvirtLine
        };
        return Level::of(form, Priority::from_child_level(h.priority));
    }
    Level::of(Form::Plain, None)
}

fn hclog_level(members: Members) -> Level {
    for member in members {
        let Ok(m) = member else {
            return Level {
                form: Form::Plain,
                priority: None,
                malformed: true,
            };
        };
        let mut decoded = Small::<16>::new();
        if key(m.key, &mut decoded) == b"@level" {
            if m.kind != Kind::Str {
                return Level {
                    form: Form::Hclog,
                    priority: None,
                    malformed: true,
                };
            }
            let mut word = Small::<8>::new();
            json::decode_into(m.value, &mut word);
            let priority = word.get().and_then(Priority::from_child_level);
            return Level::of(Form::Hclog, priority);
        }
    }
    Level::of(Form::Hclog, None)
}

/// A JSON key as it stands in the line (`raw`), decoded into `buf` when it
/// has escapes; a key too long for `buf` is none of the relay's own (empty).
fn key<'k>(raw: &'k [u8], buf: &'k mut Small<16>) -> &'k [u8] {
    if !raw.contains(&b'\\') {
        return raw;
    }
    json::decode_into(raw, buf);
    buf.get().unwrap_or_default()
}

/// A few bytes on the stack; None when more came than fit.
struct Small<const N: usize> {
    buf: [u8; N],
    len: usize,
    over: bool,
}

impl<const N: usize> Small<N> {
    fn new() -> Small<N> {
        Small {
            buf: [0; N],
            len: 0,
            over: false,
        }
    }

    fn get(&self) -> Option<&[u8]> {
        (!self.over).then(|| &self.buf[..self.len])
    }
}

impl<const N: usize> Extend<u8> for Small<N> {
    fn extend<I: IntoIterator<Item = u8>>(&mut self, bytes: I) {
        for b in bytes {
            if self.len == N {
                self.over = true;
                return;
            }
            self.buf[self.len] = b;
            self.len += 1;
        }
    }
}

/// How a key of the child's becomes a field name journald accepts:
/// upper-cased, every byte that is not a letter, digit or `_` made `_`, cut
/// to 64 bytes. A name that would start with a digit or `_`, or is one of
/// the names no field may take (`fields::RESERVED`: MESSAGE, PRIORITY,
/// UNIT, ...) or FRAGMENT, or starts with CHILD_, CODE_, SYSLOG_ (names
/// the relay or the outputs write themselves) or a reserved prefix
/// (`fields::RESERVED_PREFIXES`: OBJECT_, COREDUMP_, VLOG_), gets CHILD_ in
/// front.
pub fn field_name(key: &[u8], out: &mut Vec<u8>) {
    const PREFIX: &[u8] = b"CHILD_";
    let start = out.len();
    let mapped = |b: u8| {
        if b.is_ascii_alphanumeric() {
            b.to_ascii_uppercase()
        } else {
            b'_'
        }
    };
    let first = key.first().map(|&b| mapped(b));
    let upper = |n: usize| key.iter().take(n).map(|&b| mapped(b));
    let reserved = matches!(first, None | Some(b'0'..=b'9' | b'_'))
        || crate::fields::RESERVED
            .iter()
            .chain([&&b"FRAGMENT"[..]])
            .any(|r| r.len() == key.len() && upper(key.len()).eq(r.iter().copied()))
        || [&b"CHILD_"[..], b"CODE_", b"SYSLOG_"]
            .iter()
            .chain(crate::fields::RESERVED_PREFIXES)
            .any(|p| key.len() >= p.len() && upper(p.len()).eq(p.iter().copied()));
    if reserved {
        out.extend_from_slice(PREFIX);
    }
    let room = NAME_MAX - (out.len() - start);
    out.extend(upper(room));
    if out.len() == start + PREFIX.len() && reserved && key.is_empty() {
        out.extend_from_slice(b"EMPTY");
    }
}

/// A value in the buffer: a string's bounds, or an integer.
#[derive(Clone, Copy)]
enum Val {
    Str(usize, usize),
    Int(i64),
}

/// A line made ready to record: its message and fields in one buffer,
/// reserved when the relay is made (what a line can make is bounded by its
/// length, so the buffer never grows).
pub struct Parsed {
    pub priority: Option<Priority>,
    pub malformed: bool,
    buf: Vec<u8>,
    message: (usize, usize),
    names: [(usize, usize); MAX_FIELDS],
    values: [Val; MAX_FIELDS],
    n: usize,
}

impl Parsed {
    /// With room for what a line of `line_max` bytes can make.
    pub fn with_room(line_max: usize) -> Result<Parsed, std::collections::TryReserveError> {
        let mut buf = Vec::new();
        buf.try_reserve_exact(2 * line_max + MAX_FIELDS * (NAME_MAX + 8))?;
        Ok(Parsed {
            priority: None,
            malformed: false,
            buf,
            message: (0, 0),
            names: [(0, 0); MAX_FIELDS],
            values: [Val::Int(0); MAX_FIELDS],
            n: 0,
        })
    }

    fn clear(&mut self) {
        self.buf.clear();
        self.n = 0;
        self.priority = None;
        self.malformed = false;
        self.message = (0, 0);
    }

    fn set_message(&mut self, bytes: &[u8]) {
        let start = self.buf.len();
        self.buf.extend_from_slice(bytes);
        self.message = (start, self.buf.len());
    }

    /// Adds a field named `name` (already valid) whose value `value` writes
    /// into the buffer.
    fn add(&mut self, name: &[u8], value: impl FnOnce(&mut Vec<u8>) -> Option<i64>) {
        if self.n == MAX_FIELDS {
            return;
        }
        let start = self.buf.len();
        self.buf.extend_from_slice(name);
        self.names[self.n] = (start, self.buf.len());
        self.push_value(value);
    }

    /// Adds a field named by a key of the child's (see [`field_name`]).
    fn add_keyed(&mut self, key: &[u8], value: impl FnOnce(&mut Vec<u8>) -> Option<i64>) {
        if self.n == MAX_FIELDS {
            return;
        }
        let start = self.buf.len();
        if key.contains(&b'\\') {
            let mut decoded = Small::<128>::new();
            json::decode_into(key, &mut decoded);
            let k = decoded.get().unwrap_or(&decoded.buf[..]);
            field_name(k, &mut self.buf);
        } else {
            field_name(key, &mut self.buf);
        }
        self.names[self.n] = (start, self.buf.len());
        self.push_value(value);
    }

    fn push_value(&mut self, value: impl FnOnce(&mut Vec<u8>) -> Option<i64>) {
        let start = self.buf.len();
        self.values[self.n] = match value(&mut self.buf) {
            Some(n) => {
                self.buf.truncate(start);
                Val::Int(n)
            }
            None => Val::Str(start, self.buf.len()),
        };
        self.n += 1;
    }

    pub fn message(&self) -> &[u8] {
        &self.buf[self.message.0..self.message.1]
    }

    /// The fields, into `out`; returns how many.
    pub fn fields<'a>(&'a self, out: &mut [Field<'a>]) -> usize {
        let kept = self.names.iter().zip(&self.values).take(self.n);
        let mut written = 0;
        for (slot, (&(a, b), value)) in out.iter_mut().zip(kept) {
            written += 1;
            *slot = Field {
                name: &self.buf[a..b],
                value: match *value {
                    Val::Str(s, e) => Value::Str(&self.buf[s..e]),
                    Val::Int(n) => Value::Int(n),
                },
            };
        }
        written
    }
}

/// Text as a field value.
fn text(bytes: &[u8]) -> impl FnOnce(&mut Vec<u8>) -> Option<i64> + '_ {
    move |buf| {
        buf.extend_from_slice(bytes);
        None
    }
}

/// A decimal number as an integer field (text when it is not one that fits).
fn number(bytes: &[u8]) -> impl FnOnce(&mut Vec<u8>) -> Option<i64> + '_ {
    move |buf| match std::str::from_utf8(bytes).ok().and_then(|s| s.parse().ok()) {
        Some(n) => Some(n),
        None => {
            buf.extend_from_slice(bytes);
            None
        }
    }
}

/// Makes the message and fields of `line`, whose level [`level`] found, into
/// `out`.
pub fn parse(line: &[u8], found: Level, out: &mut Parsed) {
    out.clear();
    out.priority = found.priority;
    out.malformed = found.malformed;
    match found.form {
        Form::Hclog => {
            if hclog(line, out).is_err() {
                // Malformed after `@level` (which was read): the line as it is.
                out.clear();
                out.priority = found.priority;
                out.malformed = true;
                out.set_message(line);
            }
        }
        Form::Syslog => {
            let (severity, message) = syslog_prefix(line).unwrap_or((7, line));
            out.set_message(message);
            out.add(b"CHILD_SYSLOG_LEVEL", |_| Some(i64::from(severity)));
        }
        Form::Prefixed => match prefixed(line) {
            Some(p) => {
                out.set_message(p.message);
                out.add(b"CHILD_LEVEL", text(p.level));
                if let Some(time) = p.time {
                    out.add(b"CHILD_TIME", text(time));
                }
            }
            None => out.set_message(line),
        },
        Form::VlogLine | Form::LibvirtLine => match text_line(line) {
            Some(t) => {
                out.set_message(t.message);
                out.add(b"CHILD_TIME", text(t.time));
                out.add(b"CHILD_TID", number(t.tid));
                if let Some(source) = t.source {
                    out.add(b"CHILD_SOURCE", text(source));
                }
                out.add(b"CHILD_FUNC", text(t.func));
                out.add(b"CHILD_LINE", number(t.line));
            }
            None => out.set_message(line),
        },
        Form::Plain => out.set_message(line),
    }
}

/// The members of an hclog line, into `out`.
fn hclog(line: &[u8], out: &mut Parsed) -> Result<(), Malformed> {
    let members = Members::new(line).ok_or(Malformed)?;
    let mut message = None;
    for member in members {
        let m = member?;
        let mut decoded = Small::<16>::new();
        let own: Option<&[u8]> = match key(m.key, &mut decoded) {
            b"@message" => {
                message = Some(m);
                continue;
            }
            b"@level" => Some(b"CHILD_LEVEL"),
            b"@timestamp" => {
                out.malformed |= m.kind != Kind::Str;
                Some(b"CHILD_TIME")
            }
            b"@module" => Some(b"CHILD_MODULE"),
            b"@caller" => Some(b"CHILD_CALLER"),
            _ => None,
        };
        let value = |buf: &mut Vec<u8>| match m.kind {
            Kind::Str => {
                json::decode_into(m.value, buf);
                None
            }
            Kind::Number => number(m.value)(buf),
            Kind::Literal => text(m.value)(buf),
            Kind::Nested => {
                json::compact_into(m.value, buf);
                None
            }
        };
        match own {
            Some(name) => out.add(name, value),
            None => out.add_keyed(m.key, value),
        }
    }
    let start = out.buf.len();
    match message {
        Some(m) if m.kind == Kind::Str => json::decode_into(m.value, &mut out.buf),
        Some(m) => {
            out.malformed = true;
            out.buf.extend_from_slice(m.value);
        }
        None => out.buf.extend_from_slice(line),
    }
    out.message = (start, out.buf.len());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(line: &str) -> (Level, String, Vec<(String, String)>) {
        let found = level(line.as_bytes());
        let mut out = Parsed::with_room(line.len().max(16)).unwrap();
        let cap = out.buf.capacity();
        parse(line.as_bytes(), found, &mut out);
        assert_eq!(out.buf.capacity(), cap, "the buffer grew");
        let mut fields = [Field {
            name: b"",
            value: Value::Int(0),
        }; MAX_FIELDS];
        let n = out.fields(&mut fields);
        let fields = fields[..n]
            .iter()
            .map(|f| {
                let v = match f.value {
                    Value::Str(s) => String::from_utf8_lossy(s).into_owned(),
                    Value::Int(n) => format!("#{n}"),
                    Value::Bytes(b) => format!("{b:x?}"),
                    Value::Frames(_) => "(backtrace)".to_string(),
                };
                (String::from_utf8_lossy(f.name).into_owned(), v)
            })
            .collect();
        let found = Level {
            malformed: out.malformed,
            ..found
        };
        (
            found,
            String::from_utf8_lossy(out.message()).into_owned(),
            fields,
        )
    }

    fn f(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn hclog_lines() {
        let (l, msg, fields) = parsed(
            r#"{"@level":"debug","@timestamp":"2006-01-02T15:04:05.000000Z","@message":"hello","extra":"hi","numbers":[1, 2,3],"n":42,"x":1.5,"ok":true,"@module":"plugin.x"}"#,
        );
        assert_eq!(l, Level::of(Form::Hclog, Some(Priority::Debug)));
        assert_eq!(msg, "hello");
        assert_eq!(
            fields,
            f(&[
                ("CHILD_LEVEL", "debug"),
                ("CHILD_TIME", "2006-01-02T15:04:05.000000Z"),
                ("EXTRA", "hi"),
                ("NUMBERS", "[1,2,3]"),
                ("N", "#42"),
                ("X", "1.5"),
                ("OK", "true"),
                ("CHILD_MODULE", "plugin.x"),
            ])
        );
        assert_eq!(
            parsed(r#"{"@level":"TRACE","@message":"t"}"#).0.priority,
            Some(Priority::Debug)
        );
        assert_eq!(
            parsed(r#"{"@level":"warn","@message":"w"}"#).0.priority,
            Some(Priority::Warning)
        );
        // An unknown level: the default; no level at all: the default.
        assert_eq!(
            parsed(r#"{"@level":"loud","@message":"x"}"#).0.priority,
            None
        );
        let (l, msg, _) = parsed(r#"{"@message":"no level"}"#);
        assert_eq!(
            (l.form, l.priority, msg.as_str()),
            (Form::Hclog, None, "no level")
        );
        // Escaped keys are the keys they spell.
        let (l, msg, _) = parsed(r#"{"\u0040level":"error","\u0040message":"e\u00e9"}"#);
        assert_eq!(
            (l.priority, msg.as_str()),
            (Some(Priority::Error), "e\u{e9}")
        );
    }

    #[test]
    fn hostile_hclog_lines() {
        // go-plugin's host panics on a number as the message.
        let (l, msg, _) = parsed(r#"{"@level":"info","@message":5}"#);
        assert_eq!(l.priority, Some(Priority::Info));
        assert_eq!(msg, "5");
        let line = r#"{"@level":7,"@message":"m"}"#;
        let (l, msg, _) = parsed(line);
        assert!(l.malformed, "{l:?}");
        assert_eq!((l.priority, msg.as_str()), (None, "m"));
        for bad in [
            r#"{"@level":"info","@message":"x""#,
            "{not json",
            r#"{"a":1} {"b":2}"#,
        ] {
            let (l, msg, fields) = parsed(bad);
            assert!(l.malformed, "{bad}");
            assert_eq!(msg, bad);
            assert!(fields.is_empty(), "{fields:?}");
        }
        // Malformed after the level: the level holds, the line is the message.
        let bad = r#"{"@level":"error","@message":"x",}"#;
        let (l, msg, fields) = parsed(bad);
        assert_eq!(l.priority, Some(Priority::Error));
        assert_eq!(msg, bad);
        assert!(fields.is_empty(), "{fields:?}");
        // More fields than are kept: the first 32.
        let many: String = (0..40).map(|i| format!(",\"k{i}\":{i}")).collect();
        let (_, _, fields) = parsed(&format!("{{\"@message\":\"m\"{many}}}"));
        assert_eq!(fields.len(), MAX_FIELDS);
    }

    #[test]
    fn text_forms() {
        let (l, msg, fields) = parsed("[WARN] disk almost full");
        assert_eq!(
            (l.form, l.priority),
            (Form::Prefixed, Some(Priority::Warning))
        );
        assert_eq!(msg, "disk almost full");
        assert_eq!(fields, f(&[("CHILD_LEVEL", "WARN")]));
        let (l, msg, fields) = parsed("2006-01-02T15:04:05.000Z [TRACE] plugin: tick");
        assert_eq!(l.priority, Some(Priority::Debug));
        assert_eq!(msg, "plugin: tick");
        assert_eq!(
            fields[1],
            ("CHILD_TIME".into(), "2006-01-02T15:04:05.000Z".into())
        );
        let (l, msg, fields) = parsed("<3>disk failed");
        assert_eq!((l.form, l.priority), (Form::Syslog, Some(Priority::Error)));
        assert_eq!(
            (msg.as_str(), fields),
            ("disk failed", f(&[("CHILD_SYSLOG_LEVEL", "#3")]))
        );
        assert_eq!(parsed("<14>hello").0.priority, Some(Priority::Info));
        assert_eq!(parsed("<192>x").0.form, Form::Plain);
        let (l, msg, fields) = parsed(
            "2026-11-30 13:45:12.345+0000: 4242: warning : qemu.monitor : qemuMonitorSend:123 : a : b",
        );
        assert_eq!(
            (l.form, l.priority),
            (Form::VlogLine, Some(Priority::Warning))
        );
        assert_eq!(msg, "a : b");
        assert_eq!(
            fields,
            f(&[
                ("CHILD_TIME", "2026-11-30 13:45:12.345+0000"),
                ("CHILD_TID", "#4242"),
                ("CHILD_SOURCE", "qemu.monitor"),
                ("CHILD_FUNC", "qemuMonitorSend"),
                ("CHILD_LINE", "#123"),
            ])
        );
        let (l, msg, fields) =
            parsed("2026-11-30 13:45:12.345+0000: 7: debug : virFileOpen:9 : opened");
        assert_eq!(
            (l.form, l.priority),
            (Form::LibvirtLine, Some(Priority::Debug))
        );
        assert_eq!((msg.as_str(), fields.len()), ("opened", 4));
        // A vlog child's record printed as an error's context: its own level.
        let (l, msg, _) =
            parsed("2026-11-30 13:45:12.345+0000: 7: debug (context) : q : virFileOpen:9 : opened");
        assert_eq!(
            (l.form, l.priority, msg.as_str()),
            (Form::VlogLine, Some(Priority::Debug), "opened")
        );
        for plain in [
            "",
            "hello",
            "[NOTE] x",
            "<x>y",
            "2026-11-30 13:45:12.345+0000: x: debug : f:1 : m",
            "12[INFO] x",
        ] {
            let (l, msg, _) = parsed(plain);
            assert_eq!(l.form, Form::Plain, "{plain:?}");
            assert_eq!(msg, plain);
        }
    }

    #[test]
    fn child_keys_become_journald_names() {
        let name = |k: &str| {
            let mut v = Vec::new();
            field_name(k.as_bytes(), &mut v);
            let s = String::from_utf8(v).unwrap();
            assert!(crate::fields::valid_name(s.as_bytes()), "{s}");
            s
        };
        assert_eq!(name("extra"), "EXTRA");
        assert_eq!(name("req-id.x"), "REQ_ID_X");
        assert_eq!(name("9lives"), "CHILD_9LIVES");
        assert_eq!(name("_x"), "CHILD__X");
        assert_eq!(name("message"), "CHILD_MESSAGE");
        assert_eq!(name("Priority"), "CHILD_PRIORITY");
        assert_eq!(name("code_file"), "CHILD_CODE_FILE");
        assert_eq!(name("child_level"), "CHILD_CHILD_LEVEL");
        // Names that would speak for another process or unit.
        assert_eq!(name("object_systemd_unit"), "CHILD_OBJECT_SYSTEMD_UNIT");
        assert_eq!(name("coredump_unit"), "CHILD_COREDUMP_UNIT");
        assert_eq!(name("unit"), "CHILD_UNIT");
        assert_eq!(name("syslog_identifier"), "CHILD_SYSLOG_IDENTIFIER");
        assert_eq!(name(""), "CHILD_EMPTY");
        assert_eq!(name("é"), "CHILD___");
        assert_eq!(name(&"k".repeat(100)).len(), 64);
        assert_eq!(name(&"9".repeat(100)).len(), 64);
    }
}
