//! vlog-ctl: talks to a running program's control socket (`VLOG_CONTROL`,
//! `vlog_control_start`): changes its filters, outputs, level and error
//! context, shows its configuration and counters, dumps or follows its
//! ring.
//!
//! It sends one request line and prints the reply's body on stdout; an
//! error the program answers goes to stderr, and the exit status says what
//! happened (see `--help`).
//!
//! Whatever answers is untrusted (`--pid` of another user's process may be
//! anything that listens): what is printed has what a terminal would obey
//! escaped (`put_for_terminal`, as every text vlog prints), the status line
//! and a reply that is not a stream are bounded, and with `--pid` the
//! socket must be served by that process.

use std::io::{self, BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use vlog::internal::{
    name_frames, name_frames_for, name_frames_in, peer_cred, put_for_terminal, unix_addr,
    FramesOwner, Tool, CONTROL_COMMANDS,
};

const TOOL: Tool = Tool {
    name: "vlog-ctl",
    usage: "vlog-ctl [--json] SOCKET COMMAND [ARG...]
       vlog-ctl [--json] --pid PID COMMAND [ARG...]",
    usage_status: USAGE,
};

/// The program answered, and did what was asked.
const OK: u8 = 0;
/// The program answered with an error (a bad value, a refusal).
const REFUSED: u8 = 1;
/// The command line was wrong.
const USAGE: u8 = 2;
/// The socket could not be reached, or the connection broke.
const UNREACHABLE: u8 = 3;

/// How long a reply (or the next part of a dump) may take.
const REPLY_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest status line (`ok`, `error: WHY`, `--json`'s object).
const STATUS_MAX: usize = 4096;
/// The longest reply that is not a stream (show, stats, help, a change),
/// and the longest line of a stream (a record's line is far shorter).
const REPLY_MAX: usize = 1 << 20;

/// What `--help` says after the options: the commands (the library's
/// list, which the program's `help` gives too), examples, exit status.
fn after_help() -> String {
    format!(
        "Commands:\n{CONTROL_COMMANDS}
Examples:
  vlog-ctl /run/myd/vlog.sock filters \"1:qemu 3:util\"
  vlog-ctl --pid $(pidof myd) dump -p debug -s qemu
  vlog-ctl /run/myd/vlog.sock follow --json

Exit status: 0 when the program did what was asked; 1 when it answered with
an error (the value it rejected, or a refusal of this user); 2 for a usage
error; 3 when the socket could not be reached or the connection broke."
    )
}

/// Talks to a running program's vlog control socket.
#[derive(Parser)]
#[command(name = "vlog-ctl", version, override_usage = TOOL.usage, after_help = after_help())]
struct Options {
    /// The control socket of process PID (found among its listening
    /// sockets; the one named vlog.sock when it has several). No short
    /// form: -p is --priority, as in vlog-dump and vlog-relay
    #[arg(long, value_name = "PID")]
    pid: Option<u32>,
    /// JSON replies: one object, or one per record for dump and follow
    #[arg(long)]
    json: bool,
    /// SOCKET (unless --pid), then COMMAND and its arguments
    #[arg(value_name = "SOCKET COMMAND", trailing_var_arg = true)]
    words: Vec<String>,
}

/// A word as the control socket reads an option's value: in double quotes
/// when it has a space, a quote or a backslash in it (or is empty).
fn quoted(word: &str) -> String {
    if !word.is_empty() && !word.contains([' ', '"', '\\']) {
        return word.to_owned();
    }
    let mut out = String::from("\"");
    for c in word.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// The request line for `command` and its arguments.
fn request(command: &str, args: &[String], json: bool) -> Result<String, String> {
    let mut line = String::new();
    if json {
        line.push_str("--json ");
    }
    line.push_str(command);
    match command {
        "filters" | "outputs" | "level" | "context" | "ratelimit" => {
            if args.is_empty() {
                return Err(format!("{command} needs its new value (\"\" for none)"));
            }
            let value = args.join(" ");
            line.push(' ');
            line.push_str(if value.is_empty() { "\"\"" } else { &value });
        }
        "dump" | "follow" => {
            // vlog-dump's short options, sent as the long ones the
            // program reads; an option's value is sent as it is.
            let mut value_next = false;
            for a in args {
                let word = match a.as_str() {
                    _ if value_next => a.as_str(),
                    "-p" => "--priority",
                    "-s" => "--source",
                    "-g" => "--grep",
                    other => other,
                };
                value_next = !value_next
                    && word.starts_with("--")
                    && word != "--json"
                    && word != ENCODED_FRAMES;
                line.push(' ');
                line.push_str(&quoted(word));
            }
        }
        "show" | "stats" | "reopen" | "reload" | "help" | "sites" | "sources" => {
            if !args.is_empty() {
                return Err(format!("{command} takes no argument"));
            }
        }
        _ => {
            return Err(format!(
                "unknown command '{command}': use filters, outputs, level, context, ratelimit, \
                 sites, sources, show, stats, dump, follow, reopen, reload or help"
            ))
        }
    }
    if line.contains(['\n', '\r']) {
        return Err("an argument holds a line break".to_owned());
    }
    Ok(line)
}

/// The inode numbers of the sockets process `pid` has open.
fn socket_inodes(pid: u32) -> Result<Vec<u64>, String> {
    let dir = format!("/proc/{pid}/fd");
    let entries = std::fs::read_dir(&dir).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => format!("no process {pid}"),
        io::ErrorKind::PermissionDenied => format!(
            "cannot look at process {pid}'s descriptors ({e}): only its user or root may \
             control it"
        ),
        _ => format!("cannot read {dir}: {e}"),
    })?;
    let mut inodes = Vec::new();
    for entry in entries.flatten() {
        if let Ok(target) = std::fs::read_link(entry.path()) {
            let target = target.to_string_lossy();
            if let Some(n) = target
                .strip_prefix("socket:[")
                .and_then(|t| t.strip_suffix(']'))
                .and_then(|t| t.parse().ok())
            {
                inodes.push(n);
            }
        }
    }
    Ok(inodes)
}

/// Finds the control socket of process `pid`: among the Unix stream
/// sockets it listens on with a path, the only one, or the one named
/// vlog.sock.
fn find_socket(pid: u32) -> Result<PathBuf, String> {
    let inodes = socket_inodes(pid)?;
    let table = format!("/proc/{pid}/net/unix");
    let text = std::fs::read_to_string(&table).map_err(|e| format!("cannot read {table}: {e}"))?;
    // Num RefCount Protocol Flags Type St Inode Path; a listening socket
    // has __SO_ACCEPTCON (0x10000) in its flags; a stream one is type 1.
    let mut found: Vec<PathBuf> = text
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let flags = u32::from_str_radix(f.get(3)?, 16).ok()?;
            let kind = u32::from_str_radix(f.get(4)?, 16).ok()?;
            let inode: u64 = f.get(6)?.parse().ok()?;
            // The path is the rest of the line (it may hold spaces).
            let path = f
                .get(7..)
                .map(|p| p.join(" "))
                .filter(|p| p.starts_with('/'))?;
            (flags & 0x10000 != 0 && kind == 1 && inodes.contains(&inode))
                .then(|| PathBuf::from(path))
        })
        .collect();
    found.sort();
    found.dedup();
    if found.len() > 1 {
        let named: Vec<PathBuf> = found
            .iter()
            .filter(|p| p.file_name().is_some_and(|n| n == "vlog.sock"))
            .cloned()
            .collect();
        if named.len() == 1 {
            return Ok(named[0].clone());
        }
        let list: Vec<String> = found.iter().map(|p| p.display().to_string()).collect();
        return Err(format!(
            "process {pid} listens on several sockets ({}): name the control socket",
            list.join(", ")
        ));
    }
    found.pop().ok_or_else(|| {
        format!(
            "process {pid} has no control socket (start it with VLOG_CONTROL=PATH, or have \
             it call vlog_control_start)"
        )
    })
}

fn fail(code: u8, message: &str) -> ExitCode {
    TOOL.fail(code, message)
}

/// Connects to the socket at `path`, waiting at most `REPLY_TIMEOUT`: a
/// server whose queue of connections is full (one that never accepts)
/// gets no longer.
fn connect(path: &std::path::Path) -> io::Result<UnixStream> {
    use std::os::fd::FromRawFd;
    use std::os::unix::ffi::OsStrExt;
    let (_, addr, len) = unix_addr(path.as_os_str().as_bytes())?;
    let flags = libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK;
    // SAFETY: plain socket creation; the result is checked.
    let raw = unsafe { libc::socket(libc::AF_UNIX, flags, 0) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a socket just made, owned by the stream from here.
    let stream = unsafe { UnixStream::from_raw_fd(raw) };
    let deadline = std::time::Instant::now() + REPLY_TIMEOUT;
    loop {
        // SAFETY: `addr` is a sockaddr_un of `len` bytes.
        if unsafe { libc::connect(raw, (&raw const addr).cast(), len) } == 0 {
            break;
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            // A full queue of connections: tried again, until the deadline.
            Some(libc::EAGAIN) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Some(libc::EAGAIN) => {
                return Err(io::Error::other(
                    "the socket took no connection for 10 s (its server accepts none)",
                ))
            }
            Some(libc::EINTR) => {}
            // The kernel says "refused" both for a path that is no socket
            // and for a socket nobody listens on: said apart here.
            Some(libc::ECONNREFUSED) => return Err(refused(path)),
            _ => return Err(e),
        }
    }
    stream.set_nonblocking(false)?;
    Ok(stream)
}

/// Why a connection to `path` was refused, in a reader's words.
fn refused(path: &std::path::Path) -> io::Error {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::metadata(path) {
        Ok(m) if !m.file_type().is_socket() => io::Error::other(
            "not a socket (a program makes its control socket where VLOG_CONTROL says)",
        ),
        _ => io::Error::other("nobody is listening on this socket (has the program exited?)"),
    }
}

/// One line of the reply, at most `max` bytes with its newline: None at
/// the end of the reply, Err(None) for a line longer than `max`. With a
/// deadline, every read waits only for what is left of it.
fn read_line(
    reader: &mut BufReader<UnixStream>,
    max: usize,
    deadline: Option<std::time::Instant>,
) -> Result<Option<Vec<u8>>, Option<io::Error>> {
    let mut line = Vec::new();
    loop {
        if let Some(deadline) = deadline {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(Some(io::ErrorKind::TimedOut.into()));
            }
            reader
                .get_ref()
                .set_read_timeout(Some(left))
                .map_err(Some)?;
        }
        let available = reader.fill_buf().map_err(Some)?;
        if available.is_empty() {
            return Ok((!line.is_empty()).then_some(line));
        }
        let (take, end) = match available.iter().position(|&b| b == b'\n') {
            Some(at) => (at + 1, true),
            None => (available.len(), false),
        };
        if line.len() + take > max {
            return Err(None);
        }
        line.extend_from_slice(&available[..take]);
        reader.consume(take);
        if end {
            return Ok(Some(line));
        }
    }
}

/// What a read error of the reply means for people.
fn cut_short(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
            "the reply stopped coming (10 s without a byte, or 10 s in all for a reply that \
             is not a dump or a follow)"
                .to_owned()
        }
        _ => format!("the reply was cut short: {e}"),
    }
}

/// The option that asks for a stream's backtraces encoded.
const ENCODED_FRAMES: &str = "--encoded-frames";

/// A request sent, and the status line of its reply.
struct Asked {
    reader: BufReader<UnixStream>,
    status: Vec<u8>,
    /// When a reply that is not a stream must have come.
    deadline: std::time::Instant,
    /// Who serves the socket: the frames of its stream name files this
    /// user or group may read, never more.
    owner: FramesOwner,
}

/// How long a read of the reply to `command` may wait (a follow waits
/// for records as long as they take).
fn timeout(command: &str) -> Option<Duration> {
    (command != "follow").then_some(REPLY_TIMEOUT)
}

/// Whether a status line refuses [`ENCODED_FRAMES`] (a library that
/// predates it takes it for an option with a value).
fn refused_encoded(status: &[u8]) -> bool {
    let text = String::from_utf8_lossy(status);
    text.contains(ENCODED_FRAMES)
        && (text.starts_with("error: ") || text.starts_with("{\"ok\":false"))
}

/// Connects to `socket` (served by process `pid`, if given), sends
/// `line` and reads the reply's status line.
fn ask(socket: &std::path::Path, pid: Option<u32>, line: &str) -> Result<Asked, ExitCode> {
    let command = line
        .split(' ')
        .find(|w| !w.starts_with("--"))
        .unwrap_or_default();
    let stream = match connect(socket) {
        Ok(s) => s,
        Err(e) => return Err(fail(UNREACHABLE, &format!("{}: {e}", socket.display()))),
    };
    let cred = match peer_cred(stream.as_raw_fd()) {
        Ok(cred) => cred,
        Err(e) => return Err(fail(UNREACHABLE, &format!("{}: {e}", socket.display()))),
    };
    if let Some(pid) = pid {
        let server = cred.pid as u32;
        if server != pid {
            return Err(fail(
                UNREACHABLE,
                &format!(
                    "{} is served by process {server}, not by process {pid}",
                    socket.display()
                ),
            ));
        }
    }
    if let Err(e) = stream
        .set_read_timeout(timeout(command))
        .and_then(|()| stream.set_write_timeout(Some(REPLY_TIMEOUT)))
        .and_then(|()| {
            let mut w = &stream;
            w.write_all(format!("{line}\n").as_bytes())
        })
    {
        return Err(fail(UNREACHABLE, &format!("{}: {e}", socket.display())));
    }
    // The status line has 10 s in all; then a dump or a follow may take as
    // long as the ring takes to send (10 s without a byte ends a dump), and
    // any other reply has what is left of the 10 s.
    let deadline = std::time::Instant::now() + REPLY_TIMEOUT;
    let mut reader = BufReader::new(stream);
    let status = match read_line(&mut reader, STATUS_MAX, Some(deadline)) {
        Ok(Some(status)) => status,
        Ok(None) => {
            return Err(fail(
                UNREACHABLE,
                "the program closed the connection without a reply",
            ))
        }
        Err(None) => {
            return Err(fail(
                UNREACHABLE,
                &format!(
                    "the reply's status line is longer than {STATUS_MAX} bytes: not a vlog \
                     control socket?"
                ),
            ))
        }
        Err(Some(e)) => return Err(fail(UNREACHABLE, &format!("no reply: {}", cut_short(&e)))),
    };
    Ok(Asked {
        reader,
        status,
        deadline,
        owner: FramesOwner {
            uid: cred.uid,
            gid: cred.gid,
            // (None where the kernel did not tell them.)
            groups: (!cred.groups.is_empty()).then_some(cred.groups),
        },
    })
}

fn main() -> ExitCode {
    let options: Options = match TOOL.parse() {
        Ok(options) => options,
        Err(code) => return code,
    };
    let mut words = options.words.clone();
    // --json may come after the command too (`follow --json`).
    let json = options.json || words.iter().skip(1).any(|w| w == "--json");
    words.retain(|w| w != "--json");
    match (options.pid, words.len()) {
        (None, 0) => return TOOL.usage_error("missing SOCKET COMMAND"),
        (Some(_), 0) => return TOOL.usage_error("missing COMMAND"),
        _ => {}
    }
    let socket = match options.pid {
        Some(pid) => match find_socket(pid) {
            Ok(path) => path,
            Err(e) => return fail(UNREACHABLE, &e),
        },
        None if words.len() < 2 => return TOOL.usage_error("missing COMMAND"),
        None => PathBuf::from(words.remove(0)),
    };
    let Some(command) = words.first().cloned() else {
        return TOOL.usage_error("missing COMMAND");
    };
    let line = match request(&command, &words[1..], json) {
        Ok(line) => line,
        Err(e) => return TOOL.usage_error(&e),
    };
    let streamed = command == "dump" || command == "follow";
    // A dump's or a follow's backtraces come encoded, to be named here
    // (the program names none); a program whose library predates the
    // option refuses it, and is asked again without. Right after the
    // command: never the value of an option the user left without one.
    let encoded = line.replacen(&command, &format!("{command} {ENCODED_FRAMES}"), 1);
    let mut asked = ask(
        &socket,
        options.pid,
        if streamed { &encoded } else { &line },
    );
    if streamed && asked.as_ref().is_ok_and(|a| refused_encoded(&a.status)) {
        asked = ask(&socket, options.pid, &line);
    } else if let (true, Ok(a)) = (streamed, &asked) {
        name_frames();
        name_frames_for(a.owner.clone());
    }
    let Asked {
        mut reader,
        status,
        deadline,
        ..
    } = match asked {
        Ok(asked) => asked,
        Err(code) => return code,
    };
    let failed = if json {
        status.starts_with(b"{\"ok\":false")
    } else {
        status.starts_with(b"error: ")
    };
    if failed {
        let why = String::from_utf8_lossy(&status);
        let why = why.trim_end();
        return fail(REFUSED, why.strip_prefix("error: ").unwrap_or(why));
    }
    let mut stdout = io::stdout().lock();
    let deadline = if streamed {
        if let Err(e) = reader.get_ref().set_read_timeout(timeout(&command)) {
            return fail(UNREACHABLE, &format!("{}: {e}", socket.display()));
        }
        None
    } else {
        Some(deadline)
    };
    // A JSON reply is its status object, unless records follow it.
    let mut shown = Vec::new();
    if json && !streamed {
        put_for_terminal(&status, &mut shown);
    }
    let mut total = 0;
    let mut named = Vec::new();
    loop {
        if stdout
            .write_all(&shown)
            .and_then(|()| stdout.flush())
            .is_err()
        {
            // Whoever reads stdout went away (`| head`): done.
            return ExitCode::from(OK);
        }
        shown.clear();
        let line = match read_line(&mut reader, REPLY_MAX, deadline) {
            Ok(Some(line)) => line,
            Ok(None) => return ExitCode::from(OK),
            Err(None) => {
                return fail(
                    UNREACHABLE,
                    &format!("a line of the reply is longer than {REPLY_MAX} bytes: stopped"),
                )
            }
            Err(Some(e)) => return fail(UNREACHABLE, &cut_short(&e)),
        };
        total += line.len();
        if !streamed && total > REPLY_MAX {
            return fail(
                UNREACHABLE,
                &format!("the reply is longer than {REPLY_MAX} bytes: stopped"),
            );
        }
        // A line with its frames named goes to the terminal as any other
        // (what it kept of the server's line is the server's).
        named.clear();
        let line = if streamed && name_frames_in(&line, json, &mut named) {
            &named
        } else {
            &line
        };
        put_for_terminal(line, &mut shown);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests() {
        let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            request("filters", &s(&["1:qemu"]), false).unwrap(),
            "filters 1:qemu"
        );
        assert_eq!(
            request("filters", &s(&[""]), false).unwrap(),
            "filters \"\""
        );
        assert_eq!(
            request("dump", &s(&["--grep", "disk full"]), true).unwrap(),
            "--json dump --grep \"disk full\""
        );
        assert!(request("show", &s(&["x"]), false).is_err());
        assert!(request("level", &[], false).is_err());
        assert!(request("filters", &s(&["a\nb"]), false).is_err());
        assert!(request("frob", &[], false).is_err());
        assert_eq!(
            request("dump", &s(&["-p", "debug", "-g", "-s", "-s", "x"]), false).unwrap(),
            "dump --priority debug --grep -s --source x"
        );
    }
}
