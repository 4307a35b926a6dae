//! `VLOG_OUTPUTS` as written: the output tokens, parsed and checked, nothing
//! opened (opening is `Output::open`'s). libvirt's rules: one bad token
//! rejects the whole string; the same destination named twice, the later
//! one wins and takes its place at the end.

use std::path::PathBuf;

use super::rotate::{parse_file_options, Rotate};
use crate::error::ConfigError;
use crate::priority::{Priority, FACILITY_DAEMON};

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
    /// A Fluent forward protocol event (MessagePack).
    Fluent,
}

/// One output token, parsed and checked but not opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    pub priority: Priority,
    pub dest: Dest,
    pub form: Form,
    /// `?max=SIZE&keep=N` on a file (see `rotate`).
    pub rotate: Option<Rotate>,
    /// `?sync`: every line this output prints is written by the thread that
    /// logs it before its call returns, as an error line always is.
    pub sync: bool,
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
        /// `?facility=NAME`: the facility of vlog's own records (a
        /// syslog(3) call's record keeps the call's); `daemon` unless set,
        /// and openlog's for `PRIO:syslog`.
        facility: u8,
    },
    /// A Fluent forward protocol receiver (Fluentd, Fluent Bit, Vector, the
    /// OpenTelemetry Collector).
    Fluent {
        peer: FluentPeer,
        tag: String,
        options: FluentOptions,
    },
}

/// Where a Fluent output connects: HOST:PORT (resolved when the output is
/// opened), or a Unix socket's absolute path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FluentPeer {
    Tcp(String),
    Unix(PathBuf),
}

/// A Fluent output's options (`?ack&size=64K&age=1000&queue=1M`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FluentOptions {
    /// Ask for an acknowledgement of each batch, and send again what was
    /// not acknowledged when the connection broke.
    pub ack: bool,
    /// A batch is sealed and sent when its events reach this many bytes.
    pub batch: usize,
    /// ... or when its first event is this many milliseconds old.
    pub age_ms: u64,
    /// What is kept for sending (batches sealed, not sent or not
    /// acknowledged yet, and the open one); an event that does not fit is
    /// dropped and counted.
    pub queue: usize,
}

impl Default for FluentOptions {
    fn default() -> FluentOptions {
        FluentOptions {
            ack: false,
            batch: FLUENT_BATCH_DEFAULT,
            age_ms: FLUENT_AGE_DEFAULT_MS,
            queue: FLUENT_QUEUE_DEFAULT,
        }
    }
}

pub const FLUENT_BATCH_DEFAULT: usize = 64 * 1024;
pub const FLUENT_AGE_DEFAULT_MS: u64 = 1000;
pub const FLUENT_QUEUE_DEFAULT: usize = 1 << 20;
/// The bounds of the options; the queue holds at least two batches, and
/// two of the largest events (see `fluent::EVENT_MAX`).
pub const FLUENT_BATCH_MIN: usize = 4 * 1024;
pub const FLUENT_QUEUE_MIN: usize = 128 * 1024;
pub const FLUENT_BATCH_MAX: usize = 8 << 20;
pub const FLUENT_QUEUE_MAX: usize = 256 << 20;
pub const FLUENT_AGE_MAX_MS: u64 = 60_000;

impl Spec {
    /// Outputs naming one destination replace each other: stderr (text or
    /// JSON), journald, one file, one syslog socket or collector.
    pub fn same_destination(&self, other: &Spec) -> bool {
        match (&self.dest, &other.dest) {
            (Dest::Syslog { transport: a, .. }, Dest::Syslog { transport: b, .. }) => a == b,
            (Dest::Fluent { peer: a, .. }, Dest::Fluent { peer: b, .. }) => a == b,
            (a, b) => a == b,
        }
    }
}

impl Spec {
    /// The token as `VLOG_OUTPUTS` writes it (the priority as a number,
    /// libvirt's form; a fluent output's options only where they are not
    /// the defaults), which parses back to this spec.
    pub fn as_env(&self) -> String {
        let token = self.token();
        match (self.sync, &self.dest) {
            (false, _) => token,
            (true, _) if token.contains('?') => {
                format!("{token}&sync")
            }
            (true, _) => format!("{token}?sync"),
        }
    }

    /// The token without `?sync`.
    fn token(&self) -> String {
        let p = self.priority as u8;
        match (&self.dest, self.form) {
            (Dest::Stderr, Form::Json) => format!("{p}:json:stderr"),
            (Dest::Stderr, _) => format!("{p}:stderr"),
            (Dest::File(path), form) => {
                let kind = if form == Form::Json { "json" } else { "file" };
                match self.rotate {
                    None => format!("{p}:{kind}:{}", path.display()),
                    Some(Rotate { max, keep }) => {
                        format!("{p}:{kind}:{}?max={max}&keep={keep}", path.display())
                    }
                }
            }
            (Dest::Journald, _) => format!("{p}:journald"),
            (
                Dest::Syslog {
                    transport,
                    ident,
                    facility,
                },
                _,
            ) => {
                let query = match crate::priority::facility_name(*facility) {
                    Some(name) if *facility != FACILITY_DAEMON => format!("?facility={name}"),
                    _ => String::new(),
                };
                match transport {
                    Transport::Program => format!("{p}:syslog"),
                    Transport::Local => format!("{p}:syslog:{ident}{query}"),
                    Transport::Udp(addr) => format!("{p}:syslog:{ident}@udp://{addr}{query}"),
                    Transport::Tcp(addr) => format!("{p}:syslog:{ident}@tcp://{addr}{query}"),
                }
            }
            (Dest::Fluent { peer, tag, options }, _) => {
                let url = match peer {
                    FluentPeer::Tcp(addr) => format!("tcp://{addr}"),
                    FluentPeer::Unix(path) => format!("unix:{}", path.display()),
                };
                let d = FluentOptions::default();
                let mut opts = Vec::new();
                if options.ack {
                    opts.push("ack".to_owned());
                }
                if options.batch != d.batch {
                    opts.push(format!("size={}", options.batch));
                }
                if options.age_ms != d.age_ms {
                    opts.push(format!("age={}", options.age_ms));
                }
                if options.queue != d.queue {
                    opts.push(format!("queue={}", options.queue));
                }
                let query = if opts.is_empty() {
                    String::new()
                } else {
                    format!("?{}", opts.join("&"))
                };
                format!("{p}:fluent:{tag}@{url}{query}")
            }
        }
    }
}

/// Where a syslog output sends: the local socket, or HOST:PORT (resolved
/// when the output is opened).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    /// `PRIO:syslog`: /dev/log as the program's own syslog(3) calls would
    /// send to it (openlog's ident, options and facility, glibc's form).
    Program,
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
    /// One token; `?sync` at its end (`&sync` after a fluent output's
    /// options) asks for synchronous lines.
    fn parse(token: &str) -> Result<Spec, ConfigError> {
        let (rest, sync) = match token
            .strip_suffix("?sync")
            .or_else(|| token.strip_suffix("&sync").filter(|t| t.contains('?')))
        {
            Some(rest) => (rest, true),
            None => (token, false),
        };
        let spec = Spec::parse_token(rest)?;
        Ok(Spec {
            sync: sync || spec.sync,
            ..spec
        })
    }

    fn parse_token(token: &str) -> Result<Spec, ConfigError> {
        let fields: Vec<&str> = token.split(':').collect();
        let prio = fields[0];
        let priority = Priority::parse_field(prio).ok_or_else(|| {
            ConfigError::new(format!(
                "invalid priority '{prio}' in output '{token}': use {}",
                Priority::ACCEPTED
            ))
        })?;
        let Some(&dest) = fields.get(1) else {
            return Err(ConfigError::new(format!(
                "malformed output '{token}': expected PRIORITY:DESTINATION"
            )));
        };
        if dest.starts_with("syslog?") && fields.len() == 2 {
            return Err(ConfigError::new(format!(
                "output '{token}': PRIORITY:syslog sends with openlog's facility; \
                 ?facility= is for PRIORITY:syslog:IDENT"
            )));
        }
        // libvirt's field counts; `json` (ours) takes a path or `stderr`.
        let (wanted, form) = match dest {
            "stderr" | "journald" => (2, ""),
            "file" => (3, ":PATH"),
            "syslog" => (3, ":IDENT (or PRIORITY:syslog alone)"),
            "json" => (3, ":PATH or PRIORITY:json:stderr"),
            "fluent" => (3, ":TAG@tcp://HOST:PORT or PRIORITY:fluent:TAG@unix:/PATH"),
            _ => {
                return Err(ConfigError::new(format!(
                    "invalid destination '{dest}' in output '{token}': use stderr, file, json, syslog, journald or fluent"
                )))
            }
        };
        if dest == "syslog" && fields.len() == 2 {
            // Ours: the program's own syslog(3) destination.
            return Ok(Spec {
                priority,
                dest: Dest::Syslog {
                    transport: Transport::Program,
                    ident: String::new(),
                    facility: FACILITY_DAEMON,
                },
                form: Form::Syslog,
                rotate: None,
                sync: false,
            });
        }
        if dest == "syslog" && fields.len() >= 3 {
            // IDENT, or IDENT@udp://HOST:PORT (whose colons libvirt's field
            // count does not know about).
            let (ident, transport, facility) = parse_target(&fields[2..].join(":"), token)?;
            return Ok(Spec {
                priority,
                dest: Dest::Syslog {
                    transport,
                    ident,
                    facility,
                },
                form: Form::Syslog,
                rotate: None,
                sync: false,
            });
        }
        if dest == "fluent" && fields.len() >= 3 {
            let (peer, tag, options) = parse_fluent(&fields[2..].join(":"), token)?;
            return Ok(Spec {
                priority,
                dest: Dest::Fluent { peer, tag, options },
                form: Form::Fluent,
                rotate: None,
                sync: false,
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
        // A file's options: `?max=SIZE&keep=N`, and `sync` among them.
        let (target, options) = match fields.get(2).map(|f| f.split_once('?')) {
            Some(Some((target, query))) => (Some(target), Some(query)),
            Some(None) => (fields.get(2).copied(), None),
            None => (None, None),
        };
        let (dest, form) = match (dest, target) {
            ("journald", _) => (Dest::Journald, Form::Journal),
            ("file", Some(p)) => (path(p)?, Form::Text),
            ("json", Some("stderr")) if options.is_none() => (Dest::Stderr, Form::Json),
            ("json", Some("stderr")) => {
                return Err(ConfigError::new(format!(
                    "output '{token}': options (max=, keep=) are for files, not stderr"
                )))
            }
            ("json", Some(p)) => (path(p)?, Form::Json),
            _ => (Dest::Stderr, Form::Text),
        };
        let (rotate, sync) = match options {
            Some(query) => parse_file_options(query, token)?,
            None => (None, false),
        };
        Ok(Spec {
            priority,
            dest,
            form,
            rotate,
            sync,
        })
    }
}

/// Parses what follows `PRIO:syslog:`: `IDENT` (local) or
/// `IDENT@udp://HOST:PORT` / `IDENT@tcp://HOST:PORT` (HOST may be `[v6]`),
/// then `?facility=NAME` if given.
fn parse_target(rest: &str, token: &str) -> Result<(String, Transport, u8), ConfigError> {
    let bad = |why: &str| ConfigError::new(format!("output '{token}': {why}"));
    let (rest, facility) = match rest.split_once('?') {
        None => (rest, FACILITY_DAEMON),
        Some((rest, query)) => {
            let name = query.strip_prefix("facility=").ok_or_else(|| {
                bad(&format!(
                    "unknown option '{query}': a syslog output takes ?facility=NAME"
                ))
            })?;
            let code = crate::priority::facility_by_name(name).ok_or_else(|| {
                bad(&format!(
                    "unknown facility '{name}': use {}",
                    crate::priority::facility_names()
                ))
            })?;
            (rest, code)
        }
    };
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
        return Err(bad(
            "IDENT must be 1 to 48 printable ASCII characters other than '?'",
        ));
    }
    Ok((ident.to_owned(), transport, facility))
}

/// Parses what follows `PRIO:fluent:`: `TAG@tcp://HOST:PORT` or
/// `TAG@unix:/PATH`, then `?` and options joined by `&`: `ack`, `size=N`
/// (K, M suffixes), `age=MS`, `queue=N`.
fn parse_fluent(
    rest: &str,
    token: &str,
) -> Result<(FluentPeer, String, FluentOptions), ConfigError> {
    let bad = |why: &str| ConfigError::new(format!("output '{token}': {why}"));
    let form = "use TAG@tcp://HOST:PORT or TAG@unix:/PATH, then ?OPTIONS if any";
    let (target, query) = match rest.split_once('?') {
        Some((target, query)) => (target, Some(query)),
        None => (rest, None),
    };
    let (tag, url) = target.split_once('@').ok_or_else(|| bad(form))?;
    let tag_ok = !tag.is_empty()
        && tag.len() <= 128
        && tag.bytes().all(|b| b.is_ascii_graphic())
        && !tag.starts_with('.')
        && !tag.ends_with('.')
        && !tag.contains("..");
    if !tag_ok {
        return Err(bad(
            "TAG must be 1 to 128 printable ASCII characters, dot-separated parts that are not empty",
        ));
    }
    let peer = if let Some(addr) = url.strip_prefix("tcp://") {
        if addr
            .rsplit_once(':')
            .is_none_or(|(host, port)| host.is_empty() || port.parse::<u16>().is_err())
        {
            return Err(bad(&format!("'{addr}' is not HOST:PORT")));
        }
        FluentPeer::Tcp(addr.to_owned())
    } else if let Some(path) = url.strip_prefix("unix:") {
        if !path.starts_with('/') || path.len() > 107 {
            return Err(bad("the socket's path must be absolute, at most 107 bytes"));
        }
        FluentPeer::Unix(PathBuf::from(path))
    } else {
        return Err(bad(form));
    };
    let mut options = FluentOptions::default();
    for option in query.into_iter().flat_map(|q| q.split('&')) {
        let size = |v: &str, min: usize, max: usize| {
            crate::text::num::parse_size(v)
                .filter(|n| (min..=max).contains(n))
                .ok_or_else(|| {
                    bad(&format!(
                        "'{option}': a size from {}K to {}M (K and M suffixes)",
                        min >> 10,
                        max >> 20
                    ))
                })
        };
        match option.split_once('=') {
            None if option == "ack" => options.ack = true,
            Some(("size", v)) => options.batch = size(v, FLUENT_BATCH_MIN, FLUENT_BATCH_MAX)?,
            Some(("queue", v)) => options.queue = size(v, FLUENT_QUEUE_MIN, FLUENT_QUEUE_MAX)?,
            Some(("age", v)) => {
                options.age_ms = v
                    .parse::<u64>()
                    .ok()
                    .filter(|ms| (1..=FLUENT_AGE_MAX_MS).contains(ms))
                    .ok_or_else(|| {
                        bad(&format!(
                            "'{option}': milliseconds from 1 to {FLUENT_AGE_MAX_MS}"
                        ))
                    })?
            }
            _ => {
                return Err(bad(&format!(
                    "unknown option '{option}': use ack, size=N, age=MS or queue=N"
                )))
            }
        }
    }
    if options.queue < 2 * options.batch {
        return Err(bad(
            "the queue must hold at least two batches (queue >= 2 * size)",
        ));
    }
    Ok((peer, tag.to_owned(), options))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each spec written back as `VLOG_OUTPUTS` parses to itself.
    fn round_trips(specs: &[Spec]) {
        for spec in specs {
            assert_eq!(
                &parse_list(&spec.as_env()).unwrap()[0],
                spec,
                "{}",
                spec.as_env()
            );
        }
    }

    #[test]
    fn every_form_written_back_parses_to_itself() {
        let all = "1:stderr 2:json:/tmp/a.json 3:file:/tmp/a.log 4:journald \
                   1:syslog:d 2:syslog:d@udp://h:514 3:syslog:d@tcp://[::1]:601 \
                   1:fluent:a.b@tcp://h:24224 2:fluent:t@unix:/run/f.sock?ack&size=8192&age=5&queue=1048576";
        let specs = parse_list(all).unwrap();
        assert_eq!(specs.len(), 9);
        let written: Vec<String> = specs.iter().map(Spec::as_env).collect();
        assert_eq!(parse_list(&written.join(" ")).unwrap(), specs);
        assert_eq!(
            parse_list("debug:json:stderr").unwrap()[0].as_env(),
            "1:json:stderr"
        );
    }

    #[test]
    fn targets() {
        assert_eq!(
            parse_target("daemon", "t").unwrap(),
            ("daemon".into(), Transport::Local, FACILITY_DAEMON)
        );
        let (ident, t, f) = parse_target("d@udp://127.0.0.1:514", "t").unwrap();
        assert_eq!(
            (ident.as_str(), t, f),
            ("d", Transport::Udp("127.0.0.1:514".into()), FACILITY_DAEMON)
        );
        let (_, t, _) = parse_target("d@tcp://[::1]:6514", "t").unwrap();
        assert_eq!(t, Transport::Tcp("[::1]:6514".into()));
        let (_, t, f) = parse_target("d@tcp://[::1]:6514?facility=local3", "t").unwrap();
        assert_eq!((t, f), (Transport::Tcp("[::1]:6514".into()), 19));
        let (_, t, f) = parse_target("d?facility=authpriv", "t").unwrap();
        assert_eq!((t, f), (Transport::Local, 10));
        for bad in [
            "",
            "a:b",
            "d@ftp://h:1",
            "d@udp://nohostport",
            "d@udp",
            "sp ace",
            "@udp://127.0.0.1:1",
            "d?facility=",
            "d?facility=local8",
            "d?facility=3",
            "d?level=3",
            "d@udp://h:1?facility=daemon?x",
        ] {
            assert!(parse_target(bad, "t").is_err(), "{bad}");
        }
    }

    #[test]
    fn a_syslog_facility_round_trips_and_is_refused_where_it_has_no_place() {
        let specs =
            parse_list("1:syslog:a?facility=local3&sync 2:syslog:b@udp://h:514?facility=daemon")
                .unwrap();
        assert!(specs[0].sync);
        assert_eq!(specs[0].as_env(), "1:syslog:a?facility=local3&sync");
        // The default is not written out.
        assert_eq!(specs[1].as_env(), "2:syslog:b@udp://h:514");
        round_trips(&specs);
        let err = parse_list("1:syslog?facility=local3").unwrap_err();
        assert!(
            err.message.contains("openlog's facility"),
            "{}",
            err.message
        );
        let err = parse_list("1:syslog:a?facility=local9").unwrap_err();
        assert!(
            err.message.contains("unknown facility 'local9': use kern,"),
            "{}",
            err.message
        );
    }

    #[test]
    fn sync_is_asked_at_the_end_of_any_token() {
        let specs = parse_list(
            "2:file:/x/a.log?sync 4:stderr 1:fluent:t@tcp://h:1?ack&sync 3:journald?sync",
        )
        .unwrap();
        let sync: Vec<bool> = specs.iter().map(|s| s.sync).collect();
        assert_eq!(sync, [true, false, true, true], "{specs:?}");
        assert_eq!(specs[0].dest, Dest::File("/x/a.log".into()));
        round_trips(&specs);
        assert_eq!(specs[2].as_env(), "1:fluent:t@tcp://h:1?ack&sync");
        assert_eq!(
            parse_list("1:fluent:t@tcp://h:1?sync").unwrap()[0].as_env(),
            "1:fluent:t@tcp://h:1?sync"
        );
        let err = parse_list("2:stderr?sink").unwrap_err();
        assert!(err.message.contains("2:stderr?sink"), "{}", err.message);
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
        // Ours: the program's own syslog(3) destination, beside a syslog
        // output of another ident (two destinations).
        let own = parse_list("2:syslog 1:syslog:d").unwrap();
        assert_eq!(own.len(), 2);
        assert_eq!(own[0].as_env(), "2:syslog");
        assert_eq!(parse_list(&own[0].as_env()).unwrap()[0], own[0]);
        let cases = [
            ("stderr", "priority"),
            ("0:stderr", "priority"),
            ("1", "malformed"),
            ("1:Stderr", "destination"),
            ("1:stderr:x", "form"),
            ("1:file", "form"),
            ("1:file:/a:b", "form"),
            ("1:syslog:", "IDENT must be"),
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
    fn fluent_outputs() {
        let specs =
            parse_list("3:fluent:app.web@tcp://127.0.0.1:24224 1:fluent:a@unix:/run/f.sock?ack&size=16K&age=50&queue=1M")
                .unwrap();
        assert_eq!(specs.len(), 2);
        assert_eq!(
            specs[0].dest,
            Dest::Fluent {
                peer: FluentPeer::Tcp("127.0.0.1:24224".into()),
                tag: "app.web".into(),
                options: FluentOptions::default(),
            }
        );
        assert_eq!(specs[0].form, Form::Fluent);
        let Dest::Fluent { peer, options, .. } = &specs[1].dest else {
            panic!()
        };
        assert_eq!(peer, &FluentPeer::Unix("/run/f.sock".into()));
        assert_eq!(
            *options,
            FluentOptions {
                ack: true,
                batch: 16 * 1024,
                age_ms: 50,
                queue: 1 << 20
            }
        );
        // One receiver, one output: the later wins.
        let specs = parse_list("3:fluent:a@tcp://h:1 1:fluent:b@tcp://h:1?ack").unwrap();
        assert_eq!(specs.len(), 1);
        for (spec, want) in [
            ("1:fluent", "form"),
            ("1:fluent:tag", "TAG@tcp"),
            ("1:fluent:@tcp://h:1", "TAG must"),
            ("1:fluent:a..b@tcp://h:1", "TAG must"),
            ("1:fluent:t@udp://h:1", "TAG@tcp"),
            ("1:fluent:t@tcp://h", "HOST:PORT"),
            ("1:fluent:t@unix:rel.sock", "absolute"),
            ("1:fluent:t@tcp://h:1?acks", "unknown option"),
            ("1:fluent:t@tcp://h:1?size=1K", "size from"),
            ("1:fluent:t@tcp://h:1?size=lots", "size from"),
            ("1:fluent:t@tcp://h:1?age=0", "milliseconds"),
            ("1:fluent:t@tcp://h:1?size=1M&queue=1M", "two batches"),
            ("1:fluent:t@tcp://h:1?queue=64K", "size from 128K"),
        ] {
            let err = parse_list(spec).unwrap_err();
            assert!(err.message.contains(want), "{spec}: {}", err.message);
        }
    }

    use crate::output::rotate::ROTATE_KEEP_DEFAULT;

    #[test]
    fn file_rotation_options() {
        let specs = parse_list(
            "1:file:/x/a.log?max=64K&keep=3 2:json:/x/b.json?max=2M 3:file:/x/c.log?keep=2&max=1G&sync",
        )
        .unwrap();
        let rotates: Vec<Option<Rotate>> = specs.iter().map(|s| s.rotate).collect();
        assert_eq!(
            rotates,
            [
                Some(Rotate {
                    max: 64 << 10,
                    keep: 3
                }),
                Some(Rotate {
                    max: 2 << 20,
                    keep: ROTATE_KEEP_DEFAULT
                }),
                Some(Rotate {
                    max: 1 << 30,
                    keep: 2
                }),
            ]
        );
        assert_eq!(specs[0].dest, Dest::File("/x/a.log".into()));
        assert_eq!(specs[1].form, Form::Json);
        assert!(specs[2].sync && !specs[0].sync);
        round_trips(&specs);
        assert_eq!(specs[0].as_env(), "1:file:/x/a.log?max=65536&keep=3");
        assert_eq!(
            specs[2].as_env(),
            "3:file:/x/c.log?max=1073741824&keep=2&sync"
        );
        // The same file with other options is the same destination.
        assert_eq!(
            parse_list("1:file:/x/a?max=1M 2:file:/x/a").unwrap().len(),
            1
        );
        for (spec, want) in [
            ("1:file:/x/a?max=1K", "from 64K"),
            ("1:file:/x/a?max=2000G", "from 64K"),
            ("1:file:/x/a?max=lots", "from 64K"),
            ("1:file:/x/a?max=", "from 64K"),
            ("1:file:/x/a?keep=2", "needs max"),
            ("1:file:/x/a?max=1M&keep=0", "from 1 to 99"),
            ("1:file:/x/a?max=1M&keep=100", "from 1 to 99"),
            ("1:file:/x/a?what", "unknown option"),
            ("1:file:/x/a?b", "cannot hold '?'"),
            ("1:file:/x/a?max=64K&max=1M", "given twice"),
            ("1:file:/x/a?max=64K&keep=2&keep=3", "given twice"),
            ("1:file:/x/a?max=64K&keep=+3", "from 1 to 99"),
            ("1:json:stderr?max=1M", "for files"),
        ] {
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
        assert!(path.is_absolute(), "{path:?}");
    }
}
