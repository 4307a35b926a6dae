//! The relay: a child process's output (its stderr, a pipe) recorded as vlog
//! messages of one source, line by line, as go-plugin's host and libvirt's
//! virtlogd keep their children's output.
//!
//! # Overview
//!
//! Bytes come in pieces (`feed`), split at `\n`; a `\r` before it is
//! dropped. What a line costs depends on what becomes of it:
//!
//! - Its source off when the line starts: finding its end, nothing more (the
//!   bytes are not even copied; a level change applies from the next line).
//! - Its level filtered out: the level is found (`line::level`) without
//!   decoding or copying anything.
//! - Recorded: parsed (`line::parse`) into a buffer reserved once, and
//!   handed to the logger like any message with fields.
//!
//! A line longer than a message (`MESSAGE_MAX`) is recorded in pieces of
//! that size, each with FRAGMENT=1, 2, ... at the priority of its first
//! piece's text form (not parsed as JSON): nothing the child wrote is lost,
//! and the child is never stopped by a reader that gave up on a long line.
//! After a line that starts `panic: ` or `fatal error: ` (a Go runtime's
//! last words), every line is an error, as go-plugin does. The last
//! `TAIL_MAX` bytes are kept for `tail`, whatever became of them: why a
//! child failed is usually in its last words.
//!
//! `Notes` are the messages of whoever runs the child (vlog-relay: started,
//! exited, killed), under a source of their own.
//!
//! Imports the logger (to record) and what is below it; only `ffi` imports
//! it (and vlog-relay, through `vlog::internal`).

pub mod json;
pub mod line;
pub mod text;
pub mod watch;

use crate::fields::{Field, Names, Value, MAX_FIELDS};
use crate::logger::emit::{self, Call, Message, Outcome};
use crate::logger::levels;
use crate::logger::thread_fields::{FieldSet, Refused};
use crate::priority::Priority;
use crate::record::{MESSAGE_MAX, NAME_MAX};
use crate::source::{OwnedSource, OFF, UNKNOWN};
use crate::{logger, sys};
use line::{Form, Parsed};

/// How much of the child's output `tail` can give back.
pub const TAIL_MAX: usize = 4096;

/// What a relay has seen and done.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Bytes fed.
    pub bytes: u64,
    /// Lines ended (a line cut in pieces is one line).
    pub lines: u64,
    /// Pieces of lines too long for one message, recorded.
    pub fragments: u64,
    /// Messages recorded (lines and pieces).
    pub recorded: u64,
    /// Lines the filters dropped (the source off, or the line's level below
    /// the source's).
    pub filtered: u64,
    /// Lines the logger could not take: fed from inside vlog on the same
    /// thread (a signal handler), or vlog shut down.
    pub dropped: u64,
    /// Lines not well formed for the form they started as (JSON that is
    /// not, a non-string `@level`, `@message` or `@timestamp`).
    pub malformed: u64,
}

/// Why a relay was not made: its name was refused, or its buffers could not
/// be had.
#[derive(Debug, PartialEq, Eq)]
pub struct NotMade(pub &'static str);

pub struct Relay {
    source: OwnedSource,
    default: Priority,
    /// The line so far (at most MESSAGE_MAX bytes; reserved once).
    line: Vec<u8>,
    /// Bytes of the current line have come (its fate was decided).
    in_line: bool,
    /// The current line is dropped: the source was off when it started.
    skipping: bool,
    /// The current line is being recorded in pieces: the last piece's
    /// number, and their priority.
    piece: u64,
    piece_priority: Priority,
    /// A Go runtime panicked: every line from here is an error.
    panicked: bool,
    parsed: Parsed,
    tail: Box<[u8; TAIL_MAX]>,
    stats: Stats,
    /// The daemon's own fields for every record of this relay (a job's
    /// id: `vlog_relay_field_set`), before the child's.
    own: FieldSet,
}

impl Relay {
    /// A relay recording into the source `name`, lines that name no level at
    /// `default`. Allocates what it will ever need now.
    pub fn new(name: &[u8], default: Priority) -> Result<Relay, NotMade> {
        check_name(name)?;
        let mut line = Vec::new();
        let reserved = line.try_reserve_exact(MESSAGE_MAX).is_ok();
        let parsed = Parsed::with_room(MESSAGE_MAX);
        let (true, Ok(parsed)) = (reserved, parsed) else {
            return Err(NotMade("out of memory for a relay's buffers"));
        };
        Ok(Relay {
            source: OwnedSource::new(name),
            default,
            line,
            in_line: false,
            skipping: false,
            piece: 0,
            piece_priority: default,
            panicked: false,
            parsed,
            tail: Box::new([0; TAIL_MAX]),
            stats: Stats::default(),
            own: FieldSet::new(),
        })
    }

    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// The last bytes the child wrote, oldest first, into `out`: as many as
    /// fit, at most TAIL_MAX; returns how many.
    pub fn tail(&self, out: &mut [u8]) -> usize {
        let total = self.stats.bytes;
        let n = out
            .len()
            .min(TAIL_MAX)
            .min(total.min(TAIL_MAX as u64) as usize);
        let start = total - n as u64;
        for (i, slot) in out[..n].iter_mut().enumerate() {
            *slot = self.tail[((start + i as u64) % TAIL_MAX as u64) as usize];
        }
        n
    }

    /// Takes `bytes` of the child's output.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.keep_tail(bytes);
        self.stats.bytes += bytes.len() as u64;
        let mut rest = bytes;
        while !rest.is_empty() {
            if !self.in_line {
                self.in_line = true;
                self.skipping = self.level() == OFF;
            }
            match sys::find_byte(rest, b'\n') {
                Some(end) => {
                    self.take(&rest[..end]);
                    self.end_line();
                    rest = &rest[end + 1..];
                }
                None => {
                    self.take(rest);
                    break;
                }
            }
        }
    }

    /// Records what is left of a last line that did not end (the child
    /// exited, or the pipe closed).
    pub fn finish(&mut self) {
        if self.in_line {
            self.end_line();
        }
    }

    fn keep_tail(&mut self, bytes: &[u8]) {
        // Only the last TAIL_MAX bytes can be asked for; the position counts
        // every byte.
        let skip = bytes.len().saturating_sub(TAIL_MAX);
        let mut at = ((self.stats.bytes + skip as u64) % TAIL_MAX as u64) as usize;
        let mut rest = &bytes[skip..];
        while !rest.is_empty() {
            let n = rest.len().min(TAIL_MAX - at);
            self.tail[at..at + n].copy_from_slice(&rest[..n]);
            rest = &rest[n..];
            at = (at + n) % TAIL_MAX;
        }
    }

    /// The source's level now (registering it on its first line).
    fn level(&self) -> i32 {
        let live = self.source.live();
        match live.get().level() {
            UNKNOWN => levels::register(live),
            level => level,
        }
    }

    /// Part of the current line.
    fn take(&mut self, mut piece: &[u8]) {
        if self.skipping {
            return;
        }
        loop {
            let room = MESSAGE_MAX - self.line.len();
            if piece.len() <= room {
                self.line.extend_from_slice(piece);
                return;
            }
            // Longer than a message: the full buffer is a piece.
            self.line.extend_from_slice(&piece[..room]);
            piece = &piece[room..];
            self.record_piece();
        }
    }

    fn end_line(&mut self) {
        self.in_line = false;
        self.stats.lines += 1;
        if std::mem::take(&mut self.skipping) {
            self.stats.filtered += 1;
            return;
        }
        if self.line.last() == Some(&b'\r') {
            self.line.pop();
        }
        if self.piece > 0 {
            if !self.line.is_empty() {
                self.record_piece();
            }
            self.piece = 0;
        } else if !self.line.is_empty() {
            self.record_line();
        }
        self.line.clear();
    }

    /// The current line, whole.
    fn record_line(&mut self) {
        let found = line::level(&self.line);
        if found.malformed {
            self.stats.malformed += 1;
        }
        let priority = self.priority_of(found.priority);
        if (priority as i32) < self.level() {
            self.stats.filtered += 1;
            return;
        }
        line::parse(&self.line, found, &mut self.parsed);
        if self.parsed.malformed && !found.malformed {
            self.stats.malformed += 1;
        }
        let mut fields = [Field {
            name: b"",
            value: Value::Int(0),
        }; MAX_FIELDS];
        // The daemon's own first: a child's field of the same name is the
        // one given twice, and left out.
        let own = self.own.fields().take(MAX_FIELDS).enumerate();
        let mut n = 0;
        for (i, field) in own {
            fields[i] = field;
            n = i + 1;
        }
        let own = n;
        n += self.parsed.fields(&mut fields[n..]);
        let names = Names::Relayed { own };
        let outcome = record(
            &self.source,
            priority,
            self.parsed.message(),
            &fields[..n],
            names,
        );
        self.count(outcome);
    }

    /// The line so far as one piece of a line too long for a message.
    fn record_piece(&mut self) {
        if self.piece == 0 {
            let found = line::level(&self.line);
            let named = match found.form {
                Form::Hclog | Form::Plain => None,
                _ => found.priority,
            };
            self.piece_priority = self.priority_of(named);
        }
        self.piece += 1;
        self.stats.fragments += 1;
        let priority = self.piece_priority;
        if (priority as i32) < self.level() {
            self.stats.filtered += u64::from(self.piece == 1);
        } else {
            let mut fields = [Field {
                name: b"FRAGMENT",
                value: Value::Int(self.piece as i64),
            }; 1 + crate::logger::thread_fields::MAX];
            let mut n = 1;
            for field in self.own.fields() {
                fields[n] = field;
                n += 1;
            }
            let outcome = record(
                &self.source,
                priority,
                &self.line,
                &fields[..n],
                Names::Caller,
            );
            self.count(outcome);
        }
        self.line.clear();
    }

    /// The priority of a line that names `named` (None: none), after the
    /// sticky panic rule (which the line itself may start).
    fn priority_of(&mut self, named: Option<Priority>) -> Priority {
        if self.line.starts_with(b"panic: ") || self.line.starts_with(b"fatal error: ") {
            self.panicked = true;
        }
        if self.panicked {
            Priority::Error
        } else {
            named.unwrap_or(self.default)
        }
    }

    fn count(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Recorded => self.stats.recorded += 1,
            Outcome::Dropped => self.stats.dropped += 1,
        }
    }
}

/// Refuses a source name filters could not name.
fn check_name(name: &[u8]) -> Result<(), NotMade> {
    if name.is_empty() || name.len() > NAME_MAX {
        return Err(NotMade("a relay's source name has 1 to 255 bytes"));
    }
    if name.iter().any(|&b| b <= b' ' || b == 0x7f) {
        return Err(NotMade(
            "a relay's source name has no spaces or control characters (filters could not name it)",
        ));
    }
    Ok(())
}

/// What the program that runs a child says about it (started, exited, the
/// signal that killed it), as messages of a source of its own beside the
/// child's relays.
pub struct Notes {
    source: OwnedSource,
}

impl Notes {
    pub fn new(name: &[u8]) -> Result<Notes, NotMade> {
        check_name(name)?;
        Ok(Notes {
            source: OwnedSource::new(name),
        })
    }

    /// Records `text` with `fields` unless the filters drop it.
    pub fn say(&self, priority: Priority, text: &[u8], fields: &[Field]) {
        let live = self.source.live();
        let level = match live.get().level() {
            UNKNOWN => levels::register(live),
            level => level,
        };
        if priority as i32 >= level {
            record(&self.source, priority, text, fields, Names::Caller);
        }
    }
}

impl Drop for Notes {
    fn drop(&mut self) {
        leave_registry(&mut self.source);
    }
}

/// One message of the relay's source.
fn record(
    source: &OwnedSource,
    priority: Priority,
    text: &[u8],
    fields: &[Field],
    names: Names,
) -> Outcome {
    emit::emit(&Call {
        source: source.live(),
        site: None,
        priority,
        message: Message::Text {
            file: b"",
            line: 0,
            func: b"?",
            text,
            full_len: text.len(),
            fields,
            names,
            dump: None,
        },
        fatal: false,
        frames: None,
    })
}

impl Relay {
    /// Sets one of the daemon's own fields on every record of this relay
    /// (or removes it: `value` None), as a thread's are set.
    pub fn set_field(&mut self, name: &[u8], value: Option<Value>) -> Result<(), Refused> {
        self.own.set(name, value)
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        leave_registry(&mut self.source);
    }
}

/// The source must leave the registry before its memory goes. Nested inside
/// vlog on this thread (a signal handler closing a relay) the registry
/// cannot be had: the source is kept for ever instead.
fn leave_registry(source: &mut OwnedSource) {
    let live = source.live();
    if logger::enter(|s| s.unregister(live.get())).is_none() {
        source.keep_for_ever();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_last_bytes_in_order() {
        let mut r = Relay::new(b"relay.tail.test", Priority::Info).unwrap();
        let mut out = [0u8; 16];
        assert_eq!(r.tail(&mut out), 0);
        r.keep_tail(b"abc");
        r.stats.bytes += 3;
        let n = r.tail(&mut out);
        assert_eq!(&out[..n], b"abc");
        let big: Vec<u8> = (0..TAIL_MAX * 2 + 5).map(|i| (i % 251) as u8).collect();
        for chunk in big.chunks(777) {
            r.keep_tail(chunk);
            r.stats.bytes += chunk.len() as u64;
        }
        let mut all = vec![0u8; TAIL_MAX + 10];
        let n = r.tail(&mut all);
        assert_eq!(n, TAIL_MAX);
        assert_eq!(&all[..n], &big[big.len() - TAIL_MAX..]);
        r.keep_tail(&big);
        r.stats.bytes += big.len() as u64;
        let n = r.tail(&mut all);
        assert_eq!(&all[..n], &big[big.len() - TAIL_MAX..]);
        let n = r.tail(&mut out);
        assert_eq!(&out[..n], &big[big.len() - 16..]);
    }

    /// With its source off when a line starts, a line is only looked
    /// through for its end: nothing is copied, nothing parsed.
    #[test]
    fn a_source_off_costs_only_the_line_ends() {
        let mut r = Relay::new(b"relay.off.test", Priority::Error).unwrap();
        r.source.live().get().set_level(OFF);
        r.feed(b"{\"@level\":\"error\",\"@message\":\"x\"}\npanic: no\nthird, unfinished");
        assert!(r.line.is_empty() && !r.panicked);
        r.finish();
        let s = r.stats();
        assert_eq!((s.lines, s.filtered, s.recorded, s.malformed), (3, 3, 0, 0));
        assert_eq!(s.bytes, 61);
    }

    #[test]
    fn names_are_checked() {
        assert!(Relay::new(b"", Priority::Info).is_err());
        assert!(Relay::new(b"a b", Priority::Info).is_err());
        assert!(Relay::new(b"a\nb", Priority::Info).is_err());
        assert!(Relay::new(&[b'x'; 256], Priority::Info).is_err());
        assert!(Relay::new(&[b'x'; 255], Priority::Info).is_ok());
    }
}
