//! The argument kinds of the formats whose kind-4 records a reader renders,
//! kept across records and walks. A kind-4 record holds its arguments as
//! the macro captured them, one word each, and only its call site's format
//! says what each word is: without this, every record read parsed its
//! format twice, once for the kinds and once to print (for the benchmarks'
//! longest format, a line in all threads went from 4,789 instructions to
//! 4,156 once its kinds were kept: callgrind, `bench-c/written.sh`).
//!
//! Keyed by the format's bytes, compared whole: a hit is right whatever
//! ring, mapping or process the format came from, and a ring file's
//! dictionary is data, never trusted to name a format it does not hold.

use crate::deferred::{self, MAX_ARGS};
use crate::text::printf::Unsupported;
use crate::text::Sink;

/// How many formats are kept, and the longest kept (a longer one is parsed
/// each time). Small: every reader that keeps buffers keeps one.
const SLOTS: usize = 4;
const FORMAT_MAX: usize = 128;

/// One format and its kinds. All zero (as `Buffers::on_heap` makes it) is
/// the empty format, which has no arguments: a valid entry (the cache's
/// tests check that it renders as the empty format).
#[derive(Clone, Copy)]
struct Slot {
    len: u8,
    n: u8,
    /// Whether the format has a `%`: without one (most debug messages'
    /// case) it prints as it is, and the record has no arguments.
    percent: bool,
    format: [u8; FORMAT_MAX],
    kinds: [u8; MAX_ARGS],
}

/// The kept formats (see the module's overview).
pub struct Signatures {
    slots: [Slot; SLOTS],
}

impl Signatures {
    pub const fn new() -> Signatures {
        Signatures {
            slots: [Slot {
                len: 0,
                n: 0,
                percent: false,
                format: [0; FORMAT_MAX],
                kinds: [0; MAX_ARGS],
            }; SLOTS],
        }
    }

    /// [`deferred::render_words`], the kinds of `fmt` taken from the cache
    /// when it holds them (and put there when it does not).
    pub fn render_words(
        &mut self,
        fmt: &[u8],
        payload: &[u8],
        out: &mut impl Sink,
    ) -> Result<(), Unsupported> {
        if fmt.len() > FORMAT_MAX {
            return deferred::render_words(fmt, payload, out);
        }
        let slot = &mut self.slots[(fmt.len() + fmt.last().map_or(0, |&b| b as usize)) % SLOTS];
        if usize::from(slot.len) != fmt.len() || slot.format[..fmt.len()] != *fmt {
            let mut kinds = [0u8; MAX_ARGS];
            let n = deferred::words_signature(fmt, &mut kinds)?;
            *slot = Slot {
                len: fmt.len() as u8,
                n: n as u8,
                percent: fmt.contains(&b'%'),
                format: [0; FORMAT_MAX],
                kinds,
            };
            slot.format[..fmt.len()].copy_from_slice(fmt);
        }
        // What printf makes of a format with no `%` and nothing after it:
        // the format (rendering it would look for a `%` all the same).
        if !slot.percent && payload.is_empty() {
            out.put(fmt);
            return Ok(());
        }
        deferred::render_words_as(fmt, &slot.kinds[..usize::from(slot.n)], payload, out)
    }
}

impl Default for Signatures {
    fn default() -> Signatures {
        Signatures::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::Bounded;

    fn words(ws: &[u64], strings: &[u8]) -> Vec<u8> {
        let mut v: Vec<u8> = ws.iter().flat_map(|w| w.to_ne_bytes()).collect();
        v.extend_from_slice(strings);
        v
    }

    fn render(sigs: &mut Signatures, fmt: &[u8], payload: &[u8]) -> Option<String> {
        let mut buf = [0u8; 256];
        let mut out = Bounded::new(&mut buf);
        sigs.render_words(fmt, payload, &mut out).ok()?;
        Some(String::from_utf8_lossy(out.finish()).into_owned())
    }

    #[test]
    fn a_kept_format_renders_as_a_parsed_one_and_formats_of_one_slot_replace_each_other() {
        let mut sigs = Signatures::new();
        let ints = words(&[7, (-2i64) as u64], b"");
        // "%d %d" and "%s %d" have the same length and last byte: one slot.
        for _ in 0..3 {
            assert_eq!(render(&mut sigs, b"%d %d", &ints).as_deref(), Some("7 -2"));
            let s = words(&[3, 5], b"abc");
            assert_eq!(render(&mut sigs, b"%s %d", &s).as_deref(), Some("abc 5"));
        }
        // The empty slot (all zero) is the empty format's: right for it.
        let mut fresh = Signatures::new();
        assert_eq!(render(&mut fresh, b"", b"").as_deref(), Some(""));
        assert_eq!(render(&mut fresh, b"", &ints), None, "words left over");
        // A format the record's words do not fit is refused every time,
        // kept or not.
        assert_eq!(render(&mut sigs, b"%d %d", b"short"), None);
        // One a kind-4 record cannot hold is never kept.
        assert_eq!(render(&mut sigs, b"%m", b""), None);
        assert_eq!(render(&mut sigs, b"%m", b""), None);
        // Longer than a slot holds: parsed each time, the same text.
        let long = format!("{}%d", "x".repeat(FORMAT_MAX));
        let one = words(&[9], b"");
        let want = format!("{}9", "x".repeat(FORMAT_MAX));
        assert_eq!(render(&mut sigs, long.as_bytes(), &one), Some(want));
    }

    #[test]
    fn a_format_with_no_percent_prints_as_printf_prints_it() {
        let mut sigs = Signatures::new();
        // Twice: parsed, then kept; then a format with `%%` of the same
        // slot, which is not printed as it is.
        for _ in 0..2 {
            assert_eq!(
                render(&mut sigs, b"no conversions", b"").as_deref(),
                Some("no conversions")
            );
            // Words after it are a record's damage, kept or not.
            assert_eq!(
                render(&mut sigs, b"no conversions", &words(&[1], b"")),
                None
            );
        }
        let same_slot = b"100%% done   s";
        assert_eq!(same_slot.len(), b"no conversions".len());
        assert_eq!(
            render(&mut sigs, same_slot, b"").as_deref(),
            Some("100% done   s")
        );
        // Kept, and longer than the message buffer: cut as any message is.
        let mut buf = [0u8; 64];
        let mut out = Bounded::new(&mut buf);
        let long = "y".repeat(100);
        sigs.render_words(long.as_bytes(), b"", &mut out).unwrap();
        let cut = String::from_utf8_lossy(out.finish()).into_owned();
        assert!(cut.ends_with(" [truncated: 100 bytes]"), "{cut}");
    }

    #[test]
    fn the_same_bytes_at_another_address_hit_and_other_bytes_miss() {
        let mut sigs = Signatures::new();
        let a = b"%lu B".to_vec();
        let b = b"%lu B".to_vec();
        let d = words(&[1], b"");
        assert_eq!(render(&mut sigs, &a, &d).as_deref(), Some("1 B"));
        assert_eq!(render(&mut sigs, &b, &d).as_deref(), Some("1 B"));
        // Same length and last byte, other kinds: parsed again.
        let f = words(&[1.5f64.to_bits()], b"");
        assert_eq!(render(&mut sigs, b"%.1fB", &f).as_deref(), Some("1.5B"));
        assert_eq!(render(&mut sigs, &a, &d).as_deref(), Some("1 B"));
    }
}
