//! The header-only walk: which records are where, and whose, without
//! reading them (an error's context chooses the records it reads).

use std::sync::atomic::{fence, Ordering};

use super::reader::Region;
use super::record::{self, Head, HEADER_LEN};
use crate::record::NAME_MAX;

/// Visits the headers of the records from position `from` (a record
/// boundary; the oldest record held, when `from` was overwritten or is not
/// in this ring) up to position `until`, each with its position and, for a
/// record with no file ([`Head::no_file`]), its source name: without
/// copying the rest of a record, validating it or rendering it, to choose
/// which records to read (with `reader::read_marked`, which validates them).
/// Lock-free and bounded as `reader::read_marked` is; ends at the first
/// damage.
pub fn scan(
    region: &(impl Region + ?Sized),
    from: u64,
    until: u64,
    mut visit: impl FnMut(u64, &Head, &[u8]),
) {
    let size = region.data_size();
    let head = region.head();
    let end = region.tail().min(until);
    if size < 8 || end < head {
        return;
    }
    let mut pos = if (head..end).contains(&from) {
        from
    } else {
        head
    };
    let mut buf = [0u8; record::align8(HEADER_LEN + NAME_MAX)];
    let mut steps_left = 4 * (size / 8) + 64;
    while pos < end && steps_left > 0 {
        steps_left -= 1;
        let off = (pos % size) as usize;
        region.copy(off, &mut buf[..8]);
        let len = match record::pad_len(&buf[..8]) {
            Some(pad) => Some(pad).filter(|&pad| pad == size as usize - off),
            None => record::peek_len(&buf[..8]).filter(|&n| off + n <= size as usize),
        };
        let mut peeked = None;
        if let Some(len) = len.filter(|_| record::pad_len(&buf[..8]).is_none()) {
            region.copy(off, &mut buf[..HEADER_LEN]);
            peeked = record::peek_head(&buf[..HEADER_LEN]);
            if let Some(h) = peeked.filter(|h| h.no_file && h.len == len) {
                let named = record::align8(HEADER_LEN + h.source_len.min(NAME_MAX)).min(len);
                region.copy(off, &mut buf[..named]);
            }
        }
        // [R2] as in `reader::read_with`: a header copied from a newer
        // lap is discarded.
        fence(Ordering::Acquire);
        let held = region.head();
        if held > pos {
            pos = held;
            continue;
        }
        let Some(len) = len else {
            return;
        };
        if let Some(h) = peeked.filter(|h| h.len == len) {
            let source = if h.no_file {
                &buf[HEADER_LEN..(HEADER_LEN + h.source_len).min(buf.len()).min(len)]
            } else {
                &buf[..0]
            };
            visit(pos, &h, source);
        }
        let Some(next) = pos.checked_add(len as u64) else {
            return;
        };
        pos = next;
    }
}
