//! A record's backtrace (`fields::frames`) as text, one frame a line:
//!
//! `#2 0x000055d0c0a011e9 disk_submit+0x19 (disk.c:20) in /usr/sbin/diskd+0x11e9`
//!
//! The return address, what the frame is named where a reader can tell
//! (the function and the offset into it, and the file and line where
//! debug information is found), then the object and the address within
//! it, which names the frame for any later tool (`addr2line -e OBJECT`).
//! The process that logs names nothing (no file is read inside a daemon,
//! nor at a crash): the readers of the ring (vlog-dump, `vlog-ctl dump`)
//! set a [`Symbolizer`], which outputs in their process use too. Where
//! frames are named, the first ones that are vlog.h's own (its inline
//! functions, `vlog__*`, out of line in a program built without
//! optimisation) are left out: the first frame shown is the caller's.
//!
//! Text is made as pieces: vlog's own (ASCII), and data from outside (a
//! path, a function's name), which each output escapes by its own rules.
//! No allocation: the crash handler renders records with frames too. Out
//! of line: a renderer that shows no frames keeps none of their buffers
//! on its stack (a call that writes its line has 8 KiB of the caller's).

use std::sync::OnceLock;

use super::num::put_decimal;
use super::sink::Counter;
use super::{Bounded, Sink};
use crate::fields::frames::{Frame, Object};
use crate::fields::Frames;

/// A piece of a backtrace's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    /// vlog's own: printable ASCII, never to be escaped.
    Own(&'a [u8]),
    /// From outside (a path, a function's name): escaped as the output
    /// escapes what it did not make.
    Data(&'a [u8]),
}

/// What a symbolizer names at an address: a function (one of several
/// where functions were inlined into one another, the innermost first),
/// the address's offset into it where the symbol table tells, and its
/// file and line where debug information does.
pub struct Named<'a> {
    pub function: &'a [u8],
    pub offset: Option<u64>,
    pub file: &'a [u8],
    pub line: u32,
}

/// Names a frame: given the object and the address within it as its
/// symbol table places it (the return address, less the object's load
/// bias), hands `name` what is there, innermost first (nothing when it
/// cannot tell).
pub type Symbolizer = fn(object: &Object, address: u64, name: &mut dyn FnMut(&Named));

static SYMBOLIZER: OnceLock<Symbolizer> = OnceLock::new();

/// Makes `symbolizer` name the frames this process renders from now on
/// (once; later calls change nothing). For the readers of the ring, which
/// read the objects' files; never the library in a daemon.
pub fn set_symbolizer(symbolizer: Symbolizer) {
    let _ = SYMBOLIZER.set(symbolizer);
}

/// How a rendered record shows its backtrace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FramesAs {
    /// As text, one frame a line (every output, vlog-dump).
    Text,
    /// As its encoding in hex (`fields::frames`), which holds each
    /// object's build-id: a control stream's, for a reader that names the
    /// frames in its own process (vlog-ctl), where the daemon names none.
    /// In a text line, one line after it, [`ENCODED_LINE`] then the hex;
    /// in JSON, the field's string.
    Encoded,
}

/// What starts the line of a backtrace shown [`FramesAs::Encoded`] after
/// a text line: indented as the frames' lines are.
pub const ENCODED_LINE: &[u8] = b"  frames ";

/// The most one frame's text takes without a symbolizer, data escaped as
/// the text line escapes it (4 bytes a byte at most).
pub const FRAME_TEXT_MAX: usize = 48 + 4 * crate::fields::frames::PATH_MAX;

/// The prefix of vlog.h's internal names.
const HEADER_PREFIX: &[u8] = b"vlog__";

/// How many of the first frames are vlog.h's own, as named.
fn header_frames(frames: &Frames, symbolize: Symbolizer) -> usize {
    frames
        .iter()
        .take_while(|frame| {
            let Some(object) = frame.object else {
                return false;
            };
            let mut ours = false;
            symbolize(&object, within(frame, &object), &mut |named| {
                ours = named.function.starts_with(HEADER_PREFIX)
            });
            ours
        })
        .count()
}

fn within(frame: &Frame, object: &Object) -> u64 {
    frame.address.wrapping_sub(object.bias)
}

/// Hands `put` the text of every frame shown of the backtrace `encoded`
/// (checked when its record was read: nothing for a damaged one), `sep`
/// before each but the first.
#[inline(never)]
pub fn pieces(encoded: &[u8], sep: &[u8], put: &mut dyn FnMut(Piece)) {
    let Some(frames) = Frames::decode(encoded) else {
        return;
    };
    let frames = &frames;
    let symbolize = SYMBOLIZER.get().copied();
    let skip = symbolize.map_or(0, |s| header_frames(frames, s));
    for (i, frame) in frames.iter().skip(skip).enumerate() {
        if i > 0 {
            put(Piece::Own(sep));
        }
        frame_pieces(i, &frame, symbolize, put);
    }
}

/// `n` in lower-case hex, at least `width` digits.
fn hex(n: u64, width: usize, put: &mut dyn FnMut(Piece)) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut digits = [b'0'; 16];
    let mut i = digits.len();
    let mut v = n;
    while v != 0 || i > digits.len() - width.max(1) {
        i -= 1;
        digits[i] = HEX[(v & 15) as usize];
        v >>= 4;
    }
    put(Piece::Own(&digits[i..]));
}

fn decimal(n: u64, put: &mut dyn FnMut(Piece)) {
    let mut digits = [0u8; 20];
    let mut b = Bounded::new(&mut digits);
    put_decimal(n, 1, &mut b);
    put(Piece::Own(b.finish()));
}

fn frame_pieces(
    index: usize,
    frame: &Frame,
    symbolize: Option<Symbolizer>,
    put: &mut dyn FnMut(Piece),
) {
    put(Piece::Own(b"#"));
    decimal(index as u64, put);
    put(Piece::Own(b" 0x"));
    hex(frame.address, 16, put);
    let Some(object) = frame.object else {
        put(Piece::Own(b" in ?"));
        return;
    };
    let within = within(frame, &object);
    if let Some(symbolize) = symbolize {
        let mut first = true;
        symbolize(&object, within, &mut |named| {
            put(Piece::Own(if first { b" " } else { b" inlined in " }));
            first = false;
            put(Piece::Data(named.function));
            if let Some(offset) = named.offset {
                put(Piece::Own(b"+0x"));
                hex(offset, 1, put);
            }
            if !named.file.is_empty() {
                put(Piece::Own(b" ("));
                put(Piece::Data(named.file));
                put(Piece::Own(b":"));
                decimal(named.line.into(), put);
                put(Piece::Own(b")"));
            }
        });
        if first {
            put(Piece::Own(b" ??"));
        }
    }
    put(Piece::Own(b" in "));
    put(Piece::Data(object.path));
    put(Piece::Own(b"+0x"));
    hex(within, 1, put);
}

/// The frames as lines after a text line: two spaces, a frame, a newline
/// each; `escape` writes data as the line escapes it.
#[inline(never)]
pub fn put_lines<S: Sink>(frames: &[u8], escape: impl Fn(&[u8], &mut S), out: &mut S) {
    let mut started = false;
    pieces(frames, b"\n  ", &mut |piece| {
        if !started {
            out.put(b"  ");
            started = true;
        }
        match piece {
            Piece::Own(b) => out.put(b),
            Piece::Data(b) => escape(b, out),
        }
    });
    if started {
        out.put(b"\n");
    }
}

/// Writes the frames' text to `out` as one value, `sep` between frames,
/// each data piece as `data` writes it.
#[inline(never)]
pub fn put_value<S: Sink>(frames: &[u8], sep: &[u8], data: impl Fn(&[u8], &mut S), out: &mut S) {
    pieces(frames, sep, &mut |piece| match piece {
        Piece::Own(b) => out.put(b),
        Piece::Data(b) => data(b, out),
    });
}

/// The length of what [`put_value`] writes, for a value written after its
/// length.
#[inline(never)]
pub fn value_len(frames: &[u8], sep: &[u8], data: impl Fn(&[u8], &mut Counter)) -> usize {
    let mut count = Counter(0);
    put_value(frames, sep, data, &mut count);
    count.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fields::frames::{Encoder, ENCODED_MAX};

    fn text(frames: &[u8]) -> String {
        let mut out = Vec::new();
        put_value(
            frames,
            b"|",
            |b, out: &mut Vec<u8>| out.extend_from_slice(b),
            &mut out,
        );
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_frame_shows_its_address_and_where_in_its_object() {
        let mut buf = [0u8; ENCODED_MAX];
        let mut enc = Encoder::new(&mut buf, &[0x5555_0000_11e9, 0x10]);
        let object = Object {
            bias: 0x5555_0000_0000,
            build_id: b"",
            path: b"/usr/sbin/d",
        };
        enc.object(object, |a| a > 0x1000);
        let frames = enc.finish().to_vec();
        assert_eq!(
            text(&frames),
            "#0 0x00005555000011e9 in /usr/sbin/d+0x11e9|#1 0x0000000000000010 in ?"
        );
        let len = value_len(&frames, b"|", |b, c| c.put(b));
        assert_eq!(len, text(&frames).len());
    }
}
