//! `VLOG_CONTEXT`: how much of what came before an error its outputs print
//! with it (see `logger::context`), and which errors bring none.
//!
//! `N[/SECONDS] [all-threads] [off:MATCH] [off:file=NAME[:LINE]] [off:func=NAME]`:
//! up to N records (0: none), one context per error site every SECONDS
//! (60; 0: every error), the erring thread's records or every thread's,
//! and the errors that are expected (their source as filters match it, or
//! their call site) printed alone.

use super::matcher::{Match, SiteKey, SYNTAX};
use crate::error::ConfigError;
use crate::record::Record;

/// The default: 20 records of the erring thread, one context per error
/// site a minute (DESIGN.md, section 8, says why).
pub const DEFAULT_RECORDS: usize = 20;
pub const DEFAULT_EVERY_S: u64 = 60;
/// The most records one error's context may ask for.
pub const RECORDS_MAX: usize = 1000;
/// The longest interval, a day.
pub const EVERY_MAX_S: u64 = 86_400;

/// What `VLOG_CONTEXT` asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Context {
    pub records: usize,
    pub every_s: u64,
    pub all_threads: bool,
    /// The errors that bring none.
    pub quiet: Vec<Match>,
}

impl Default for Context {
    fn default() -> Context {
        Context::new()
    }
}

impl Context {
    pub const fn new() -> Context {
        Context {
            records: DEFAULT_RECORDS,
            every_s: DEFAULT_EVERY_S,
            all_threads: false,
            quiet: Vec::new(),
        }
    }

    /// Parses the whole string; one bad token refuses it.
    pub fn parse(s: &str) -> Result<Context, ConfigError> {
        let mut tokens = s.split(' ').filter(|t| !t.is_empty());
        let first = tokens
            .next()
            .ok_or_else(|| ConfigError::new("empty context: use N[/SECONDS], 0 for none"))?;
        let (records, every) = match first.split_once('/') {
            Some((n, every)) => (n, Some(every)),
            None => (first, None),
        };
        let records = number(records, RECORDS_MAX as u64).ok_or_else(|| {
            ConfigError::new(format!(
                "invalid number of records '{records}' in context '{first}': use 0 to \
                 {RECORDS_MAX}"
            ))
        })? as usize;
        let every_s = match every {
            None => DEFAULT_EVERY_S,
            Some(every) => number(every, EVERY_MAX_S).ok_or_else(|| {
                ConfigError::new(format!(
                    "invalid interval '{every}' in context '{first}': use seconds from 0 \
                     (every error) to {EVERY_MAX_S}"
                ))
            })?,
        };
        let mut context = Context {
            records,
            every_s,
            all_threads: false,
            quiet: Vec::new(),
        };
        for token in tokens {
            if token == "all-threads" {
                context.all_threads = true;
                continue;
            }
            let quiet = token
                .strip_prefix("off:")
                .and_then(Match::parse)
                .ok_or_else(|| {
                    ConfigError::new(format!(
                        "invalid context option '{token}': use all-threads or off:{SYNTAX}"
                    ))
                })?;
            context.quiet.push(quiet);
        }
        Ok(context)
    }

    /// The value as `VLOG_CONTEXT` writes it, which parses back to the same.
    pub fn as_env(&self) -> String {
        let mut s = format!("{}/{}", self.records, self.every_s);
        if self.all_threads {
            s.push_str(" all-threads");
        }
        for quiet in &self.quiet {
            s.push_str(" off:");
            s.push_str(&quiet.as_env());
        }
        s
    }

    /// Whether the error `rec` is one that brings no context.
    pub fn is_quiet(&self, rec: &Record) -> bool {
        let site = SiteKey {
            source: rec.source,
            file: rec.file,
            func: rec.func,
            line: rec.line,
            id: rec.id,
        };
        self.quiet.iter().any(|q| q.matches(&site))
    }
}

/// A whole decimal number from 0 to `max`.
fn number(s: &str, max: u64) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<u64>().ok().filter(|&n| n <= max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_write_back() {
        assert_eq!(Context::parse("20").unwrap(), Context::new());
        let c = Context::parse(" 5/0  all-threads off:disk.probe off:file=disk.c:42 off:func=f ")
            .unwrap();
        assert_eq!((c.records, c.every_s, c.all_threads), (5, 0, true));
        assert_eq!(
            c.quiet,
            [
                Match::Source("disk.probe".into()),
                Match::File("disk.c".into(), Some(42)),
                Match::Func("f".into())
            ]
        );
        assert_eq!(Context::parse(&c.as_env()).unwrap(), c);
        assert_eq!(Context::parse("0").unwrap().records, 0);
        for (bad, says) in [
            ("", "empty"),
            ("-1", "'-1'"),
            ("1001", "'1001'"),
            ("20/", "interval ''"),
            ("20/86401", "'86401'"),
            ("20 every", "'every'"),
            ("20 off:", "'off:'"),
            ("20 off:file=", "'off:file='"),
            ("20 off:file=a.c:x", "'off:file=a.c:x'"),
            ("20 off:func=", "'off:func='"),
            ("x20", "'x20'"),
        ] {
            let e = Context::parse(bad).unwrap_err();
            assert!(e.message.contains(says), "{bad}: {}", e.message);
        }
    }

    #[test]
    fn quiet_errors_by_source_file_line_and_function() {
        let c = Context::parse("20 off:probe off:file=disk.c:42 off:func=try_open").unwrap();
        let rec = |source: &'static [u8], file: &'static [u8], line, func: &'static [u8]| Record {
            source,
            file,
            line,
            func,
            ..crate::record::sample()
        };
        assert!(c.is_quiet(&rec(b"disk.probe", b"x.c", 1, b"f")));
        assert!(c.is_quiet(&rec(b"disk", b"src/disk.c", 42, b"f")));
        assert!(c.is_quiet(&rec(b"disk", b"disk.c", 42, b"f")));
        assert!(!c.is_quiet(&rec(b"disk", b"src/disk.c", 43, b"f")));
        assert!(!c.is_quiet(&rec(b"disk", b"src/mydisk.c", 42, b"f")));
        assert!(c.is_quiet(&rec(b"disk", b"a.c", 1, b"try_open")));
        assert!(!c.is_quiet(&rec(b"disk", b"a.c", 1, b"try_open2")));
    }
}
