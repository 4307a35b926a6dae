//! The record header: its offsets, kinds and the tag's place (the table is
//! the parent's overview), and the header as the writers build it: whole
//! for a record made under the lock (`Stored::encode`, a call site's
//! arguments), word by word for the flight recorder's (`ring::slot`).

use crate::priority::Priority;
use crate::ring::checksum::checksum_parts;

pub const HEADER_LEN: usize = 48;

pub const fn align8(n: usize) -> usize {
    (n + 7) & !7
}

/// Byte offsets of the header fields (the table in the parent's overview).
pub(super) mod at {
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

pub(super) const KIND_TEXT: u8 = 0;
pub(super) const KIND_DEFERRED: u8 = 1;
pub(super) const KIND_SITE: u8 = 2;
pub(super) const KIND_FIELDS: u8 = 3;
pub(super) const KIND_WORDS: u8 = 4;
pub(super) const KIND_SITE_TEXT: u8 = 5;
pub(super) const KIND_WORDS_FIELDS: u8 = 6;

/// The lengths' bits in their fields (the rest is the tag's).
pub(super) const NAME_BITS: u16 = 0xFF;
pub(super) const MESSAGE_BITS: u32 = 0xFFFF;

/// The tag from the four fields that carry it.
#[inline(always)]
pub(super) fn tag_of(names: [u16; 3], message: u32) -> u32 {
    u32::from_le_bytes([
        (names[0] >> 8) as u8,
        (names[1] >> 8) as u8,
        (names[2] >> 8) as u8,
        (message >> 24) as u8,
    ])
}

/// Spreads `tag` over the lengths' high bits: what it adds to the u16s at
/// 34, 36 and 38 and to the u32 at 40.
#[inline(always)]
const fn tag_parts(tag: u32) -> ([u16; 3], u32) {
    let b = tag.to_le_bytes();
    (
        [(b[0] as u16) << 8, (b[1] as u16) << 8, (b[2] as u16) << 8],
        (b[3] as u32) << 24,
    )
}

/// Two 32-bit fields that lie one after the other in memory, as one word.
#[inline(always)]
pub fn pack(first: u32, second: u32) -> u64 {
    let mut w = [0u8; 8];
    w[..4].copy_from_slice(&first.to_ne_bytes());
    w[4..].copy_from_slice(&second.to_ne_bytes());
    u64::from_ne_bytes(w)
}

/// Bytes 32..40 of a kind-4 record's header (kind 6 `with_fields`) as
/// one word: the priority byte (with the outputs' mark), the kind, and the
/// names' lengths, 0 (they are in the dictionary), with the first three
/// bytes of `tag`.
#[inline(always)]
pub fn words_kind(priority: Priority, for_outputs: bool, tag: u32, with_fields: bool) -> u64 {
    let mut w = [0u8; 8];
    w[at::PRIORITY - 32] = priority as u8 | (u8::from(for_outputs) * FOR_OUTPUTS);
    w[at::KIND - 32] = if with_fields {
        KIND_WORDS_FIELDS
    } else {
        KIND_WORDS
    };
    let (names, _) = tag_parts(tag);
    for (i, n) in names.iter().enumerate() {
        let at = at::NAMES - 32 + 2 * i;
        w[at..at + 2].copy_from_slice(&n.to_ne_bytes());
    }
    u64::from_ne_bytes(w)
}

/// The message length field (bytes 40..44) of a record of `len` bytes of
/// message made by the process of `tag`.
#[inline(always)]
pub fn message_len_field(len: u32, tag: u32) -> u32 {
    len | tag_parts(tag).1
}

/// The byte offsets of a record's commit, length and sequence number: what
/// the writer writes under the lock when it reserves a record.
pub const COMMIT_AT: usize = at::COMMIT;
pub const LEN_AT: usize = at::LEN;
pub const SEQ_AT: usize = at::SEQ;
pub const PRIORITY_AT: usize = at::PRIORITY;
const _: () = assert!(at::TIME == 16 && at::TID == 24 && at::LINE == 28);
const _: () = assert!(at::PRIORITY == 32 && at::KIND == 33 && at::MESSAGE_LEN == 40);
const _: () = assert!(at::CHECKSUM == 44 && HEADER_LEN == crate::ring::checksum::HEADER_LEN);

/// A record header's fields, for the writers.
pub(super) struct Header {
    pub(super) len: usize,
    pub(super) seq: u64,
    pub(super) time_ns: u64,
    pub(super) tid: u32,
    pub(super) line: u32,
    pub(super) priority: Priority,
    pub(super) for_outputs: bool,
    pub(super) kind: u8,
    pub(super) names: [usize; 3],
    pub(super) message_len: usize,
    pub(super) tag: u32,
}

impl Header {
    /// The header bytes, with the commit word and the checksum left 0. Built
    /// in a local array (fixed offsets, no bounds checks) and copied once.
    #[inline(always)]
    pub(super) fn bytes(&self) -> [u8; HEADER_LEN] {
        let mut head = [0u8; HEADER_LEN];
        head[at::LEN..at::LEN + 4].copy_from_slice(&(self.len as u32).to_ne_bytes());
        head[at::SEQ..at::SEQ + 8].copy_from_slice(&self.seq.to_ne_bytes());
        head[at::TIME..at::TIME + 8].copy_from_slice(&self.time_ns.to_ne_bytes());
        head[at::TID..at::TID + 4].copy_from_slice(&self.tid.to_ne_bytes());
        head[at::LINE..at::LINE + 4].copy_from_slice(&self.line.to_ne_bytes());
        head[at::PRIORITY] = self.priority as u8 | (u8::from(self.for_outputs) * FOR_OUTPUTS);
        head[at::KIND] = self.kind;
        let (tag_names, _) = tag_parts(self.tag);
        for (i, (n, t)) in self.names.iter().zip(tag_names).enumerate() {
            let at = at::NAMES + 2 * i;
            head[at..at + 2].copy_from_slice(&(*n as u16 | t).to_ne_bytes());
        }
        head[at::MESSAGE_LEN..at::MESSAGE_LEN + 4]
            .copy_from_slice(&message_len_field(self.message_len as u32, self.tag).to_ne_bytes());
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
    /// The process that makes it (`sys::process_tag`).
    pub tag: u32,
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
        tag: stamp.tag,
    }
    .bytes();
    let (header, body) = buf.split_at_mut(HEADER_LEN);
    let sum = checksum_parts(&head, body);
    head[at::CHECKSUM..].copy_from_slice(&sum.to_ne_bytes());
    header.copy_from_slice(&head);
}
