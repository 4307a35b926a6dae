//! The `PRIO:syslog:...` output's message: RFC 5424, with the structured
//! fields as SD-PARAMs, for the local syslog socket (/dev/log) or a collector
//! over UDP or TCP (octet counting, RFC 6587).
//!
//! ```text
//! <PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID - [vlog@32473 SOURCE="..." ...] MSG
//! ```
//! 32473 is the enterprise number RFC 5612 sets aside for examples: vlog has
//! none of its own, and collectors treat the element as opaque.

use std::net::{SocketAddr, ToSocketAddrs};

use crate::config::ConfigError;
use crate::fields::{self, Value};
use crate::format::{put_decimal, Sink};
use crate::priority::Priority;
use crate::record::Record;

/// The local syslog daemon's socket.
pub const LOCAL_SOCKET: &[u8] = b"/dev/log";
/// LOG_DAEMON: vlog's users are daemons.
const FACILITY: u8 = 3;
const SD_ID: &[u8] = b"vlog@32473";

/// Where a syslog output sends: the local socket, or HOST:PORT (resolved
/// when the output is opened).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    Local,
    Udp(String),
    Tcp(String),
}

/// Resolves a collector's HOST:PORT to its first address.
pub fn resolve(addr: &str) -> Result<SocketAddr, ConfigError> {
    addr.to_socket_addrs()
        .map_err(|e| ConfigError::new(format!("cannot resolve syslog collector '{addr}': {e}")))?
        .next()
        .ok_or_else(|| ConfigError::new(format!("syslog collector '{addr}' has no address")))
}

/// Parses what follows `PRIO:syslog:`: `IDENT` (local) or
/// `IDENT@udp://HOST:PORT` / `IDENT@tcp://HOST:PORT` (HOST may be `[v6]`).
pub fn parse_target(rest: &str, token: &str) -> Result<(String, Transport), ConfigError> {
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

/// syslog's severity numbers.
fn severity(p: Priority) -> u8 {
    match p {
        Priority::Debug => 7,
        Priority::Info => 6,
        Priority::Warning => 4,
        Priority::Error => 3,
    }
}

/// Writes the RFC 5424 message for `rec` (a text record).
pub fn render(rec: &Record, ident: &[u8], hostname: &[u8], pid: u32, out: &mut impl Sink) {
    out.put(b"<");
    put_decimal((FACILITY * 8 + severity(rec.priority)) as u64, 1, out);
    out.put(b">1 ");
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
    let mut digits = [0u8; 10];
    let mut at = digits.len();
    let mut line = rec.line;
    loop {
        at -= 1;
        digits[at] = b'0' + (line % 10) as u8;
        line /= 10;
        if line == 0 {
            break;
        }
    }
    put_param(b"CODE_LINE", &digits[at..], out);
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
                if n < 0 {
                    out.put(b"-");
                }
                put_decimal(n.unsigned_abs(), 1, out);
                out.put(b"\"");
            }
        }
    }
    out.put(b"] ");
    out.put(rec.message);
}

/// Writes the message for the local syslog socket in the traditional form
/// (RFC 3164, as glibc's syslog() sends it), which the local daemons parse on
/// /dev/log: `<PRI>Mmm dd hh:mm:ss IDENT[PID]: MSG`; the fields follow the
/// message as in a text line.
pub fn render_local(rec: &Record, ident: &[u8], pid: u32, out: &mut impl Sink) {
    const MONTHS: [&[u8]; 12] = [
        b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov",
        b"Dec",
    ];
    let mut buf = [0u8; 32];
    let mut text = crate::format::Bounded::new(&mut buf);
    crate::format::put_timestamp(rec.time_ns, &mut text);
    let stamp = text.finish(); // YYYY-MM-DD HH:MM:SS.mmm+0000
    let month = (stamp[5] - b'0') as usize * 10 + (stamp[6] - b'0') as usize;
    out.put(b"<");
    put_decimal((FACILITY * 8 + severity(rec.priority)) as u64, 1, out);
    out.put(b">");
    out.put(MONTHS[month.clamp(1, 12) - 1]);
    out.put(b" ");
    out.put(if stamp[8] == b'0' { b" " } else { &stamp[8..9] });
    out.put(&stamp[9..10]);
    out.put(b" ");
    out.put(&stamp[11..19]);
    out.put(b" ");
    out.put(ident);
    out.put(b"[");
    put_decimal(pid as u64, 1, out);
    out.put(b"]: ");
    out.put(rec.message);
    crate::format::put_fields_text(rec.fields, out);
}

/// ` NAME="value"`, the value UTF-8 with `"`, `\` and `]` escaped by a
/// backslash (RFC 5424 6.3.3); bytes that are not UTF-8 become U+FFFD.
fn put_param(name: &[u8], value: &[u8], out: &mut impl Sink) {
    out.put(b" ");
    out.put(name);
    out.put(b"=\"");
    for chunk in value.utf8_chunks() {
        let valid = chunk.valid().as_bytes();
        let mut start = 0;
        for (i, &b) in valid.iter().enumerate() {
            if matches!(b, b'"' | b'\\' | b']') {
                out.put(&valid[start..i]);
                out.put(b"\\");
                start = i;
            }
        }
        out.put(&valid[start..]);
        if !chunk.invalid().is_empty() {
            out.put("\u{FFFD}".as_bytes());
        }
    }
    out.put(b"\"");
}

/// `2026-11-30T13:45:12.345678Z`
fn put_rfc3339(time_ns: u64, out: &mut impl Sink) {
    let mut buf = [0u8; 32];
    let mut text = crate::format::Bounded::new(&mut buf);
    crate::format::put_timestamp(time_ns, &mut text);
    // put_timestamp gives `YYYY-MM-DD HH:MM:SS.mmm+0000`: the date and time
    // are reused, the fraction made finer.
    let stamp = text.finish();
    out.put(&stamp[..10]);
    out.put(b"T");
    out.put(&stamp[11..19]);
    out.put(b".");
    put_decimal((time_ns / 1000) % 1_000_000, 6, out);
    out.put(b"Z");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Kind;

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
        assert_eq!(
            resolve("[::1]:6514").unwrap(),
            "[::1]:6514".parse::<SocketAddr>().unwrap()
        );
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
        let rec = Record {
            seq: 0,
            time_ns: 1_796_046_312_345_678_901,
            tid: 1,
            line: 42,
            priority: Priority::Warning,
            source: b"qemu",
            file: b"m.c",
            func: b"f",
            kind: Kind::Text,
            message: b"hello",
            fields: &list,
        };
        let mut out = Vec::new();
        render(&rec, b"daemon", b"host", 77, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "<28>1 2026-11-30T13:45:12.345678Z host daemon 77 - [vlog@32473 SOURCE=\"qemu\" \
             CODE_FILE=\"m.c\" CODE_LINE=\"42\" CODE_FUNC=\"f\" VM=\"g\\\"1\\]\\\\\"] hello"
        );
    }
}
