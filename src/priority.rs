//! Priorities: libvirt's numbering, parsed from the forms users already
//! write, and the one table that maps them onto syslog's severities.

use std::fmt;

/// A message priority. The numbers are libvirt's and cross the C boundary as
/// plain integers; this enum exists only inside the core.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Priority {
    Debug = 1,
    Info = 2,
    Warning = 3,
    Error = 4,
}

impl Priority {
    pub const ALL: [Priority; 4] = [
        Priority::Debug,
        Priority::Info,
        Priority::Warning,
        Priority::Error,
    ];

    /// The priority for a number from C. Values outside 1..=4 are clamped, so a
    /// caller that passes a syslog-style number loses nothing: below debug counts
    /// as debug, above error as error.
    pub fn clamped(value: i32) -> Priority {
        Priority::ALL[(value.clamp(1, 4) - 1) as usize]
    }

    pub fn from_number(value: u64) -> Option<Priority> {
        Priority::ALL.get(value.checked_sub(1)? as usize).copied()
    }

    /// syslog's severity number (RFC 5424), which journald's PRIORITY and
    /// every syslog output use: debug 7, info 6, warning 4, error 3.
    pub fn syslog_severity(self) -> u8 {
        match self {
            Priority::Debug => 7,
            Priority::Info => 6,
            Priority::Warning => 4,
            Priority::Error => 3,
        }
    }

    /// The word used in the text line (libvirt's spelling).
    pub fn name(self) -> &'static str {
        match self {
            Priority::Debug => "debug",
            Priority::Info => "info",
            Priority::Warning => "warning",
            Priority::Error => "error",
        }
    }

    /// The priority of a level a child names in its output: hclog's and
    /// go-plugin's `trace`, `debug`, `info`, `warn`, `error` and vlog's and
    /// libvirt's `warning`, in any case (`trace` has no vlog priority of its
    /// own: it is debug).
    pub fn from_child_level(name: &[u8]) -> Option<Priority> {
        let mut lower = [0u8; 7];
        let word = lower.get_mut(..name.len())?;
        word.copy_from_slice(name);
        word.make_ascii_lowercase();
        Some(match &*word {
            b"trace" | b"debug" => Priority::Debug,
            b"info" => Priority::Info,
            b"warn" | b"warning" => Priority::Warning,
            b"error" => Priority::Error,
            _ => return None,
        })
    }

    /// The priority of a syslog severity (0-7, the `<N>` prefix of kernel
    /// and sd-daemon lines): emergency to error are errors, notice is info.
    pub const fn from_syslog_severity(severity: u8) -> Priority {
        match severity & 7 {
            0..=3 => Priority::Error,
            4 => Priority::Warning,
            5 | 6 => Priority::Info,
            _ => Priority::Debug,
        }
    }

    /// vlog's names, and syslog's severity names as syslog.conf(5),
    /// logger(1) and `journalctl -p` spell them (lower case), each read as
    /// the vlog priority of vlog(7)'s table: notice is info; err, crit,
    /// alert and emerg (and its old name panic) are error. Numbers stay
    /// vlog's (1-4): syslog's 0-7 run the other way, and the same digit
    /// would mean two priorities.
    fn from_name(s: &str) -> Option<Priority> {
        Some(match s {
            "debug" => Priority::Debug,
            "info" => Priority::Info,
            "warn" | "warning" => Priority::Warning,
            "error" => Priority::Error,
            _ => {
                let severity = SEVERITY_NAMES.iter().find(|n| n.0 == s)?.1;
                Priority::from_syslog_severity(severity)
            }
        })
    }

    /// What a priority field takes, for the error messages that refuse one.
    pub const ACCEPTED: &'static str =
        "1-4, or debug, info (notice), warning (warn), error (err, crit, alert, emerg)";

    /// `VLOG_LEVEL` and `vlog_set_level` by name: exactly `1`..`4` or a name,
    /// case-sensitive, as libvirt's `LIBVIRT_DEBUG` (which has no `warn`).
    pub fn parse_level(s: &str) -> Option<Priority> {
        match s {
            "1" => Some(Priority::Debug),
            "2" => Some(Priority::Info),
            "3" => Some(Priority::Warning),
            "4" => Some(Priority::Error),
            _ => Priority::from_name(s),
        }
    }

    /// The priority field of a filter or output token. libvirt reads it with
    /// `strtoul` and then insists the whole field was consumed, so it accepts
    /// leading white space, one `+` sign and leading zeros (`+01`), and rejects a
    /// `-`, an empty field and anything after the digits. Names are our extension.
    pub fn parse_field(s: &str) -> Option<Priority> {
        if let Some(p) = Priority::from_name(s) {
            return Some(p);
        }
        let digits = s.trim_start_matches(|c: char| c.is_ascii_whitespace() || c == '\x0b');
        let digits = digits.strip_prefix('+').unwrap_or(digits);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        // An overflowing number is ERANGE for strtoul: rejected, not wrapped.
        Priority::from_number(digits.parse::<u64>().ok()?)
    }
}

/// syslog's severity names, as glibc's <syslog.h> (`prioritynames`),
/// syslog.conf(5) and `journalctl -p` spell them, by their number; `panic`
/// is emerg's old name. vlog reads each as `from_syslog_severity` maps it.
const SEVERITY_NAMES: [(&str, u8); 9] = [
    ("emerg", 0),
    ("panic", 0),
    ("alert", 1),
    ("crit", 2),
    ("err", 3),
    ("warning", 4),
    ("notice", 5),
    ("info", 6),
    ("debug", 7),
];

/// syslog's facility names as glibc's <syslog.h> spells them (and
/// syslog.conf(5), logger(1), rsyslog after it), by their code: the PRI is
/// code * 8 + severity. Codes 12-15 have no name there and are not offered.
const FACILITIES: [(&str, u8); 20] = [
    ("kern", 0),
    ("user", 1),
    ("mail", 2),
    ("daemon", 3),
    ("auth", 4),
    ("syslog", 5),
    ("lpr", 6),
    ("news", 7),
    ("uucp", 8),
    ("cron", 9),
    ("authpriv", 10),
    ("ftp", 11),
    ("local0", 16),
    ("local1", 17),
    ("local2", 18),
    ("local3", 19),
    ("local4", 20),
    ("local5", 21),
    ("local6", 22),
    ("local7", 23),
];

/// LOG_DAEMON: vlog's users are daemons.
pub const FACILITY_DAEMON: u8 = 3;

/// The code of a syslog facility by its name (`daemon`, `local3`, ...).
pub fn facility_by_name(name: &str) -> Option<u8> {
    FACILITIES.iter().find(|f| f.0 == name).map(|f| f.1)
}

/// The name of a facility's code, as `facility_by_name` takes it.
pub fn facility_name(code: u8) -> Option<&'static str> {
    FACILITIES.iter().find(|f| f.1 == code).map(|f| f.0)
}

/// The names `facility_by_name` takes, for an error message.
pub fn facility_names() -> String {
    FACILITIES
        .iter()
        .map(|f| f.0)
        .collect::<Vec<_>>()
        .join(", ")
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syslogs_severity_names_are_read_as_their_severity_maps() {
        use Priority::*;
        for (name, want) in [
            ("emerg", Error),
            ("panic", Error),
            ("alert", Error),
            ("crit", Error),
            ("err", Error),
            ("warning", Warning),
            ("notice", Info),
            ("info", Info),
            ("debug", Debug),
        ] {
            assert_eq!(Priority::parse_field(name), Some(want), "{name}");
            assert_eq!(Priority::parse_level(name), Some(want), "{name}");
        }
        // What vlog writes as a severity, read back by name, is the same
        // priority: the mapping goes both ways.
        for p in Priority::ALL {
            let n = SEVERITY_NAMES
                .iter()
                .find(|n| n.1 == p.syslog_severity())
                .unwrap();
            assert_eq!(Priority::parse_field(n.0), Some(p), "{}", n.0);
        }
        // syslog's numbers are not vlog's: 0 and 5-7 are refused, never
        // read as syslog's emerg or notice.
        for bad in ["none", "ERR", "Notice", "emergency", "0", "5", "7", "crit "] {
            assert_eq!(Priority::parse_field(bad), None, "{bad:?}");
            assert_eq!(Priority::parse_level(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn field_follows_strtoul_rules() {
        assert_eq!(Priority::parse_field("1"), Some(Priority::Debug));
        assert_eq!(Priority::parse_field("+2"), Some(Priority::Info));
        assert_eq!(Priority::parse_field("004"), Some(Priority::Error));
        assert_eq!(Priority::parse_field("\t3"), Some(Priority::Warning));
        assert_eq!(Priority::parse_field("warn"), Some(Priority::Warning));
        for bad in [
            "",
            "0",
            "5",
            "-1",
            "1x",
            "+",
            "++1",
            "1 ",
            "DEBUG",
            "99999999999999999999999",
        ] {
            assert_eq!(Priority::parse_field(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn level_is_exact() {
        assert_eq!(Priority::parse_level("warning"), Some(Priority::Warning));
        assert_eq!(Priority::parse_level("warn"), Some(Priority::Warning));
        assert_eq!(Priority::parse_level("2"), Some(Priority::Info));
        for bad in ["01", "+1", " 1", "Debug", "", "0", "5"] {
            assert_eq!(Priority::parse_level(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn facilities_by_name() {
        assert_eq!(facility_by_name("daemon"), Some(FACILITY_DAEMON));
        assert_eq!(facility_by_name("authpriv"), Some(10));
        assert_eq!(facility_by_name("local3"), Some(19));
        assert_eq!(facility_by_name("local7"), Some(23));
        for bad in ["", "Daemon", "local8", "3", "LOG_DAEMON"] {
            assert_eq!(facility_by_name(bad), None, "{bad:?}");
        }
        for (name, code) in FACILITIES {
            assert_eq!(facility_name(code), Some(name));
        }
        assert_eq!(facility_name(12), None);
    }

    #[test]
    fn clamping() {
        assert_eq!(Priority::clamped(-7), Priority::Debug);
        assert_eq!(Priority::clamped(0), Priority::Debug);
        assert_eq!(Priority::clamped(3), Priority::Warning);
        assert_eq!(Priority::clamped(7), Priority::Error);
    }
}
