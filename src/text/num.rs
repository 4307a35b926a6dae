//! Numbers as text: the one decimal writer (and its hexadecimal sibling)
//! that every line, entry and dump uses, and the one reader of sizes
//! (`16K`, `4M`) that the configuration uses.

use super::sink::Sink;

/// "00" to "99": two digits per division.
const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// `n` in decimal, at the end of `buf`: the digits, for callers that need
/// them as a slice (a journald value, an SD-PARAM).
pub fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    while n >= 100 {
        let pair = (n % 100) as usize * 2;
        n /= 100;
        at -= 2;
        buf[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if n >= 10 {
        at -= 2;
        buf[at..at + 2].copy_from_slice(&PAIRS[n as usize * 2..n as usize * 2 + 2]);
    } else {
        at -= 1;
        buf[at] = b'0' + n as u8;
    }
    &buf[at..]
}

/// The last `out.len()` decimal digits of `n`, zero-padded, into `out`.
pub fn put_digits(mut n: u64, out: &mut [u8]) {
    for d in out.iter_mut().rev() {
        *d = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

/// `value` in decimal, zero-padded to at least `width` digits (at most 20).
pub fn put_decimal(value: u64, width: usize, out: &mut impl Sink) {
    let mut buf = [b'0'; 20];
    let len = decimal(value, &mut buf).len().max(width.min(20));
    out.put(&buf[20 - len..]);
}

/// A signed `value` in decimal.
pub fn put_signed(value: i64, out: &mut impl Sink) {
    if value < 0 {
        out.put(b"-");
    }
    put_decimal(value.unsigned_abs(), 1, out);
}

/// A call site's message id as it is shown: eight lower-case hexadecimal
/// digits.
pub fn id_hex(id: u32) -> [u8; 8] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 8];
    for (i, digit) in out.iter_mut().enumerate() {
        *digit = HEX[(id >> (28 - 4 * i) & 15) as usize];
    }
    out
}

/// `0x` and `value` in lower-case hexadecimal.
pub fn put_hex(value: u64, out: &mut impl Sink) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut digits = [0u8; 16];
    let mut i = digits.len();
    let mut v = value;
    loop {
        i -= 1;
        digits[i] = HEX[(v & 15) as usize];
        v >>= 4;
        if v == 0 {
            break;
        }
    }
    out.put(b"0x");
    out.put(&digits[i..]);
}

/// A size as the configuration writes it: decimal bytes with an optional K,
/// M or G suffix (binary multiples, either case). None when it is not one,
/// or does not fit.
pub fn parse_size(s: &str) -> Option<usize> {
    let (digits, shift) = match s.as_bytes().last() {
        Some(b'k' | b'K') => (&s[..s.len() - 1], 10),
        Some(b'm' | b'M') => (&s[..s.len() - 1], 20),
        Some(b'g' | b'G') => (&s[..s.len() - 1], 30),
        _ => (s, 0),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<usize>().ok()?.checked_mul(1usize << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex() {
        let mut v = Vec::new();
        put_hex(0, &mut v);
        put_hex(0xdead_beef, &mut v);
        put_hex(u64::MAX, &mut v);
        assert_eq!(v, b"0x00xdeadbeef0xffffffffffffffff");
    }

    #[test]
    fn decimal_widths() {
        let mut v = Vec::new();
        put_decimal(0, 1, &mut v);
        put_decimal(7, 3, &mut v);
        put_decimal(1234, 2, &mut v);
        put_decimal(u64::MAX, 1, &mut v);
        put_signed(-42, &mut v);
        put_signed(i64::MIN, &mut v);
        assert_eq!(v, b"0007123418446744073709551615-42-9223372036854775808");
    }
}
