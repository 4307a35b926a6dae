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
//! none of its own, and collectors treat the element as opaque. The forms
//! are rendered in `form`; a collector over UDP is `udp`.

mod form;
mod udp;

use std::io;
use std::net::SocketAddr;

use super::address::Address;
use super::slow::Pace;
use super::spec::Transport;
use crate::error::ConfigError;
use crate::record::Record;
use crate::sys;
use crate::sys::connection::StreamTarget;
use crate::sys::net::DatagramTarget;
use crate::sys::syslog as openlog;
use crate::text::num::put_decimal;
use form::{render, render_local, render_program};
use udp::{Udp, UDP_WAITING_MAX};

/// The local syslog daemon's socket.
pub const LOCAL_SOCKET: &[u8] = b"/dev/log";

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
    /// The facility of vlog's own records (`?facility=`).
    facility: u8,
    hostname: Vec<u8>,
    /// The message being sent, with its octet count in front over TCP (one
    /// buffer, so the frame goes in one send); LOG_PERROR's line.
    frame: Vec<u8>,
    /// A daemon or a collector's socket slow for a moment (see `slow`):
    /// the datagram forms'.
    pace: Pace,
    /// Frames kept while the collector's name was looked up still wait to
    /// be written (see `flush_waiting`).
    flushing: bool,
}

impl Syslog {
    pub fn open(transport: &Transport, ident: &str, facility: u8) -> Result<Syslog, ConfigError> {
        let socket_error =
            |e: io::Error| ConfigError::new(format!("cannot make a socket for syslog: {e}"));
        let socket = match transport {
            Transport::Program => Socket::Program(None),
            Transport::Local => {
                Socket::Local(DatagramTarget::unix_connecting(LOCAL_SOCKET).map_err(socket_error)?)
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
        let no_memory = |e| ConfigError::new(format!("cannot make a syslog output: {e}"));
        let mut frame = Vec::new();
        if let Socket::Tcp(..) | Socket::Program(_) = socket {
            frame
                .try_reserve_exact(crate::text::line::LINE_MAX + 24)
                .map_err(no_memory)?;
        }
        let mut pace = Pace::default();
        if !matches!(socket, Socket::Tcp(..)) {
            pace.reserve().map_err(no_memory)?;
        }
        Ok(Syslog {
            socket,
            ident: ident.as_bytes().to_vec(),
            facility,
            hostname: sys::net::hostname(),
            frame,
            pace,
            flushing: false,
        })
    }

    /// Renders `rec` into `entry` and sends it; over TCP with its octet
    /// count in front (RFC 6587). A datagram is held while a daemon's or a
    /// socket's queue is full (see `slow`).
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
                self.pace.send(socket, entry)
            }
            Socket::Local(socket) => {
                render_local(rec, &self.ident, pid, self.facility, entry);
                self.pace.send(socket, entry)
            }
            Socket::Udp(udp) => {
                render(rec, &self.ident, &self.hostname, pid, self.facility, entry);
                match &mut udp.socket {
                    Some(socket) => self.pace.send(socket, entry),
                    None => udp.send(entry),
                }
            }
            Socket::Tcp(_, stream) => {
                render(rec, &self.ident, &self.hostname, pid, self.facility, entry);
                self.frame.clear();
                put_decimal(entry.len() as u64, 1, &mut self.frame);
                self.frame.push(b' ');
                self.frame.extend_from_slice(entry);
                stream.send(&self.frame)
            }
        }
    }

    /// Frames a collector connection had queued when it broke, or
    /// datagrams a stalled daemon or socket made it drop, since the last
    /// call.
    pub fn take_dropped(&mut self) -> u64 {
        match &mut self.socket {
            Socket::Tcp(_, stream) => stream.take_dropped(),
            _ => self.pace.take_dropped(),
        }
    }

    /// The socket to the local syslog daemon, if this output has one
    /// (made): for the crash handler's one datagram.
    pub fn local_socket(&mut self) -> Option<&mut DatagramTarget> {
        match &mut self.socket {
            Socket::Program(Some(socket)) | Socket::Local(socket) => Some(socket),
            _ => None,
        }
    }

    /// The datagram socket and what waits for the writer thread on it, if
    /// this output sends datagrams and has its socket.
    pub fn pace(&mut self) -> Option<(&mut Pace, &mut DatagramTarget)> {
        let socket = match &mut self.socket {
            Socket::Program(Some(socket)) | Socket::Local(socket) => socket,
            Socket::Udp(Udp {
                socket: Some(socket),
                ..
            }) => socket,
            _ => return None,
        };
        Some((&mut self.pace, socket))
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

#[cfg(test)]
mod tests {
    use super::form::sd_name;
    use super::*;
    use crate::fields::{self, Value};
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
            context: false,
            id: 0,
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
        fields::bytes_after(fields::Dump::of(b"]\""), &mut list);
        let mut out = Vec::new();
        render(&sample(&list), b"daemon", b"host", 77, 3, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "<28>1 2026-11-30T13:45:12.345678Z host daemon 77 - [vlog@32473 VLOG_SOURCE=\"qemu\" \
             CODE_FILE=\"m.c\" CODE_LINE=\"42\" CODE_FUNC=\"f\" VM=\"g\\\"1\\]\\\\\" \
             VLOG_HEXDUMP=\"5d22\"] hello"
        );
        // A call site's message id is the MSGID.
        let mut out = Vec::new();
        let rec = Record {
            id: 0x3fa2_b1c0,
            ..sample(&[])
        };
        render(&rec, b"daemon", b"host", 77, 3, &mut out);
        let line = String::from_utf8(out).unwrap();
        assert!(line.contains(" daemon 77 3fa2b1c0 [vlog@32473 "), "{line}");
    }

    #[test]
    fn trace_context_has_opentelemetrys_element() {
        let mut list = Vec::new();
        fields::encode(
            [
                (b"TRACE_ID" as &[u8], "4bf92f3577b34da6a3ce929d0e0e4736"),
                (b"SPAN_ID", "00f067aa0ba902b7"),
                (b"TRACE_FLAGS", "01"),
                (b"VM", "g1"),
            ]
            .into_iter()
            .map(|(name, v)| fields::Field {
                name,
                value: Value::Str(v.as_bytes()),
            }),
            &mut list,
        );
        let mut out = Vec::new();
        render(&sample(&list), b"daemon", b"host", 77, 3, &mut out);
        let line = String::from_utf8(out).unwrap();
        assert!(
            line.ends_with(
                " CODE_FUNC=\"f\" VM=\"g1\"][opentelemetry \
                 trace_id=\"4bf92f3577b34da6a3ce929d0e0e4736\" span_id=\"00f067aa0ba902b7\" \
                 trace_flags=\"01\"] hello"
            ),
            "{line}"
        );
        // No trace context, no element.
        let mut out = Vec::new();
        render(&sample(&[]), b"daemon", b"host", 77, 3, &mut out);
        assert!(!String::from_utf8(out).unwrap().contains("opentelemetry"));
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
        render_local(&sample(b""), b"daemon", 77, 3, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "<28>Nov 30 13:45:12 daemon[77]: hello"
        );
    }

    /// A syslog(3) call's record goes with the call's PRI, as glibc sends
    /// it, in every form; vlog's own with the output's facility.
    #[test]
    fn a_calls_facility_and_severity_are_kept() {
        let call = |facility: i64, severity: i64| {
            let mut list = Vec::new();
            fields::encode(
                [
                    fields::Field {
                        name: openlog::FACILITY_FIELD,
                        value: Value::Int(facility),
                    },
                    fields::Field {
                        name: openlog::SEVERITY_FIELD,
                        value: Value::Int(severity),
                    },
                ]
                .into_iter(),
                &mut list,
            );
            list
        };
        let pri = |list: &[u8], facility: u8| {
            let mut local = Vec::new();
            render_local(&sample(list), b"d", 77, facility, &mut local);
            let mut remote = Vec::new();
            render(&sample(list), b"d", b"h", 77, facility, &mut remote);
            let head = |v: &[u8]| {
                String::from_utf8_lossy(&v[..v.iter().position(|&b| b == b'>').unwrap() + 1])
                    .into_owned()
            };
            assert_eq!(head(&local), head(&remote));
            head(&local)
        };
        // LOG_AUTHPRIV|LOG_CRIT and LOG_LOCAL3|LOG_EMERG, whatever the
        // output's facility.
        assert_eq!(pri(&call(10, 2), 3), "<82>");
        assert_eq!(pri(&call(19, 0), 3), "<152>");
        assert_eq!(pri(&call(19, 0), 23), "<152>");
        // vlog's own warning, daemon and local3.
        assert_eq!(pri(b"", 3), "<28>");
        assert_eq!(pri(b"", 19), "<156>");
    }
}
