//! `PRIO:journald`: journald's native protocol, one datagram of `KEY=value`
//! lines per entry over `/run/systemd/journal/socket` (an unbound
//! non-blocking datagram socket; an entry too large for a datagram goes as a
//! sealed memfd passed with SCM_RIGHTS).
//!
//! A value with a newline takes the binary form: `KEY\n`, its length as a
//! little-endian u64, the bytes, `\n`; any other value, `KEY=value\n`.

use std::io;

use super::slow::Pace;
use crate::error::ConfigError;
use crate::fields::{self, Value};
use crate::record::Record;
use crate::sys::{self, net::DatagramTarget};
use crate::text::frames;
use crate::text::num::decimal;
use crate::text::Sink;

/// Where journald listens for native entries.
pub const SOCKET: &[u8] = b"/run/systemd/journal/socket";

/// One journald output.
#[derive(Debug)]
pub struct Journald {
    /// Connected at the first entry, so that a full queue is waited on.
    socket: DatagramTarget,
    /// SYSLOG_IDENTIFIER: the program's name.
    ident: Vec<u8>,
    /// journald slow for a moment (see `slow`).
    pace: Pace,
}

impl Journald {
    pub fn open() -> Result<Journald, ConfigError> {
        let mut socket = DatagramTarget::unix_connecting(SOCKET)
            .map_err(|e| ConfigError::new(format!("cannot make a socket for journald: {e}")))?;
        socket.connect_if_listening();
        let mut pace = Pace::default();
        pace.reserve()
            .map_err(|e| ConfigError::new(format!("cannot make a journald output: {e}")))?;
        Ok(Journald {
            socket,
            ident: sys::program_name(),
            pace,
        })
    }

    /// Renders `rec` into `entry` and sends it, or holds it while
    /// journald's queue is full (see `slow`).
    pub fn send(&mut self, rec: &Record, entry: &mut Vec<u8>) -> io::Result<()> {
        entry.clear();
        render(rec, &self.ident, entry);
        self.pace.send(&mut self.socket, entry)
    }

    /// What it holds while journald's queue is full, and its socket.
    pub fn pace(&mut self) -> (&mut Pace, &mut DatagramTarget) {
        (&mut self.pace, &mut self.socket)
    }

    /// Whether the program closed this output's socket since the last call
    /// (a new one was made).
    pub fn take_replaced(&mut self) -> bool {
        self.socket.take_replaced()
    }
}

/// Sends a raw journald entry through the memfd path, which vlog takes for
/// entries too large for a datagram; for the test that proves it against a
/// real journald.
pub fn send_via_memfd(entry: &[u8]) -> io::Result<()> {
    DatagramTarget::unix(SOCKET)?.send_memfd(entry)
}

/// Writes the entry for `rec` from program `ident`.
pub fn render(rec: &Record, ident: &[u8], out: &mut impl Sink) {
    let mut digits = [0u8; 20];
    put(b"MESSAGE", rec.message, out);
    put(
        b"PRIORITY",
        decimal(rec.priority.syslog_severity() as u64, &mut digits),
        out,
    );
    put(b"SYSLOG_IDENTIFIER", ident, out);
    put(b"CODE_FILE", rec.file, out);
    put(b"CODE_LINE", decimal(rec.line as u64, &mut digits), out);
    put(b"CODE_FUNC", rec.func, out);
    put(b"VLOG_SOURCE", rec.source, out);
    if rec.id != 0 {
        put(b"VLOG_ID", &crate::text::num::id_hex(rec.id), out);
    }
    if rec.context {
        // journald stamps an entry when it arrives: the record's own time
        // and place in the ring go with it.
        let mut time = [0u8; 32];
        let mut stamp = crate::text::Bounded::new(&mut time);
        crate::text::time::put_rfc3339(rec.time_ns, &mut stamp);
        put(b"VLOG_CONTEXT", b"1", out);
        put(b"VLOG_SEQ", decimal(rec.seq, &mut digits), out);
        put(b"VLOG_TIME", stamp.finish(), out);
    }
    for field in fields::decode(rec.fields).iter().flat_map(|f| f.iter()) {
        // journald's form of the name: OpenTelemetry's `http.method` is
        // HTTP_METHOD (a record has no two names that are one to journald).
        let mut upper = [0u8; fields::NAME_MAX];
        let name = fields::journald_name(field.name, &mut upper);
        match field.value {
            Value::Str(s) => put(name, s, out),
            Value::Int(n) => {
                let mut signed = [0u8; 21];
                let len = decimal(n.unsigned_abs(), &mut digits).len();
                let start = usize::from(n >= 0);
                signed[0] = b'-';
                signed[1..=len].copy_from_slice(&digits[20 - len..]);
                put(name, &signed[start..=len], out)
            }
            Value::Bytes(b) => {
                out.put(name);
                out.put(b"=");
                crate::text::hexdump::put_hex(b, out);
                out.put(b"\n");
            }
            // Lines: journald's binary-safe form, its length first.
            Value::Frames(f) => {
                let raw = |b: &[u8], out: &mut _| Sink::put(out, b);
                out.put(name);
                out.put(b"\n");
                let len = frames::value_len(f, b"\n", |b, c| c.put(b));
                out.put(&(len as u64).to_le_bytes());
                frames::put_value(f, b"\n", raw, out);
                out.put(b"\n");
            }
        }
    }
}

fn put(key: &[u8], value: &[u8], out: &mut impl Sink) {
    out.put(key);
    if value.contains(&b'\n') {
        out.put(b"\n");
        out.put(&(value.len() as u64).to_le_bytes());
        out.put(value);
    } else {
        out.put(b"=");
        out.put(value);
    }
    out.put(b"\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::priority::Priority;

    #[test]
    fn entry_lines_and_the_binary_form() {
        let mut encoded = Vec::new();
        fields::encode(
            [
                fields::Field {
                    name: b"VM",
                    value: Value::Str(b"guest1"),
                },
                fields::Field {
                    name: b"DELTA",
                    value: Value::Int(-7),
                },
                fields::Field {
                    name: b"http.method",
                    value: Value::Str(b"GET"),
                },
            ]
            .into_iter(),
            &mut encoded,
        );
        fields::bytes_after(fields::Dump::of(b"\n\x00\xff"), &mut encoded);
        let rec = Record {
            seq: 0,
            time_ns: 0,
            tid: 1,
            line: 123,
            priority: Priority::Warning,
            source: b"qemu.monitor",
            file: b"monitor.c",
            func: b"send",
            message: b"two\nlines",
            fields: &encoded,
            context: false,
            id: 0,
        };
        let mut out = Vec::new();
        render(&rec, b"daemon", &mut out);
        let mut want = b"MESSAGE\n".to_vec();
        want.extend_from_slice(&9u64.to_le_bytes());
        want.extend_from_slice(
            b"two\nlines\nPRIORITY=4\nSYSLOG_IDENTIFIER=daemon\nCODE_FILE=monitor.c\n\
              CODE_LINE=123\nCODE_FUNC=send\nVLOG_SOURCE=qemu.monitor\nVM=guest1\nDELTA=-7\n\
              HTTP_METHOD=GET\nVLOG_HEXDUMP=0a00ff\n",
        );
        assert_eq!(out, want);
        // A call site's message id.
        let mut out = Vec::new();
        render(
            &Record {
                id: 0x1234_abcd,
                ..rec
            },
            b"daemon",
            &mut out,
        );
        let text = String::from_utf8_lossy(&out).into_owned();
        assert!(
            text.contains("\nVLOG_SOURCE=qemu.monitor\nVLOG_ID=1234abcd\n"),
            "{text}"
        );
    }
}
