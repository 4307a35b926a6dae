//! The ring region's layout, the one home of it: the header every reader
//! checks, where the dictionary and the data area lie, the magic, the sizes.
//! Readers of ring images (`ring::image`) take every offset from here, and
//! each offset is tied to the `#[repr(C)]` header by a compile-time check,
//! so the writer and the readers cannot drift apart.
//!
//! ```text
//! offset  size  field
//!      0     8  magic          "VLOGRING"
//!      8     4  version        LAYOUT_VERSION
//!     12     4  header_space   bytes before the dictionary (HEADER_SPACE)
//!     16     4  byte_order     0x01020304 in the writer's byte order
//!     20     4  record_header  ring::record::HEADER_LEN
//!     24     8  data_size
//!     32     8  head           oldest record held (a position)
//!     40     8  tail           end of the newest record
//!     48     8  next_seq
//!     56     8  lost
//!     64     8  dict_size      (version 2)
//!     72     8  dict_used      (version 2)
//!     80     8  printed        (version 3) where the outputs of the process
//!                              that made the ring have read to: the records
//!                              marked for them from here on are not printed
//!     88     8  marked_end     (version 3) the end of the newest record
//!                              marked for the outputs
//!    128        a ring file's process-shared lock (pthread_mutex_t)
//!    256        the call-site dictionary, then the data area
//! ```

use std::mem::offset_of;
use std::sync::atomic::AtomicU64;

use super::record::align8;
use crate::error::ConfigError;

pub const MIN_SIZE: usize = 16 * 1024;
pub const MAX_SIZE: usize = 1 << 30;
/// No ring's positions reach this: 2^62 bytes, a century and a half of
/// writing at a gigabyte a second. A header that says otherwise is forged,
/// and refused before a reader adds lengths to its positions.
pub const POSITION_MAX: u64 = 1 << 62;
/// Version 2 added the call-site dictionary (a version 1 header reads as one
/// with an empty dictionary); version 3 the printed position and the mark on
/// records for the outputs (a version 2 ring reads as one whose records were
/// all printed); version 4 the call sites' word records (record kind 4),
/// which may be in flight below the tail (see `ring::slot`): its header is
/// version 3's; version 5 the writing process's tag in every record and
/// record kind 5 (a call site's text with its message id, see
/// `ring::record`): its header is version 3's, and a version 4 ring's
/// records read as tagged 0; version 6 record kind 6 (a call site's words
/// with its thread's fields): its header is version 3's.
pub const LAYOUT_VERSION: u32 = 6;
/// Room reserved for the header at the start of the region; the dictionary
/// and then the data area follow it.
pub const HEADER_SPACE: usize = 256;
pub const BYTE_ORDER_MARK: u32 = 0x0102_0304;
/// The mark as a writer of the other byte order leaves it.
pub const FOREIGN_BYTE_ORDER: u32 = 0x0403_0201;

/// The header at the start of the region. Its layout is part of the on-disk
/// and in-core format; fields are only ever appended.
#[repr(C)]
pub struct Header {
    pub magic: [u8; 8],
    pub version: u32,
    pub header_space: u32,
    pub byte_order: u32,
    pub record_header_len: u32,
    pub data_size: u64,
    pub head: AtomicU64,
    pub tail: AtomicU64,
    pub next_seq: AtomicU64,
    /// Records overwritten to make room (or lost when the ring was resized).
    pub lost: AtomicU64,
    /// Version 2: the size of the call-site dictionary, and how much of it
    /// holds published entries.
    pub dict_size: u64,
    pub dict_used: AtomicU64,
    /// Version 3: the position up to which the outputs have read the ring
    /// (see `logger::printer`); every record marked for them before it was
    /// handed to them.
    pub printed: AtomicU64,
    pub marked_end: AtomicU64,
}

impl Header {
    /// The header of an empty ring with a data area of `data_size` bytes.
    pub fn fresh(data_size: usize) -> Header {
        Header {
            magic: magic(),
            version: LAYOUT_VERSION,
            header_space: HEADER_SPACE as u32,
            byte_order: BYTE_ORDER_MARK,
            record_header_len: super::record::HEADER_LEN as u32,
            data_size: data_size as u64,
            head: AtomicU64::new(0),
            tail: AtomicU64::new(0),
            next_seq: AtomicU64::new(0),
            lost: AtomicU64::new(0),
            dict_size: dict_size_for(data_size) as u64,
            dict_used: AtomicU64::new(0),
            printed: AtomicU64::new(0),
            marked_end: AtomicU64::new(0),
        }
    }
}

/// Byte offsets of the header fields, for readers of ring images.
pub mod offset {
    use super::*;

    #[allow(dead_code)] // read only by a const assert below (see lib.rs)
    pub const MAGIC: usize = offset_of!(Header, magic);
    pub const VERSION: usize = offset_of!(Header, version);
    pub const HEADER_SPACE: usize = offset_of!(Header, header_space);
    pub const BYTE_ORDER: usize = offset_of!(Header, byte_order);
    pub const RECORD_HEADER: usize = offset_of!(Header, record_header_len);
    pub const DATA_SIZE: usize = offset_of!(Header, data_size);
    pub const HEAD: usize = offset_of!(Header, head);
    pub const TAIL: usize = offset_of!(Header, tail);
    pub const NEXT_SEQ: usize = offset_of!(Header, next_seq);
    pub const LOST: usize = offset_of!(Header, lost);
    /// Where a version 1 header ends.
    pub const DICT_SIZE: usize = offset_of!(Header, dict_size);
    pub const DICT_USED: usize = offset_of!(Header, dict_used);
    /// Where a version 2 header ends.
    pub const PRINTED: usize = offset_of!(Header, printed);
    #[allow(dead_code)] // read only by a const assert below (see lib.rs)
    pub const MARKED_END: usize = offset_of!(Header, marked_end);
    pub const END: usize = std::mem::size_of::<Header>();

    // The table above is the format on disk: the struct may not move a
    // field without these failing to compile.
    const _: () = assert!(MAGIC == 0 && VERSION == 8 && HEADER_SPACE == 12);
    const _: () = assert!(BYTE_ORDER == 16 && RECORD_HEADER == 20 && DATA_SIZE == 24);
    const _: () = assert!(HEAD == 32 && TAIL == 40 && NEXT_SEQ == 48 && LOST == 56);
    const _: () = assert!(
        DICT_SIZE == 64 && DICT_USED == 72 && PRINTED == 80 && MARKED_END == 88 && END == 96
    );
}

/// Where a ring file keeps its process-shared lock, inside the header space:
/// every process that has the file mapped (a daemon and the children it
/// forks) appends under it.
pub const LOCK_OFFSET: usize = 128;

const _: () = assert!(std::mem::size_of::<Header>() <= LOCK_OFFSET);
const _: () = assert!(LOCK_OFFSET + std::mem::size_of::<libc::pthread_mutex_t>() <= HEADER_SPACE);

/// "VLOGRING", stored inverted so that a scan of a core file for the magic
/// finds rings, not this constant.
const MAGIC_INVERTED: [u8; 8] = [!b'V', !b'L', !b'O', !b'G', !b'R', !b'I', !b'N', !b'G'];

pub fn magic() -> [u8; 8] {
    // black_box keeps the compiler from folding the real magic into the code.
    std::hint::black_box(MAGIC_INVERTED).map(|b| !b)
}

/// True when `bytes` start with a ring's magic: the one test of "is this a
/// vlog ring" that every reader and the ring file's owner use.
pub fn starts_with_magic(bytes: &[u8]) -> bool {
    bytes.get(..8).is_some_and(|head| head == magic())
}

/// The dictionary size for a data area of `data_size` bytes: a quarter of it,
/// at least 16 KiB (about 120 call sites of typical length) and at most 1 MiB.
pub fn dict_size_for(data_size: usize) -> usize {
    align8((data_size / 4).clamp(16 * 1024, 1 << 20))
}

/// The whole region for a data area of `size` bytes: header, dictionary, data.
pub fn region_len(size: usize) -> usize {
    HEADER_SPACE + dict_size_for(size) + size
}

/// Checks a requested ring size: 0 (no ring) or MIN_SIZE..=MAX_SIZE, rounded
/// up to a multiple of 8.
pub fn check_size(size: usize) -> Result<usize, ConfigError> {
    match size {
        0 => Ok(0),
        n if n < MIN_SIZE => Err(ConfigError::new(format!(
            "buffer size {n} is below the minimum of {MIN_SIZE} bytes (16K); use 0 to disable the ring"
        ))),
        n if n > MAX_SIZE => Err(ConfigError::new(format!(
            "buffer size {n} is above the maximum of {MAX_SIZE} bytes (1G)"
        ))),
        n => Ok(align8(n)),
    }
}

/// Counters a caller can show.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub size: u64,
    /// Records ever appended (the next sequence number).
    pub recorded: u64,
    pub lost: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(check_size(0), Ok(0));
        assert_eq!(check_size(MIN_SIZE + 1), Ok(MIN_SIZE + 8));
        assert!(check_size(100).unwrap_err().message.contains("minimum"));
        assert!(check_size(MAX_SIZE + 1).is_err());
        assert_eq!(dict_size_for(64 * 1024), 16 * 1024);
        assert_eq!(dict_size_for(1 << 30), 1 << 20);
    }

    #[test]
    fn magic_is_found_only_where_it_is() {
        assert!(starts_with_magic(b"VLOGRING and more"));
        assert!(!starts_with_magic(b"VLOGRIN"));
        assert!(!starts_with_magic(b"vlogring"));
    }
}
