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

mod udp;

use std::io;
use std::net::SocketAddr;

use super::address::Address;
use super::spec::Transport;
use crate::error::ConfigError;
use crate::fields::{self, Value};
use crate::record::Record;
use crate::sys::connection::StreamTarget;
use crate::sys::net::DatagramTarget;
use crate::sys::syslog as openlog;
use crate::text::line::{put_escaped, put_fields_text};
use crate::text::num::{decimal, put_decimal, put_signed};
use crate::text::time::{put_rfc3164, put_rfc3339};
use crate::text::Sink;
use crate::{stats, sys};
use udp::{Udp, UDP_WAITING_MAX};

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
    Udp(Udp),
    /// Its frames queue in the stream while the name is looked up.
    Tcp(Address, StreamTarget),
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
    /// Frames kept while the collector's name was looked up still wait to
    /// be written (see `flush_waiting`).
    flushing: bool,
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
            Transport::Udp(name) => {
                let mut udp = Udp {
                    address: Address::new(name),
                    socket: None,
                    waiting: Vec::new(),
                };
                if udp.address.get().is_some() {
                    udp.start().map_err(socket_error)?;
                } else {
                    udp.waiting
                        .try_reserve_exact(UDP_WAITING_MAX)
                        .map_err(|e| {
                            ConfigError::new(format!("cannot make a syslog output: {e}"))
                        })?;
                }
                Socket::Udp(udp)
            }
            Transport::Tcp(name) => {
                let address = Address::new(name);
                let stream = StreamTarget::new(address.get()).map_err(socket_error)?;
                Socket::Tcp(address, stream)
            }
        };
        let mut frame = Vec::new();
        if let Socket::Tcp(..) | Socket::Program(_) = socket {
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
            flushing: false,
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
            Socket::Udp(udp) => {
                render(rec, &self.ident, &self.hostname, pid, entry);
                udp.send(entry)
            }
            Socket::Tcp(_, stream) => {
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
            Socket::Tcp(_, stream) => stream.take_dropped(),
            _ => 0,
        }
    }

    /// Connects to a TCP collector, once the configuration naming it was
    /// accepted (and its address is known).
    pub fn start(&mut self) {
        if let Socket::Tcp(address, stream) = &mut self.socket {
            if address.get().is_some() {
                stream.start();
            }
        }
    }

    /// A collector's address, if it has one to look up.
    pub fn address(&self) -> Option<&Address> {
        match &self.socket {
            Socket::Udp(udp) => Some(&udp.address),
            Socket::Tcp(address, _) => Some(address),
            _ => None,
        }
    }

    /// The result of looking the collector's name up: what to say, if
    /// anything; once it is known, the socket is made and what waited
    /// is sent.
    pub fn looked_up(&mut self, result: Result<SocketAddr, String>, now_ms: u64) -> Option<String> {
        const WHAT: &str = "syslog collector";
        match &mut self.socket {
            Socket::Udp(udp) => {
                let said = udp.address.looked_up(result, now_ms, WHAT);
                if let Err(e) = udp.start() {
                    return Some(format!("cannot make a socket for {}: {e}", self.describe()));
                }
                said
            }
            Socket::Tcp(address, stream) => {
                let said = address.looked_up(result, now_ms, WHAT);
                if let Some(addr) = address.get() {
                    if !stream.has_peer() {
                        stream.set_addr(addr);
                        self.flushing = stream.has_pending();
                    }
                }
                said
            }
            _ => None,
        }
    }

    /// What a failed send means, for the one report of it: while the
    /// collector's name is looked up, only that its queue is full.
    pub fn why(&self, e: &io::Error) -> String {
        match self.address() {
            Some(address) if address.get().is_none() => {
                "its name is not resolved yet, and what waits for it (64 KiB) is full: lines \
                 are dropped until it resolves"
                    .to_owned()
            }
            _ => e.to_string(),
        }
    }

    /// Writes the frames a TCP collector kept while its name was looked up,
    /// as far as its new connection takes them (vlog's resolver comes back
    /// for them: no message may come to push them out); true while some
    /// still wait.
    pub fn flush_waiting(&mut self) -> bool {
        if let Socket::Tcp(_, stream) = &mut self.socket {
            if self.flushing {
                stream.flush();
                self.flushing = stream.has_pending();
            }
        }
        self.flushing
    }

    /// Whether frames kept while the name was looked up still wait.
    pub fn has_waiting(&self) -> bool {
        self.flushing
    }

    /// Whether the program closed this output's socket since the last call
    /// (a new one was made).
    pub fn take_replaced(&mut self) -> bool {
        match &mut self.socket {
            Socket::Program(socket) => socket.as_mut().is_some_and(|s| s.take_replaced()),
            Socket::Local(socket) => socket.take_replaced(),
            Socket::Udp(udp) => udp.socket.as_mut().is_some_and(|s| s.take_replaced()),
            Socket::Tcp(_, stream) => stream.take_replaced(),
        }
    }

    /// In a forked child: lets go of a collector connection it shares with
    /// the parent (the next message opens the child's own).
    pub fn after_fork(&mut self) {
        if let Socket::Tcp(_, stream) = &mut self.socket {
            stream.disconnect();
        }
    }

    pub fn describe(&self) -> String {
        match &self.socket {
            Socket::Program(_) => "syslog (/dev/log, as the program's syslog(3))".to_owned(),
            Socket::Local(_) => "syslog (/dev/log)".to_owned(),
            Socket::Udp(udp) => format!("syslog udp://{}", udp.address.describe()),
            Socket::Tcp(address, _) => format!("syslog tcp://{}", address.describe()),
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
    // vlog's own names are ones no field may take (`fields::RESERVED`), and
    // a record's field names are unique: no SD-NAME is given twice.
    put_param(b"VLOG_SOURCE", rec.source, out);
    put_param(b"CODE_FILE", rec.file, out);
    let mut digits = [0u8; 20];
    put_param(b"CODE_LINE", decimal(rec.line as u64, &mut digits), out);
    put_param(b"CODE_FUNC", rec.func, out);
    let mut given = [([0u8; SD_NAME_MAX], 0); fields::MAX_FIELDS];
    let mut n = 0;
    for field in fields::decode(rec.fields).iter().flat_map(|f| f.iter()) {
        let sd = sd_name(field.name);
        // Two long names that hash alike: the second is not merged into
        // the first's, it is left out and counted.
        if given[..n].contains(&sd) || n == given.len() {
            stats::add(&stats::BAD_FIELDS, 1);
            continue;
        }
        given[n] = sd;
        n += 1;
        let name = &given[n - 1].0[..sd.1];
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

/// An SD-NAME has at most 32 characters (RFC 5424 6.3.3).
const SD_NAME_MAX: usize = 32;

/// A field's name as an SD-NAME: as it is up to 32 characters; a longer
/// one is its first 23, `_` and 8 hex digits of a hash of the whole name
/// (FNV-1a), so two long names that start alike stay two names. A name of
/// 32 that already has that shape is hashed too, so that no name can take
/// the place of another's hash.
fn sd_name(name: &[u8]) -> ([u8; SD_NAME_MAX], usize) {
    let mut out = [0u8; SD_NAME_MAX];
    let hash_shaped = name.len() == SD_NAME_MAX
        && name[23] == b'_'
        && name[24..]
            .iter()
            .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(b));
    if name.len() <= SD_NAME_MAX && !hash_shaped {
        out[..name.len()].copy_from_slice(name);
        return (out, name.len());
    }
    let hash = name.iter().fold(0x811c_9dc5u32, |h, &b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    out[..23].copy_from_slice(&name[..23]);
    out[23] = b'_';
    for (i, slot) in out[24..].iter_mut().enumerate() {
        *slot = b"0123456789ABCDEF"[(hash >> (28 - 4 * i)) as usize & 0xf];
    }
    (out, SD_NAME_MAX)
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
            "<28>1 2026-11-30T13:45:12.345678Z host daemon 77 - [vlog@32473 VLOG_SOURCE=\"qemu\" \
             CODE_FILE=\"m.c\" CODE_LINE=\"42\" CODE_FUNC=\"f\" VM=\"g\\\"1\\]\\\\\"] hello"
        );
    }

    #[test]
    fn long_names_stay_apart() {
        let one = sd_name(b"A_VERY_LONG_FIELD_NAME_THAT_GOES_ON_ONE");
        let two = sd_name(b"A_VERY_LONG_FIELD_NAME_THAT_GOES_ON_TWO");
        assert_eq!((one.1, two.1), (32, 32));
        assert_ne!(one.0, two.0);
        assert_eq!(&one.0[..24], b"A_VERY_LONG_FIELD_NAME__");
        assert_eq!(sd_name(b"SHORT").1, 5);
        // A name shaped like another's hash does not take its place.
        let shaped = &one.0[..];
        assert_ne!(sd_name(shaped).0, one.0);
        assert_eq!(sd_name(shaped).1, 32);
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
