//! Configuration: what the environment asks for (the `VLOG_*` variables),
//! parsed by each stage's own parser, and the filters (`filter`). Nothing
//! here opens a file or a socket: the logger applies what was parsed.
//!
//! Imports the parsers of the stages below it (outputs, crash dumps, ring
//! sizes) and the bottom of the crate.

pub mod context;
pub mod file;
pub mod filter;
pub mod limit;
pub mod matcher;
pub mod select;

use crate::crash::target::{parse_dump_signal, DumpTarget};
use crate::error::ConfigError;
use crate::output::spec::{self, Spec};
use crate::priority::Priority;
use crate::ring::check_size;
use filter::Filters;

pub const DEFAULT_LEVEL: Priority = Priority::Warning;
pub const DEFAULT_BUFFER_SIZE: usize = 8 * 1024 * 1024;

/// Parses `VLOG_BUFFER_SIZE`: decimal bytes with an optional K, M or G suffix
/// (binary multiples, either case). Range checks belong to the ring.
pub fn parse_size(s: &str) -> Result<usize, ConfigError> {
    crate::text::num::parse_size(s).ok_or_else(|| {
        ConfigError::new(format!(
            "invalid size '{s}': use a number of bytes with an optional K, M or G suffix, \
             from 16K to 1G (0: no ring)"
        ))
    })
}

/// Parses `VLOG_LEVEL` (and the control socket's `level`): exact `1`..`4`
/// or a name.
pub fn parse_level(s: &str) -> Result<Priority, ConfigError> {
    Priority::parse_level(s)
        .ok_or_else(|| ConfigError::new(format!("invalid level '{s}': use {}", Priority::ACCEPTED)))
}

/// `VLOG_CONTROL` (and `vlog_control_start`'s argument): where the control
/// socket goes (`PATH`, absolute, or `auto` for the default place) and,
/// after `?group=`, a group whose members may use it too.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ControlSpec {
    /// None: the default place (`auto`).
    pub path: Option<std::path::PathBuf>,
    pub group: Option<String>,
}

impl ControlSpec {
    pub fn parse(s: &str) -> Result<ControlSpec, ConfigError> {
        let (place, query) = match s.split_once('?') {
            Some((place, query)) => (place, Some(query)),
            None => (s, None),
        };
        let path = match place {
            "auto" => None,
            p if p.starts_with('/') && p.len() <= 107 => Some(std::path::PathBuf::from(p)),
            _ => {
                return Err(ConfigError::new(format!(
                    "invalid control socket '{s}': use an absolute path of at most 107 bytes, \
                     or auto, then ?group=GROUP if any"
                )))
            }
        };
        let group = match query.map(|q| q.split_once('=')) {
            None => None,
            Some(Some(("group", g))) if !g.is_empty() && !g.contains(['&', '?', ' ']) => {
                Some(g.to_owned())
            }
            Some(_) => {
                return Err(ConfigError::new(format!(
                    "invalid control socket '{s}': the one option is ?group=GROUP"
                )))
            }
        };
        Ok(ControlSpec { path, group })
    }

    /// The value as `VLOG_CONTROL` writes it.
    pub fn as_env(&self) -> String {
        let place = self
            .path
            .as_ref()
            .map_or_else(|| "auto".to_owned(), |p| p.display().to_string());
        match &self.group {
            Some(g) => format!("{place}?group={g}"),
            None => place,
        }
    }
}

/// What the environment asked for. `None` means the variable is unset (or empty),
/// so the built-in default applies.
#[derive(Default)]
pub struct EnvConfig {
    pub level: Option<Priority>,
    pub filters: Option<Filters>,
    /// Parsed, not opened yet.
    pub outputs: Option<Vec<Spec>>,
    pub buffer_size: Option<usize>,
    pub buffer_file: Option<std::path::PathBuf>,
    pub dump: Option<DumpTarget>,
    pub dump_signal: Option<std::ffi::c_int>,
    pub control: Option<ControlSpec>,
    /// `VLOG_WRITER=caller`: no writer thread; each line is written by the
    /// thread that logs it (`thread`, the default: vlog's writer thread).
    pub writer_off: Option<bool>,
    /// `VLOG_CONTEXT`: what an error's context is.
    pub context: Option<context::Context>,
    /// `VLOG_RATELIMIT`: the limit of every site that has none (`Some(None)`:
    /// `off`).
    pub ratelimit: Option<Option<limit::RateLimit>>,
}

/// `VLOG_WRITER`: who writes the outputs' lines.
fn parse_writer(v: &str) -> Result<bool, String> {
    match v {
        "thread" => Ok(false),
        "caller" => Ok(true),
        _ => Err(format!(
            "'{v}' is not a writer: use thread (vlog's writer thread, the default) or caller \
             (each line written by the thread that logs it; no thread of vlog's for it)"
        )),
    }
}

/// Every variable vlog reads. Another `VLOG_*` in the environment is a
/// misspelling or a variable of another version: [`unknown_variables`]
/// names it once.
pub const VARIABLES: [&str; 12] = [
    "VLOG_LEVEL",
    "VLOG_FILTERS",
    "VLOG_OUTPUTS",
    "VLOG_BUFFER_SIZE",
    "VLOG_BUFFER_FILE",
    "VLOG_DUMP",
    "VLOG_DUMP_SIGNAL",
    "VLOG_WRITER",
    "VLOG_CONTEXT",
    "VLOG_RATELIMIT",
    "VLOG_CONTROL",
    "VLOG_CONFIG",
];

/// Warns, in one line, of the `VLOG_*` names among `names` that vlog does
/// not read, each with the known name nearest to it: `VLOG_FILTER=...`
/// silently ignored is a daemon debugged with nothing recorded.
pub fn unknown_variables(names: impl Iterator<Item = String>, warn: impl FnOnce(&str)) {
    let mut unknown: Vec<String> = names
        .filter(|n| n.starts_with("VLOG_") && !VARIABLES.contains(&n.as_str()))
        .map(|n| {
            let nearest = VARIABLES
                .iter()
                .min_by_key(|known| distance(known.as_bytes(), n.as_bytes()))
                .filter(|known| distance(known.as_bytes(), n.as_bytes()) <= 3);
            // (Said through diag, which escapes what a name holds.)
            match nearest {
                Some(known) => format!("{n} (did you mean {known}?)"),
                None => n,
            }
        })
        .collect();
    if unknown.is_empty() {
        return;
    }
    unknown.sort();
    warn(&format!(
        "ignoring {}: vlog reads no such variable (it reads {})",
        unknown.join(", "),
        VARIABLES.join(", ")
    ));
}

/// The edit distance of two names (insertions, deletions, substitutions),
/// on names of at most a few dozen bytes.
pub(crate) fn distance(a: &[u8], b: &[u8]) -> usize {
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (row[j + 1] + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != cb));
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// Reads the `VLOG_*` variables. A bad value is reported through `warn` (one line
/// naming the variable and the problem) and that variable keeps its default: a
/// logger must never stop a daemon from starting.
pub fn from_env(get: impl Fn(&str) -> Option<String>, mut warn: impl FnMut(&str)) -> EnvConfig {
    let mut config = EnvConfig::default();
    let read = |name: &str| get(name).filter(|v| !v.is_empty());

    if let Some(v) = read("VLOG_LEVEL") {
        match parse_level(&v) {
            Ok(p) => config.level = Some(p),
            Err(e) => warn(&format!("ignoring VLOG_LEVEL: {e}")),
        }
    }
    if let Some(v) = read("VLOG_FILTERS") {
        match Filters::parse(&v) {
            Ok(f) => config.filters = Some(f),
            Err(e) => warn(&format!("ignoring VLOG_FILTERS: {e}")),
        }
    }
    if let Some(v) = read("VLOG_OUTPUTS") {
        match spec::parse_list(&v) {
            Ok(o) => config.outputs = Some(o),
            Err(e) => warn(&format!("ignoring VLOG_OUTPUTS: {e}")),
        }
    }
    if let Some(v) = read("VLOG_BUFFER_SIZE") {
        match parse_size(&v).and_then(check_size) {
            Ok(n) => config.buffer_size = Some(n),
            Err(e) => warn(&format!("ignoring VLOG_BUFFER_SIZE: {e}")),
        }
    }
    if let Some(v) = read("VLOG_BUFFER_FILE") {
        match std::path::absolute(&v) {
            Ok(path) => config.buffer_file = Some(path),
            Err(e) => warn(&format!(
                "ignoring VLOG_BUFFER_FILE: invalid path '{v}': {e}"
            )),
        }
    }
    if let Some(v) = read("VLOG_DUMP") {
        match DumpTarget::parse(&v) {
            Ok(t) => config.dump = Some(t),
            Err(e) => warn(&format!("ignoring VLOG_DUMP: {e}")),
        }
    }
    if let Some(v) = read("VLOG_DUMP_SIGNAL") {
        match parse_dump_signal(&v) {
            Ok(sig) => config.dump_signal = Some(sig),
            Err(e) => warn(&format!("ignoring VLOG_DUMP_SIGNAL: {e}")),
        }
    }
    if let Some(v) = read("VLOG_WRITER") {
        match parse_writer(&v) {
            Ok(off) => config.writer_off = Some(off),
            Err(e) => warn(&format!("ignoring VLOG_WRITER: {e}")),
        }
    }
    if let Some(v) = read("VLOG_CONTEXT") {
        match context::Context::parse(&v) {
            Ok(c) => config.context = Some(c),
            Err(e) => warn(&format!("ignoring VLOG_CONTEXT: {e}")),
        }
    }
    if let Some(v) = read("VLOG_RATELIMIT") {
        match limit::RateLimit::parse(&v) {
            Ok(l) => config.ratelimit = Some(l),
            Err(e) => warn(&format!("ignoring VLOG_RATELIMIT: {e}")),
        }
    }
    if let Some(v) = read("VLOG_CONTROL") {
        match ControlSpec::parse(&v) {
            Ok(c) => config.control = Some(c),
            Err(e) => warn(&format!("ignoring VLOG_CONTROL: {e}")),
        }
    }
    config
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn unknown_variables_are_named_with_the_nearest() {
        let mut said = String::new();
        let names = [
            "PATH",
            "VLOG_FILTER",
            "VLOG_LEVEL",
            "VLOG_OUTPUT",
            "VLOG_ZZZZZZZZZZ",
        ];
        unknown_variables(names.iter().map(|n| n.to_string()), |w| said = w.to_owned());
        assert!(
            said.starts_with(
                "ignoring VLOG_FILTER (did you mean VLOG_FILTERS?), VLOG_OUTPUT (did you mean \
                 VLOG_OUTPUTS?), VLOG_ZZZZZZZZZZ: vlog reads no such variable (it reads \
                 VLOG_LEVEL,"
            ),
            "{said}"
        );
        let mut warned = false;
        unknown_variables(["VLOG_LEVEL".to_owned()].into_iter(), |_| warned = true);
        assert!(!warned);
        assert_eq!(distance(b"VLOG_DUMP", b"VLOG_DUMP_SIGNAL"), 7);
        assert_eq!(distance(b"VLOG_WRITERS", b"VLOG_WRITER"), 1);
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("4m"), Ok(4 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        for bad in ["", "K", "1.5M", "-1", "1T", "1 K", "0x10", "1KB"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert!(parse_size("99999999999999999999G").is_err());
        assert!(parse_size("17179869184G").is_err());
    }

    #[test]
    fn env_bad_values_warn_and_keep_defaults() {
        let vars: HashMap<&str, &str> = [
            ("VLOG_LEVEL", "loud"),
            ("VLOG_FILTERS", "1:qemu 9:util"),
            ("VLOG_OUTPUTS", ""),
            ("VLOG_BUFFER_SIZE", "12Q"),
        ]
        .into();
        let mut warnings = Vec::new();
        let c = from_env(
            |k| vars.get(k).map(|v| v.to_string()),
            |w| warnings.push(w.to_owned()),
        );
        assert!(c.level.is_none() && c.filters.is_none() && c.outputs.is_none());
        assert!(c.buffer_size.is_none());
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert!(warnings[0].contains("VLOG_LEVEL") && warnings[0].contains("'loud'"));
        assert!(warnings[1].contains("VLOG_FILTERS") && warnings[1].contains("'9'"));
        assert!(warnings[2].contains("VLOG_BUFFER_SIZE") && warnings[2].contains("'12Q'"));
    }

    #[test]
    fn control_specs() {
        let c = ControlSpec::parse("/run/d/vlog.sock?group=wheel").unwrap();
        assert_eq!(
            c.path.as_deref(),
            Some(std::path::Path::new("/run/d/vlog.sock"))
        );
        assert_eq!(c.group.as_deref(), Some("wheel"));
        assert_eq!(c.as_env(), "/run/d/vlog.sock?group=wheel");
        assert_eq!(ControlSpec::parse("auto").unwrap(), ControlSpec::default());
        let long = format!("/{}", "a".repeat(107));
        for bad in [
            "",
            "rel/path",
            "auto?",
            "auto?group=",
            "auto?user=x",
            long.as_str(),
        ] {
            assert!(ControlSpec::parse(bad).is_err(), "{bad}");
        }
        assert!(parse_level("5").unwrap_err().message.contains("'5'"));
    }

    #[test]
    fn env_good_values() {
        let vars: HashMap<&str, &str> = [
            ("VLOG_LEVEL", "info"),
            ("VLOG_FILTERS", "1:qemu"),
            ("VLOG_BUFFER_SIZE", "1M"),
        ]
        .into();
        let c = from_env(|k| vars.get(k).map(|v| v.to_string()), |w| panic!("{w}"));
        assert_eq!(c.level, Some(Priority::Info));
        assert_eq!(c.filters.unwrap().0.len(), 1);
        assert_eq!(c.buffer_size, Some(1 << 20));
    }
}
