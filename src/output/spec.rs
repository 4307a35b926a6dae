//! `VLOG_OUTPUTS` as written: the output tokens, parsed and checked, nothing
//! opened (opening is `Output::open`'s). libvirt's rules: one bad token
//! rejects the whole string; the same destination named twice, the later
//! one wins and takes its place at the end.

use std::path::PathBuf;

use crate::error::ConfigError;
use crate::priority::Priority;

/// What an output prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// The text line.
    Text,
    /// A JSON object per line.
    Json,
    /// A journald entry.
    Journal,
    /// A syslog message (RFC 3164 on /dev/log, RFC 5424 to a collector).
    Syslog,
}

/// One output token, parsed and checked but not opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    pub priority: Priority,
    pub dest: Dest,
    pub form: Form,
}

/// Where an output goes; two outputs with one destination replace each other.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dest {
    Stderr,
    /// An absolute path.
    File(PathBuf),
    Journald,
    Syslog {
        transport: Transport,
        ident: String,
    },
}

impl Spec {
    /// Outputs naming one destination replace each other: stderr (text or
    /// JSON), journald, one file, one syslog socket or collector.
    pub fn same_destination(&self, other: &Spec) -> bool {
        match (&self.dest, &other.dest) {
            (Dest::Syslog { transport: a, .. }, Dest::Syslog { transport: b, .. }) => a == b,
            (a, b) => a == b,
        }
    }
}

/// Where a syslog output sends: the local socket, or HOST:PORT (resolved
/// when the output is opened).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    Local,
    Udp(String),
    Tcp(String),
}

/// Parses a whole output string: the tokens, checked, later duplicates
/// replacing earlier ones.
pub fn parse_list(s: &str) -> Result<Vec<Spec>, ConfigError> {
    let mut specs: Vec<Spec> = Vec::new();
    for token in s.split(' ').filter(|t| !t.is_empty()) {
        let spec = Spec::parse(token)?;
        specs.retain(|o| !o.same_destination(&spec));
        specs.push(spec);
    }
    Ok(specs)
}

impl Spec {
    fn parse(token: &str) -> Result<Spec, ConfigError> {
        let fields: Vec<&str> = token.split(':').collect();
        let prio = fields[0];
        let priority = Priority::parse_field(prio).ok_or_else(|| {
            ConfigError::new(format!(
                "invalid priority '{prio}' in output '{token}': use 1-4 or debug, info, warning, error"
            ))
        })?;
        let Some(&dest) = fields.get(1) else {
            return Err(ConfigError::new(format!(
                "malformed output '{token}': expected PRIORITY:DESTINATION"
            )));
        };
        // libvirt's field counts; `json` (ours) takes a path or `stderr`.
        let (wanted, form) = match dest {
            "stderr" | "journald" => (2, ""),
            "file" => (3, ":PATH"),
            "syslog" => (3, ":IDENT"),
            "json" => (3, ":PATH or PRIORITY:json:stderr"),
            _ => {
                return Err(ConfigError::new(format!(
                    "invalid destination '{dest}' in output '{token}': use stderr, file, json, syslog or journald"
                )))
            }
        };
        if dest == "syslog" && fields.len() >= 3 {
            // IDENT, or IDENT@udp://HOST:PORT (whose colons libvirt's field
            // count does not know about).
            let (ident, transport) = parse_target(&fields[2..].join(":"), token)?;
            return Ok(Spec {
                priority,
                dest: Dest::Syslog { transport, ident },
                form: Form::Syslog,
            });
        }
        if fields.len() != wanted {
            return Err(ConfigError::new(format!(
                "output '{token}' does not match the form PRIORITY:{dest}{form}"
            )));
        }
        let path = |p: &str| {
            std::path::absolute(p)
                .map(Dest::File)
                .map_err(|e| ConfigError::new(format!("invalid path in output '{token}': {e}")))
        };
        let (dest, form) = match (dest, fields.get(2)) {
            ("journald", _) => (Dest::Journald, Form::Journal),
            ("file", Some(p)) => (path(p)?, Form::Text),
            ("json", Some(&"stderr")) => (Dest::Stderr, Form::Json),
            ("json", Some(p)) => (path(p)?, Form::Json),
            _ => (Dest::Stderr, Form::Text),
        };
        Ok(Spec {
            priority,
            dest,
            form,
        })
    }
}

/// Parses what follows `PRIO:syslog:`: `IDENT` (local) or
/// `IDENT@udp://HOST:PORT` / `IDENT@tcp://HOST:PORT` (HOST may be `[v6]`).
fn parse_target(rest: &str, token: &str) -> Result<(String, Transport), ConfigError> {
    let bad = |why: &str| ConfigError::new(format!("output '{token}': {why}"));
    let (ident, transport) = match rest.split_once('@') {
        None if rest.contains(':') => {
            return Err(bad("does not match the form PRIORITY:syslog:IDENT"));
        }
        None => (rest, Transport::Local),
        Some((ident, url)) => {
            let (scheme, addr) = url
                .split_once("://")
                .ok_or_else(|| bad("use IDENT@udp://HOST:PORT or IDENT@tcp://HOST:PORT"))?;
            if addr
                .rsplit_once(':')
                .is_none_or(|(host, port)| host.is_empty() || port.parse::<u16>().is_err())
            {
                return Err(bad(&format!("'{addr}' is not HOST:PORT")));
            }
            match scheme {
                "udp" => (ident, Transport::Udp(addr.to_owned())),
                "tcp" => (ident, Transport::Tcp(addr.to_owned())),
                _ => {
                    return Err(bad(&format!(
                        "unknown transport '{scheme}': use udp or tcp"
                    )))
                }
            }
        }
    };
    if ident.is_empty() || ident.len() > 48 || !ident.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(bad("IDENT must be 1 to 48 printable ASCII characters"));
    }
    Ok((ident.to_owned(), transport))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        assert_eq!(
            parse_target("daemon", "t").unwrap(),
            ("daemon".into(), Transport::Local)
        );
        let (ident, t) = parse_target("d@udp://127.0.0.1:514", "t").unwrap();
        assert_eq!(
            (ident.as_str(), t),
            ("d", Transport::Udp("127.0.0.1:514".into()))
        );
        let (_, t) = parse_target("d@tcp://[::1]:6514", "t").unwrap();
        assert_eq!(t, Transport::Tcp("[::1]:6514".into()));
        for bad in [
            "",
            "a:b",
            "d@ftp://h:1",
            "d@udp://nohostport",
            "d@udp",
            "sp ace",
            "@udp://127.0.0.1:1",
        ] {
            assert!(parse_target(bad, "t").is_err(), "{bad}");
        }
    }

    #[test]
    fn valid_and_invalid_tokens() {
        let specs = parse_list("3:stderr  1:file:/x/a.log  debug:stderr 2:json:stderr").unwrap();
        // json:stderr replaces stderr: one destination, the later form.
        assert_eq!(specs.len(), 2);
        assert_eq!(specs[0].dest, Dest::File("/x/a.log".into()));
        assert_eq!(
            (specs[1].dest.clone(), specs[1].form),
            (Dest::Stderr, Form::Json)
        );
        assert_eq!(specs[1].priority, Priority::Info);
        assert!(parse_list("").unwrap().is_empty());
        let cases = [
            ("stderr", "priority"),
            ("0:stderr", "priority"),
            ("1", "malformed"),
            ("1:Stderr", "destination"),
            ("1:stderr:x", "form"),
            ("1:file", "form"),
            ("1:file:/a:b", "form"),
            ("1:syslog", "form"),
            ("1:journald:x", "form"),
            ("1:file:", "path"),
            ("1:syslog:a:b", "PRIORITY:syslog:IDENT"),
            ("1:syslog:d@ftp://127.0.0.1:1", "unknown transport"),
            ("1:syslog:d@udp://no-port", "HOST:PORT"),
            ("1:json", "form"),
            ("1:json:a:b", "form"),
        ];
        for (spec, want) in cases {
            let err = parse_list(spec).unwrap_err();
            assert!(err.message.contains(want), "{spec}: {}", err.message);
        }
    }

    #[test]
    fn relative_paths_are_made_absolute() {
        let specs = parse_list("1:file:vlog-test-relative.log").unwrap();
        let Dest::File(path) = &specs[0].dest else {
            panic!()
        };
        assert!(path.is_absolute());
    }
}
