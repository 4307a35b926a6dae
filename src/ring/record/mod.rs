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
//!                         other; the rest is in the dictionary, as for 2,
//!                         5 = a call site's text (layout version 5): the
//!                         message is the site's u32 message id, then as
//!                         for 3 (the fields a count of 0 when it has none),
//!                         6 = kind 4 with fields (layout version 6): the
//!                         message is a u64 (the fields' length), the words
//!                         and strings as for 4, then the fields
//!     34     2  source length (0..=255), tag byte 0 << 8
//!     36     2  file length (0..=255), tag byte 1 << 8
//!     38     2  function length (0..=255), tag byte 2 << 8
//!     40     4  message (or deferred payload) length (below 65536), tag
//!               byte 3 << 24
//!     44     4  checksum  over bytes 4..44 and 48..len
//!     48        source, file, function, message, zero padding to 8
//! ```
//! All integers are in the writer's byte order, which the ring header records.
//!
//! The tag (layout version 5) is the writing process's own number
//! (`sys::process_tag`: random, drawn anew in a forked child), so that a
//! reader of a ring several processes share tells whose a record is when
//! thread ids say nothing (the same in two pid namespaces, reused on a
//! busy host). It lives in bytes that earlier versions always left 0 (the
//! lengths' high bits, which no length reaches), so their records read as
//! tag 0, "made by no process known", and no reader needs the version.
//!
//! A kind-4 record may be *in flight* (layout version 4): its writer
//! reserved it under the lock (commit 0, `len` and `seq` written, the tail
//! moved past it) and copies the rest after letting go of the lock. Its
//! commit word is 0 until the copy is done (see `ring::slot`).

mod header;

pub use header::{align8, message_len_field, pack, seal_site, site_args, words_kind, Stamp};
pub use header::{COMMIT_AT, FOR_OUTPUTS, HEADER_LEN, LEN_AT, PRIORITY_AT, SEQ_AT};

use header::{at, tag_of, MESSAGE_BITS, NAME_BITS};
use header::{KIND_DEFERRED, KIND_FIELDS, KIND_SITE, KIND_SITE_TEXT, KIND_TEXT};
use header::{KIND_WORDS, KIND_WORDS_FIELDS};

use super::checksum::{checksum, checksum_parts};
use crate::fields;
use crate::priority::Priority;
use crate::record::{Record, MESSAGE_MAX, NAME_MAX};
use header::Header;

/// The largest record: the longest names, message and fields.
pub const RECORD_MAX: usize =
    align8(HEADER_LEN + 3 * NAME_MAX + MESSAGE_MAX + 4 + 4 + fields::WITH_BYTES_MAX);
// Every length fits the bits the message length field keeps for it.
const _: () = assert!(RECORD_MAX <= MESSAGE_BITS as usize);
/// First word of the filler that takes the space left at the end of the data
/// area when the next record does not fit. Even, so it never equals a commit.
pub const PAD_MARK: u32 = 0x7061_6430;

/// The commit word of a record whose writer will never finish it: one that
/// was in flight in another thread of a process when it forked, in the
/// child's copy of a private ring (see `Ring::after_fork`). Even, so never
/// a commit value; readers report it as never committed, and the writer
/// evicts it without waiting.
pub const ABANDONED: u32 = 2;

/// The commit word of a record marked for the outputs that their walk
/// passed over while its thread was still copying it (after waiting for
/// it, `Region::pass_over`): its writer learns of it as it commits
/// (`Slot::commit_marked`), and under the logger's lock commits it and has
/// the outputs print it, out of turn.
/// Even, so never a commit value; until the commit, in flight as 0 is.
pub const PASSED_OVER: u32 = 4;

/// Whether a commit word is a record's still in flight: reserved and not
/// committed yet, whether or not the outputs' walk passed it over.
#[inline(always)]
pub const fn in_flight(commit: u32) -> bool {
    commit == 0 || commit == PASSED_OVER
}

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
    /// A call site's captured words and strings (kind 4; with the record's
    /// fields, kind 6), its entry at this offset.
    Words(u32),
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
    /// A record marked for the outputs whose writer was still copying it
    /// when the outputs' walk had waited for it as long as a reader waits
    /// (`View::wait_committed`): passed over, its line printed out of turn
    /// by its own thread when it commits (`record::PASSED_OVER`), lost if
    /// that thread never does.
    Unfinished,
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
            Damage::Unfinished => {
                "its thread was still writing it when the outputs had waited 100 ms for it \
                 (stopped in the middle of it): its thread prints it out of turn when it \
                 finishes it"
            }
            Damage::Malformed => "its length or fields make no sense (damaged, or not a record)",
            Damage::Checksum => "its bytes changed after it was written (checksum mismatch)",
        }
    }
}

/// A record as the ring stores it: its contents and what its message bytes
/// are. For `Kind::Deferred`, `rec.message` is the payload; for
/// `Kind::Site`, the arguments (and the names are empty). A text record
/// with an id (`rec.id`) is a call site's (kind 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stored<'a> {
    pub rec: Record<'a>,
    pub kind: Kind,
    /// Marked for the outputs ([`FOR_OUTPUTS`]).
    pub for_outputs: bool,
    /// The tag of the process that made it (0: unknown).
    pub tag: u32,
}

impl<'a> Stored<'a> {
    /// A text record of no known process (one carried over into a new
    /// ring, whose maker is not asked about again).
    pub fn text(rec: Record<'a>) -> Stored<'a> {
        Stored {
            rec,
            kind: Kind::Text,
            for_outputs: false,
            tag: 0,
        }
    }

    /// The encoded size of the record, padding included. The record must have
    /// been [`clipped`](Record::clipped).
    pub fn encoded_len(&self) -> usize {
        let r = &self.rec;
        align8(HEADER_LEN + r.source.len() + r.file.len() + r.func.len() + self.body_len())
    }

    /// The message part as stored: the text, or with fields, its length, the
    /// text and the fields; a site's text, its id first and its fields
    /// (a count of 0 for none).
    fn body_len(&self) -> usize {
        let r = &self.rec;
        match self.site_text() {
            true => 4 + 4 + r.message.len() + r.fields.len().max(1),
            false if r.fields.is_empty() => r.message.len(),
            false if self.words_fields() => 8 + r.message.len() + r.fields.len(),
            false => 4 + r.message.len() + r.fields.len(),
        }
    }

    /// Kept as kind 6: a call site's words with fields.
    fn words_fields(&self) -> bool {
        matches!(self.kind, Kind::Words(_)) && !self.rec.fields.is_empty()
    }

    /// Kept as kind 5: a call site's text, with its message id.
    fn site_text(&self) -> bool {
        self.kind == Kind::Text && self.rec.id != 0
    }

    /// Writes the record into `buf` (exactly `encoded_len()` bytes) with its
    /// commit word left 0; the ring publishes it by storing [`commit_value`]
    /// last.
    pub fn encode(&self, buf: &mut [u8]) {
        let len = buf.len();
        let r = &self.rec;
        debug_assert_eq!(len, self.encoded_len());
        let (kind, line) = match self.kind {
            Kind::Text if r.id != 0 => (KIND_SITE_TEXT, r.line),
            Kind::Text if !r.fields.is_empty() => (KIND_FIELDS, r.line),
            Kind::Text => (KIND_TEXT, r.line),
            Kind::Deferred => (KIND_DEFERRED, r.line),
            Kind::Site(entry) => (KIND_SITE, entry),
            Kind::Words(entry) if !r.fields.is_empty() => (KIND_WORDS_FIELDS, entry),
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
            tag: self.tag,
        }
        .bytes();
        let (header, body) = buf.split_at_mut(HEADER_LEN);
        let mut rest = &mut *body;
        let text_len = (r.message.len() as u32).to_ne_bytes();
        let fields_len = (r.fields.len() as u64).to_ne_bytes();
        let id = r.id.to_ne_bytes();
        let no_fields: &[u8] = &[0];
        let parts: [&[u8]; 7] = if self.words_fields() {
            [
                r.source,
                r.file,
                r.func,
                &fields_len,
                r.message,
                r.fields,
                b"",
            ]
        } else if self.site_text() {
            let fields = if r.fields.is_empty() {
                no_fields
            } else {
                r.fields
            };
            [r.source, r.file, r.func, &id, &text_len, r.message, fields]
        } else if r.fields.is_empty() {
            [r.source, r.file, r.func, r.message, b"", b"", b""]
        } else {
            [
                r.source, r.file, r.func, &text_len, r.message, r.fields, b"",
            ]
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
            0 | ABANDONED | PASSED_OVER => return Err(Damage::Uncommitted),
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
            KIND_TEXT | KIND_FIELDS | KIND_SITE_TEXT => (Kind::Text, line),
            KIND_DEFERRED => (Kind::Deferred, line),
            KIND_SITE => (Kind::Site(line), 0),
            KIND_WORDS | KIND_WORDS_FIELDS => (Kind::Words(line), 0),
            _ => return Err(Damage::Malformed),
        };
        let (names, message_len) = names_and_message(buf);
        if message_len & !MESSAGE_BITS & !(0xFF << 24) != 0 {
            return Err(Damage::Malformed);
        }
        let lens = [
            (names[0] & NAME_BITS) as usize,
            (names[1] & NAME_BITS) as usize,
            (names[2] & NAME_BITS) as usize,
            (message_len & MESSAGE_BITS) as usize,
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
        let (id, (message, fields)) = match buf[at::KIND] {
            KIND_FIELDS => (0, split_fields(parts[3]).ok_or(Damage::Malformed)?),
            KIND_SITE_TEXT => {
                let (id, rest) = parts[3].split_first_chunk::<4>().ok_or(Damage::Malformed)?;
                let (text, fields) = split_fields(rest).ok_or(Damage::Malformed)?;
                // A site's text without fields keeps a count of 0.
                let fields = if fields == [0] { &fields[..0] } else { fields };
                (u32::from_ne_bytes(*id), (text, fields))
            }
            KIND_WORDS_FIELDS => (0, split_words_fields(parts[3]).ok_or(Damage::Malformed)?),
            _ => (0, (parts[3], &parts[3][..0])),
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
                id,
            },
            kind,
            for_outputs,
            tag: tag_of(names, message_len),
        })
    }
}

/// The three name fields and the message length field as stored: lengths
/// and the tag's bytes (see [`tag_of`]).
fn names_and_message(buf: &[u8]) -> ([u16; 3], u32) {
    (
        [
            u16_at(buf, at::NAMES),
            u16_at(buf, at::NAMES + 2),
            u16_at(buf, at::NAMES + 4),
        ],
        u32_at(buf, at::MESSAGE_LEN),
    )
}

/// Splits a kind-3 message part into the text and its validated fields.
fn split_fields(body: &[u8]) -> Option<(&[u8], &[u8])> {
    let text_len = u32::from_ne_bytes(body.get(..4)?.try_into().unwrap()) as usize;
    let text = body.get(4..4 + text_len)?;
    let fields = &body[4 + text_len..];
    fields::decode(fields)?;
    Some((text, fields))
}

/// Splits a kind-6 message part into the words and strings and the
/// validated fields (never empty: a record without is kind 4).
fn split_words_fields(body: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = body.split_first_chunk::<8>()?;
    let len = usize::try_from(u64::from_ne_bytes(*len)).ok()?;
    let words_end = rest.len().checked_sub(len).filter(|_| len > 0)?;
    let (words, fields) = rest.split_at(words_end);
    fields::decode(fields)?;
    Some((words, fields))
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
    /// The tag of the process that made it (0: unknown).
    pub tag: u32,
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
    let (names, message_len) = names_and_message(buf);
    Some(Head {
        len,
        seq,
        tid: u32_at(buf, at::TID),
        priority: buf[at::PRIORITY] & !FOR_OUTPUTS,
        for_outputs: buf[at::PRIORITY] & FOR_OUTPUTS != 0,
        no_file: !matches!(buf[at::KIND], KIND_SITE | KIND_WORDS | KIND_WORDS_FIELDS)
            && names[1] & NAME_BITS == 0,
        source_len: (names[0] & NAME_BITS) as usize,
        tag: tag_of(names, message_len),
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
    ((HEADER_LEN..=RECORD_MAX).contains(&len) && len % 8 == 0).then_some(len)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Record<'static> {
        Record {
            seq: 42,
            time_ns: 1_700_000_000_123_456_789,
            ..crate::record::sample()
        }
    }

    /// One field, `REQUEST_ID=r-1`, encoded.
    fn request_id_field() -> Vec<u8> {
        use crate::fields::{self, Field, Value};
        let mut list = Vec::with_capacity(fields::ENCODED_MAX);
        let field = Field {
            name: b"REQUEST_ID",
            value: Value::Str(b"r-1"),
        };
        fields::encode([field].into_iter(), &mut list);
        list
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

    /// Kind 6: a call site's words with fields read back as they were
    /// written, every flip of a bit caught; a length word that says more or
    /// less than the fields take (the checksum made again, as a writer
    /// that lied would) is malformed, never a message cut elsewhere.
    #[test]
    fn words_with_fields_keep_them_and_a_wrong_length_is_malformed() {
        let list = request_id_field();
        let words = [1, 0, 0, 0, 0, 0, 0, 0, b'a', b'b'];
        let r = Record {
            source: b"",
            file: b"",
            func: b"",
            line: 0,
            message: &words,
            fields: &list,
            ..sample()
        };
        let stored = Stored {
            kind: Kind::Words(64),
            ..Stored::text(r)
        };
        let mut buf = vec![0xAA; stored.encoded_len()];
        stored.encode(&mut buf);
        buf[0..4].copy_from_slice(&commit_value(r.seq).to_ne_bytes());
        assert_eq!(buf[at::KIND], KIND_WORDS_FIELDS);
        assert_eq!(Stored::decode(&buf), Ok(stored));
        for bit in 0..buf.len() * 8 {
            let mut bad = buf.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(Stored::decode(&bad).is_err(), "flip of bit {bit} accepted");
        }
        let part = 8 + words.len() + list.len();
        for claimed in [0, list.len() - 1, list.len() + 1, part, u64::MAX as usize] {
            let mut bad = buf.clone();
            bad[HEADER_LEN..HEADER_LEN + 8].copy_from_slice(&(claimed as u64).to_ne_bytes());
            let sum = checksum(&bad);
            bad[at::CHECKSUM..at::CHECKSUM + 4].copy_from_slice(&sum.to_ne_bytes());
            assert_eq!(
                Stored::decode(&bad),
                Err(Damage::Malformed),
                "a length word of {claimed}"
            );
        }
    }

    /// A call site's text keeps its id (with fields and without), and the
    /// process's tag, and every flip of a bit is caught.
    #[test]
    fn site_text_keeps_its_id_and_tag() {
        let list = request_id_field();
        for fields in [&b""[..], &list] {
            let r = Record {
                fields,
                id: 0x3fa2_b1c0,
                ..sample()
            };
            let stored = Stored {
                tag: 0xA1B2_C3D4,
                ..Stored::text(r)
            };
            let mut buf = vec![0xAA; stored.encoded_len()];
            stored.encode(&mut buf);
            buf[0..4].copy_from_slice(&commit_value(r.seq).to_ne_bytes());
            assert_eq!(Stored::decode(&buf), Ok(stored));
            let head = peek_head(&buf).unwrap();
            assert_eq!((head.tag, head.source_len), (0xA1B2_C3D4, r.source.len()));
            for bit in 0..buf.len() * 8 {
                let mut bad = buf.clone();
                bad[bit / 8] ^= 1 << (bit % 8);
                assert!(Stored::decode(&bad).is_err(), "flip of bit {bit} accepted");
            }
        }
    }

    /// A record of layout version 4 (no tag, the lengths' high bits 0)
    /// reads as it did, made by no known process.
    #[test]
    fn an_older_record_reads_as_tag_zero() {
        let r = sample();
        let stored = Stored::text(r);
        let mut buf = vec![0; stored.encoded_len()];
        stored.encode(&mut buf);
        buf[0..4].copy_from_slice(&commit_value(r.seq).to_ne_bytes());
        // Version 4 wrote exactly this: tag 0 is all zero bits.
        assert_eq!(Stored::decode(&buf).map(|s| s.tag), Ok(0));
        assert_eq!(u16_at(&buf, at::NAMES) as usize, r.source.len());
        assert_eq!(u32_at(&buf, at::MESSAGE_LEN) as usize, r.message.len());
    }
}
