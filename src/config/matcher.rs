//! What a filter (`VLOG_FILTERS`) or a quiet error (`VLOG_CONTEXT`'s
//! `off:`) names: a source, as libvirt's filters match it, or call sites,
//! by file (and line), function or message id, as the kernel's dynamic
//! debug names its statements. One parser and one matcher for both, and
//! the one glob (`*` and `?`) that matches names.

use crate::record::NAME_MAX;

/// The call site a match is tried against.
#[derive(Clone, Copy, Debug)]
pub struct SiteKey<'a> {
    pub source: &'a [u8],
    pub file: &'a [u8],
    pub func: &'a [u8],
    pub line: u32,
    /// The site's message id (0: none known).
    pub id: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Match {
    /// The source's name contains it (`*` and `?` wildcards), as libvirt's.
    Source(String),
    /// `file=NAME[:LINE]`: the file is NAME, or its last components are
    /// (`disk.c` matches `src/disk.c`); wildcards allowed; and its line is
    /// LINE if given.
    File(String, Option<u32>),
    /// `func=NAME`: the function is NAME (wildcards allowed).
    Func(String),
    /// `id=ID`: the site's message id (eight hexadecimal digits).
    Id(u32),
}

/// What a bad match is told (the caller adds where it was).
pub const SYNTAX: &str =
    "MATCH (a source), file=NAME[:LINE], func=NAME (at most 255 bytes) or id=ID";

impl Match {
    /// Parses one match; None when it is not one. A file or function name
    /// is at most 255 bytes (longer ones are cut in records anyway), which
    /// bounds what matching it against every site costs under the logger's
    /// lock when a filter changes.
    pub fn parse(s: &str) -> Option<Match> {
        let valid = |name: &str| !name.is_empty() && !name.contains([' ', '=', ':']);
        let site_name = |name: &str| valid(name) && name.len() <= NAME_MAX;
        if let Some(file) = s.strip_prefix("file=") {
            let (name, line) = match file.rsplit_once(':') {
                Some((name, line)) => (name, Some(number(line)?)),
                None => (file, None),
            };
            return site_name(name).then(|| Match::File(name.to_owned(), line));
        }
        if let Some(func) = s.strip_prefix("func=") {
            return site_name(func).then(|| Match::Func(func.to_owned()));
        }
        if let Some(id) = s.strip_prefix("id=") {
            let id = (id.len() == 8 && id.bytes().all(|b| b.is_ascii_hexdigit()))
                .then(|| u32::from_str_radix(id, 16).ok())??;
            return Some(Match::Id(id));
        }
        // libvirt's "+" asked for a stack trace; the match itself drops it.
        let s = s.strip_prefix('+').unwrap_or(s);
        valid(s).then(|| Match::Source(s.to_owned()))
    }

    /// The match as it is written, which parses back to the same.
    pub fn as_env(&self) -> String {
        match self {
            Match::Source(m) => m.clone(),
            Match::File(name, None) => format!("file={name}"),
            Match::File(name, Some(line)) => format!("file={name}:{line}"),
            Match::Func(name) => format!("func={name}"),
            Match::Id(id) => format!("id={id:08x}"),
        }
    }

    /// Whether it names a source (not sites).
    pub fn is_source(&self) -> bool {
        matches!(self, Match::Source(_))
    }

    pub fn matches(&self, site: &SiteKey) -> bool {
        match self {
            Match::Source(m) => contains_match(m.as_bytes(), site.source),
            Match::File(name, line) => {
                file_matches(name.as_bytes(), site.file) && line.is_none_or(|l| l == site.line)
            }
            Match::Func(name) => glob_match(name.as_bytes(), site.func),
            Match::Id(id) => site.id != 0 && *id == site.id,
        }
    }
}

/// The file is `name`, or ends in `/` and `name`, wildcards allowed.
fn file_matches(name: &[u8], file: &[u8]) -> bool {
    glob_match(name, file)
        || file
            .iter()
            .enumerate()
            .filter(|&(_, &b)| b == b'/')
            .any(|(i, _)| glob_match(name, &file[i + 1..]))
}

/// A line number: 1 to 2^32 - 1, decimal.
fn number(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<u32>().ok().filter(|&n| n > 0)
}

/// True when `pattern`, with `*` and `?` wildcards, matches somewhere inside
/// `name` (libvirt wraps every pattern in `*...*` and uses GLib's
/// `g_pattern_match_simple`, where `?` is one UTF-8 character).
pub fn contains_match(pattern: &[u8], name: &[u8]) -> bool {
    // Matching "*pattern*" at offset 0 equals matching "pattern*" at any offset.
    (0..=name.len())
        .any(|start| is_char_boundary(name, start) && glob_prefix(pattern, &name[start..]))
}

/// True when `pattern`, with `*` and `?` wildcards, matches all of `name`.
pub fn glob_match(pattern: &[u8], name: &[u8]) -> bool {
    glob(pattern, name, true)
}

fn is_char_boundary(s: &[u8], i: usize) -> bool {
    i == s.len() || (s[i] & 0xC0) != 0x80
}

/// Length in bytes of the UTF-8 character at the start of `s` (1 for a stray byte).
fn char_len(s: &[u8]) -> usize {
    let n = match s[0] {
        0xF0..=0xF7 => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    };
    if s.len() >= n && s[1..n].iter().all(|b| (b & 0xC0) == 0x80) {
        n
    } else {
        1
    }
}

/// True when `pattern` matches a prefix of `name` (as if `pattern*`).
/// Iterative with one backtrack point, so it is linear-time per start offset
/// and cannot blow the stack on hostile patterns.
fn glob_prefix(pattern: &[u8], name: &[u8]) -> bool {
    glob(pattern, name, false)
}

/// `pattern` against `name`: all of it when `whole`, else a prefix.
fn glob(pattern: &[u8], name: &[u8], whole: bool) -> bool {
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    loop {
        if p == pattern.len() && (!whole || n == name.len()) {
            // Trailing implicit '*' (a prefix): any rest of the name is fine.
            return true;
        }
        if p == pattern.len() {
            // Whole: more name left; try the last star further on.
            match star {
                Some((sp, sn)) if sn < name.len() => {
                    let next = sn + char_len(&name[sn..]);
                    star = Some((sp, next));
                    p = sp;
                    n = next;
                    continue;
                }
                _ => return false,
            }
        }
        match pattern[p] {
            b'*' => {
                p += 1;
                star = Some((p, n));
                continue;
            }
            b'?' if n < name.len() => {
                n += char_len(&name[n..]);
                p += 1;
                continue;
            }
            c if n < name.len() && c == name[n] => {
                n += 1;
                p += 1;
                continue;
            }
            _ => {}
        }
        match star {
            Some((sp, sn)) if sn < name.len() => {
                let next = sn + char_len(&name[sn..]);
                star = Some((sp, next));
                p = sp;
                n = next;
            }
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> SiteKey<'static> {
        SiteKey {
            source: b"storage.disk",
            file: b"src/storage/disk.c",
            func: b"disk_submit",
            line: 42,
            id: 0x1234_abcd,
        }
    }

    #[test]
    fn parse_and_write_back() {
        for s in [
            "qemu",
            "file=disk.c",
            "file=disk.c:42",
            "file=storage/*.c",
            "func=disk_*",
            "id=1234abcd",
        ] {
            let m = Match::parse(s).unwrap_or_else(|| panic!("{s}"));
            assert_eq!(m.as_env(), s);
        }
        assert_eq!(Match::parse("id=1234ABCD"), Some(Match::Id(0x1234_abcd)));
        assert_eq!(Match::parse("+qemu"), Some(Match::Source("qemu".into())));
        // Names longer than a record keeps are no names.
        let long = "x".repeat(256);
        assert_eq!(Match::parse(&format!("func={long}")), None);
        assert_eq!(Match::parse(&format!("file={long}:1")), None);
        assert!(Match::parse(&format!("func={}", &long[..255])).is_some());
        for bad in [
            "",
            "file=",
            "file=:4",
            "file=a:",
            "file=a:0",
            "file=a:x",
            "file=a:99999999999",
            "func=",
            "func=a:b",
            "id=",
            "id=123",
            "id=1234abcg",
            "id=1234abcd0",
            "a=b",
            "a:b",
            "+",
        ] {
            assert_eq!(Match::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn matches_sites() {
        let k = key();
        let yes = |s: &str| Match::parse(s).unwrap().matches(&k);
        assert!(yes("disk"));
        assert!(yes("file=disk.c"));
        assert!(yes("file=storage/disk.c"));
        assert!(yes("file=src/storage/disk.c:42"));
        assert!(yes("file=*.c"));
        assert!(!yes("file=isk.c"));
        assert!(!yes("file=disk.c:43"));
        assert!(yes("func=disk_submit"));
        assert!(yes("func=disk_*"));
        assert!(!yes("func=disk"));
        assert!(yes("id=1234abcd"));
        assert!(!yes("id=1234abce"));
        let none = SiteKey { id: 0, ..k };
        assert!(!Match::Id(0).matches(&none));
    }
}
