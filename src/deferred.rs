//! Deferred formatting: a record keeps the format and the raw arguments, and
//! the text is made only when someone reads the record.
//!
//! A call site's format is analysed once ([`signature`]) into the C types its
//! arguments have; each call then copies the arguments ([`encode`]), strings by
//! value. The payload of a deferred record:
//!
//! ```text
//! u16 format length, format bytes, u8 argument count, then per argument
//! a tag byte and 8 bytes (integers, doubles, pointers) or, for a string,
//! a u32 length and the bytes (tag STR_NULL and nothing else for NULL)
//! ```
//! so a ring file or a core file renders without the program that wrote it.

use crate::record::MESSAGE_MAX;
use crate::text::printf::{self, Arg, Kind, Length, Parser, Piece, Unsupported};
use crate::text::{Bounded, Sink};

/// At most this many arguments are captured; a format with more is formatted
/// at the call.
pub const MAX_ARGS: usize = 32;

/// How the C side fetches and passes each argument (`vlog__site.kinds`).
pub mod kind {
    pub const INT: u8 = 1;
    pub const UINT: u8 = 2;
    pub const LONG: u8 = 3;
    pub const ULONG: u8 = 4;
    pub const DOUBLE: u8 = 5;
    pub const STRING: u8 = 6;
    pub const POINTER: u8 = 7;
    /// `%m`: nothing is fetched; the text of errno at the call is passed.
    pub const ERRNO: u8 = 8;
    /// An `int` that is a `*` width or precision: checked at the call, so
    /// that what is recorded is what every reader renders.
    pub const COUNT: u8 = 9;
}

/// How much of a string argument may be read (`vlog__site.precision`): a
/// literal precision (`%.4s`: at most 4 bytes), [`PRECISION_STAR`] (the
/// argument before it, a `*` precision), or [`PRECISION_NONE`] (up to its
/// NUL). glibc reads no further than the precision, so neither may vlog.
pub const PRECISION_NONE: u16 = u16::MAX;
pub const PRECISION_STAR: u16 = u16::MAX - 1;

/// Whether a `*` width or precision of `value` is one every reader renders
/// itself (see `printf::MAX_COUNT`); a call with one that is not is
/// formatted at the call instead.
#[inline(always)]
pub fn count_fits(value: i64) -> bool {
    value.unsigned_abs() <= printf::MAX_COUNT as u64
}

/// How many bytes of a string argument whose site says `precision` (not
/// [`PRECISION_NONE`]) may be read, given the argument before it (`star`,
/// the `*` precision's value when there is one): None for all of it, up to
/// its NUL.
#[inline(always)]
pub fn string_bound(precision: u16, star: Option<i64>) -> Option<usize> {
    match precision {
        PRECISION_NONE => None,
        // A negative precision is no precision.
        PRECISION_STAR => star.map_or(Some(0), |v| usize::try_from(v).ok()),
        n => Some(n as usize),
    }
}

const TAG_SIGNED: u8 = 1;
const TAG_UNSIGNED: u8 = 2;
const TAG_DOUBLE: u8 = 3;
const TAG_STR: u8 = 4;
const TAG_STR_NULL: u8 = 5;
const TAG_POINTER: u8 = 6;

/// The argument kinds of `fmt`, in order, and for each string argument how
/// much of it may be read (see [`PRECISION_NONE`]); or Unsupported when the
/// call must format the message itself.
pub fn signature(
    fmt: &[u8],
    kinds: &mut [u8; MAX_ARGS],
    precision: &mut [u16; MAX_ARGS],
) -> Result<usize, Unsupported> {
    let mut n = 0;
    let mut push = |k: u8, p: u16| -> Result<(), Unsupported> {
        *kinds.get_mut(n).ok_or(Unsupported)? = k;
        precision[n] = p;
        n += 1;
        Ok(())
    };
    for piece in Parser::new(fmt) {
        let Piece::Conv(spec) = piece? else { continue };
        for count in [spec.width, spec.precision] {
            if count == Some(printf::Count::Star) {
                push(kind::COUNT, PRECISION_NONE)?;
            }
        }
        let bound = match spec.precision {
            Some(printf::Count::Fixed(p)) => p as u16,
            Some(printf::Count::Star) => PRECISION_STAR,
            None => PRECISION_NONE,
        };
        let wide = !matches!(spec.length, Length::Int | Length::Char | Length::Short);
        let k = match (spec.kind().ok_or(Unsupported)?, spec.conv) {
            (_, b'm') => kind::ERRNO,
            (Kind::Signed, _) if wide => kind::LONG,
            (Kind::Signed, _) => kind::INT,
            (Kind::Unsigned, _) if wide => kind::ULONG,
            (Kind::Unsigned, _) => kind::UINT,
            (Kind::Double, _) => kind::DOUBLE,
            (Kind::Str, _) => kind::STRING,
            (Kind::Pointer, _) => kind::POINTER,
        };
        push(
            k,
            if k == kind::STRING {
                bound
            } else {
                PRECISION_NONE
            },
        )?;
    }
    // The format is stored with a u16 length.
    if fmt.len() > u16::MAX as usize {
        return Err(Unsupported);
    }
    Ok(n)
}

/// One captured argument: `bits` for numbers, `string` for strings (NULL
/// allowed) — the C side's `vlog_arg` after its kind is applied.
#[derive(Clone, Copy, Debug)]
pub enum Captured<'a> {
    Signed(i64),
    Unsigned(u64),
    Double(f64),
    Str(Option<&'a [u8]>),
    Pointer(u64),
}

/// The largest payload a deferred record holds (as much as a text message);
/// beyond it the message's text is made at the call and cut to fit.
pub const PAYLOAD_MAX: usize = MESSAGE_MAX;

/// Appends the payload for `fmt` and `args` to `out` (which has room reserved,
/// so nothing is allocated); false when it would pass PAYLOAD_MAX.
pub fn encode(fmt: &[u8], args: &[Captured], out: &mut Vec<u8>) -> bool {
    let Some(len) = args_len(args).and_then(|n| n.checked_add(2 + fmt.len())) else {
        return false;
    };
    if len > PAYLOAD_MAX {
        return false;
    }
    out.extend_from_slice(&(fmt.len() as u16).to_ne_bytes());
    out.extend_from_slice(fmt);
    let start = out.len();
    out.resize(start + len - 2 - fmt.len(), 0);
    write_args(args, &mut out[start..]);
    true
}

/// The size of the argument part of a payload (count, then each argument), or
/// None when it would pass PAYLOAD_MAX.
#[inline]
pub fn args_len(args: &[Captured]) -> Option<usize> {
    let mut size = ArgsLen::default();
    for arg in args {
        size.add(arg);
    }
    size.finish()
}

/// [`args_len`] added up one argument at a time, for a caller that captures
/// the arguments in a loop of its own (the C boundary), so they are walked
/// once to capture and measure them and once to write them.
#[derive(Default)]
pub struct ArgsLen(usize);

impl ArgsLen {
    #[inline(always)]
    pub fn add(&mut self, arg: &Captured) {
        self.0 = self.0.saturating_add(match arg {
            Captured::Str(None) => 1,
            Captured::Str(Some(s)) => 5 + s.len(),
            _ => 9,
        });
    }

    /// The size of the argument part, or None when it would pass
    /// PAYLOAD_MAX.
    #[inline(always)]
    pub fn finish(self) -> Option<usize> {
        let len = self.0.saturating_add(1);
        (len <= PAYLOAD_MAX).then_some(len)
    }
}

/// Writes the argument part of a payload into `out`, exactly
/// [`args_len`] bytes.
#[inline(always)]
pub fn write_args(args: &[Captured], out: &mut [u8]) {
    out[0] = args.len() as u8;
    let mut at = 1;
    for arg in args {
        let (tag, word) = match *arg {
            Captured::Signed(v) => (TAG_SIGNED, v as u64),
            Captured::Unsigned(v) => (TAG_UNSIGNED, v),
            Captured::Double(v) => (TAG_DOUBLE, v.to_bits()),
            Captured::Pointer(v) => (TAG_POINTER, v),
            Captured::Str(None) => {
                out[at] = TAG_STR_NULL;
                at += 1;
                continue;
            }
            Captured::Str(Some(s)) => {
                out[at] = TAG_STR;
                out[at + 1..at + 5].copy_from_slice(&(s.len() as u32).to_ne_bytes());
                out[at + 5..at + 5 + s.len()].copy_from_slice(s);
                at += 5 + s.len();
                continue;
            }
        };
        let slot: &mut [u8; 9] = (&mut out[at..at + 9]).try_into().unwrap();
        slot[0] = tag;
        slot[1..].copy_from_slice(&word.to_ne_bytes());
        at += 9;
    }
}

/// Renders a payload as the text glibc's printf would have made. Every length
/// is checked: a damaged payload is an error, never a wrong text.
pub fn render(payload: &[u8], out: &mut impl Sink) -> Result<(), Unsupported> {
    let fmt = format_of(payload).ok_or(Unsupported)?;
    render_args(fmt, &payload[2 + fmt.len()..], out)
}

/// A payload's format (None when its length does not hold).
pub fn format_of(payload: &[u8]) -> Option<&[u8]> {
    let fmt_len = payload.get(..2)?;
    let fmt_len = u16::from_ne_bytes(fmt_len.try_into().unwrap()) as usize;
    payload.get(2..2 + fmt_len)
}

/// Renders `fmt` with the argument part of a payload (as [`write_args`]
/// wrote it), checking every length.
pub fn render_args(fmt: &[u8], payload: &[u8], out: &mut impl Sink) -> Result<(), Unsupported> {
    let mut at = 0;
    let mut take = |n: usize| -> Result<&[u8], Unsupported> {
        let bytes = payload.get(at..at + n).ok_or(Unsupported)?;
        at += n;
        Ok(bytes)
    };
    let word = |b: &[u8]| u64::from_ne_bytes(b.try_into().unwrap());
    let count = take(1)?[0] as usize;
    if count > MAX_ARGS {
        return Err(Unsupported);
    }
    if count == 0 {
        // Most debug messages: no table of arguments to fill.
        if payload.len() != 1 {
            return Err(Unsupported);
        }
        return printf::render(fmt, &[], out);
    }
    let mut args = [Arg::Pointer(0); MAX_ARGS];
    for slot in args.iter_mut().take(count) {
        *slot = match take(1)?[0] {
            TAG_SIGNED => Arg::Signed(word(take(8)?) as i64),
            TAG_UNSIGNED => Arg::Unsigned(word(take(8)?)),
            TAG_DOUBLE => Arg::Double(f64::from_bits(word(take(8)?))),
            TAG_POINTER => Arg::Pointer(word(take(8)?) as usize),
            TAG_STR_NULL => Arg::Str(None),
            TAG_STR => {
                let n = u32::from_ne_bytes(take(4)?.try_into().unwrap()) as usize;
                Arg::Str(Some(take(n)?))
            }
            _ => return Err(Unsupported),
        };
    }
    if at != payload.len() {
        return Err(Unsupported);
    }
    printf::render(fmt, &args[..count], out)
}

/// The word a kind-4 record keeps for a NULL string (a string's word is
/// otherwise its length).
pub const WORD_NULL: u64 = u64::MAX;

/// Whether a call site's records may keep its arguments as the macro
/// captured them, one word each (a kind-4 record): every argument is a
/// number, a pointer or a string read to its end or to a precision written
/// in the format. A `%m` (text taken at the call) or a `*` width or
/// precision (a count the record would have to bound) takes the general
/// way.
pub fn words_suffice(kinds: &[u8], precision: &[u16]) -> bool {
    kinds.iter().zip(precision).all(|(&k, &p)| {
        !matches!(k, kind::ERRNO | kind::COUNT) && (k != kind::STRING || p != PRECISION_STAR)
    })
}

/// Renders `fmt` with the message part of a kind-4 record: one word per
/// argument as the macro captured it (a string's its length, or
/// [`WORD_NULL`]), then the strings' bytes. Every length is checked
/// against the payload: a damaged one is an error, never a wrong text.
pub fn render_words(fmt: &[u8], payload: &[u8], out: &mut impl Sink) -> Result<(), Unsupported> {
    let mut kinds = [0u8; MAX_ARGS];
    let n = words_signature(fmt, &mut kinds)?;
    render_words_as(fmt, &kinds[..n], payload, out)
}

/// The argument kinds of `fmt` (see [`signature`]), if a kind-4 record may
/// keep them ([`words_suffice`]): how many.
pub fn words_signature(fmt: &[u8], kinds: &mut [u8; MAX_ARGS]) -> Result<usize, Unsupported> {
    let mut precision = [PRECISION_NONE; MAX_ARGS];
    let n = signature(fmt, kinds, &mut precision)?;
    if !words_suffice(&kinds[..n], &precision[..n]) {
        return Err(Unsupported);
    }
    Ok(n)
}

/// [`render_words`] with `kinds`, what [`words_signature`] gave for `fmt`.
pub fn render_words_as(
    fmt: &[u8],
    kinds: &[u8],
    payload: &[u8],
    out: &mut impl Sink,
) -> Result<(), Unsupported> {
    let n = kinds.len().min(MAX_ARGS);
    let (words, mut strings) = payload.split_at_checked(8 * n).ok_or(Unsupported)?;
    let mut args = [Arg::Pointer(0); MAX_ARGS];
    for ((slot, &k), w) in args.iter_mut().zip(&kinds[..n]).zip(words.chunks_exact(8)) {
        let w = u64::from_ne_bytes(w.try_into().unwrap());
        *slot = match k {
            kind::INT | kind::LONG => Arg::Signed(w as i64),
            kind::UINT | kind::ULONG => Arg::Unsigned(w),
            kind::DOUBLE => Arg::Double(f64::from_bits(w)),
            kind::POINTER => Arg::Pointer(w as usize),
            kind::STRING if w == WORD_NULL => Arg::Str(None),
            kind::STRING => {
                let len = usize::try_from(w).map_err(|_| Unsupported)?;
                let (s, rest) = strings.split_at_checked(len).ok_or(Unsupported)?;
                strings = rest;
                Arg::Str(Some(s))
            }
            _ => return Err(Unsupported),
        };
    }
    if !strings.is_empty() {
        return Err(Unsupported);
    }
    printf::render(fmt, &args[..n], out)
}

/// Renders `fmt` with captured arguments (that match it, as a call site's
/// signature says): the text of a message whose arguments are too long to
/// keep in a record, or that has a `*` width or precision beyond what a
/// stored record may ask for. Into a [`Bounded`] buffer only, which counts
/// the padding of a huge width instead of writing it.
pub fn render_captured(
    fmt: &[u8],
    args: &[Captured],
    out: &mut Bounded,
) -> Result<(), Unsupported> {
    if args.len() > MAX_ARGS {
        return Err(Unsupported);
    }
    let mut list = [Arg::Pointer(0); MAX_ARGS];
    for (slot, arg) in list.iter_mut().zip(args) {
        *slot = match *arg {
            Captured::Signed(v) => Arg::Signed(v),
            Captured::Unsigned(v) => Arg::Unsigned(v),
            Captured::Double(v) => Arg::Double(v),
            Captured::Pointer(v) => Arg::Pointer(v as usize),
            Captured::Str(s) => Arg::Str(s),
        };
    }
    printf::render_any(fmt, &list[..args.len()], out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words_payload(words: &[u64], strings: &[u8]) -> Vec<u8> {
        let mut out: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
        out.extend_from_slice(strings);
        out
    }

    fn render_w(fmt: &str, payload: &[u8]) -> Result<String, Unsupported> {
        let mut out = Vec::new();
        render_words(fmt.as_bytes(), payload, &mut out)?;
        Ok(String::from_utf8(out).unwrap())
    }

    /// A kind-4 record's message part renders as printf would, and one
    /// whose lengths or words do not hold (a damaged or forged record) is
    /// refused, never read past.
    #[test]
    fn word_records_render_and_refuse_what_does_not_hold() {
        let ok = words_payload(&[(-3i64) as u64, 5, 3, WORD_NULL], b"abc");
        assert_eq!(render_w("%d %u %s %s", &ok).unwrap(), "-3 5 abc (null)");
        assert_eq!(
            render_w("%.2s!", &words_payload(&[2], b"ab")).unwrap(),
            "ab!"
        );
        let refused = [
            // Too few words, a trailing byte, a string longer than what is there.
            ("%d %d", words_payload(&[1], b"")),
            ("%d", words_payload(&[1], b"x")),
            ("%s", words_payload(&[4], b"abc")),
            ("%s", words_payload(&[u64::MAX - 1], b"abc")),
            // Formats the plan never keeps as words: %m, a `*` count.
            ("%m", words_payload(&[], b"")),
            ("%*d", words_payload(&[3, 4], b"")),
            ("%.*s", words_payload(&[3, 3], b"abc")),
        ];
        for (fmt, payload) in refused {
            assert_eq!(
                render_w(fmt, &payload),
                Err(Unsupported),
                "{fmt} {payload:?}"
            );
        }
    }

    fn round_trip(fmt: &str, args: &[Captured]) -> String {
        let mut buf = Vec::new();
        assert!(encode(fmt.as_bytes(), args, &mut buf));
        let mut out = Vec::new();
        render(&buf, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn signatures() {
        let mut k = [0u8; MAX_ARGS];
        let mut p = [0u16; MAX_ARGS];
        let n = signature(b"%d %lu %s %*.*f %p %m %% %c %hhx", &mut k, &mut p).unwrap();
        assert_eq!(
            &k[..n],
            [
                kind::INT,
                kind::ULONG,
                kind::STRING,
                kind::COUNT,
                kind::COUNT,
                kind::DOUBLE,
                kind::POINTER,
                kind::ERRNO,
                kind::UINT,
                kind::UINT
            ]
        );
        assert!(signature(b"%Lf", &mut k, &mut p).is_err());
        assert!(signature(&b"%d".repeat(33), &mut k, &mut p).is_err());
        assert_eq!(signature(b"no arguments", &mut k, &mut p), Ok(0));
        // How much of each string may be read.
        let n = signature(b"%s %.4s %*.*s %.0s %.*m", &mut k, &mut p).unwrap();
        assert_eq!(
            &p[..n],
            [
                PRECISION_NONE,
                4,
                PRECISION_NONE,
                PRECISION_NONE,
                PRECISION_STAR,
                0,
                PRECISION_NONE,
                PRECISION_NONE
            ]
        );
        assert_eq!(string_bound(4, None), Some(4));
        assert_eq!(string_bound(PRECISION_NONE, None), None);
        assert_eq!(string_bound(PRECISION_STAR, Some(3)), Some(3));
        assert_eq!(string_bound(PRECISION_STAR, Some(-1)), None);
        assert!(count_fits(1000) && count_fits(-1000) && !count_fits(1001));
        assert!(!count_fits(i32::MIN as i64));
    }

    #[test]
    fn payload_round_trip() {
        assert_eq!(
            round_trip(
                "sent %zu bytes to %s (%s) at %.1f%%, errno text %s, %p",
                &[
                    Captured::Unsigned(12),
                    Captured::Str(Some(b"qemu")),
                    Captured::Str(None),
                    Captured::Double(99.95),
                    Captured::Str(Some(b"No such file or directory")),
                    Captured::Pointer(0),
                ]
            ),
            "sent 12 bytes to qemu ((null)) at 100.0%, errno text No such file or directory, (nil)"
        );
    }

    #[test]
    fn damaged_payloads_are_refused() {
        let mut buf = Vec::new();
        let args = [Captured::Signed(1), Captured::Str(Some(b"x"))];
        assert!(encode(b"%d %s", &args, &mut buf));
        let n = buf.len();
        for cut in 0..n {
            assert!(
                render(&buf[..cut], &mut Vec::new()).is_err(),
                "cut at {cut}"
            );
        }
        let mut bad = buf.clone();
        bad[n - 2] = 200; // the string length
        assert!(render(&bad, &mut Vec::new()).is_err());
        let long = [b'x'; PAYLOAD_MAX];
        let mut out = Vec::new();
        assert!(!encode(b"%s", &[Captured::Str(Some(&long[..]))], &mut out));
    }
}
