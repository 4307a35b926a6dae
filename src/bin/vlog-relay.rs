//! vlog-relay: runs a command with its stdout and stderr relayed into vlog,
//! line by line, configured by the same `VLOG_*` environment as any vlog
//! program (a ring file, outputs, filters): a flight recorder for a program
//! that does not use vlog.
//!
//! The signals a shell or a supervisor sends are passed on to the child;
//! vlog-relay exits with the child's status (128+N for signal N), and when
//! a signal killed the child it prints the child's last records from the
//! ring.

use std::collections::VecDeque;
use std::ffi::{c_int, OsStr, OsString};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, ExitCode, ExitStatus};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::Parser;
use vlog::internal::{
    child_pipe, from_env, parse_priority, put_for_terminal, render_line, set_filters, shutdown,
    signal, start, walk_this_ring, Clock, Entry, Field, Notes, Priority, Relay, Tool, Value, Watch,
    TAIL_MAX,
};

const TOOL: Tool = Tool {
    name: "vlog-relay",
    usage: "vlog-relay [OPTIONS] [--] COMMAND [ARG...]",
    usage_status: FAILED,
};

/// vlog-relay's own failure: a bad option or `VLOG_*` variable, no pipe or
/// thread to be had. (126 and 127 are a command that cannot run and one
/// not found, as env(1) and the shells say.)
const FAILED: u8 = 125;
const CANNOT_RUN: u8 = 126;
const NOT_FOUND: u8 = 127;

/// The signals passed on to the child, when a process sent them.
const PASSED_ON: [c_int; 9] = [
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGALRM,
    libc::SIGTERM,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGWINCH,
    libc::SIGCONT,
];

/// The longest name a child's sources can start with: room for `.stdout`
/// in a source name's 255 bytes.
const NAME_MAX: usize = 248;

const AFTER_HELP: &str = "\
The child's stdout becomes the source NAME.stdout and its stderr NAME.stderr;
each line is read as vlog(3) says (hclog JSON, [LEVEL] and <N> prefixes, vlog's
and libvirt's text lines, anything else at the default priority). The VLOG_*
variables configure vlog-relay as they configure any vlog program, and are
taken out of the child's environment. One default differs: without
VLOG_FILTERS, every line of the child is recorded (1:NAME.stdout 1:NAME.stderr
1:vlog-relay), so the ring holds what the outputs do not print.

HUP, INT, QUIT, ALRM, TERM, USR1, USR2, WINCH and CONT are passed on to the
child when a process sent them (kill(1), a supervisor); those a terminal sends
(^C) reach the child's process group without vlog-relay. VLOG_DUMP_SIGNAL is
not passed on: it dumps vlog-relay's ring, the child's records.

Exit status: the child's; 128+N when signal N killed it (its last records are
printed on stderr first); 125 for vlog-relay's own failure (a bad option or
VLOG_* variable); 126 when COMMAND cannot be run; 127 when it is not found.";

/// Runs COMMAND with its stdout and stderr relayed into vlog, line by line,
/// and exits with its status.
#[derive(Parser)]
#[command(name = "vlog-relay", version, override_usage = TOOL.usage, after_help = AFTER_HELP)]
struct Options {
    /// The child's sources are NAME.stdout and NAME.stderr (default: the
    /// command's file name)
    #[arg(short, long, value_name = "NAME")]
    source: Option<String>,
    /// The priority of a line that names none: 1-4, or debug, info,
    /// warning, error (default: info on stdout, warning on stderr)
    #[arg(short, long, value_name = "PRIO", value_parser = parse_priority)]
    priority: Option<Priority>,
    /// How many of the child's last records to print when a signal kills
    /// it (0: none)
    #[arg(short = 'n', long, value_name = "N", default_value_t = 20)]
    last: usize,
    /// The command to run, and its arguments
    /// (as env(1): the first word that is not an option starts the
    /// command, and `--` ends vlog-relay's options)
    #[arg(required = true, value_name = "COMMAND", trailing_var_arg = true)]
    command: Vec<OsString>,
}

fn main() -> ExitCode {
    let options: Options = match TOOL.parse() {
        Ok(options) => options,
        Err(code) => return code,
    };
    match run(&options) {
        Ok(code) => ExitCode::from(code),
        Err(Failed(code, why)) => TOOL.fail(code, &why),
    }
}

/// Why vlog-relay stopped before the child's status: its exit status, and
/// what to say.
struct Failed(u8, String);

fn failed(why: impl Into<String>) -> Failed {
    Failed(FAILED, why.into())
}

/// The child's two relays, each read on a thread of vlog's (stopped when
/// dropped, whatever ended the run).
struct Relayed {
    names: [Vec<u8>; 2],
    relays: [Arc<Mutex<Relay>>; 2],
    watches: Vec<Watch>,
}

/// How the child is to start: as vlog-relay was started.
struct AsStarted {
    mask: signal::Set,
    ignored: Vec<c_int>,
}

fn run(options: &Options) -> Result<u8, Failed> {
    let name = source_name(options)?;
    // A bad variable is treated as the library treats it in any daemon:
    // one warning (vlog's start, below, says it) and that variable's
    // default, so that a unit with a typo still starts its service.
    let env = from_env(
        |var| std::env::var_os(var).map(|v| v.to_string_lossy().into_owned()),
        |_| {},
    );

    // Before any thread starts (vlog's own among them, which inherit the
    // mask): the signals passed on, and SIGCHLD, reach no thread but this
    // one's wait. The dump signal stays with vlog's handler. SIGCHLD
    // inherited ignored would have the kernel reap the child before the
    // wait: the child gets it back as it was.
    let mut waited: Vec<c_int> = PASSED_ON
        .iter()
        .copied()
        .filter(|&sig| Some(sig) != env.dump_signal)
        .collect();
    waited.push(libc::SIGCHLD);
    let waited = signal::Set::of(&waited);
    let cannot = |e: io::Error| failed(format!("cannot set up signals: {e}"));
    let ignored = match signal::stop_ignoring(libc::SIGCHLD).map_err(cannot)? {
        true => vec![libc::SIGCHLD],
        false => Vec::new(),
    };
    let mask = signal::block(&waited).map_err(cannot)?;

    start();
    let outcome = supervise(
        options,
        &name,
        env.filters.is_none(),
        &waited,
        AsStarted { mask, ignored },
    );
    // The outputs flushed and closed, whatever the outcome.
    shutdown();
    outcome
}

/// Runs the child with its output relayed, and waits for it.
fn supervise(
    options: &Options,
    name: &str,
    record_all: bool,
    waited: &signal::Set,
    as_started: AsStarted,
) -> Result<u8, Failed> {
    if record_all {
        set_filters(&format!("1:vlog-relay 1:{name}.stdout 1:{name}.stderr"))
            .map_err(|e| failed(format!("the source name '{name}': {e}")))?;
    }
    let notes = Notes::new(b"vlog-relay").map_err(|e| failed(e.0))?;
    let (out_default, err_default) = match options.priority {
        Some(p) => (p, p),
        None => (Priority::Info, Priority::Warning),
    };
    let mut relayed = Relayed {
        names: [
            format!("{name}.stdout").into_bytes(),
            format!("{name}.stderr").into_bytes(),
        ],
        relays: [
            relay(name, "stdout", out_default)?,
            relay(name, "stderr", err_default)?,
        ],
        watches: Vec::new(),
    };
    let mut command = Command::new(&options.command[0]);
    command.args(&options.command[1..]);
    signal::spawn_as_started(&mut command, as_started.mask, as_started.ignored);
    for (var, _) in std::env::vars_os() {
        if var.as_encoded_bytes().starts_with(b"VLOG_") {
            command.env_remove(var);
        }
    }
    for (i, relay) in relayed.relays.iter().enumerate() {
        let (reader, writer) =
            child_pipe().map_err(|e| failed(format!("cannot make a pipe: {e}")))?;
        let watch = Watch::start(Arc::clone(relay), reader.as_raw_fd())
            .map_err(|e| failed(format!("cannot start a reading thread: {e}")))?;
        relayed.watches.push(watch);
        // The thread reads a duplicate; the child gets the write end, and
        // this process keeps neither.
        if i == 0 {
            command.stdout(writer);
        } else {
            command.stderr(writer);
        }
    }
    let shown = shown(&options.command);
    // The reading threads record nothing of the child's until its start is
    // recorded: in the ring, "started" comes before the child's first line.
    let held: Vec<_> = relayed
        .relays
        .iter()
        .map(|r| r.lock().unwrap_or_else(|p| p.into_inner()))
        .collect();
    let spawned = command.spawn();
    // Closes this process's write ends: the pipes are the child's alone.
    drop(command);
    let mut child = spawned.map_err(|e| {
        let code = match e.kind() {
            io::ErrorKind::NotFound => NOT_FOUND,
            _ => CANNOT_RUN,
        };
        Failed(code, format!("cannot run {shown}: {e}"))
    })?;
    let pid = child.id();
    let field = |name: &'static [u8], value: i64| Field {
        name,
        value: Value::Int(value),
    };
    let pid_field = field(b"CHILD_PID", i64::from(pid));
    let started = format!("started {shown}, pid {pid}");
    notes.say(Priority::Info, started.as_bytes(), &[pid_field]);
    drop(held);

    let status = wait_passing_signals(&mut child, waited);
    // Everything the child wrote is in the pipes now: the threads take it
    // and stop, without waiting for descendants that still hold them.
    relayed.stop();
    let status = status.map_err(|e| failed(format!("cannot wait for {shown} (pid {pid}): {e}")))?;
    match (status.code(), status.signal()) {
        (Some(code), _) => {
            // A status is the command's answer, not a fault: grep's 1 is
            // "no match". The caller has it as vlog-relay's own status.
            let priority = Priority::Info;
            let what = format!("{shown} (pid {pid}) exited with status {code}");
            let fields = [pid_field, field(b"CHILD_STATUS", i64::from(code))];
            notes.say(priority, what.as_bytes(), &fields);
            Ok(code.clamp(0, 255) as u8)
        }
        (None, Some(sig)) => {
            let what = format!("{shown} (pid {pid}) was {}", killed_by(sig, status));
            let fields = [pid_field, field(b"CHILD_SIGNAL", i64::from(sig))];
            notes.say(Priority::Error, what.as_bytes(), &fields);
            if options.last > 0 {
                print_last(&relayed, options.last, &what);
            }
            Ok((128 + sig).clamp(0, 255) as u8)
        }
        (None, None) => Err(failed(format!("{shown} (pid {pid}) ended with {status}"))),
    }
}

/// The name the child's sources start with: `--source`, checked, or the
/// command's file name made one.
fn source_name(options: &Options) -> Result<String, Failed> {
    if let Some(name) = &options.source {
        let fits = !name.is_empty() && name.len() <= NAME_MAX;
        if !fits || name.bytes().any(|b| b <= b' ' || b == 0x7f || b == b':') {
            return Err(failed(format!(
                "invalid source name '{name}': 1 to {NAME_MAX} bytes, no spaces, control \
                 characters or ':' (a filter names it)"
            )));
        }
        return Ok(name.clone());
    }
    let program = Path::new(&options.command[0]);
    let file = program.file_name().unwrap_or(program.as_os_str());
    let mut name: String = file
        .as_encoded_bytes()
        .iter()
        .map(|&b| {
            if b.is_ascii_graphic() && b != b':' {
                b as char
            } else {
                '_'
            }
        })
        .collect();
    name.truncate(NAME_MAX);
    if name.is_empty() {
        name.push_str("child");
    }
    Ok(name)
}

fn relay(name: &str, stream: &str, default: Priority) -> Result<Arc<Mutex<Relay>>, Failed> {
    let relay = Relay::new(format!("{name}.{stream}").as_bytes(), default)
        .map_err(|e| failed(format!("the source name '{name}': {}", e.0)))?;
    Ok(Arc::new(Mutex::new(relay)))
}

impl Relayed {
    /// Stops the reading threads once they have taken what the pipes hold.
    fn stop(&mut self) {
        for watch in self.watches.drain(..) {
            watch.stop();
        }
    }
}

impl Drop for Relayed {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The command as it is said in messages: the program and its arguments,
/// quoted when they hold a space.
fn shown(command: &[OsString]) -> String {
    let word = |w: &OsStr| {
        // Control characters as \xNN: the text reaches a terminal as it is.
        let w: String = w
            .to_string_lossy()
            .chars()
            .map(|c| match c {
                c if c.is_control() => format!("\\x{:02x}", c as u32),
                c => c.to_string(),
            })
            .collect();
        if w.is_empty() || w.contains(|c: char| c.is_whitespace() || c == '\'') {
            format!("'{}'", w.replace('\'', "'\\''"))
        } else {
            w
        }
    };
    let mut shown: String = command
        .iter()
        .map(|w| word(w))
        .collect::<Vec<_>>()
        .join(" ");
    if shown.len() > 200 {
        let mut cut = 200;
        while !shown.is_char_boundary(cut) {
            cut -= 1;
        }
        shown.truncate(cut);
        shown.push_str("...");
    }
    shown
}

/// Waits for the child to end, passing on each signal of `waited` a process
/// sent (not the child itself: one that signals its parent means the
/// parent). A signal from the kernel (a terminal's ^C, which the child's
/// process group got too) is not sent twice.
fn wait_passing_signals(child: &mut Child, waited: &signal::Set) -> io::Result<ExitStatus> {
    let pid = child.id();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        // SIGCHLD ends the wait as soon as the child is gone; the timeout
        // only bounds a wait whose SIGCHLD went elsewhere.
        let Some(taken) = signal::take(waited, Duration::from_secs(1)) else {
            continue;
        };
        if taken.signal != libc::SIGCHLD
            && taken.from_a_process
            && u32::try_from(taken.sender) != Ok(pid)
        {
            // The child not reaped yet, its pid is still its own: a
            // zombie takes the signal and ignores it.
            let _ = signal::send(pid, taken.signal);
        }
    }
}

/// "killed by signal 11 (SIGSEGV), core dumped".
fn killed_by(sig: c_int, status: ExitStatus) -> String {
    let mut how = format!("killed by signal {sig}");
    if let Some(name) = signal::name(sig) {
        how.push_str(&format!(" ({name})"));
    }
    if status.core_dumped() {
        how.push_str(", core dumped");
    }
    how
}

/// Prints the child's last `n` records from the ring on stderr, oldest
/// first, after a line saying what became of it; without a ring, the last
/// bytes it wrote on stderr.
fn print_last(relayed: &Relayed, n: usize, what: &str) {
    let mut kept: VecDeque<Vec<u8>> = VecDeque::with_capacity(n.min(1024));
    let mut clock = Clock::new();
    let ring = walk_this_ring(|entry| {
        if let Entry::Record(rec) = entry {
            if relayed.names.iter().any(|name| name == rec.source) {
                if kept.len() == n {
                    kept.pop_front();
                }
                let mut line = Vec::new();
                render_line(&rec, &mut clock, &mut line);
                kept.push_back(line);
            }
        }
    });
    let mut err = io::stderr().lock();
    if !ring {
        let mut tail = vec![0u8; TAIL_MAX];
        let relay = relayed.relays[1].lock().unwrap_or_else(|p| p.into_inner());
        let len = relay.tail(&mut tail);
        let _ = writeln!(
            err,
            "vlog-relay: {what}; there is no ring (VLOG_BUFFER_SIZE=0), so here are the \
             last {len} bytes it wrote on stderr:"
        );
        let mut shown = Vec::with_capacity(4 * len);
        put_for_terminal(&tail[..len], &mut shown);
        let _ = err.write_all(&shown);
        let _ = writeln!(err);
        return;
    }
    let records = match kept.len() {
        1 => "record".to_owned(),
        n => format!("{n} records"),
    };
    let _ = writeln!(
        err,
        "vlog-relay: {what}; its last {records} in the ring, oldest first:"
    );
    for line in kept {
        let _ = err.write_all(&line);
    }
}
