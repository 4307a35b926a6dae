//! `VLOG_OUTPUTS`: where recorded messages are printed, each destination with
//! its own minimum priority.
//!
//! An output that fails (a full disk, a reader gone, a full pipe, fd 2 closed)
//! never stops logging: the line is dropped and counted, the ring and the other
//! outputs go on, and the failure is reported once, then its end once with the
//! number of lines lost. Writes never raise SIGPIPE and never wait for a full
//! pipe. A file output that is deleted or replaced (log rotation) is noticed
//! within a second and opened again by its path.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::config::ConfigError;
use crate::diag;
use crate::priority::Priority;
use crate::sys::{self, FdInfo};

/// Lines that an output could not write, over all outputs (`vlog_stats`).
pub static LINES_LOST: AtomicU64 = AtomicU64::new(0);

/// What an output prints: the text line, a JSON object per line, or a
/// journald entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    Text,
    Json,
    Journal,
    /// RFC 5424.
    Syslog,
}

#[derive(Debug)]
pub enum Target {
    Stderr,
    /// journald's native socket; `ident` is SYSLOG_IDENTIFIER.
    Journald {
        socket: sys::DatagramTarget,
        ident: Vec<u8>,
    },
    /// The local syslog socket, or a collector.
    Syslog {
        socket: SyslogSocket,
        ident: Vec<u8>,
        hostname: Vec<u8>,
        /// What the output last sent: the octet count and the message, for
        /// TCP (one buffer, so the frame goes in one send).
        frame: Vec<u8>,
    },
    File {
        path: PathBuf,
        file: File,
        /// The open file's identity and kind, to notice rotation and to write
        /// to a FIFO without SIGPIPE.
        info: FdInfo,
    },
}

#[derive(Debug)]
pub struct Output {
    pub priority: Priority,
    pub target: Target,
    pub form: Form,
    /// Lines lost since the output started failing; None while it works. The
    /// failure is reported when this becomes Some, the recovery when it
    /// becomes None again.
    failing: Option<u64>,
    /// The coarse second of the last rotation check, and whether reopening
    /// failed then (reported once).
    checked_at: u64,
    reopen_failed: bool,
}

/// A parsed output list, files already open, in the order they will be written.
#[derive(Debug, Default)]
pub struct OutputSpecs(pub Vec<Output>);

/// Opens a log file for appending: created 0600, O_CLOEXEC (std), O_APPEND
/// (each line's write(2) is atomic with respect to other writers), O_NOFOLLOW
/// (a symbolic link planted at the path cannot redirect a privileged daemon's
/// log), O_NONBLOCK (a FIFO needs a reader now and a full one drops lines
/// instead of blocking the daemon; regular files ignore it).
fn open_log_file(path: &Path) -> io::Result<(File, FdInfo)> {
    let file = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => io::Error::other(format!(
                "{e} (it is a symbolic link, which vlog does not follow)"
            )),
            Some(libc::ENXIO) => io::Error::other(format!("{e} (a FIFO with no reader)")),
            _ => e,
        })?;
    let info = sys::fd_info(file.as_raw_fd())?;
    Ok((file, info))
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
        transport: crate::syslog::Transport,
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

impl OutputSpecs {
    /// Parses a whole output string, opening every file it names. One bad token
    /// rejects the string; a later duplicate destination replaces an earlier one
    /// and takes its place at the end, as in libvirt.
    pub fn parse(s: &str) -> Result<OutputSpecs, ConfigError> {
        let mut outputs = Vec::new();
        for spec in OutputSpecs::syntax(s)? {
            outputs.push(Output::open(spec)?);
        }
        Ok(OutputSpecs(outputs))
    }

    /// The syntax half of [`OutputSpecs::parse`]: the tokens, checked, later
    /// duplicates replacing earlier ones, nothing opened.
    pub fn syntax(s: &str) -> Result<Vec<Spec>, ConfigError> {
        let mut specs: Vec<Spec> = Vec::new();
        for token in s.split(' ').filter(|t| !t.is_empty()) {
            let spec = Spec::parse(token)?;
            specs.retain(|o| !o.same_destination(&spec));
            specs.push(spec);
        }
        Ok(specs)
    }
}

impl Output {
    pub fn stderr(priority: Priority) -> Output {
        Output::new(priority, Target::Stderr, Form::Text)
    }

    fn new(priority: Priority, target: Target, form: Form) -> Output {
        Output {
            priority,
            target,
            form,
            failing: None,
            checked_at: sys::coarse_seconds(),
            reopen_failed: false,
        }
    }

    fn open(spec: Spec) -> Result<Output, ConfigError> {
        let socket_error = |what: &str, e: io::Error| {
            ConfigError::new(format!("cannot make a socket for {what}: {e}"))
        };
        let target = match spec.dest {
            Dest::Journald => Target::Journald {
                socket: sys::DatagramTarget::new(crate::journal::SOCKET)
                    .map_err(|e| socket_error("journald", e))?,
                ident: sys::program_name(),
            },
            Dest::Syslog { transport, ident } => {
                use crate::syslog::Transport;
                let socket = match transport {
                    Transport::Local => SyslogSocket::Local(
                        sys::DatagramTarget::new(crate::syslog::LOCAL_SOCKET)
                            .map_err(|e| socket_error("syslog", e))?,
                    ),
                    Transport::Udp(addr) => {
                        let addr = crate::syslog::resolve(&addr)?;
                        let any: std::net::SocketAddr = if addr.is_ipv4() {
                            "0.0.0.0:0".parse().unwrap()
                        } else {
                            "[::]:0".parse().unwrap()
                        };
                        let udp = std::net::UdpSocket::bind(any)
                            .and_then(|u| u.set_nonblocking(true).map(|()| u))
                            .map_err(|e| socket_error("syslog", e))?;
                        SyslogSocket::Udp(udp, addr)
                    }
                    Transport::Tcp(addr) => {
                        SyslogSocket::Tcp(sys::StreamTarget::new(crate::syslog::resolve(&addr)?))
                    }
                };
                Target::Syslog {
                    socket,
                    ident: ident.into_bytes(),
                    hostname: sys::hostname(),
                    frame: Vec::with_capacity(crate::format::LINE_MAX),
                }
            }
            Dest::Stderr => Target::Stderr,
            Dest::File(path) => {
                let (file, info) = open_log_file(&path).map_err(|e| {
                    ConfigError::new(format!("cannot open '{}' for output: {e}", path.display()))
                })?;
                Target::File { path, file, info }
            }
        };
        Ok(Output::new(spec.priority, target, spec.form))
    }
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
            let (ident, transport) = crate::syslog::parse_target(&fields[2..].join(":"), token)?;
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

impl Output {
    /// Writes one finished line with one write(2). Returns what to report,
    /// if anything: the start of a failure, its end, a rotation noticed.
    pub fn write_line(&mut self, line: &[u8]) -> Option<String> {
        let rotated = self.follow_rotation();
        let result = match &mut self.target {
            Target::Stderr => match diag::stderr() {
                Some(kind) => sys::write_no_sigpipe(2, line, kind),
                None => Err(io::Error::other(
                    "fd 2 is closed, or is no longer the file it was when vlog started \
                     (call vlog_reopen() after redirecting it)",
                )),
            },
            Target::File { file, info, .. } => {
                sys::write_no_sigpipe(file.as_raw_fd(), line, info.kind)
            }
            Target::Journald { socket, .. } => socket.send(line),
            Target::Syslog { socket, frame, .. } => socket.send(line, frame),
        };
        // Frames a collector connection had queued when it broke.
        if let Target::Syslog {
            socket: SyslogSocket::Tcp(stream),
            ..
        } = &mut self.target
        {
            let dropped = stream.take_dropped();
            LINES_LOST.fetch_add(dropped, Ordering::Relaxed);
            if let Some(lost) = &mut self.failing {
                *lost += dropped;
            }
        }
        let event = match (result, &mut self.failing) {
            (Ok(()), failing) => failing.take().map(|lost| {
                format!(
                    "{} works again; {lost} line{} could not be written to it",
                    self.describe(),
                    if lost == 1 { "" } else { "s" }
                )
            }),
            (Err(_), Some(lost)) => {
                *lost += 1;
                LINES_LOST.fetch_add(1, Ordering::Relaxed);
                None
            }
            (Err(e), failing) => {
                *failing = Some(1);
                LINES_LOST.fetch_add(1, Ordering::Relaxed);
                Some(format!(
                    "cannot write to {}: {e}; logging goes on, and this is not \
                     reported again until it works",
                    self.describe()
                ))
            }
        };
        match (rotated, event) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        }
    }

    /// At most once a second, checks that a file output's path still names the
    /// file it writes to; if the file was deleted or the path now names another
    /// file (log rotation), opens the path again.
    fn follow_rotation(&mut self) -> Option<String> {
        let Target::File { path, file, info } = &self.target else {
            return None;
        };
        let now = sys::coarse_seconds();
        if now == self.checked_at {
            return None;
        }
        self.checked_at = now;
        let here = std::fs::symlink_metadata(path)
            .ok()
            .map(|m| (m.dev(), m.ino()));
        let deleted = sys::fd_info(file.as_raw_fd()).is_ok_and(|i| i.nlink == 0);
        if here == Some((info.dev, info.ino)) && !deleted {
            return None;
        }
        let what = format!(
            "{} was {} (log rotation?)",
            path.display(),
            if deleted { "deleted" } else { "replaced" }
        );
        match self.reopen() {
            Ok(()) => {
                self.reopen_failed = false;
                Some(format!("{what}: opened it again"))
            }
            Err(e) if !self.reopen_failed => {
                self.reopen_failed = true;
                Some(format!(
                    "{what}; cannot open it again ({e}): still writing to the old file"
                ))
            }
            Err(_) => None,
        }
    }

    /// In a forked child: lets go of a collector connection it shares with
    /// the parent (the next message opens the child's own).
    pub fn after_fork(&mut self) {
        if let Target::Syslog {
            socket: SyslogSocket::Tcp(stream),
            ..
        } = &mut self.target
        {
            stream.disconnect();
        }
    }

    /// Reopens a file output by its path (after logrotate moved it). The old file
    /// stays in use if the new one cannot be opened.
    pub fn reopen(&mut self) -> io::Result<()> {
        if let Target::File { path, file, info } = &mut self.target {
            (*file, *info) = open_log_file(path)?;
        }
        Ok(())
    }

    pub fn sync(&self) -> io::Result<()> {
        match &self.target {
            Target::Stderr | Target::Journald { .. } | Target::Syslog { .. } => Ok(()),
            Target::File { file, .. } => file.sync_data(),
        }
    }

    pub fn describe(&self) -> String {
        match &self.target {
            Target::Stderr => "stderr".to_owned(),
            Target::Journald { .. } => "journald".to_owned(),
            Target::Syslog { socket, .. } => socket.describe(),
            Target::File { path, .. } => path.display().to_string(),
        }
    }
}

/// How a syslog output reaches its daemon or collector.
#[derive(Debug)]
pub enum SyslogSocket {
    Local(sys::DatagramTarget),
    Udp(std::net::UdpSocket, std::net::SocketAddr),
    Tcp(sys::StreamTarget),
}

impl SyslogSocket {
    /// Sends one message; over TCP with its octet count in front (RFC 6587),
    /// made in `frame` so it goes in one send.
    fn send(&mut self, message: &[u8], frame: &mut Vec<u8>) -> io::Result<()> {
        match self {
            SyslogSocket::Local(socket) => socket.send(message),
            SyslogSocket::Udp(socket, addr) => socket.send_to(message, *addr).map(|_| ()),
            SyslogSocket::Tcp(stream) => {
                frame.clear();
                crate::format::put_decimal(message.len() as u64, 1, frame);
                frame.push(b' ');
                frame.extend_from_slice(message);
                stream.send(frame)
            }
        }
    }

    fn describe(&self) -> String {
        match self {
            SyslogSocket::Local(_) => "syslog (/dev/log)".to_owned(),
            SyslogSocket::Udp(_, addr) => format!("syslog udp://{addr}"),
            SyslogSocket::Tcp(stream) => format!("syslog {stream:?}"),
        }
    }
}

/// Sends a raw journald entry through the memfd path, which vlog takes for
/// entries too large for a datagram; for the test that proves it against a
/// real journald.
#[doc(hidden)]
pub fn send_to_journald_via_memfd(entry: &[u8]) -> io::Result<()> {
    sys::DatagramTarget::new(crate::journal::SOCKET)?.send_memfd(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("vlog-output-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    #[test]
    fn valid_forms() {
        let path = tmp("a.log");
        let spec = format!("3:stderr  1:file:{}  debug:stderr", path.display());
        let o = OutputSpecs::parse(&spec).unwrap().0;
        assert_eq!(o.len(), 2);
        assert!(matches!(o[0].target, Target::File { .. }));
        assert!(matches!(o[1].target, Target::Stderr));
        assert_eq!(o[1].priority, Priority::Debug);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(OutputSpecs::parse("").unwrap().0.is_empty());
        let json = tmp("a.json");
        let spec = format!("3:stderr 1:json:{} 2:json:stderr", json.display());
        let o = OutputSpecs::parse(&spec).unwrap().0;
        // json:stderr replaces stderr: one destination, the later form.
        assert_eq!(o.len(), 2);
        assert!(o[0].form == Form::Json && matches!(o[0].target, Target::File { .. }));
        assert!(o[1].form == Form::Json && matches!(o[1].target, Target::Stderr));
        assert_eq!(o[1].priority, Priority::Info);
    }

    #[test]
    fn invalid_forms() {
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
            ("1:file:/nonexistent-dir/x.log", "cannot open"),
            ("1:file:", "path"),
            ("1:syslog:a:b", "PRIORITY:syslog:IDENT"),
            ("1:syslog:d@ftp://127.0.0.1:1", "unknown transport"),
            ("1:syslog:d@udp://no-port", "HOST:PORT"),
            (
                "1:syslog:d@udp://no.such.host.invalid:514",
                "cannot resolve",
            ),
            ("1:json", "form"),
            ("1:json:a:b", "form"),
        ];
        for (spec, want) in cases {
            let err = OutputSpecs::parse(spec).unwrap_err();
            assert!(err.message.contains(want), "{spec}: {}", err.message);
        }
    }

    #[test]
    fn relative_path_made_absolute_and_duplicates_replaced() {
        let dir = tmp("rel");
        std::fs::create_dir_all(&dir).unwrap();
        let abs = dir.join("x.log");
        let spec = format!("1:file:{} 4:stderr 3:file:{}", abs.display(), abs.display());
        let o = OutputSpecs::parse(&spec).unwrap().0;
        assert_eq!(o.len(), 2);
        assert!(matches!(o[0].target, Target::Stderr));
        assert_eq!(o[1].priority, Priority::Warning);
        let rel = OutputSpecs::parse("1:file:vlog-test-relative.log")
            .unwrap()
            .0;
        let Target::File { path, .. } = &rel[0].target else {
            panic!()
        };
        assert!(path.is_absolute());
        std::fs::remove_file(path).unwrap();
    }
}
