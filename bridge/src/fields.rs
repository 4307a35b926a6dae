//! What a record hands vlog, made in a buffer of its thread's that grows
//! once and is kept: the message, and each field's name and value as the
//! NUL-terminated strings `vlog_write_fields` reads.

use std::cell::Cell;
use std::ffi::c_char;
use std::fmt::{self, Write};

use crate::sys::VlogField;

/// vlog.h's VLOG_MESSAGE_MAX: vlog keeps no more of a message (the rest is
/// counted in its ` [truncated: N bytes]` marker).
const MESSAGE_MAX: usize = 8192;
/// vlog keeps at most 4096 bytes of a record's fields.
const VALUE_MAX: usize = 4096;

enum Value {
    /// Offset of a NUL-terminated string in the buffer.
    Text(usize),
    Num(i64),
}

/// A record being made.
#[derive(Default)]
pub struct Parts {
    buf: Vec<u8>,
    /// Each field's name (an offset in `buf`) and value.
    fields: Vec<(usize, Value)>,
    /// The message: its offset and length in `buf`, and how long it was.
    message: Option<(usize, usize, usize)>,
    c_fields: Vec<VlogField>,
}

/// Writes into the buffer what fits of `room` bytes (cut at a character's
/// boundary), counting the whole; for a C string, a NUL written as U+FFFD
/// (it would end the string there).
struct Bounded<'a> {
    buf: &'a mut Vec<u8>,
    room: usize,
    total: usize,
    c_string: bool,
}

impl Bounded<'_> {
    fn take(&mut self, s: &str) {
        self.total += s.len();
        let mut take = s.len().min(self.room);
        while !s.is_char_boundary(take) {
            take -= 1;
        }
        self.buf.extend_from_slice(&s.as_bytes()[..take]);
        self.room -= take;
    }
}

impl Write for Bounded<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if !self.c_string {
            self.take(s);
            return Ok(());
        }
        let mut pieces = s.split('\0');
        if let Some(first) = pieces.next() {
            self.take(first);
        }
        for piece in pieces {
            self.take("\u{FFFD}");
            self.take(piece);
        }
        Ok(())
    }
}

/// A value cut by the bridge ends as vlog's own cut ones do.
fn marker(total: usize) -> String {
    format!(" [truncated: {total} bytes]")
}

/// Room for the marker of any length.
const MARKER_MAX: usize = 40;

/// A thread's buffer larger than this after a record is let go of, not
/// kept (one huge value must not hold memory for the thread's life).
const KEEP_MAX: usize = 256 * 1024;

impl Parts {
    /// Appends `what` written out, at most `max` bytes of it, and a NUL;
    /// returns its offset, kept length and whole length.
    fn put(
        &mut self,
        max: usize,
        c_string: bool,
        what: impl FnOnce(&mut dyn Write),
    ) -> (usize, usize, usize) {
        let at = self.buf.len();
        let mut w = Bounded {
            buf: &mut self.buf,
            room: max,
            total: 0,
            c_string,
        };
        what(&mut w);
        let total = w.total;
        let len = self.buf.len() - at;
        self.buf.push(0);
        (at, len, total)
    }

    fn put_str(&mut self, s: &str) -> usize {
        self.put(usize::MAX, true, |w| {
            let _ = w.write_str(s);
        })
        .0
    }

    /// The message, written out (its length is passed: any byte goes).
    pub fn message(&mut self, what: impl FnOnce(&mut dyn Write)) {
        self.message = Some(self.put(MESSAGE_MAX, false, what));
    }

    /// A field whose value is text: at most vlog's room for fields, a
    /// longer one cut with vlog's marker and its whole length.
    pub fn text(&mut self, name: &str, what: impl FnOnce(&mut dyn Write)) {
        let key = self.put_str(name);
        let (value, len, total) = self.put(VALUE_MAX - MARKER_MAX, true, what);
        if total > len {
            self.buf.pop();
            self.buf.extend_from_slice(marker(total).as_bytes());
            self.buf.push(0);
        }
        self.fields.push((key, Value::Text(value)));
    }

    /// A field whose value is an integer.
    pub fn num(&mut self, name: &str, value: i64) {
        let key = self.put_str(name);
        self.fields.push((key, Value::Num(value)));
    }

    /// A string kept for the call (a file, a module path): its offset.
    pub fn c_string(&mut self, s: &str) -> usize {
        self.put_str(s)
    }

    /// The message's bytes and whole length, and the fields as vlog's C
    /// type, pointing into the buffer (valid until `self` changes).
    pub fn finish(&mut self) -> (&[u8], usize, &[VlogField], &[u8]) {
        let base = self.buf.as_ptr().cast::<c_char>();
        self.c_fields.clear();
        for (key, value) in &self.fields {
            // Offsets into `buf`, which no longer grows: in bounds.
            let key = base.wrapping_add(*key);
            self.c_fields.push(match value {
                Value::Text(at) => VlogField {
                    key,
                    str: base.wrapping_add(*at),
                    num: 0,
                    is_num: 0,
                },
                Value::Num(n) => VlogField {
                    key,
                    str: std::ptr::null(),
                    num: *n,
                    is_num: 1,
                },
            });
        }
        let (at, len, total) = self.message.unwrap_or((0, 0, 0));
        (&self.buf[at..at + len], total, &self.c_fields, &self.buf)
    }

    fn clear(&mut self) {
        self.buf.clear();
        self.fields.clear();
        self.message = None;
        self.c_fields.clear();
    }
}

thread_local! {
    /// The thread's buffer, taken while a record is made: a record made
    /// meanwhile on the thread (a value's Display that logs) makes its own.
    static SPARE: Cell<Option<Box<Parts>>> = const { Cell::new(None) };
}

/// Runs `f` with the thread's buffer, empty.
pub fn with_parts<R>(f: impl FnOnce(&mut Parts) -> R) -> R {
    let mut parts = SPARE
        .try_with(Cell::take)
        .ok()
        .flatten()
        .unwrap_or_default();
    let result = f(&mut parts);
    if parts.buf.capacity() > KEEP_MAX {
        parts = Box::default();
    }
    parts.clear();
    // A thread being torn down keeps no buffer.
    let _ = SPARE.try_with(|spare| spare.set(Some(parts)));
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_message_is_cut_and_its_length_kept() {
        with_parts(|p| {
            let long = "é".repeat(MESSAGE_MAX);
            p.message(|w| {
                let _ = w.write_str(&long);
            });
            p.num("N", 5);
            let (msg, total, fields, _) = p.finish();
            assert_eq!(total, long.len());
            assert!(msg.len() <= MESSAGE_MAX && std::str::from_utf8(msg).is_ok());
            assert_eq!(fields.len(), 1);
            assert_eq!((fields[0].is_num, fields[0].num), (1, 5));
        });
    }

    #[test]
    fn a_long_value_is_cut_with_its_length_and_a_nul_is_no_end() {
        with_parts(|p| {
            let long = "v".repeat(100_000);
            p.text("BIG", |w| {
                let _ = w.write_str(&long);
            });
            p.text("NUL", |w| {
                let _ = w.write_str("before\0after");
            });
            let (_, _, fields, _) = p.finish();
            // SAFETY: NUL-terminated strings in the buffer.
            let value = |i: usize| unsafe { std::ffi::CStr::from_ptr(fields[i].str) };
            let big = value(0).to_str().unwrap();
            assert!(
                big.len() <= VALUE_MAX && big.ends_with(" [truncated: 100000 bytes]"),
                "{}",
                big.len()
            );
            assert_eq!(value(1).to_str().unwrap(), "before\u{FFFD}after");
        });
    }

    #[test]
    fn nested_records_get_their_own_buffer() {
        with_parts(|outer| {
            outer.text("A", |w| {
                let _ = w.write_str("1");
            });
            with_parts(|inner| {
                let (_, _, fields, _) = inner.finish();
                assert!(fields.is_empty());
            });
            let (_, _, fields, buf) = outer.finish();
            // SAFETY: `str` points at a NUL-terminated string in `buf`.
            let value = unsafe { std::ffi::CStr::from_ptr(fields[0].str) };
            assert_eq!(value.to_bytes(), b"1");
            assert!(buf.ends_with(b"1\0"));
        });
    }
}
