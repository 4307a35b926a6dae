//! The word-at-a-time test both escapers start with: most names and
//! messages need no escape at all, and are then written in one piece.

/// Whether no byte of `bytes` needs an escape, by `flagged`, a test of eight
/// bytes at once that is true when any of them needs one (and false for
/// eight spaces). The last, partial word is tested as the string's last
/// eight bytes, or padded with spaces when it is shorter than a word.
#[inline(always)]
pub fn all_plain(bytes: &[u8], flagged: impl Fn(u64) -> bool) -> bool {
    let word = |w: &[u8]| u64::from_le_bytes(w.try_into().unwrap());
    let mut words = bytes.chunks_exact(8);
    if words.any(|w| flagged(word(w))) {
        return false;
    }
    let tail = words.remainder();
    if tail.is_empty() {
        return true;
    }
    if bytes.len() >= 8 {
        return !flagged(word(&bytes[bytes.len() - 8..]));
    }
    let mut padded = [b' '; 8];
    padded[..tail.len()].copy_from_slice(tail);
    !flagged(u64::from_le_bytes(padded))
}

// The terms the word tests are made of. Each sets bit 7 of every byte of a
// word that has the property; a borrow or carry can also set it in a byte
// above one that has it, never in a word where no byte has it, so a test
// built from them flags exactly the words with such a byte.
const ONES: u64 = 0x0101_0101_0101_0101;
/// Bit 7 of every byte: what the terms are masked with.
pub const HIGH: u64 = 0x8080_8080_8080_8080;

/// Bytes below 0x20.
#[inline(always)]
pub fn controls(w: u64) -> u64 {
    w.wrapping_sub(ONES * 0x20) & !w
}

/// Bytes equal to `b`.
#[inline(always)]
pub fn equal_to(w: u64, b: u8) -> u64 {
    let x = w ^ (ONES * b as u64);
    x.wrapping_sub(ONES) & !x
}

/// DEL (0x7f + 1 sets bit 7) and bytes from 0x80 up.
#[inline(always)]
pub fn del_or_high(w: u64) -> u64 {
    w.wrapping_add(ONES) | w
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test that flags one byte value: every length and position finds it.
    #[test]
    fn finds_the_flagged_byte_anywhere() {
        let flagged = |w: u64| w.to_le_bytes().contains(&b'!');
        for len in 0..40 {
            let mut bytes = vec![b'a'; len];
            assert!(all_plain(&bytes, flagged), "{len}");
            for at in 0..len {
                bytes[at] = b'!';
                assert!(!all_plain(&bytes, flagged), "{len} {at}");
                bytes[at] = b'a';
            }
        }
    }
}
