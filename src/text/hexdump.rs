//! Bytes as `hexdump -C` shows them (a record's dump, `fields::bytes`),
//! and as a plain hex string. Made without allocation, for the crash
//! handler too.
//!
//! `hexdump -C`'s form, which people read and tools expect: per 16 bytes
//! the offset (eight hex digits), the bytes in two groups of eight, and
//! the printable ASCII between bars (`.` for any other byte); a line equal
//! to the one before it becomes `*` (once, however many follow); after
//! the last line, the length as an offset. No bytes, no lines.

use super::sink::Sink;

const HEX: &[u8; 16] = b"0123456789abcdef";
/// One line: offset, two spaces, 16 bytes of three, a space, two spaces and
/// the bars, the 16 characters and the newline.
const LINE: usize = 8 + 2 + 16 * 3 + 1 + 2 + 16 + 1 + 1;

/// The most text [`put_hexdump`] makes of `n` bytes: a line per 16 (no
/// `*`), and the closing offset.
pub const fn text_max(n: usize) -> usize {
    n.div_ceil(16) * LINE + 17
}

/// Writes `bytes` as `hexdump -C` does, byte for byte.
pub fn put_hexdump(bytes: &[u8], out: &mut impl Sink) {
    if bytes.is_empty() {
        return;
    }
    let mut previous: Option<&[u8]> = None;
    let mut squeezed = false;
    for (i, chunk) in bytes.chunks(16).enumerate() {
        // Only a whole line repeats: the last may be shorter.
        if chunk.len() == 16 && previous == Some(chunk) {
            if !squeezed {
                out.put(b"*\n");
                squeezed = true;
            }
            continue;
        }
        squeezed = false;
        previous = Some(chunk);
        let mut line = [b' '; LINE];
        put_offset(i * 16, &mut line[..8]);
        for (j, &b) in chunk.iter().enumerate() {
            let at = 10 + 3 * j + usize::from(j >= 8);
            line[at] = HEX[usize::from(b >> 4)];
            line[at + 1] = HEX[usize::from(b & 15)];
        }
        let bar = 10 + 16 * 3 + 1 + 1;
        line[bar] = b'|';
        for (j, &b) in chunk.iter().enumerate() {
            line[bar + 1 + j] = if (0x20..0x7f).contains(&b) { b } else { b'.' };
        }
        let end = bar + 1 + chunk.len();
        line[end] = b'|';
        line[end + 1] = b'\n';
        out.put(&line[..end + 2]);
    }
    let mut end = [b'\n'; 17];
    let digits = offset_digits(bytes.len());
    put_offset(bytes.len(), &mut end[..digits]);
    out.put(&end[..digits + 1]);
}

/// How many hex digits `hexdump` gives an offset: eight, more when needed.
fn offset_digits(n: usize) -> usize {
    let bits = usize::BITS - n.leading_zeros();
    (bits.div_ceil(4) as usize).max(8)
}

/// `n` in hex, right-aligned with zeros, filling `out`.
fn put_offset(mut n: usize, out: &mut [u8]) {
    for digit in out.iter_mut().rev() {
        *digit = HEX[n & 15];
        n >>= 4;
    }
}

/// Writes `bytes` as lowercase hex, two digits each. (A small buffer: this
/// runs on a caller's stack, under an output's write, where a call has 8
/// KiB in all.)
pub fn put_hex(bytes: &[u8], out: &mut impl Sink) {
    let mut buf = [0u8; 16];
    for chunk in bytes.chunks(buf.len() / 2) {
        for (pair, &b) in buf.chunks_exact_mut(2).zip(chunk) {
            pair[0] = HEX[usize::from(b >> 4)];
            pair[1] = HEX[usize::from(b & 15)];
        }
        out.put(&buf[..2 * chunk.len()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dump(bytes: &[u8]) -> String {
        let mut out = Vec::new();
        put_hexdump(bytes, &mut out);
        assert!(out.len() <= text_max(bytes.len()));
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn lines_are_hexdump_c_lines() {
        assert_eq!(dump(b""), "");
        assert_eq!(
            dump(b"A"),
            "00000000  41                                                |A|\n00000001\n"
        );
        let bytes: Vec<u8> = (0x1a..0x2b).collect();
        assert_eq!(
            dump(&bytes),
            "00000000  1a 1b 1c 1d 1e 1f 20 21  22 23 24 25 26 27 28 29  |...... !\"#$%&'()|\n\
             00000010  2a                                                |*|\n\
             00000011\n"
        );
    }

    #[test]
    fn repeated_lines_are_one_star() {
        assert_eq!(
            dump(&[0; 40]),
            "00000000  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|\n\
             *\n\
             00000020  00 00 00 00 00 00 00 00                           |........|\n\
             00000028\n"
        );
        // The last line, whole and the same, is a star too.
        assert_eq!(
            dump(&[0xff; 32]),
            "00000000  ff ff ff ff ff ff ff ff  ff ff ff ff ff ff ff ff  |................|\n\
             *\n\
             00000020\n"
        );
    }

    #[test]
    fn hex_is_two_lowercase_digits_a_byte() {
        let bytes: Vec<u8> = (0..=255).collect();
        let mut out = Vec::new();
        put_hex(&bytes, &mut out);
        let want: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(String::from_utf8(out).unwrap(), want);
    }
}
