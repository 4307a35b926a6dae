//! The binary record kept in the ring, and its validation: the one home of
//! the record layout.
//!
//! ```text
//! offset  size  field
//!      0     4  commit    written last; odd value derived from seq, 0 while writing
//!      4     4  len       whole record in bytes, a multiple of 8
//!      8     8  seq       ring-wide sequence number
//!     16     8  time      CLOCK_REALTIME, nanoseconds since the epoch
//!     24     4  tid
//!     28     4  line      (kind 2: the offset of the call site's dictionary entry)
//!     32     1  priority  1..=4, plus FOR_OUTPUTS (0x80) on a record
//!                         the outputs print (layout version 3)
//!     33     1  kind      0 = finished text, 1 = deferred: the message is a
//!                         format with its raw arguments (see crate::deferred),
//!                         2 = deferred with the format, names and line in the
//!                         call-site dictionary (see crate::sites): the message
//!                         is the arguments alone,
//!                         3 = text with structured fields: the message is a u32
//!                         text length, the text, then the fields (see
//!                         crate::fields),
//!                         4 = a call site's captured words (layout version
//!                         4): the message is the call's 64-bit words, a
//!                         string's replaced by its length (all ones for
//!                         NULL), then the strings' bytes one after the
//!                         other; the rest is in the dictionary, as for 2
//!     34     2  source length
//!     36     2  file length
//!     38     2  function length
//!     40     4  message (or deferred payload) length
//!     44     4  checksum  over bytes 4..44 and 48..len
//!     48        source, file, function, message, zero padding to 8
//! ```
//! All integers are in the writer's byte order, which the ring header records.
//!
//! A kind-4 record may be *in flight* (layout version 4): its writer
//! reserved it under the lock (commit 0, `len` and `seq` written, the tail
//! moved past it) and copies the rest after letting go of the lock. Its
//! commit word is 0 until the copy is done (see `ring::slot`).

use super::checksum::{checksum, checksum_parts};
use crate::fields;
use crate::priority::Priority;
use crate::record::{Record, MESSAGE_MAX, NAME_MAX};

pub const HEADER_LEN: usize = 48;
/// The largest record: the longest names, message and fields.
pub const RECORD_MAX: usize =
    align8(HEADER_LEN + 3 * NAME_MAX + MESSAGE_MAX + 4 + fields::ENCODED_MAX);
/// First word of the filler that takes the space left at the end of the data
/// area when the next record does not fit. Even, so it never equals a commit.
pub const PAD_MARK: u32 = 0x7061_6430;

/// Byte offsets of the header fields (the table above).
mod at {
    pub const COMMIT: usize = 0;
    pub const LEN: usize = 4;
    pub const SEQ: usize = 8;
    pub const TIME: usize = 16;
    pub const TID: usize = 24;
    pub const LINE: usize = 28;
    pub const PRIORITY: usize = 32;
    pub const KIND: usize = 33;
    pub const NAMES: usize = 34;
    pub const MESSAGE_LEN: usize = 40;
    pub const CHECKSUM: usize = 44;
}

/// The bit of the priority byte that marks a record for the outputs of the
/// process that made the ring: they print it, and until they have (see the
/// header's `printed`), the ring does not overwrite it.
pub const FOR_OUTPUTS: u8 = 0x80;

const KIND_TEXT: u8 = 0;
const KIND_DEFERRED: u8 = 1;
const KIND_SITE: u8 = 2;
const KIND_FIELDS: u8 = 3;
const KIND_WORDS: u8 = 4;

/// The commit word of a record whose writer will never finish it: one that
/// was in flight in another thread of a process when it forked, in the
/// child's copy of a private ring (see `Ring::after_fork`). Even, so never
/// a commit value; readers report it as never committed, and the writer
/// evicts it without waiting.
pub const ABANDONED: u32 = 2;

/// What a stored record's message bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Finished text (with its structured fields, if any).
    Text,
    /// A deferred payload: format and arguments (see `deferred`).
    Deferred,
    /// The arguments of the call site whose dictionary entry is at this
    /// offset (see `ring::sites`); source, file, function and line are there
    /// too.
    Site(u32),
    /// A call site's captured words and strings (kind 4), its entry at
    /// this offset.
    Words(u32),
}

pub const fn align8(n: usize) -> usize {
    (n + 7) & !7
}

/// The commit word of the record with sequence number `seq`: odd, so it is
/// never 0 (being written) nor the pad mark, and tied to `seq` so a stale record
/// left from an earlier lap of the ring cannot pass for a newer one.
pub const fn commit_value(seq: u64) -> u32 {
    ((seq as u32) << 1 | 1) ^ 0x6C6F_6700
}

/// Why a record was not accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Damage {
    /// The commit word is missing: the writer was stopped mid-record.
    Uncommitted,
    /// A length or field is out of range.
    Malformed,
    /// The bytes changed after the record was committed (or while it was read).
    Checksum,
}

impl Damage {
    /// What a person reads about it: the end of "record N skipped: ...",
    /// the words vlog's dumps, vlog-dump and their man pages use.
    pub fn describe(self) -> &'static str {
        match self {
            Damage::Uncommitted => {
                "it was never committed (its writer was still writing it, or stopped in the \
                 middle of it)"
            }
            Damage::Malformed => "its length or fields make no sense (damaged, or not a record)",
            Damage::Checksum => "its bytes changed after it was written (checksum mismatch)",
        }
    }
}

/// A record as the ring stores it: its contents and what its message bytes
/// are. For `Kind::Deferred`, `rec.message` is the payload; for
/// `Kind::Site`, the arguments (and the names are empty).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stored<'a> {
    pub rec: Record<'a>,
    pub kind: Kind,
    /// Marked for the outputs ([`FOR_OUTPUTS`]).
    pub for_outputs: bool,
}

impl<'a> Stored<'a> {
    pub fn text(rec: Record<'a>) -> Stored<'a> {
        Stored {
            rec,
            kind: Kind::Text,
            for_outputs: false,
        }
    }

    /// The encoded size of the record, padding included. The record must have
    /// been [`clipped`](Record::clipped).
    pub fn encoded_len(&self) -> usize {
        let r = &self.rec;
        align8(HEADER_LEN + r.source.len() + r.file.len() + r.func.len() + self.body_len())
    }

    /// The message part as stored: the text, or with fields, its length, the
    /// text and the fields.
    fn body_len(&self) -> usize {
        if self.rec.fields.is_empty() {
            self.rec.message.len()
        } else {
            4 + self.rec.message.len() + self.rec.fields.len()
        }
    }

    /// Writes the record into `buf` (exactly `encoded_len()` bytes) with its
    /// commit word left 0; the ring publishes it by storing [`commit_value`]
    /// last.
    pub fn encode(&self, buf: &mut [u8]) {
        let len = buf.len();
        let r = &self.rec;
        debug_assert_eq!(len, self.encoded_len());
        let (kind, line) = match self.kind {
            Kind::Text if !r.fields.is_empty() => (KIND_FIELDS, r.line),
            Kind::Text => (KIND_TEXT, r.line),
            Kind::Deferred => (KIND_DEFERRED, r.line),
            Kind::Site(entry) => (KIND_SITE, entry),
            Kind::Words(entry) => (KIND_WORDS, entry),
        };
        let mut head = Header {
            len,
            seq: r.seq,
            time_ns: r.time_ns,
            tid: r.tid,
            line,
            priority: r.priority,
            for_outputs: self.for_outputs,
            kind,
            names: [r.source.len(), r.file.len(), r.func.len()],
            message_len: self.body_len(),
        }
        .bytes();
        let (header, body) = buf.split_at_mut(HEADER_LEN);
        let mut rest = &mut *body;
        let text_len = (r.message.len() as u32).to_ne_bytes();
        let parts: [&[u8]; 6] = if r.fields.is_empty() {
            [r.source, r.file, r.func, r.message, b"", b""]
        } else {
            [r.source, r.file, r.func, &text_len, r.message, r.fields]
        };
        for part in parts {
            let (dst, tail) = rest.split_at_mut(part.len());
            dst.copy_from_slice(part);
            rest = tail;
        }
        // At most 7 bytes of padding.
        rest.fill(0);
        let sum = checksum_parts(&head, body);
        head[at::CHECKSUM..].copy_from_slice(&sum.to_ne_bytes());
        header.copy_from_slice(&head);
    }

    /// Validates and reads a record from `buf`, which holds exactly the bytes
    /// the record's `len` field claims (see [`peek_len`]).
    #[cfg(test)]
    pub fn decode(buf: &'a [u8]) -> Result<Stored<'a>, Damage> {
        Stored::decode_checking(buf, true)
    }

    /// [`Stored::decode`], without the checksum unless `checksum`: for a
    /// reader that knows the bytes are whole (see `Region::whole`). Lengths
    /// and the commit word are checked all the same.
    pub fn decode_checking(buf: &'a [u8], checksum: bool) -> Result<Stored<'a>, Damage> {
        if buf.len() < HEADER_LEN || peek_len(buf) != Some(buf.len()) {
            return Err(Damage::Malformed);
        }
        let seq = u64_at(buf, at::SEQ);
        match u32_at(buf, at::COMMIT) {
            0 | ABANDONED => return Err(Damage::Uncommitted),
            c if c != commit_value(seq) => return Err(Damage::Malformed),
            _ => {}
        }
        if checksum && u32_at(buf, at::CHECKSUM) != self::checksum(buf) {
            return Err(Damage::Checksum);
        }
        let for_outputs = buf[at::PRIORITY] & FOR_OUTPUTS != 0;
        let priority = Priority::from_number((buf[at::PRIORITY] & !FOR_OUTPUTS) as u64)
            .ok_or(Damage::Malformed)?;
        let line = u32_at(buf, at::LINE);
        let (kind, line) = match buf[at::KIND] {
            KIND_TEXT | KIND_FIELDS => (Kind::Text, line),
            KIND_DEFERRED => (Kind::Deferred, line),
            KIND_SITE => (Kind::Site(line), 0),
            KIND_WORDS => (Kind::Words(line), 0),
            _ => return Err(Damage::Malformed),
        };
        let lens = [
            u16_at(buf, at::NAMES) as usize,
            u16_at(buf, at::NAMES + 2) as usize,
            u16_at(buf, at::NAMES + 4) as usize,
            u32_at(buf, at::MESSAGE_LEN) as usize,
        ];
        let body: usize = lens.iter().sum();
        if align8(HEADER_LEN + body) != buf.len() {
            return Err(Damage::Malformed);
        }
        let mut parts = [&buf[..0]; 4];
        let mut start = HEADER_LEN;
        for (part, n) in parts.iter_mut().zip(lens) {
            *part = &buf[start..start + n];
            start += n;
        }
        let (message, fields) = if buf[at::KIND] == KIND_FIELDS {
            split_fields(parts[3]).ok_or(Damage::Malformed)?
        } else {
            (parts[3], &parts[3][..0])
        };
        Ok(Stored {
            rec: Record {
                seq,
                time_ns: u64_at(buf, at::TIME),
                tid: u32_at(buf, at::TID),
                line,
                priority,
                source: parts[0],
                file: parts[1],
                func: parts[2],
                message,
                fields,
                context: false,
                id: 0,
            },
            kind,
            for_outputs,
        })
    }
}

/// Splits a kind-3 message part into the text and its validated fields.
fn split_fields(body: &[u8]) -> Option<(&[u8], &[u8])> {
    let text_len = u32::from_ne_bytes(body.get(..4)?.try_into().unwrap()) as usize;
    let text = body.get(4..4 + text_len)?;
    let fields = &body[4 + text_len..];
    fields::decode(fields)?;
    Some((text, fields))
}

/// What a committed record's header says, read without the rest of the
/// record: enough to choose which records to read (an error's context,
/// `logger::context`). Nothing but the commit word is checked; a reader
/// reads a record it chose with the validating walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    pub len: usize,
    pub seq: u64,
    pub tid: u32,
    /// The priority's number (1..=4 in a record that is not damaged).
    pub priority: u8,
    pub for_outputs: bool,
    /// The names are in the record (not in the call-site dictionary), and
    /// the file name is empty: a line with no call site, a relayed one.
    pub no_file: bool,
    pub source_len: usize,
}

/// The header of the committed record in `buf` (at least [`HEADER_LEN`]
/// bytes), if it is one.
pub fn peek_head(buf: &[u8]) -> Option<Head> {
    if buf.len() < HEADER_LEN {
        return None;
    }
    let len = peek_len(buf)?;
    let seq = u64_at(buf, at::SEQ);
    if u32_at(buf, at::COMMIT) != commit_value(seq) {
        return None;
    }
    Some(Head {
        len,
        seq,
        tid: u32_at(buf, at::TID),
        priority: buf[at::PRIORITY] & !FOR_OUTPUTS,
        for_outputs: buf[at::PRIORITY] & FOR_OUTPUTS != 0,
        no_file: !matches!(buf[at::KIND], KIND_SITE | KIND_WORDS)
            && u16_at(buf, at::NAMES + 2) == 0,
        source_len: u16_at(buf, at::NAMES) as usize,
    })
}

/// The `len` field of a record header, if it is a plausible record length.
pub fn peek_len(header: &[u8]) -> Option<usize> {
    valid_len(u32_at(header, at::LEN))
}

/// A record's `len` field, if it is a plausible record length.
#[inline(always)]
pub fn valid_len(len: u32) -> Option<usize> {
    let len = len as usize;
    ((HEADER_LEN..=RECORD_MAX).contains(&len) && len.is_multiple_of(8)).then_some(len)
}

/// The pad's length, if `word` (a record slot's first 8 bytes) is a pad.
pub fn pad_len(word: &[u8]) -> Option<usize> {
    (u32_at(word, 0) == PAD_MARK).then(|| u32_at(word, 4) as usize)
}

/// The 8 bytes of a pad of `len` bytes.
pub fn pad_word(len: usize) -> [u8; 8] {
    let mut word = [0u8; 8];
    word[..4].copy_from_slice(&PAD_MARK.to_ne_bytes());
    word[4..].copy_from_slice(&(len as u32).to_ne_bytes());
    word
}

pub fn u32_at(buf: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(buf[at..at + 4].try_into().unwrap())
}

pub fn u64_at(buf: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(buf[at..at + 8].try_into().unwrap())
}

fn u16_at(buf: &[u8], at: usize) -> u16 {
    u16::from_ne_bytes(buf[at..at + 2].try_into().unwrap())
}

/// Two 32-bit fields that lie one after the other in memory, as one word.
#[inline(always)]
pub fn pack(first: u32, second: u32) -> u64 {
    let mut w = [0u8; 8];
    w[..4].copy_from_slice(&first.to_ne_bytes());
    w[4..].copy_from_slice(&second.to_ne_bytes());
    u64::from_ne_bytes(w)
}

/// Bytes 32..40 of a kind-4 record's header as one word: the priority
/// byte (with the outputs' mark), the kind, and the names' lengths, 0
/// (they are in the dictionary).
#[inline(always)]
pub fn words_kind(priority: Priority, for_outputs: bool) -> u64 {
    let mut w = [0u8; 8];
    w[at::PRIORITY - 32] = priority as u8 | (u8::from(for_outputs) * FOR_OUTPUTS);
    w[at::KIND - 32] = KIND_WORDS;
    u64::from_ne_bytes(w)
}

/// The byte offsets of a record's commit, length and sequence number: what
/// the writer writes under the lock when it reserves a record.
pub const COMMIT_AT: usize = at::COMMIT;
pub const LEN_AT: usize = at::LEN;
pub const SEQ_AT: usize = at::SEQ;
const _: () = assert!(at::TIME == 16 && at::TID == 24 && at::LINE == 28);
const _: () = assert!(at::PRIORITY == 32 && at::KIND == 33 && at::MESSAGE_LEN == 40);
const _: () = assert!(at::CHECKSUM == 44 && HEADER_LEN == super::checksum::HEADER_LEN);

/// A record header's fields, for the writers.
struct Header {
    len: usize,
    seq: u64,
    time_ns: u64,
    tid: u32,
    line: u32,
    priority: Priority,
    for_outputs: bool,
    kind: u8,
    names: [usize; 3],
    message_len: usize,
}

impl Header {
    /// The header bytes, with the commit word and the checksum left 0. Built
    /// in a local array (fixed offsets, no bounds checks) and copied once.
    #[inline(always)]
    fn bytes(&self) -> [u8; HEADER_LEN] {
        let mut head = [0u8; HEADER_LEN];
        head[at::LEN..at::LEN + 4].copy_from_slice(&(self.len as u32).to_ne_bytes());
        head[at::SEQ..at::SEQ + 8].copy_from_slice(&self.seq.to_ne_bytes());
        head[at::TIME..at::TIME + 8].copy_from_slice(&self.time_ns.to_ne_bytes());
        head[at::TID..at::TID + 4].copy_from_slice(&self.tid.to_ne_bytes());
        head[at::LINE..at::LINE + 4].copy_from_slice(&self.line.to_ne_bytes());
        head[at::PRIORITY] = self.priority as u8 | (u8::from(self.for_outputs) * FOR_OUTPUTS);
        head[at::KIND] = self.kind;
        for (i, n) in self.names.iter().enumerate() {
            let at = at::NAMES + 2 * i;
            head[at..at + 2].copy_from_slice(&(*n as u16).to_ne_bytes());
        }
        head[at::MESSAGE_LEN..at::MESSAGE_LEN + 4]
            .copy_from_slice(&(self.message_len as u32).to_ne_bytes());
        head
    }
}

/// What every record says about when and where it was made.
#[derive(Clone, Copy, Debug)]
pub struct Stamp {
    pub seq: u64,
    pub time_ns: u64,
    pub tid: u32,
    pub priority: Priority,
    pub for_outputs: bool,
}

/// The first half of writing a kind-2 record into `buf` (exactly
/// `align8(HEADER_LEN + args_len)` bytes): clears the padding, at most 7
/// bytes in the last word, with one store, and returns the `args_len` bytes
/// the arguments go to (they overwrite what they use of that word). Then
/// [`seal_site`]. The recording path of a deferred call site, kept apart from
/// [`Stored::encode`] so it copies each byte once.
#[inline(always)]
pub fn site_args(buf: &mut [u8], args_len: usize) -> &mut [u8] {
    debug_assert!(args_len > 0 && buf.len() == align8(HEADER_LEN + args_len));
    let last = buf.len() - 8;
    buf[last..].copy_from_slice(&[0; 8]);
    &mut buf[HEADER_LEN..HEADER_LEN + args_len]
}

/// The second half: the header and the checksum over it and the arguments,
/// with the commit word left 0.
#[inline(always)]
pub fn seal_site(buf: &mut [u8], stamp: Stamp, entry: u32, args_len: usize) {
    let len = buf.len();
    let mut head = Header {
        len,
        seq: stamp.seq,
        time_ns: stamp.time_ns,
        tid: stamp.tid,
        line: entry,
        priority: stamp.priority,
        for_outputs: stamp.for_outputs,
        kind: KIND_SITE,
        names: [0; 3],
        message_len: args_len,
    }
    .bytes();
    let (header, body) = buf.split_at_mut(HEADER_LEN);
    let sum = checksum_parts(&head, body);
    head[at::CHECKSUM..].copy_from_slice(&sum.to_ne_bytes());
    header.copy_from_slice(&head);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Record<'static> {
        Record {
            seq: 42,
            time_ns: 1_700_000_000_123_456_789,
            tid: 4242,
            line: 123,
            priority: Priority::Info,
            source: b"qemu.monitor",
            file: b"monitor.c",
            func: b"qemuMonitorSend",
            message: b"sent 12 bytes to fd 7",
            fields: b"",
            context: false,
            id: 0,
        }
    }

    fn encoded(r: &Record) -> Vec<u8> {
        let stored = Stored::text(*r);
        let mut buf = vec![0xAA; stored.encoded_len()];
        stored.encode(&mut buf);
        buf[0..4].copy_from_slice(&commit_value(r.seq).to_ne_bytes());
        buf
    }

    #[test]
    fn round_trip() {
        let r = sample();
        let buf = encoded(&r);
        assert_eq!(buf.len() % 8, 0);
        assert_eq!(Stored::decode(&buf), Ok(Stored::text(r)));
    }

    #[test]
    fn every_single_bit_flip_is_caught() {
        let buf = encoded(&sample());
        for bit in 0..buf.len() * 8 {
            let mut bad = buf.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            if let Ok(r) = Stored::decode(&bad) {
                panic!("flip of bit {bit} accepted: {r:?}");
            }
        }
    }

    #[test]
    fn fields_round_trip_and_every_flip_is_caught() {
        use crate::fields::{self, Field, Value};
        let mut list = Vec::with_capacity(fields::ENCODED_MAX);
        fields::encode(
            [
                Field {
                    name: b"VM",
                    value: Value::Str(b"guest1"),
                },
                Field {
                    name: b"VCPUS",
                    value: Value::Int(4),
                },
            ]
            .into_iter(),
            &mut list,
        );
        let r = Record {
            fields: &list,
            ..sample()
        };
        let buf = encoded(&r);
        assert_eq!(Stored::decode(&buf), Ok(Stored::text(r)));
        for bit in 0..buf.len() * 8 {
            let mut bad = buf.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(Stored::decode(&bad).is_err(), "flip of bit {bit} accepted");
        }
    }

    #[test]
    fn uncommitted_and_stale() {
        let r = sample();
        let stored = Stored::text(r);
        let mut buf = vec![0; stored.encoded_len()];
        stored.encode(&mut buf);
        assert_eq!(Stored::decode(&buf), Err(Damage::Uncommitted));
        buf[0..4].copy_from_slice(&commit_value(41).to_ne_bytes());
        assert_eq!(Stored::decode(&buf), Err(Damage::Malformed));
        assert_ne!(commit_value(7) & 1, 0);
        assert_eq!(PAD_MARK & 1, 0);
    }

    #[test]
    fn clipping() {
        let long = vec![b'x'; MESSAGE_MAX + 100];
        let name = vec![b'n'; 1000];
        let r = Record {
            message: &long,
            source: &name,
            ..sample()
        }
        .clipped();
        assert_eq!(r.message.len(), MESSAGE_MAX);
        assert_eq!(r.source.len(), NAME_MAX);
        assert!(Stored::text(r).encoded_len() <= RECORD_MAX);
    }
}
