//! `VLOG_FILTERS`: libvirt's filter language, parsed whole and matched against
//! source names, and vlog's matches on call sites (`1:func=disk_submit`,
//! `off:file=disk.c:42`, `off:id=3fa2b1c0`; see `matcher`).

use super::matcher::{contains_match, Match, SiteKey, SYNTAX};
use crate::error::ConfigError;
use crate::priority::Priority;

/// The most filters a string may hold: each is tried against every call
/// site when the filters change, under the logger's lock (20,000 sites and
/// 128 filters take about 50 ms; 1,000 filters took 0.36 s).
pub const MAX_FILTERS: usize = 128;

/// What a filter asks for the sources it matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wanted {
    /// Messages of this priority and up.
    From(Priority),
    /// Nothing, not even errors (`off:MATCH`, vlog's extension): the source
    /// costs its callers the inline check alone, and a relay of it only
    /// finding each line's end.
    Off,
    /// A backtrace on every record of the call sites it matches
    /// (`bt:MATCH`, vlog's extension). It decides no level: the other
    /// filters do, as if it were not there.
    Backtrace,
}

/// One `PRIO:MATCH` token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    pub wanted: Wanted,
    /// A source pattern (matched as `*pattern*`, like libvirt's, after its
    /// `+`) or call sites.
    pub target: Match,
}

/// An ordered filter list: the first filter that matches a source decides.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filters(pub Vec<Filter>);

impl Filters {
    /// Parses a whole filter string. One bad token rejects the string, and
    /// so do more than [`MAX_FILTERS`] tokens.
    pub fn parse(s: &str) -> Result<Filters, ConfigError> {
        let filters = s
            .split(' ')
            .filter(|token| !token.is_empty())
            .map(Filter::parse)
            .collect::<Result<Vec<_>, _>>()?;
        if filters.len() > MAX_FILTERS {
            return Err(ConfigError::new(format!(
                "{} filters: at most {MAX_FILTERS} are taken",
                filters.len()
            )));
        }
        Ok(Filters(filters))
    }

    /// The filters as `VLOG_FILTERS` writes them (priorities as numbers,
    /// libvirt's form), which parse back to the same list.
    pub fn as_env(&self) -> String {
        let tokens: Vec<String> = self
            .0
            .iter()
            .map(|f| match f.wanted {
                Wanted::From(p) => format!("{}:{}", p as u8, f.target.as_env()),
                Wanted::Off => format!("off:{}", f.target.as_env()),
                Wanted::Backtrace => format!("bt:{}", f.target.as_env()),
            })
            .collect();
        tokens.join(" ")
    }

    /// What the first filter that names sources and matches `source`
    /// wants of it, if any does: the level of the source's calls that no
    /// site is known for (`vlog()`, a relay).
    pub fn lookup(&self, source: &[u8]) -> Option<Wanted> {
        self.levels()
            .find(|f| match &f.target {
                Match::Source(m) => contains_match(m.as_bytes(), source),
                _ => false,
            })
            .map(|f| f.wanted)
    }

    /// What the first filter that matches call site `site` (by its source,
    /// file, line, function or id) wants of it, if any does.
    pub fn lookup_site(&self, site: &SiteKey) -> Option<Wanted> {
        self.levels()
            .find(|f| f.target.matches(site))
            .map(|f| f.wanted)
    }

    /// Whether a `bt:` filter matches call site `site`.
    pub fn backtrace_site(&self, site: &SiteKey) -> bool {
        self.0
            .iter()
            .any(|f| f.wanted == Wanted::Backtrace && f.target.matches(site))
    }

    /// The filters that decide levels (all but `bt:`).
    fn levels(&self) -> impl Iterator<Item = &Filter> {
        self.0.iter().filter(|f| f.wanted != Wanted::Backtrace)
    }
}

impl Filter {
    fn parse(token: &str) -> Result<Filter, ConfigError> {
        let Some((prio, pattern)) = token.split_once(':') else {
            return Err(ConfigError::new(format!(
                "malformed filter '{token}': expected PRIORITY:MATCH"
            )));
        };
        let wanted = match prio {
            "off" => Wanted::Off,
            "bt" => Wanted::Backtrace,
            _ => Wanted::From(Priority::parse_field(prio).ok_or_else(|| {
                ConfigError::new(format!(
                    "invalid priority '{prio}' in filter '{token}': use {}, off, or bt",
                    Priority::ACCEPTED
                ))
            })?),
        };
        if pattern.strip_prefix('+').unwrap_or(pattern).is_empty() {
            return Err(ConfigError::new(format!("empty match in filter '{token}'")));
        }
        let target = Match::parse(pattern).ok_or_else(|| {
            ConfigError::new(format!(
                "malformed filter '{token}': expected PRIORITY:{SYNTAX}"
            ))
        })?;
        Ok(Filter { wanted, target })
    }
}

#[cfg(test)]
mod tests {
    use super::super::matcher::glob_match;
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
        assert_eq!(f.0[1].target, Match::Source("qemu".into()));
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

    #[test]
    fn site_filters_name_sites_not_sources() {
        let f =
            Filters::parse("1:func=disk_submit off:file=disk.c:42 3:disk 1:file=net.c").unwrap();
        assert_eq!(
            f.as_env(),
            "1:func=disk_submit off:file=disk.c:42 3:disk 1:file=net.c"
        );
        assert_eq!(Filters::parse(&f.as_env()).unwrap(), f);
        // A source's own level comes from source filters alone.
        assert_eq!(f.lookup(b"disk"), Some(Wanted::From(Priority::Warning)));
        assert_eq!(f.lookup(b"net"), None);
        let site = |func: &'static str, file: &'static str, line| SiteKey {
            source: b"disk",
            file: file.as_bytes(),
            func: func.as_bytes(),
            line,
            id: 7,
        };
        let from = |p| Some(Wanted::From(p));
        assert_eq!(
            f.lookup_site(&site("disk_submit", "disk.c", 42)),
            from(Priority::Debug)
        );
        assert_eq!(
            f.lookup_site(&site("disk_read", "a/disk.c", 42)),
            Some(Wanted::Off)
        );
        assert_eq!(
            f.lookup_site(&site("disk_read", "disk.c", 43)),
            from(Priority::Warning)
        );
        assert_eq!(
            f.lookup_site(&site("x", "net.c", 1)),
            from(Priority::Warning)
        );
        for bad in ["1:file=", "1:func=a=b", "1:id=xyz", "1:file=a:b", "1:a:b"] {
            let err = Filters::parse(bad).unwrap_err();
            assert!(
                err.message.contains("file=NAME[:LINE]"),
                "{bad}: {}",
                err.message
            );
        }
    }

    #[test]
    fn at_most_so_many_filters() {
        let many = vec!["1:x"; MAX_FILTERS].join(" ");
        assert_eq!(Filters::parse(&many).unwrap().0.len(), MAX_FILTERS);
        let err = Filters::parse(&format!("{many} 2:y")).unwrap_err();
        assert!(err.message.contains("at most 128"), "{}", err.message);
    }

    #[test]
    fn whole_globs() {
        assert!(glob_match(b"disk_*", b"disk_submit"));
        assert!(glob_match(b"*.c", b"disk.c"));
        assert!(!glob_match(b"disk", b"disk_submit"));
        assert!(glob_match(b"a*b", b"aXbYb"));
        assert!(!glob_match(b"a*b", b"aXbY"));
        assert!(glob_match(b"", b""));
        assert!(!glob_match(b"", b"a"));
    }
}
