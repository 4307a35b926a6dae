//! The records' checksum: a word-at-a-time hash that finds torn and stale
//! bytes, the one every writer and reader of records and dictionary entries
//! uses.

/// A record header's length (`record::HEADER_LEN`, which record.rs ties
/// to this one at compile time).
pub(super) const HEADER_LEN: usize = 48;

/// A word-at-a-time hash of the record, skipping the commit word and the
/// checksum itself. It detects torn and stale bytes, not tampering, so it is
/// chosen for speed on the recording path.
pub(super) fn checksum(buf: &[u8]) -> u32 {
    let (head, body) = buf.split_at(HEADER_LEN);
    checksum_parts(head.try_into().unwrap(), body)
}

#[inline(always)]
pub(super) fn checksum_parts(head: &[u8; HEADER_LEN], body: &[u8]) -> u32 {
    let len = HEADER_LEN + body.len();
    let mut sum = Mixer::new(len as u64);
    let word = |at: usize| u64::from_ne_bytes(head[at..at + 8].try_into().unwrap());
    // Bytes 4..44: the length word, then 36 bytes of fields (commit at 0..4 and
    // the checksum at 44..48 are left out).
    sum.mix(u32::from_ne_bytes(head[4..8].try_into().unwrap()) as u64);
    for at in [8, 16, 24, 32] {
        sum.mix(word(at));
    }
    sum.mix(u32::from_ne_bytes(head[40..44].try_into().unwrap()) as u64);
    sum.words(body);
    sum.finish()
}

/// The same hash over `bytes` (a multiple of 8 long), started from `seed`:
/// the call-site dictionary's entries use it.
pub fn checksum_words(seed: u64, bytes: &[u8]) -> u32 {
    let mut sum = Mixer::new(seed);
    sum.words(bytes);
    sum.finish()
}

pub(super) struct Mixer(u64);

impl Mixer {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;

    #[inline(always)]
    pub(super) fn new(seed: u64) -> Mixer {
        Mixer(Self::K ^ seed)
    }

    #[inline(always)]
    pub(super) fn mix(&mut self, w: u64) {
        self.0 = (self.0 ^ w).wrapping_mul(Self::K).rotate_left(29);
    }

    #[inline(always)]
    pub(super) fn words(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks_exact(8) {
            self.mix(u64::from_ne_bytes(chunk.try_into().unwrap()));
        }
    }

    #[inline(always)]
    pub(super) fn finish(&self) -> u32 {
        (self.0 ^ (self.0 >> 32)) as u32
    }
}
