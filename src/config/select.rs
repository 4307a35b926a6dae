//! Which records a reader wants: vlog-dump's options and the control
//! socket's `dump` and `follow` take the same ones, read by the same
//! parsers and applied by one rule.

use crate::config::matcher::contains_match;
use crate::priority::Priority;
use crate::record::Record;
use crate::text::line::put_fields_text;
use crate::text::time::parse_time;

/// The records a reader prints; every part left out selects all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    /// At least this priority.
    pub priority: Option<Priority>,
    /// Sources this matches, as in `VLOG_FILTERS`.
    pub source: Option<String>,
    /// At or after, at or before (ns since the epoch).
    pub since: Option<u64>,
    pub until: Option<u64>,
    /// Text the message or the structured fields contain.
    pub grep: Option<String>,
}

impl Selection {
    pub fn selects(&self, rec: &Record) -> bool {
        self.priority.is_none_or(|p| rec.priority >= p)
            && self
                .source
                .as_ref()
                .is_none_or(|m| contains_match(m.as_bytes(), rec.source))
            && self.since.is_none_or(|t| rec.time_ns >= t)
            && self.until.is_none_or(|t| rec.time_ns <= t)
            && self.grep.as_ref().is_none_or(|g| {
                let g = g.as_bytes();
                let within = |hay: &[u8]| g.is_empty() || hay.windows(g.len()).any(|w| w == g);
                if within(rec.message) {
                    return true;
                }
                let mut fields = Vec::new();
                put_fields_text(rec.fields, &mut fields);
                within(&fields)
            })
    }

    /// Sets the option `name` (without its dashes) from `value`, as the
    /// command-line tools and the control socket take it.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        match name {
            "priority" => self.priority = Some(parse_priority(value)?),
            "source" => self.source = Some(value.to_owned()),
            "since" => self.since = Some(parse_when(value)?),
            "until" => self.until = Some(parse_when(value)?),
            "grep" => self.grep = Some(value.to_owned()),
            _ => return Err(format!("unknown option '--{name}'")),
        }
        Ok(())
    }
}

/// A priority as the tools take it (`--priority`).
pub fn parse_priority(v: &str) -> Result<Priority, String> {
    Priority::parse_field(v)
        .ok_or_else(|| format!("invalid priority '{v}': use {}", Priority::ACCEPTED))
}

/// A time as the tools take it (`--since`, `--until`).
pub fn parse_when(v: &str) -> Result<u64, String> {
    parse_time(v).ok_or_else(|| {
        format!(
            "invalid time '{v}': use 'YYYY-MM-DD HH:MM:SS[.fff]' (UTC) or @SECONDS since the epoch"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_select_as_vlog_dump_does() {
        let mut s = Selection::default();
        s.set("priority", "info").unwrap();
        s.set("source", "qemu").unwrap();
        s.set("grep", "disk").unwrap();
        let rec = Record {
            seq: 1,
            time_ns: 5,
            tid: 1,
            line: 1,
            priority: Priority::Warning,
            source: b"qemu.monitor",
            file: b"",
            func: b"",
            message: b"disk full",
            fields: b"",
            context: false,
            id: 0,
        };
        assert!(s.selects(&rec), "{s:?}");
        assert!(
            !s.selects(&Record {
                source: b"util",
                ..rec
            }),
            "{s:?}"
        );
        assert!(
            !s.selects(&Record {
                priority: Priority::Debug,
                ..rec
            }),
            "{s:?}"
        );
        s.set("since", "@1").unwrap();
        assert!(!s.selects(&rec), "{s:?}");
        assert!(
            s.set("priority", "loud").unwrap_err().contains("'loud'"),
            "{s:?}"
        );
        assert!(s.set("when", "x").unwrap_err().contains("--when"), "{s:?}");
    }
}
