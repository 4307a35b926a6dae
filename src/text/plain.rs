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
