//! Bytes a record keeps as bytes (`VLOG_HEXDUMP`): a packet or a buffer,
//! copied at the call as it is (no text made of it), and shown when read:
//! as `hexdump -C` shows them in text lines, as a hex string in every
//! other output. They travel as a field of their own type, outside the
//! budget of the caller's fields (`ENCODED_MAX`), so that a large dump
//! never cuts a small field, and a caller's fields never cut a dump.
//!
//! At most [`BYTES_MAX`] bytes are kept; the rest are counted in the
//! field [`OMITTED`], which every output shows as it shows any field.

/// The most bytes a record keeps; the rest are counted ([`OMITTED`]).
pub const BYTES_MAX: usize = 4096;
/// The field that holds the bytes (every output but the text line, which
/// shows them as a hex dump after the line, writes them as lowercase hex).
pub const HEXDUMP: &[u8] = b"VLOG_HEXDUMP";
/// The field that counts the bytes given beyond [`BYTES_MAX`].
pub const OMITTED: &[u8] = b"VLOG_HEXDUMP_OMITTED";
/// The most a dump adds to a record's encoded fields.
pub const ROOM: usize = (1 + HEXDUMP.len() + 1 + 4 + BYTES_MAX) + (1 + OMITTED.len() + 1 + 8);

/// Bytes to keep in a record, cut to [`BYTES_MAX`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dump<'a> {
    pub bytes: &'a [u8],
    /// How many more bytes the caller gave.
    pub omitted: u64,
}

impl<'a> Dump<'a> {
    /// The first [`BYTES_MAX`] of `bytes`, the rest counted.
    pub fn of(bytes: &'a [u8]) -> Dump<'a> {
        Dump::given(&bytes[..Dump::kept(bytes.len())], bytes.len())
    }

    /// How many of `given` bytes a record keeps: all that may be read of
    /// bytes that are not all readable.
    pub fn kept(given: usize) -> usize {
        given.min(BYTES_MAX)
    }

    /// `kept`, the first [`Dump::kept`] of `given` bytes, the rest counted.
    pub fn given(kept: &'a [u8], given: usize) -> Dump<'a> {
        debug_assert_eq!(kept.len(), Dump::kept(given));
        Dump {
            bytes: kept,
            omitted: (given - kept.len()) as u64,
        }
    }
}
