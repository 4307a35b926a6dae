//! `VLOG_FILTERS`: libvirt's filter language, parsed whole and matched against
//! source names.

use crate::error::ConfigError;
use crate::priority::Priority;

/// What a filter asks for the sources it matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wanted {
    /// Messages of this priority and up.
    From(Priority),
    /// Nothing, not even errors (`off:MATCH`, vlog's extension): the source
    /// costs its callers the inline check alone, and a relay of it only
    /// finding each line's end.
    Off,
}

/// One `PRIO:MATCH` token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    pub wanted: Wanted,
    /// The pattern as the user wrote it (after the `+`); matching treats it as
    /// `*pattern*`, like libvirt.
    pub pattern: String,
}

/// An ordered filter list: the first filter that matches a source decides.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filters(pub Vec<Filter>);

impl Filters {
    /// Parses a whole filter string. One bad token rejects the string.
    pub fn parse(s: &str) -> Result<Filters, ConfigError> {
        s.split(' ')
            .filter(|token| !token.is_empty())
            .map(Filter::parse)
            .collect::<Result<Vec<_>, _>>()
            .map(Filters)
    }

    /// The filters as `VLOG_FILTERS` writes them (priorities as numbers,
    /// libvirt's form), which parse back to the same list.
    pub fn as_env(&self) -> String {
        let tokens: Vec<String> = self
            .0
            .iter()
            .map(|f| match f.wanted {
                Wanted::From(p) => format!("{}:{}", p as u8, f.pattern),
                Wanted::Off => format!("off:{}", f.pattern),
            })
            .collect();
        tokens.join(" ")
    }

    /// What the first matching filter wants of `source`, if any matches.
    pub fn lookup(&self, source: &[u8]) -> Option<Wanted> {
        self.0
            .iter()
            .find(|f| contains_match(f.pattern.as_bytes(), source))
            .map(|f| f.wanted)
    }
}

impl Filter {
    fn parse(token: &str) -> Result<Filter, ConfigError> {
        let fields: Vec<&str> = token.split(':').collect();
        let [prio, pattern] = fields[..] else {
            return Err(ConfigError::new(format!(
                "malformed filter '{token}': expected PRIORITY:MATCH"
            )));
        };
        let wanted = match prio {
            "off" => Wanted::Off,
            _ => Wanted::From(Priority::parse_field(prio).ok_or_else(|| {
                ConfigError::new(format!(
                    "invalid priority '{prio}' in filter '{token}': use 1-4 or debug, info, \
                     warning, error, or off"
                ))
            })?),
        };
        // libvirt's "+" asked for a stack trace; the match itself drops it.
        let pattern = pattern.strip_prefix('+').unwrap_or(pattern);
        if pattern.is_empty() {
            return Err(ConfigError::new(format!("empty match in filter '{token}'")));
        }
        Ok(Filter {
            wanted,
            pattern: pattern.to_owned(),
        })
    }
}

/// True when `pattern`, with `*` and `?` wildcards, matches somewhere inside
/// `name` (libvirt wraps every pattern in `*...*` and uses GLib's
/// `g_pattern_match_simple`, where `?` is one UTF-8 character).
pub fn contains_match(pattern: &[u8], name: &[u8]) -> bool {
    // Matching "*pattern*" at offset 0 equals matching "pattern*" at any offset.
    (0..=name.len())
        .any(|start| is_char_boundary(name, start) && glob_prefix(pattern, &name[start..]))
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
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    loop {
        if p == pattern.len() {
            // Trailing implicit '*': any rest of the name is fine.
            return true;
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

    fn m(pattern: &str, name: &str) -> bool {
        contains_match(pattern.as_bytes(), name.as_bytes())
    }

    #[test]
    fn substring_and_wildcards() {
        assert!(m("qemu", "qemu.monitor"));
        assert!(m("monitor", "qemu.monitor"));
        assert!(m("u.m", "qemu.monitor"));
        assert!(!m("qemux", "qemu.monitor"));
        assert!(m("q*r", "qemu.monitor"));
        assert!(m("q?m", "qemu"));
        assert!(!m("q?m", "qm"));
        assert!(m("*", ""));
        assert!(m("?", "é"));
        assert!(!m("??", "é"));
        assert!(m("a*b*c", "xxaxxbxxcxx"));
        assert!(!m("a*b*c", "xxaxxcxxbxx"));
        let long = "a".repeat(5000);
        assert!(!m(&format!("{}b", "*a".repeat(50)), &long));
    }

    #[test]
    fn parse_valid() {
        let f = Filters::parse("  3:util.object 1:+qemu   2:*  ").unwrap();
        assert_eq!(f.0.len(), 3);
        assert_eq!(f.0[1].pattern, "qemu");
        assert_eq!(f.0[1].wanted, Wanted::From(Priority::Debug));
        assert_eq!(Filters::parse("").unwrap(), Filters::default());
        assert_eq!(
            Filters::parse("debug:x").unwrap().0[0].wanted,
            Wanted::From(Priority::Debug)
        );
        assert_eq!(Filters::parse("off:x").unwrap().0[0].wanted, Wanted::Off);
        for bad in ["OFF:x", "0ff:x", "off:", "+off:x"] {
            assert!(Filters::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn parse_invalid() {
        for bad in [
            "1", "1:", "1:+", "0:x", "5:x", "x:y", "1:a:b", ":a", "1:a 2", "-1:a",
        ] {
            let err = Filters::parse(bad).unwrap_err();
            assert!(!err.message.is_empty(), "{bad}");
        }
        let err = Filters::parse("1:ok 7:bad").unwrap_err();
        assert!(err.message.contains("'7'"), "{}", err.message);
    }

    #[test]
    fn first_match_wins() {
        let f = Filters::parse("3:util.object off:util.noisy 1:util 2:*").unwrap();
        let from = |p| Some(Wanted::From(p));
        assert_eq!(f.lookup(b"util.object"), from(Priority::Warning));
        assert_eq!(f.lookup(b"util.noisy"), Some(Wanted::Off));
        assert_eq!(f.lookup(b"util.file"), from(Priority::Debug));
        assert_eq!(f.lookup(b"qemu"), from(Priority::Info));
        assert_eq!(Filters::default().lookup(b"qemu"), None);
    }
}
