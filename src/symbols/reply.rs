//! The frames of a control stream, named by the reader. A daemon names no
//! frame (it reads no file); asked for `--encoded-frames`, its dump or
//! follow sends each backtrace as its encoding in hex (the ring's own,
//! which holds each object's build-id), and vlog-ctl turns it into the
//! lines vlog-dump shows for the same record, named here by the same
//! symbolizer, with the same checks.
//!
//! What a server sends is data: a line is rewritten only if it is one
//! the server makes for a backtrace (a text stream's line that starts
//! with `text::frames::ENCODED_LINE`, a JSON record's
//! `fields.VLOG_BACKTRACE` string) and its hex decodes to a whole
//! encoding (`Frames::decode`); anything else is shown as it came.

use crate::fields::frames::ENCODED_MAX;
use crate::fields::Frames;
use crate::relay::json::{Kind, Members};
use crate::text::frames::{self, ENCODED_LINE};
use crate::text::json::put_json_inside;
use crate::text::line::put_escaped;

/// The name of the field that holds a record's backtrace.
const FIELD: &[u8] = b"VLOG_BACKTRACE";

/// Writes `line` of a dump's or a follow's reply (its newline included)
/// to `out` with the backtrace it holds named, and says true; false (and
/// nothing written) if it holds none to name.
pub fn name_frames_in(line: &[u8], json: bool, out: &mut Vec<u8>) -> bool {
    if json {
        name_in_json(line, out)
    } else {
        name_in_text(line, out)
    }
}

/// `  frames HEX\n`: the frames' lines.
fn name_in_text(line: &[u8], out: &mut Vec<u8>) -> bool {
    let Some(hex) = line
        .strip_prefix(ENCODED_LINE)
        .and_then(|rest| rest.strip_suffix(b"\n"))
    else {
        return false;
    };
    let mut buf = [0u8; ENCODED_MAX];
    let Some(encoded) = decoded(hex, &mut buf) else {
        return false;
    };
    frames::put_lines(encoded, put_escaped, out);
    true
}

/// A JSON record whose `fields` hold `VLOG_BACKTRACE`: the same record,
/// the field's string the frames' lines (as the JSON outputs write it).
fn name_in_json(line: &[u8], out: &mut Vec<u8>) -> bool {
    let Some(fields) = member(line, b"fields", Kind::Nested) else {
        return false;
    };
    let Some(hex) = member(fields, FIELD, Kind::Str) else {
        return false;
    };
    let mut buf = [0u8; ENCODED_MAX];
    let Some(encoded) = decoded(hex, &mut buf) else {
        return false;
    };
    // `hex` is a part of `line`: where it starts in it.
    let start = hex.as_ptr() as usize - line.as_ptr() as usize;
    out.extend_from_slice(&line[..start]);
    frames::put_value(encoded, b"\\n", put_json_inside, out);
    out.extend_from_slice(&line[start + hex.len()..]);
    true
}

/// The value of the top-level member `key` of the JSON object `object`,
/// if it is there and of `kind` (the first such: a server that sends a
/// key twice has the first taken); nothing for malformed JSON.
fn member<'a>(object: &'a [u8], key: &[u8], kind: Kind) -> Option<&'a [u8]> {
    let mut found = None;
    for m in Members::new(object)? {
        let m = m.ok()?;
        if found.is_none() && m.key == key && m.kind == kind {
            found = Some(m.value);
        }
    }
    found
}

/// The encoding whose lowercase hex is `hex`, in `buf`, if it is one
/// whole (decodes as frames).
fn decoded<'b>(hex: &[u8], buf: &'b mut [u8; ENCODED_MAX]) -> Option<&'b [u8]> {
    if hex.len() % 2 != 0 || hex.len() / 2 > buf.len() {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let n = hex.len() / 2;
    for (byte, pair) in buf.iter_mut().zip(hex.chunks_exact(2)) {
        *byte = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Frames::decode(&buf[..n]).map(|f| f.encoded())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fields::frames::{Encoder, Object};
    use crate::text::hexdump::put_hex;

    fn encoded() -> Vec<u8> {
        let mut buf = [0u8; ENCODED_MAX];
        let mut enc = Encoder::new(&mut buf, &[0x5555_0000_11e9, 0x10]);
        let object = Object {
            bias: 0x5555_0000_0000,
            build_id: b"\x01\x02",
            path: b"/usr/sbin/d\"\n",
        };
        enc.object(object, |a| a > 0x1000);
        enc.finish().to_vec()
    }

    fn hex(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        put_hex(bytes, &mut out);
        out
    }

    #[test]
    fn a_text_line_of_frames_becomes_the_frames_lines() {
        let mut line = ENCODED_LINE.to_vec();
        line.extend(hex(&encoded()));
        line.push(b'\n');
        let mut out = Vec::new();
        assert!(name_frames_in(&line, false, &mut out));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "  #0 0x00005555000011e9 in /usr/sbin/d\"\\n+0x11e9\n  #1 0x0000000000000010 in ?\n"
        );
    }

    #[test]
    fn a_json_record_gets_its_frames_lines_as_the_field() {
        let line = format!(
            "{{\"seq\":1,\"message\":\"m\",\"fields\":{{\"A\":\"x\",\"VLOG_BACKTRACE\":\"{}\"}}}}\n",
            String::from_utf8(hex(&encoded())).unwrap()
        );
        let mut out = Vec::new();
        assert!(name_frames_in(line.as_bytes(), true, &mut out));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"seq\":1,\"message\":\"m\",\"fields\":{\"A\":\"x\",\"VLOG_BACKTRACE\":\
             \"#0 0x00005555000011e9 in /usr/sbin/d\\\"\\n+0x11e9\\n#1 0x0000000000000010 in ?\"}}\n"
        );
    }

    /// What a server sends is data: anything but a whole encoding where
    /// one belongs is shown as it came.
    #[test]
    fn anything_else_is_left_as_it_came() {
        let good = String::from_utf8(hex(&encoded())).unwrap();
        let cut = &good[..good.len() - 2];
        let odd = &good[..good.len() - 1];
        let upper = good.to_uppercase();
        let mut lines = vec![
            "2026-12-06 00:00:00.000+0000: 1: warning : s : f:1 : m\n".to_string(),
            format!("  frames {cut}\n"),
            format!("  frames {odd}\n"),
            format!("  frames {upper}\n"),
            format!("  frames {good}"),
            format!("   frames {good}\n"),
            format!("  frames {good}{}\n", "00".repeat(ENCODED_MAX)),
        ];
        let json = [
            format!("{{\"fields\":{{\"VLOG_BACKTRACE\":\"{cut}\"}}}}\n"),
            format!("{{\"VLOG_BACKTRACE\":\"{good}\"}}\n"),
            format!("{{\"fields\":{{\"VLOG_BACKTRACE\":[\"{good}\"]}}}}\n"),
            format!("{{\"fields\":{{\"VLOG_BACKTRACE\":\"{good}\"}}\n"),
            format!("{{\"fields\":{{\"VLOG_BACKTRACE\":\"{good}\"}},}}\n"),
            format!("[{{\"fields\":{{\"VLOG_BACKTRACE\":\"{good}\"}}}}]\n"),
        ];
        for (line, is_json) in lines
            .drain(..)
            .map(|l| (l, false))
            .chain(json.into_iter().map(|l| (l, true)))
        {
            let mut out = Vec::new();
            assert!(
                !name_frames_in(line.as_bytes(), is_json, &mut out),
                "{line}"
            );
            assert!(out.is_empty(), "{line}");
        }
    }

    /// No prefix of an encoding is one, and every byte of one changed is
    /// read within its bytes (a changed length is refused, never followed).
    #[test]
    fn a_damaged_encoding_is_read_within_its_bytes() {
        let good = encoded();
        let line = |bytes: &[u8]| {
            let mut line = ENCODED_LINE.to_vec();
            line.extend(hex(bytes));
            line.push(b'\n');
            line
        };
        for n in 0..good.len() {
            let mut out = Vec::new();
            assert!(!name_frames_in(&line(&good[..n]), false, &mut out), "{n}");
        }
        let mut named = 0;
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] = !bad[i];
            named += usize::from(name_frames_in(&line(&bad), false, &mut Vec::new()));
        }
        // A changed address or object byte is still a whole encoding; a
        // changed count or length is not.
        assert!(named > 0 && named < good.len(), "{named} of {}", good.len());
    }
}
