//! The `PRIO:journald` output's payload: journald's native protocol, one
//! datagram of `KEY=value` lines per entry (the socket side is
//! `sys::DatagramTarget`).
//!
//! A value with a newline takes the binary form: `KEY\n`, its length as a
//! little-endian u64, the bytes, `\n`; any other value, `KEY=value\n`.

use crate::fields::{self, Value};
use crate::format::Sink;
use crate::priority::Priority;
use crate::record::Record;

/// Where journald listens for native entries.
pub const SOCKET: &[u8] = b"/run/systemd/journal/socket";

/// syslog's numbers, which journald's PRIORITY uses.
fn syslog_priority(p: Priority) -> &'static [u8] {
    match p {
        Priority::Debug => b"7",
        Priority::Info => b"6",
        Priority::Warning => b"4",
        Priority::Error => b"3",
    }
}

/// Writes the entry for `rec` (a text record) from program `ident`.
pub fn render(rec: &Record, ident: &[u8], out: &mut impl Sink) {
    put(b"MESSAGE", rec.message, out);
    put(b"PRIORITY", syslog_priority(rec.priority), out);
    put(b"SYSLOG_IDENTIFIER", ident, out);
    put(b"CODE_FILE", rec.file, out);
    let mut line = [0u8; 10];
    put(b"CODE_LINE", decimal(rec.line as u64, &mut line), out);
    put(b"CODE_FUNC", rec.func, out);
    put(b"VLOG_SOURCE", rec.source, out);
    for field in fields::decode(rec.fields).iter().flat_map(|f| f.iter()) {
        let mut digits = [0u8; 20];
        match field.value {
            Value::Str(s) => put(field.name, s, out),
            Value::Int(n) if n < 0 => {
                let mut signed = [0u8; 21];
                signed[0] = b'-';
                let len = decimal(n.unsigned_abs(), &mut digits).len();
                signed[1..=len].copy_from_slice(&digits[20 - len..]);
                put(field.name, &signed[..=len], out)
            }
            Value::Int(n) => put(field.name, decimal(n as u64, &mut digits), out),
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

/// `n` in decimal, at the end of `buf`.
fn decimal(mut n: u64, buf: &mut [u8]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[at..];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Kind;

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
            ]
            .into_iter(),
            &mut encoded,
        );
        let rec = Record {
            seq: 0,
            time_ns: 0,
            tid: 1,
            line: 123,
            priority: Priority::Warning,
            source: b"qemu.monitor",
            file: b"monitor.c",
            func: b"send",
            kind: Kind::Text,
            message: b"two\nlines",
            fields: &encoded,
        };
        let mut out = Vec::new();
        render(&rec, b"daemon", &mut out);
        let mut want = b"MESSAGE\n".to_vec();
        want.extend_from_slice(&9u64.to_le_bytes());
        want.extend_from_slice(
            b"two\nlines\nPRIORITY=4\nSYSLOG_IDENTIFIER=daemon\nCODE_FILE=monitor.c\n\
              CODE_LINE=123\nCODE_FUNC=send\nVLOG_SOURCE=qemu.monitor\nVM=guest1\nDELTA=-7\n",
        );
        assert_eq!(out, want);
    }
}
