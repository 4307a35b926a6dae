//! The call-site dictionary: an append-only area of the ring region that holds,
//! once per call site, what every record of that site would otherwise repeat
//! (source, file, function, line, format). Records of a deferred call site then
//! carry only the entry's offset and the raw arguments, and a ring file or core
//! file still renders without the program that wrote it.
//!
//! ```text
//! offset  size  field
//!      0     4  len        whole entry in bytes, a multiple of 8
//!      4     4  checksum   over bytes 8..len and len
//!      8     4  line
//!     12     2  source length
//!     14     2  file length
//!     16     2  function length
//!     18     2  format length
//!     20     4  message id (`site::message_id`; 0 in entries of older
//!               versions, whose readers compute it)
//!     24        source, file, function, format, zero padding to 8
//! ```
//! Entries are written beyond the published end (`dict_used` in the ring
//! header) and published by moving that end, so a reader never sees one half
//! written, and a published entry never changes.

use super::checksum::checksum_words;
use super::record::{align8, u32_at};
use super::region::Region;
use crate::record::NAME_MAX;

pub const ENTRY_HEADER_LEN: usize = 24;
/// Formats longer than this are not put in the dictionary (their records carry
/// the format themselves).
pub const FORMAT_MAX: usize = 4096;
pub const ENTRY_MAX: usize = align8(ENTRY_HEADER_LEN + 3 * NAME_MAX + FORMAT_MAX);

/// One call site as the dictionary holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Site<'a> {
    pub source: &'a [u8],
    pub file: &'a [u8],
    pub func: &'a [u8],
    pub line: u32,
    pub format: &'a [u8],
    /// The site's message id, 0 for none stored.
    pub id: u32,
}

impl<'a> Site<'a> {
    /// The encoded size, or None when the site is not kept in a dictionary
    /// (a name or the format too long).
    pub fn encoded_len(&self) -> Option<usize> {
        let names = [self.source, self.file, self.func];
        if names.iter().any(|n| n.len() > NAME_MAX) || self.format.len() > FORMAT_MAX {
            return None;
        }
        Some(align8(
            ENTRY_HEADER_LEN
                + self.source.len()
                + self.file.len()
                + self.func.len()
                + self.format.len(),
        ))
    }

    /// Writes the entry into `buf`, exactly `encoded_len()` bytes.
    pub fn encode(&self, buf: &mut [u8]) {
        let len = buf.len();
        buf[0..4].copy_from_slice(&(len as u32).to_ne_bytes());
        buf[8..12].copy_from_slice(&self.line.to_ne_bytes());
        let parts = [self.source, self.file, self.func, self.format];
        for (i, part) in parts.iter().enumerate() {
            let at = 12 + 2 * i;
            buf[at..at + 2].copy_from_slice(&(part.len() as u16).to_ne_bytes());
        }
        buf[20..24].copy_from_slice(&self.id.to_ne_bytes());
        let mut at = ENTRY_HEADER_LEN;
        for part in parts {
            buf[at..at + part.len()].copy_from_slice(part);
            at += part.len();
        }
        buf[at..].fill(0);
        let sum = checksum_words(len as u64, &buf[8..]);
        buf[4..8].copy_from_slice(&sum.to_ne_bytes());
    }

    /// The entry at `off` of the published dictionary `dict`, validated: any
    /// offset, length or checksum that does not hold gives None.
    pub fn decode(dict: &'a [u8], off: usize) -> Option<Site<'a>> {
        Site::decode_checking(dict, off, true)
    }

    /// [`Site::decode`], with the checksum computed again only when
    /// `checksum` (see `Region::whole`: an entry this process published in
    /// its own memory, which is never written again, is the one it wrote).
    pub fn decode_checking(dict: &'a [u8], off: usize, checksum: bool) -> Option<Site<'a>> {
        if off % 8 != 0 || off.checked_add(ENTRY_HEADER_LEN)? > dict.len() {
            return None;
        }
        let len = u32_at(dict, off) as usize;
        if !(ENTRY_HEADER_LEN..=ENTRY_MAX).contains(&len) || len % 8 != 0 || off + len > dict.len()
        {
            return None;
        }
        let buf = &dict[off..off + len];
        if checksum && u32_at(buf, 4) != checksum_words(len as u64, &buf[8..]) {
            return None;
        }
        let lens = [12, 14, 16, 18].map(|at| u16::from_ne_bytes([buf[at], buf[at + 1]]) as usize);
        if align8(ENTRY_HEADER_LEN + lens.iter().sum::<usize>()) != len {
            return None;
        }
        let mut parts = [&buf[..0]; 4];
        let mut at = ENTRY_HEADER_LEN;
        for (part, n) in parts.iter_mut().zip(lens) {
            *part = &buf[at..at + n];
            at += n;
        }
        Some(Site {
            source: parts[0],
            file: parts[1],
            func: parts[2],
            line: u32_at(buf, 8),
            format: parts[3],
            id: u32_at(buf, 20),
        })
    }
}

/// The dictionary entry at `entry`: the last one decoded again, or decoded
/// from `dict`, read again from `region` when the entry was published after
/// it was read.
pub fn entry_of<'r>(
    region: &'r (impl Region + ?Sized),
    dict: &mut &'r [u8],
    last: &mut Option<(u32, Site<'r>)>,
    entry: u32,
) -> Option<Site<'r>> {
    if let Some((at, site)) = *last {
        if at == entry {
            return Some(site);
        }
    }
    let checksum = !region.whole();
    let site = Site::decode_checking(dict, entry as usize, checksum).or_else(|| {
        *dict = region.dict();
        Site::decode_checking(dict, entry as usize, checksum)
    })?;
    *last = Some((entry, site));
    Some(site)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Site<'static> {
        Site {
            source: b"qemu.monitor",
            file: b"monitor.c",
            func: b"qemuMonitorSend",
            line: 77,
            format: b"sent %zu bytes to fd %d",
            id: 0x1234_5678,
        }
    }

    #[test]
    fn round_trip_at_an_offset() {
        let site = sample();
        let len = site.encoded_len().unwrap();
        let mut dict = vec![0xAA; 16 + len];
        site.encode(&mut dict[16..16 + len]);
        assert_eq!(Site::decode(&dict, 16), Some(site));
        assert_eq!(Site::decode(&dict, 8), None);
        assert_eq!(Site::decode(&dict, 17), None);
        assert_eq!(Site::decode(&dict[..16 + len - 8], 16), None);
    }

    #[test]
    fn every_single_bit_flip_is_caught() {
        let site = sample();
        let mut buf = vec![0; site.encoded_len().unwrap()];
        site.encode(&mut buf);
        for bit in 0..buf.len() * 8 {
            let mut bad = buf.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert_eq!(Site::decode(&bad, 0), None, "flip of bit {bit} accepted");
        }
    }

    #[test]
    fn long_names_and_formats_stay_out() {
        let long = vec![b'x'; FORMAT_MAX + 1];
        assert_eq!(
            Site {
                format: &long,
                ..sample()
            }
            .encoded_len(),
            None
        );
        assert_eq!(
            Site {
                file: &long[..NAME_MAX + 1],
                ..sample()
            }
            .encoded_len(),
            None
        );
    }
}
