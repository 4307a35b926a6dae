//! `PRIO:syslog:IDENT[@udp://HOST:PORT | @tcp://HOST:PORT]`: to the local
//! syslog daemon (/dev/log) in the traditional form glibc's syslog() sends,
//! which the local daemons parse there, or to a collector in RFC 5424 with the
//! structured fields as SD-PARAMs, over UDP or TCP (octet counting, RFC 6587).
//!
//! `PRIO:syslog` (ours) sends to /dev/log what the program's own syslog(3)
//! calls would have sent there: openlog's ident, options and facility, the
//! call's facility and severity, glibc's form to the byte (local time, the
//! message as it is), and with LOG_PERROR the line on stderr.
//!
//! ```text
//! /dev/log:   <PRI>Mmm dd hh:mm:ss IDENT[PID]: MSG [FIELDS]
//! program:    <PRI>Mmm dd hh:mm:ss IDENT[PID]: MSG       (glibc's; [PID] with LOG_PID)
//! collector:  <PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID - [vlog@32473 SOURCE="..." ...] MSG
//! ```
//! 32473 is the enterprise number RFC 5612 sets aside for examples: vlog has
//! none of its own, and collectors treat the element as opaque.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};

use super::spec::Transport;
use crate::error::ConfigError;
use crate::fields::{self, Value};
use crate::record::Record;
use crate::sys;
use crate::sys::connection::StreamTarget;
use crate::sys::net::DatagramTarget;
use crate::sys::syslog as openlog;
use crate::text::line::{put_escaped, put_fields_text};
use crate::text::num::{decimal, put_decimal, put_signed};
use crate::text::time::{put_rfc3164, put_rfc3339};
use crate::text::Sink;

/// The local syslog daemon's socket.
pub const LOCAL_SOCKET: &[u8] = b"/dev/log";
/// LOG_DAEMON: vlog's users are daemons.
const FACILITY: u8 = 3;
const SD_ID: &[u8] = b"vlog@32473";

/// How a syslog output reaches its daemon or collector.
#[derive(Debug)]
enum Socket {
    /// The program's own destination: made at the first message, as
    /// glibc's is without LOG_NDELAY (a daemon that closes every
    /// descriptor at its start, as sshd does, has not closed it yet).
    Program(Option<DatagramTarget>),
    Local(DatagramTarget),
    Udp(DatagramTarget, SocketAddr),
    Tcp(StreamTarget),
}

/// One syslog output.
#[derive(Debug)]
pub struct Syslog {
    socket: Socket,
    ident: Vec<u8>,
    hostname: Vec<u8>,
    /// The message being sent, with its octet count in front over TCP (one
    /// buffer, so the frame goes in one send); LOG_PERROR's line.
    frame: Vec<u8>,
    /// The program's destination refused a message after the wait (see
    /// `send_riding_out`): no more waits until it takes one again.
    congested: bool,
}

/// Resolves a collector's HOST:PORT to its first address; `what` names it
/// in the error ("syslog collector", "fluent receiver").
pub fn resolve(addr: &str, what: &str) -> Result<SocketAddr, ConfigError> {
    addr.to_socket_addrs()
        .map_err(|e| ConfigError::new(format!("cannot resolve {what} '{addr}': {e}")))?
        .next()
        .ok_or_else(|| ConfigError::new(format!("{what} '{addr}' has no address")))
}

impl Syslog {
    pub fn open(transport: &Transport, ident: &str) -> Result<Syslog, ConfigError> {
        let socket_error =
            |e: io::Error| ConfigError::new(format!("cannot make a socket for syslog: {e}"));
        let socket = match transport {
            Transport::Program => Socket::Program(None),
            Transport::Local => {
                Socket::Local(DatagramTarget::unix(LOCAL_SOCKET).map_err(socket_error)?)
            }
            Transport::Udp(addr) => {
                let addr = resolve(addr, "syslog collector")?;
                Socket::Udp(DatagramTarget::udp(&addr).map_err(socket_error)?, addr)
            }
            Transport::Tcp(addr) => Socket::Tcp(
                StreamTarget::new(resolve(addr, "syslog collector")?).map_err(socket_error)?,
            ),
        };
        let mut frame = Vec::new();
        if let Socket::Tcp(_) | Socket::Program(_) = socket {
            frame
                .try_reserve_exact(crate::text::line::LINE_MAX + 24)
                .map_err(|e| ConfigError::new(format!("cannot make a syslog output: {e}")))?;
        }
        Ok(Syslog {
            socket,
            ident: ident.as_bytes().to_vec(),
            hostname: sys::net::hostname(),
            frame,
            congested: false,
        })
    }

    /// Renders `rec` into `entry` and sends it; over TCP with its octet
    /// count in front (RFC 6587).
    pub fn send(&mut self, rec: &Record, entry: &mut Vec<u8>) -> io::Result<()> {
        entry.clear();
        let pid = sys::process_id();
        match &mut self.socket {
            Socket::Program(socket) => {
                let ident_at = render_program(rec, pid, entry);
                if openlog::option() & libc::LOG_PERROR != 0 {
                    perror(&entry[ident_at..], &mut self.frame);
                }
                let socket = match socket {
                    Some(socket) => socket,
                    None => socket.insert(DatagramTarget::unix_connected(LOCAL_SOCKET)?),
                };
                send_riding_out(socket, entry, &mut self.congested)
            }
            Socket::Local(socket) => {
                render_local(rec, &self.ident, pid, entry);
                socket.send(entry)
            }
            Socket::Udp(socket, _) => {
                render(rec, &self.ident, &self.hostname, pid, entry);
                socket.send(entry)
            }
            Socket::Tcp(stream) => {
                render(rec, &self.ident, &self.hostname, pid, entry);
                self.frame.clear();
                put_decimal(entry.len() as u64, 1, &mut self.frame);
                self.frame.push(b' ');
                self.frame.extend_from_slice(entry);
                stream.send(&self.frame)
            }
        }
    }

    /// Frames a collector connection had queued when it broke, since the
    /// last call.
    pub fn take_dropped(&mut self) -> u64 {
        match &mut self.socket {
            Socket::Tcp(stream) => stream.take_dropped(),
            _ => 0,
        }
    }

    /// Connects to a TCP collector, once the configuration naming it was
    /// accepted.
    pub fn start(&mut self) {
        if let Socket::Tcp(stream) = &mut self.socket {
            stream.start();
        }
    }

    /// Whether the program closed this output's socket since the last call
    /// (a new one was made).
    pub fn take_replaced(&mut self) -> bool {
        match &mut self.socket {
            Socket::Program(socket) => socket.as_mut().is_some_and(|s| s.take_replaced()),
            Socket::Local(socket) | Socket::Udp(socket, _) => socket.take_replaced(),
            Socket::Tcp(stream) => stream.take_replaced(),
        }
    }

    /// In a forked child: lets go of a collector connection it shares with
    /// the parent (the next message opens the child's own).
    pub fn after_fork(&mut self) {
        if let Socket::Tcp(stream) = &mut self.socket {
            stream.disconnect();
        }
    }

    pub fn describe(&self) -> String {
        match &self.socket {
            Socket::Program(_) => "syslog (/dev/log, as the program's syslog(3))".to_owned(),
            Socket::Local(_) => "syslog (/dev/log)".to_owned(),
            Socket::Udp(_, addr) => format!("syslog udp://{addr}"),
            Socket::Tcp(stream) => format!("syslog tcp://{}", stream.addr()),
        }
    }
}

/// How long a message for the program's destination waits, at most, for
/// a syslog daemon whose queue is full. glibc's syslog(3) would block until
/// it is taken; a Unix datagram queue holds as few as 10 messages
/// (net.unix.max_dgram_qlen), so a burst would otherwise be cut short
/// where it reached the daemon before. A daemon that does not take a
/// message in this time is congested: its messages are then dropped and
/// counted at once, without waiting, until one is taken again.
const RIDE_OUT_MS: std::ffi::c_int = 20;

fn send_riding_out(
    socket: &mut DatagramTarget,
    entry: &[u8],
    congested: &mut bool,
) -> io::Result<()> {
    let started = std::time::Instant::now();
    loop {
        match socket.send(entry) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && !*congested => {
                let spent = started.elapsed().as_millis() as std::ffi::c_int;
                if spent >= RIDE_OUT_MS || !socket.wait_for_room(RIDE_OUT_MS - spent) {
                    *congested = true;
                    return Err(e);
                }
            }
            result => {
                if result.is_ok() {
                    *congested = false;
                }
                return result;
            }
        }
    }
}

fn put_pri(rec: &Record, out: &mut impl Sink) {
    out.put(b"<");
    put_decimal(
        (FACILITY * 8 + rec.priority.syslog_severity()) as u64,
        1,
        out,
    );
    out.put(b">");
}

/// Writes the RFC 5424 message for `rec`.
pub fn render(rec: &Record, ident: &[u8], hostname: &[u8], pid: u32, out: &mut impl Sink) {
    put_pri(rec, out);
    out.put(b"1 ");
    put_rfc3339(rec.time_ns, out);
    out.put(b" ");
    out.put(if hostname.is_empty() { b"-" } else { hostname });
    out.put(b" ");
    out.put(ident);
    out.put(b" ");
    put_decimal(pid as u64, 1, out);
    out.put(b" - [");
    out.put(SD_ID);
    put_param(b"SOURCE", rec.source, out);
    put_param(b"CODE_FILE", rec.file, out);
    let mut digits = [0u8; 20];
    put_param(b"CODE_LINE", decimal(rec.line as u64, &mut digits), out);
    put_param(b"CODE_FUNC", rec.func, out);
    for field in fields::decode(rec.fields).iter().flat_map(|f| f.iter()) {
        // An SD-NAME has at most 32 characters.
        let name = &field.name[..field.name.len().min(32)];
        match field.value {
            Value::Str(s) => put_param(name, s, out),
            Value::Int(n) => {
                out.put(b" ");
                out.put(name);
                out.put(b"=\"");
                put_signed(n, out);
                out.put(b"\"");
            }
        }
    }
    out.put(b"] ");
    put_escaped(rec.message, out);
}

/// Writes the message for the local syslog socket in the traditional form
/// (RFC 3164, as glibc's syslog() sends it), which the local daemons parse on
/// /dev/log: `<PRI>Mmm dd hh:mm:ss IDENT[PID]: MSG`; the fields follow the
/// message as in a text line.
pub fn render_local(rec: &Record, ident: &[u8], pid: u32, out: &mut impl Sink) {
    put_pri(rec, out);
    put_rfc3164(rec.time_ns, out);
    out.put(b" ");
    out.put(ident);
    out.put(b"[");
    put_decimal(pid as u64, 1, out);
    out.put(b"]: ");
    put_escaped(rec.message, out);
    put_fields_text(rec.fields, out);
}

/// Writes what glibc's syslog(3) sends to /dev/log for `rec`:
/// `<PRI>Mmm dd hh:mm:ss IDENT[PID]: MSG`, in local time, `[PID]` only with
/// LOG_PID, IDENT openlog's as it reads now. A syslog(3) call's message
/// (it has the fields SYSLOG_FACILITY and SYSLOG_SEVERITY) goes as its
/// bytes are, with the call's facility and severity, so the daemon on
/// /dev/log receives what it did before; any other record is escaped and
/// has its fields after it, as in `render_local`, with openlog's facility.
/// Returns where IDENT starts: what LOG_PERROR writes to stderr.
pub fn render_program(rec: &Record, pid: u32, out: &mut Vec<u8>) -> usize {
    let mut facility = None;
    let mut severity = None;
    for field in fields::decode(rec.fields).iter().flat_map(|f| f.iter()) {
        match (field.name, field.value) {
            (openlog::FACILITY_FIELD, Value::Int(n)) => facility = Some(n),
            (openlog::SEVERITY_FIELD, Value::Int(n)) => severity = Some(n),
            _ => {}
        }
    }
    let call = facility.zip(severity);
    let pri = match call {
        Some((facility, severity)) => facility * 8 + severity,
        None => (openlog::facility() | i32::from(rec.priority.syslog_severity())) as i64,
    };
    out.put(b"<");
    put_signed(pri, out);
    out.put(b">");
    let secs = (rec.time_ns / 1_000_000_000) as i64;
    let local = secs + openlog::utc_offset(secs);
    put_rfc3164(local.max(0) as u64 * 1_000_000_000, out);
    out.put(b" ");
    let ident_at = out.len();
    openlog::with_ident(|ident| out.put(ident));
    if openlog::option() & libc::LOG_PID != 0 {
        out.put(b"[");
        put_decimal(pid as u64, 1, out);
        out.put(b"]");
    }
    out.put(b": ");
    if call.is_some() {
        out.put(rec.message);
    } else {
        put_escaped(rec.message, out);
        put_fields_text(rec.fields, out);
    }
    ident_at
}

/// LOG_PERROR: `line` (`IDENT[PID]: MSG`) on fd 2 with a newline unless it
/// ends in one, as glibc writes it: to fd 2 as it is now, which the
/// program asked for by that option; never raising SIGPIPE.
fn perror(line: &[u8], buf: &mut Vec<u8>) {
    buf.clear();
    buf.extend_from_slice(line);
    if !line.ends_with(b"\n") {
        buf.push(b'\n');
    }
    if let Ok(info) = sys::fd_info(2) {
        let _ = sys::write_no_signal(2, buf, info.kind);
    }
}

/// ` NAME="value"`, the value with `"`, `\` and `]` escaped by a backslash
/// (RFC 5424 6.3.3) and control bytes and bytes that are not UTF-8 as the
/// text line escapes them (`\n`, `\x1b`).
fn put_param(name: &[u8], value: &[u8], out: &mut impl Sink) {
    out.put(b" ");
    out.put(name);
    out.put(b"=\"");
    let mut rest = value;
    while let Some(at) = rest.iter().position(|&b| matches!(b, b'"' | b']')) {
        put_escaped(&rest[..at], out);
        out.put(b"\\");
        out.put(&rest[at..=at]);
        rest = &rest[at + 1..];
    }
    put_escaped(rest, out);
    out.put(b"\"");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::priority::Priority;

    #[test]
    fn collectors_resolve() {
        assert_eq!(
            resolve("[::1]:6514", "syslog collector").unwrap(),
            "[::1]:6514".parse::<SocketAddr>().unwrap()
        );
        assert!(resolve("no.such.host.invalid:514", "syslog collector")
            .unwrap_err()
            .message
            .contains("cannot resolve"));
    }

    fn sample(fields: &[u8]) -> Record<'_> {
        Record {
            seq: 0,
            time_ns: 1_796_046_312_345_678_901,
            tid: 1,
            line: 42,
            priority: Priority::Warning,
            source: b"qemu",
            file: b"m.c",
            func: b"f",
            message: b"hello",
            fields,
        }
    }

    #[test]
    fn rfc5424_message() {
        let mut list = Vec::new();
        fields::encode(
            [fields::Field {
                name: b"VM",
                value: Value::Str(b"g\"1]\\"),
            }]
            .into_iter(),
            &mut list,
        );
        let mut out = Vec::new();
        render(&sample(&list), b"daemon", b"host", 77, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "<28>1 2026-11-30T13:45:12.345678Z host daemon 77 - [vlog@32473 SOURCE=\"qemu\" \
             CODE_FILE=\"m.c\" CODE_LINE=\"42\" CODE_FUNC=\"f\" VM=\"g\\\"1\\]\\\\\"] hello"
        );
    }

    #[test]
    fn rfc3164_message() {
        let mut out = Vec::new();
        render_local(&sample(b""), b"daemon", 77, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "<28>Nov 30 13:45:12 daemon[77]: hello"
        );
    }
}
