//! The text forms of a child's line: a `<N>` syslog prefix, go-plugin's
//! `[LEVEL]` prefixes, and vlog's and libvirt's text lines, each recognised
//! by its shape alone, its parts as slices of the line.

use crate::priority::Priority;

/// `<N>` at the start, N at most 191: the severity and the rest.
pub fn syslog_prefix(line: &[u8]) -> Option<(u8, &[u8])> {
    let rest = line.strip_prefix(b"<")?;
    let close = rest.iter().take(4).position(|&b| b == b'>')?;
    let digits = &rest[..close];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n: u32 = digits.iter().fold(0, |n, &d| n * 10 + u32::from(d - b'0'));
    (n <= 191).then(|| ((n & 7) as u8, &rest[close + 1..]))
}

/// A line with a go-plugin level prefix.
pub struct Prefixed<'a> {
    pub time: Option<&'a [u8]>,
    pub level: &'a [u8],
    pub message: &'a [u8],
}

pub fn prefixed(line: &[u8]) -> Option<Prefixed<'_>> {
    let (time, rest) = match line.first() {
        Some(b'[') => (None, line),
        Some(d) if d.is_ascii_digit() => {
            let space = line.iter().position(|&b| b == b' ')?;
            (Some(&line[..space]), &line[space + 1..])
        }
        _ => return None,
    };
    let inner = rest.strip_prefix(b"[")?;
    let close = inner.iter().take(8).position(|&b| b == b']')?;
    let level = &inner[..close];
    if !matches!(
        level,
        b"TRACE" | b"DEBUG" | b"INFO" | b"WARN" | b"WARNING" | b"ERROR"
    ) {
        return None;
    }
    let message = &inner[close + 1..];
    let message = message.strip_prefix(b" ").unwrap_or(message);
    Some(Prefixed {
        time,
        level,
        message,
    })
}

/// The parts of a vlog or libvirt text line.
pub struct TextLine<'a> {
    pub time: &'a [u8],
    pub tid: &'a [u8],
    pub priority: &'a [u8],
    pub source: Option<&'a [u8]>,
    pub func: &'a [u8],
    pub line: &'a [u8],
    pub message: &'a [u8],
}

/// `YYYY-MM-DD HH:MM:SS.mmm+0000: TID: PRIO[ (context)] : [SOURCE : ]FUNC:LINE : MSG`.
pub fn text_line(line: &[u8]) -> Option<TextLine<'_>> {
    const STAMP: usize = "2026-11-30 13:45:12.345+0000".len();
    let time = line.get(..STAMP)?;
    let shape = b"dddd-dd-dd dd:dd:dd.ddd+dddd";
    let stamp_ok = time
        .iter()
        .zip(shape)
        .enumerate()
        .all(|(i, (&b, &s))| match s {
            b'd' => b.is_ascii_digit(),
            b'+' => (i == 23 && matches!(b, b'+' | b'-')) || b == s,
            _ => b == s,
        });
    if !stamp_ok {
        return None;
    }
    let rest = line[STAMP..].strip_prefix(b": ")?;
    let colon = rest.iter().position(|&b| b == b':')?;
    let tid = &rest[..colon];
    if tid.is_empty() || !tid.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let rest = rest[colon..].strip_prefix(b": ")?;
    let (priority, rest) = split_at_sep(rest)?;
    // A vlog child's line printed as an error's context: its own priority.
    let priority = priority
        .strip_suffix(crate::text::line::CONTEXT_MARK)
        .unwrap_or(priority);
    Priority::from_child_level(priority)?;
    let (first, rest) = split_at_sep(rest)?;
    let (source, func_line, message) = match func_and_line(first) {
        Some(_) => (None, first, rest),
        None => {
            let (func_line, message) = split_at_sep(rest)?;
            (Some(first), func_line, message)
        }
    };
    let (func, line_no) = func_and_line(func_line)?;
    Some(TextLine {
        time,
        tid,
        priority,
        source,
        func,
        line: line_no,
        message,
    })
}

/// Splits at the first ` : `.
fn split_at_sep(s: &[u8]) -> Option<(&[u8], &[u8])> {
    let at = s.windows(3).position(|w| w == b" : ")?;
    Some((&s[..at], &s[at + 3..]))
}

/// `FUNC:LINE`, the line a number.
fn func_and_line(s: &[u8]) -> Option<(&[u8], &[u8])> {
    let colon = s.iter().rposition(|&b| b == b':')?;
    let (func, line) = (&s[..colon], &s[colon + 1..]);
    (!func.is_empty()
        && !func.contains(&b' ')
        && !line.is_empty()
        && line.iter().all(u8::is_ascii_digit))
    .then_some((func, line))
}
