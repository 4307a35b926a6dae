//! MessagePack, written straight into a sink without allocating: what the
//! Fluent forward output encodes a record with. Only the kinds a record
//! needs: integers in their shortest form, strings (always valid UTF-8: a
//! byte sequence that is not becomes U+FFFD, as in the JSON output), binary
//! headers, array and map headers, and Fluent's EventTime (extension type 0:
//! seconds and nanoseconds, big-endian).

use super::sink::Sink;

pub fn put_uint(n: u64, out: &mut impl Sink) {
    match n {
        0..=0x7f => out.put(&[n as u8]),
        0x80..=0xff => out.put(&[0xcc, n as u8]),
        0x100..=0xffff => {
            out.put(&[0xcd]);
            out.put(&(n as u16).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.put(&[0xce]);
            out.put(&(n as u32).to_be_bytes());
        }
        _ => {
            out.put(&[0xcf]);
            out.put(&n.to_be_bytes());
        }
    }
}

pub fn put_int(n: i64, out: &mut impl Sink) {
    if n >= 0 {
        return put_uint(n as u64, out);
    }
    match n {
        -32..=-1 => out.put(&[n as u8]),
        -128..=-33 => out.put(&[0xd0, n as u8]),
        -32768..=-129 => {
            out.put(&[0xd1]);
            out.put(&(n as i16).to_be_bytes());
        }
        -2_147_483_648..=-32769 => {
            out.put(&[0xd2]);
            out.put(&(n as i32).to_be_bytes());
        }
        _ => {
            out.put(&[0xd3]);
            out.put(&n.to_be_bytes());
        }
    }
}

/// The header of a string of `len` bytes.
pub fn put_str_header(len: usize, out: &mut impl Sink) {
    match len {
        0..=31 => out.put(&[0xa0 | len as u8]),
        32..=0xff => out.put(&[0xd9, len as u8]),
        0x100..=0xffff => {
            out.put(&[0xda]);
            out.put(&(len as u16).to_be_bytes());
        }
        _ => {
            out.put(&[0xdb]);
            out.put(&(len as u32).to_be_bytes());
        }
    }
}

const REPLACEMENT: &str = "\u{FFFD}";

/// `bytes` as a string: valid UTF-8 as it is, anything else with each
/// invalid sequence replaced by U+FFFD (a receiver may reject a string
/// that is not UTF-8).
pub fn put_str(bytes: &[u8], out: &mut impl Sink) {
    // The usual string is ASCII, or valid UTF-8: one header, one copy.
    if bytes.is_ascii() || std::str::from_utf8(bytes).is_ok() {
        put_str_header(bytes.len(), out);
        out.put(bytes);
        return;
    }
    let len: usize = bytes
        .utf8_chunks()
        .map(|c| c.valid().len() + if c.invalid().is_empty() { 0 } else { 3 })
        .sum();
    put_str_header(len, out);
    for chunk in bytes.utf8_chunks() {
        out.put(chunk.valid().as_bytes());
        if !chunk.invalid().is_empty() {
            out.put(REPLACEMENT.as_bytes());
        }
    }
}

/// `bytes` as a string of lowercase hex, two digits a byte.
pub fn put_hex_str(bytes: &[u8], out: &mut impl Sink) {
    put_str_header(2 * bytes.len(), out);
    super::hexdump::put_hex(bytes, out);
}

/// The header of `len` bytes of binary data (always bin 32, so that it can
/// be written before the data's length is known and filled in after: see
/// [`bin32_header`]).
pub const BIN32_HEADER: usize = 5;

pub fn bin32_header(len: u32) -> [u8; BIN32_HEADER] {
    let n = len.to_be_bytes();
    [0xc6, n[0], n[1], n[2], n[3]]
}

pub fn put_array_header(n: usize, out: &mut impl Sink) {
    match n {
        0..=15 => out.put(&[0x90 | n as u8]),
        16..=0xffff => {
            out.put(&[0xdc]);
            out.put(&(n as u16).to_be_bytes());
        }
        _ => {
            out.put(&[0xdd]);
            out.put(&(n as u32).to_be_bytes());
        }
    }
}

pub fn put_map_header(n: usize, out: &mut impl Sink) {
    match n {
        0..=15 => out.put(&[0x80 | n as u8]),
        16..=0xffff => {
            out.put(&[0xde]);
            out.put(&(n as u16).to_be_bytes());
        }
        _ => {
            out.put(&[0xdf]);
            out.put(&(n as u32).to_be_bytes());
        }
    }
}

/// Fluent's EventTime for `ns` nanoseconds since the epoch: fixext 8 of
/// type 0, seconds then nanoseconds, each a big-endian 32-bit integer.
pub fn put_event_time(ns: u64, out: &mut impl Sink) {
    let seconds = (ns / 1_000_000_000) as u32;
    let nanos = (ns % 1_000_000_000) as u32;
    out.put(&[0xd7, 0x00]);
    out.put(&seconds.to_be_bytes());
    out.put(&nanos.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let mut v = Vec::new();
        f(&mut v);
        v
    }

    #[test]
    fn integers_take_their_shortest_form() {
        let u = |n| enc(|v| put_uint(n, v));
        assert_eq!(u(0), [0x00]);
        assert_eq!(u(127), [0x7f]);
        assert_eq!(u(128), [0xcc, 0x80]);
        assert_eq!(u(255), [0xcc, 0xff]);
        assert_eq!(u(256), [0xcd, 0x01, 0x00]);
        assert_eq!(u(65536), [0xce, 0, 1, 0, 0]);
        assert_eq!(u(1 << 32), [0xcf, 0, 0, 0, 1, 0, 0, 0, 0]);
        let i = |n| enc(|v| put_int(n, v));
        assert_eq!(i(5), [0x05]);
        assert_eq!(i(-1), [0xff]);
        assert_eq!(i(-32), [0xe0]);
        assert_eq!(i(-33), [0xd0, 0xdf]);
        assert_eq!(i(-128), [0xd0, 0x80]);
        assert_eq!(i(-129), [0xd1, 0xff, 0x7f]);
        assert_eq!(i(-32769), [0xd2, 0xff, 0xff, 0x7f, 0xff]);
        assert_eq!(i(i64::MIN)[0], 0xd3);
        assert_eq!(i(i64::MIN).len(), 9);
    }

    #[test]
    fn strings_are_utf8_with_their_length() {
        assert_eq!(enc(|v| put_str(b"", v)), [0xa0]);
        assert_eq!(enc(|v| put_str(b"abc", v)), [0xa3, b'a', b'b', b'c']);
        let s32 = [b'x'; 32];
        assert_eq!(enc(|v| put_str(&s32, v))[..2], [0xd9, 32]);
        let s256 = [b'x'; 256];
        assert_eq!(enc(|v| put_str(&s256, v))[..3], [0xda, 1, 0]);
        let s64k = vec![b'x'; 65536];
        assert_eq!(enc(|v| put_str(&s64k, v))[..5], [0xdb, 0, 1, 0, 0]);
        assert_eq!(enc(|v| put_str("é".as_bytes(), v)), [0xa2, 0xc3, 0xa9]);
        // Invalid sequences become U+FFFD, and the length counts it.
        let bad = enc(|v| put_str(b"a\xffb\xc3", v));
        assert_eq!(bad[0], 0xa0 | 8);
        assert_eq!(&bad[1..], "a\u{FFFD}b\u{FFFD}".as_bytes());
    }

    #[test]
    fn headers_and_event_time() {
        assert_eq!(enc(|v| put_array_header(2, v)), [0x92]);
        assert_eq!(enc(|v| put_array_header(16, v)), [0xdc, 0, 16]);
        assert_eq!(
            enc(|v| put_array_header(70000, v)),
            [0xdd, 0, 1, 0x11, 0x70]
        );
        assert_eq!(enc(|v| put_map_header(15, v)), [0x8f]);
        assert_eq!(enc(|v| put_map_header(16, v)), [0xde, 0, 16]);
        assert_eq!(bin32_header(258), [0xc6, 0, 0, 1, 2]);
        let t = enc(|v| put_event_time(1_700_000_000_123_456_789, v));
        assert_eq!(t[..2], [0xd7, 0x00]);
        assert_eq!(
            u32::from_be_bytes(t[2..6].try_into().unwrap()),
            1_700_000_000
        );
        assert_eq!(
            u32::from_be_bytes(t[6..10].try_into().unwrap()),
            123_456_789
        );
    }
}
