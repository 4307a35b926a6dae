//! libvlog-syslog.so, preloaded into programs that log with syslog(3) and
//! know nothing of vlog: a test program that makes every call glibc has
//! (compared byte for byte with glibc on /dev/log and stderr), and real,
//! unmodified Debian daemons (sshd, cron) against a real rsyslogd.
//!
//! Each program runs in a mount namespace of its own whose /dev is an
//! overlay of the machine's with `/dev/log` naming the test's socket, so
//! the daemon's syslog(3) reaches the test's receiver and nothing of the
//! machine's.

use std::os::unix::net::UnixDatagram;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common::*;

/// libvlog-syslog.so, built once from the library this run tests.
pub(crate) fn preload_lib() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let out = work().join("lib/libvlog-syslog.so");
        let mut cmd = Command::new(root().join("preload/build.sh"));
        cmd.arg(work().join("lib/libvlog.a")).arg(&out);
        run_compiler(cmd);
        out
    })
}

/// A program of `c-tests/` built without vlog, as Debian builds (with
/// _FORTIFY_SOURCE=2, so it calls the `_chk` forms), or a preload library
/// (`shared`).
pub(crate) fn build_plain(name: &str, shared: bool) -> PathBuf {
    let out = work().join(if shared {
        format!("{name}.so")
    } else {
        format!("{name}-plain")
    });
    // Tests build the same program at once: each links its own file and
    // renames it into place.
    static BUILDS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = out.with_extension(format!("{}.{n}.tmp", std::process::id()));
    let mut cmd = Command::new(cc());
    cmd.args(["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-O2"])
        .arg("-D_FORTIFY_SOURCE=2")
        .arg(root().join("c-tests").join(format!("{name}.c")));
    if shared {
        cmd.args(["-shared", "-fPIC"]);
    }
    cmd.arg("-o").arg(&tmp).args(["-lpthread", "-ldl"]);
    run_compiler(cmd);
    std::fs::rename(&tmp, &out).unwrap();
    out
}

/// Whether this machine lets the tests give a program a /dev/log of their
/// own (root, mount namespaces, overlayfs); says why not, once per test.
fn namespaces_work() -> bool {
    namespaces_work_under(false)
}

/// `namespaces_work`, for a test whose programs run under valgrind in its
/// pass (`valgrind_too`); ASan's runtime must come before every other
/// library, which a preloaded one cannot give it.
fn namespaces_work_under(valgrind_too: bool) -> bool {
    let why = "the preloaded programs do not run under the tool";
    if !(valgrind_too && tool() == Tool::Valgrind) && skipped_under_tool(why) {
        return false;
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        say_skipped("needs root for a mount namespace with a /dev/log of its own");
        return false;
    }
    static WORKS: OnceLock<Result<(), String>> = OnceLock::new();
    let works = WORKS.get_or_init(|| {
        let dir = scratch_dir("preload-probe");
        let out = in_namespace(&dir, &dir.join("log.sock"), Path::new("/bin/true"), &[])
            .output()
            .map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(())
        } else {
            Err(text(&out.stderr))
        }
    });
    if let Err(e) = works {
        say_skipped(&format!(
            "no mount namespace with an overlay on /dev here: {e}"
        ));
        return false;
    }
    true
}

/// `program` run with `env` in a mount namespace whose /dev is an
/// overlay of the machine's (upper layer in `dir`) with /dev/log a link to
/// `sock`. The variables are the program's alone: the commands that set
/// the namespace up do not load a preload library.
fn in_namespace(dir: &Path, sock: &Path, program: &Path, env: &[(&str, &str)]) -> Command {
    in_namespace_with(dir, sock, program, env, "")
}

/// `in_namespace`, running `also` (shell) in the namespace first.
fn in_namespace_with(
    dir: &Path,
    sock: &Path,
    program: &Path,
    env: &[(&str, &str)],
    also: &str,
) -> Command {
    let script = format!(
        r#"set -e; dir=$1; sock=$2; shift 2
mkdir -p "$dir/dev-up" "$dir/dev-work"
mount -t overlay overlay -o "lowerdir=/dev,upperdir=$dir/dev-up,workdir=$dir/dev-work" /dev
ln -sfn "$sock" /dev/log
{also}
exec env "$@""#
    );
    let mut cmd = Command::new("unshare");
    cmd.args([
        "--mount",
        "--propagation",
        "private",
        "--",
        "sh",
        "-c",
        &script,
        "sh",
    ])
    .arg(dir)
    .arg(sock)
    .args(env.iter().map(|(k, v)| format!("{k}={v}")))
    .arg(program);
    without_vlog_env(&mut cmd);
    cmd.env_remove("LD_PRELOAD").current_dir(dir);
    cmd
}

/// The test's /dev/log: a datagram socket a thread of the test reads as
/// fast as it can (a syslog daemon's queue holds as few as 10 messages).
struct DevLog {
    dir: PathBuf,
    sock: PathBuf,
    got: std::sync::Arc<std::sync::Mutex<Vec<Vec<u8>>>>,
    /// The reading thread's socket, to close it (`restart`).
    socket: Option<UnixDatagram>,
    /// The sockets of the daemons it was before a restart: shut down,
    /// still open (see `restart`).
    retired: Vec<UnixDatagram>,
}

impl DevLog {
    fn new(name: &str) -> DevLog {
        let dir = scratch_dir(name);
        let sock = dir.join("log.sock");
        DevLog::reading(dir, sock)
    }

    /// A socket bound at `sock`, read by a thread of its own.
    fn reading(dir: PathBuf, sock: PathBuf) -> DevLog {
        let socket = UnixDatagram::bind(&sock).unwrap();
        // Anyone may send, as to /dev/log (the setuid test runs as nobody).
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o666)).unwrap();
        let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let keep = got.clone();
        let reader = socket.try_clone().unwrap();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 1 << 17];
            while let Ok(n) = reader.recv(&mut buf) {
                if n == 0 {
                    break;
                }
                keep.lock().unwrap().push(buf[..n].to_vec());
            }
        });
        DevLog {
            dir,
            sock,
            got,
            socket: Some(socket),
            retired: Vec::new(),
        }
    }

    /// The syslog daemon restarted: its socket shut down and its file
    /// removed, a new one bound at the same path and read like the first.
    /// The old socket stays open (shut down, a sender gets EPIPE) until the
    /// test ends, as it may for a while on a busy machine: what refused
    /// was always the old daemon's, never a message lost to it.
    fn restart(mut self) -> DevLog {
        let mut retired = std::mem::take(&mut self.retired);
        if let Some(socket) = self.socket.take() {
            let _ = socket.shutdown(std::net::Shutdown::Both);
            retired.push(socket);
        }
        std::fs::remove_file(&self.sock).unwrap();
        let mut new = DevLog::reading(self.dir.clone(), self.sock.clone());
        new.retired = retired;
        new
    }

    /// A /dev/log that nobody reads: its queue fills at once.
    fn stuck(name: &str) -> DevLog {
        let dir = scratch_dir(name);
        let sock = dir.join("log.sock");
        let socket = UnixDatagram::bind(&sock).unwrap();
        // Kept open, never read, for as long as the test runs.
        DevLog {
            dir,
            sock,
            got: Default::default(),
            socket: Some(socket),
            retired: Vec::new(),
        }
    }

    /// `program` with `args` and `env` in the namespace; under valgrind in
    /// its pass (which reports through exit status 97).
    fn command(&self, program: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
        if tool() != Tool::Valgrind {
            let mut cmd = in_namespace(&self.dir, &self.sock, program, env);
            cmd.args(args);
            return cmd;
        }
        let mut cmd = in_namespace(&self.dir, &self.sock, Path::new("valgrind"), env);
        cmd.args([
            "-q",
            "--error-exitcode=97",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite",
        ])
        .arg(program)
        .args(args);
        cmd
    }

    fn run(&self, program: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
        self.command(program, args, env).output().unwrap()
    }

    /// The datagrams received, once `n` have come (30 s at most: a program
    /// still running may be slow to start, under valgrind above all) and
    /// then none for 300 ms.
    fn received_at_least(&self, n: usize) -> Vec<Vec<u8>> {
        let until = Instant::now() + Duration::from_secs(30);
        while self.got.lock().unwrap().len() < n && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.received()
    }

    /// The datagrams received so far, once none has come for 300 ms.
    fn received(&self) -> Vec<Vec<u8>> {
        let mut seen = usize::MAX;
        loop {
            std::thread::sleep(Duration::from_millis(300));
            let mut got = self.got.lock().unwrap();
            if got.len() == seen {
                return std::mem::take(&mut *got);
            }
            seen = got.len();
        }
    }
}

/// `bytes` with `[PID]` for the given pid, for comparing two runs.
fn without_pid(bytes: &[u8], pid: &str) -> String {
    String::from_utf8_lossy(bytes).replace(&format!("[{pid}]"), "[PID]")
}

fn first_line(out: &Output) -> String {
    text(&out.stdout).lines().next().unwrap_or("").to_owned()
}

/// Every call glibc's syslog(3) has, with and without the preload library:
/// what reaches /dev/log and stderr is the same, byte for byte (the
/// timestamps aside, which are checked to be local time); and the ring has
/// every message the mask let through, under its ident's source, with the
/// vlog priority of its severity and the facility and severity as fields.
#[test]
fn preload_sends_what_glibc_sends() {
    if !namespaces_work_under(true) {
        return;
    }
    let exe = build_plain("syslog_calls", false);
    let log = DevLog::new("preload-calls");
    // A zone 5:30 east of UTC, written out (no tzdata needed).
    let tz = ("TZ", "VLG-5:30");
    let glibc_run = log.run(&exe, &["calls"], &[tz]);
    assert_ok("syslog_calls without the preload", &glibc_run);
    let glibc = log.received();
    let ring = log.dir.join("calls.ring");
    let ring_env = ring.to_str().unwrap();
    let vlog_run = log.run(
        &exe,
        &["calls"],
        &[
            tz,
            ("LD_PRELOAD", preload_lib().to_str().unwrap()),
            ("VLOG_BUFFER_FILE", ring_env),
        ],
    );
    assert_ok("syslog_calls with the preload", &vlog_run);
    let vlog = log.received();
    let (glibc_pid, vlog_pid) = (first_line(&glibc_run), first_line(&vlog_run));
    assert_eq!(glibc.len(), 18, "{glibc:?}");
    assert_eq!(vlog.len(), glibc.len(), "{vlog:?}");
    let utc_plus = |secs: u64| {
        let mut v = Vec::new();
        vlog::internal::put_rfc3164(secs * 1_000_000_000, &mut v);
        String::from_utf8(v).unwrap()
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let local_now: Vec<String> = (0..30)
        .map(|back| utc_plus(now + 5 * 3600 + 1800 - back))
        .collect();
    for (g, v) in glibc.iter().zip(&vlog) {
        let (g, mut v) = (without_pid(g, &glibc_pid), without_pid(v, &vlog_pid));
        if g.contains(": longest yyy") {
            // The one difference: a message longer than vlog keeps is cut,
            // with vlog's marker, where glibc sends it whole.
            let marker = " [truncated: 10012 bytes]";
            assert!(
                v.ends_with(marker) && g.ends_with(&format!("{} end", "y".repeat(10_000))),
                "{v:?}"
            );
            let kept = v.len() - marker.len() - v.find(": longest ").unwrap();
            let same = |s: &str| s[s.find(": longest ").unwrap()..][..kept].to_owned();
            assert!(same(&g) == same(&v), "the long message's start differs");
            v = format!(
                "{}{}",
                &v[..v.find(": longest ").unwrap()],
                &g[g.find(": longest ").unwrap()..]
            );
        }
        let stamp = |s: &str| s[s.find('>').unwrap() + 1..][..15].to_owned();
        let rest = |s: &str| s[s.find('>').unwrap() + 16..].to_owned();
        assert_eq!(
            g[..g.find('>').unwrap()],
            v[..v.find('>').unwrap()],
            "{g}\n{v}"
        );
        assert_eq!(rest(&g), rest(&v));
        assert!(local_now.contains(&stamp(&v)), "{v}: not local time now");
    }
    // stderr (LOG_PERROR): the same lines, the long one aside again.
    let perror = |out: &Output, pid: &str| -> Vec<String> {
        without_pid(&out.stderr, pid)
            .lines()
            .map(|l| match l.find(": longest ") {
                Some(at) => l[..at + 30].to_owned(),
                None => l.to_owned(),
            })
            .collect()
    };
    let (g, v) = (perror(&glibc_run, &glibc_pid), perror(&vlog_run, &vlog_pid));
    assert!(g.len() == 12 && g == v, "stderr differs");
    assert_eq!(text(&vlog_run.stdout).lines().nth(1), Some("errno 9"));

    let dump = text(&vlog_dump(&[ring_env]).stdout);
    let lines: Vec<&str> = dump.lines().collect();
    assert_eq!(lines.len(), 18, "{dump}");
    for (source, prio, message, facility, severity) in [
        ("syslog_calls-plain", "warning", "before openlog 1", 1, 4),
        ("calls-a", "info", "info with pid yes", 3, 6),
        (
            "calls-a",
            "error",
            "errno kept for %m: No such file or directory",
            3,
            3,
        ),
        ("calls-a", "info", "to local3", 19, 5),
        // The source is the ident openlog was given; the in-place change
        // reaches /dev/log, as with glibc.
        ("calls-a", "error", "renamed in place", 3, 2),
        ("calls-c", "error", "also on stderr", 4, 1),
        ("calls-c", "debug", "ends in a newline\\n", 4, 7),
        (
            "calls-c",
            "error",
            "syslog: unknown facility/priority: 10006",
            4,
            3,
        ),
        ("calls-c", "info", "not masked", 4, 5),
        ("syslog_calls-plain", "info", "after closelog", 4, 6),
    ] {
        let want = format!(
            ": {prio} : {source} : syslog:0 : {message} [SYSLOG_FACILITY={facility} \
             SYSLOG_SEVERITY={severity}]"
        );
        assert!(
            lines.iter().any(|l| l.ends_with(&want)),
            "no '{want}' in:\n{dump}"
        );
    }
    assert!(!dump.contains("masked out"), "{dump}");
}

/// With the preload library, syslog(3) from a signal handler that
/// interrupted syslog(3) never deadlocks (the nested message is dropped and
/// counted, which the control socket shows); from threads, after fork, from
/// a thread-key destructor and from atexit, every message arrives; a
/// pending cancel acts as the call returns, never inside it; a /dev/log that reads nothing
/// holds the program up once, for 20 ms.
#[test]
fn preload_is_safe_where_syslog_is_called_from() {
    if !namespaces_work_under(true) {
        return;
    }
    let exe = build_plain("syslog_calls", false);
    let log = DevLog::new("preload-safety");
    let lib = preload_lib().to_str().unwrap();

    // A signal handler that logs, 100 us after the last one, while the main
    // loop logs.
    let ctl = log.dir.join("ctl.sock");
    let control = ctl.to_str().unwrap();
    let mut child = log
        .command(
            &exe,
            &["signal"],
            &[
                ("LD_PRELOAD", lib),
                ("VLOG_CONTROL", control),
                ("VLOG_OUTPUTS", "3:syslog"),
            ],
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    use std::io::{BufRead, Write};
    let started = Instant::now();
    out.read_line(&mut line).unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    assert!(line.starts_with("handled "), "{line}");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    let handled: u64 = line["handled ".len()..].trim().parse().unwrap();
    let stats = Command::new(env!("CARGO_BIN_EXE_vlog-ctl"))
        .args([control, "stats"])
        .output()
        .unwrap();
    assert_ok("vlog-ctl stats", &stats);
    let stats = text(&stats.stdout);
    let count = |name: &str| -> u64 {
        stats
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} in {stats}"))
            .parse()
            .unwrap()
    };
    child.stdin.take().unwrap().write_all(b"done\n").unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    // Every message was recorded (info: no output prints it) or, when the
    // handler interrupted one on its thread, dropped and counted.
    let recorded = count("records");
    assert!(handled > 0, "{handled} signals handled");
    assert_eq!(
        recorded + count("dropped_nested"),
        20_000 + handled,
        "{stats}"
    );

    // Threads: every message reaches /dev/log.
    let threads = log.run(&exe, &["threads"], &[("LD_PRELOAD", lib)]);
    assert_ok("syslog_calls threads", &threads);
    let got = log.received();
    assert_eq!(got.len(), 8000);
    for t in 0..4 {
        let mine = got
            .iter()
            .filter(|d| String::from_utf8_lossy(d).contains(&format!("thread {t} message ")))
            .count();
        assert_eq!(mine, 2000);
    }

    // fork: the child's message has the child's pid.
    let forked = log.run(&exe, &["fork"], &[("LD_PRELOAD", lib)]);
    assert_ok("syslog_calls fork", &forked);
    let got: Vec<String> = log
        .received()
        .iter()
        .map(|d| String::from_utf8_lossy(d).into_owned())
        .collect();
    let pid = first_line(&forked);
    assert_eq!(got.len(), 3, "{got:?}");
    assert!(
        got[0].ends_with(&format!("calls-fork[{pid}]: before fork")),
        "{:?}",
        got[0]
    );
    assert!(
        got[1].ends_with(": in the child") && !got[1].contains(&pid),
        "{:?}",
        got[1]
    );
    assert!(
        got[2].contains(&format!("calls-fork[{pid}]: in the parent, child ")),
        "{:?}",
        got[2]
    );

    // The syslog daemon restarted between two messages: the second goes to
    // the new one, as glibc sends it there.
    let mut child = log
        .command(&exe, &["restart"], &[("LD_PRELOAD", lib)])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let first = log.received_at_least(1);
    assert_eq!(first.len(), 1);
    assert!(
        String::from_utf8_lossy(&first[0]).ends_with(": before the restart"),
        "{:?}",
        String::from_utf8_lossy(&first[0])
    );
    let log = log.restart();
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let second = log.received_at_least(1);
    assert_eq!(second.len(), 1, "{second:?}");
    assert!(
        String::from_utf8_lossy(&second[0]).ends_with(": after the restart"),
        "{:?}",
        String::from_utf8_lossy(&second[0])
    );

    // A pending cancel acts as the first syslog(3) returns, its message
    // sent: syslog is a cancellation point, and vlog acts on none inside.
    let cancel = log.run(&exe, &["cancel"], &[("LD_PRELOAD", lib)]);
    assert_ok("syslog_calls cancel", &cancel);
    assert_eq!(
        text(&cancel.stdout).lines().skip(1).collect::<Vec<_>>(),
        ["cancelled after 0 calls returned"]
    );
    let got = log.received();
    assert_eq!(got.len(), 1, "{got:?}");

    // From a thread-key destructor, as the thread exits.
    let key = log.run(&exe, &["key"], &[("LD_PRELOAD", lib)]);
    assert_ok("syslog_calls key", &key);
    let got: Vec<String> = log
        .received()
        .iter()
        .map(|d| String::from_utf8_lossy(d).into_owned())
        .collect();
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(
        got[1].ends_with("calls-key: from a key destructor: exiting"),
        "{got:?}"
    );

    // A syslog daemon that takes nothing: the program is never held up for
    // more than one wait, and says so once.
    let stuck = DevLog::stuck("preload-stuck");
    let started = Instant::now();
    let out = stuck.run(&exe, &["threads"], &[("LD_PRELOAD", lib)]);
    assert_ok("syslog_calls threads, /dev/log stuck", &out);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    let stderr = text(&out.stderr);
    assert_eq!(
        stderr.matches("vlog: cannot write to syslog").count(),
        1,
        "{stderr}"
    );

    // atexit: after vlog's own exit handlers too.
    let exited = log.run(&exe, &["atexit"], &[("LD_PRELOAD", lib)]);
    assert_ok("syslog_calls atexit", &exited);
    let got = log.received();
    assert_eq!(got.len(), 1);
    assert!(
        String::from_utf8_lossy(&got[0]).ends_with("calls-atexit: from atexit"),
        "{:?}",
        String::from_utf8_lossy(&got[0])
    );
}

/// In a setuid process (AT_SECURE) the library starts nothing and passes
/// every call to glibc: the environment chooses nothing (no ring file is
/// made), and /dev/log receives what glibc sends.
#[test]
fn preload_passes_through_when_setuid() {
    if !namespaces_work() {
        return;
    }
    // ld.so ignores LD_PRELOAD paths in a setuid program, so the program is
    // linked with the library instead: the same code decides.
    let dir = scratch_dir("preload-setuid");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let lib = preload_lib();
    let exe = dir.join("syslog_calls-suid");
    let mut cmd = Command::new(cc());
    cmd.args(["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-O2"])
        .arg("-D_FORTIFY_SOURCE=2")
        .arg(root().join("c-tests/syslog_calls.c"))
        .arg("-o")
        .arg(&exe)
        .arg(lib)
        .arg(format!("-Wl,-rpath,{}", lib.parent().unwrap().display()))
        .arg("-lpthread");
    run_compiler(cmd);
    std::os::unix::fs::chown(&exe, Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o4755)).unwrap();
    let log = DevLog::new("preload-setuid-log");
    let ring = dir.join("chosen-by-user.ring");
    let out = log.run(
        &exe,
        &["calls"],
        &[
            ("VLOG_BUFFER_FILE", ring.to_str().unwrap()),
            ("VLOG_OUTPUTS", "1:stderr"),
        ],
    );
    assert_ok("syslog_calls (setuid)", &out);
    assert!(!ring.exists(), "a setuid process obeyed VLOG_BUFFER_FILE");
    let got = log.received();
    assert_eq!(got.len(), 18);
    // glibc's own syslog(3): the message longer than vlog keeps is whole.
    assert!(
        got.iter()
            .any(|d| String::from_utf8_lossy(d).ends_with(&format!("{} end", "y".repeat(10_000)))),
        "the long message did not come whole"
    );
    assert!(
        !text(&out.stderr).contains(" : calls-a : "),
        "{}",
        text(&out.stderr)
    );
}

/// The crash handler is installed when the library loads, and keeps the
/// program's own handlers in either order: one installed before it (by an
/// earlier library's constructor) and one installed after it, even after
/// the program reset every signal to SIG_DFL; each gets the signal after
/// the dump, and the program dies of it as without the library.
#[test]
fn preload_keeps_the_crash_handler() {
    if signal_test_skipped() {
        return;
    }
    let exe = build_plain("syslog_calls", false);
    let early = build_plain("early_handler", true);
    let dir = scratch_dir("preload-crash");
    let lib = preload_lib().to_str().unwrap();
    let crash = |mode: &str, preload: &str| {
        let dump = dir.join(format!("{mode}.crash"));
        let _ = std::fs::remove_file(&dump);
        let mut cmd = Command::new(&exe);
        without_vlog_env(&mut cmd);
        cmd.arg(mode).env("VLOG_OUTPUTS", "4:stderr");
        if !preload.is_empty() {
            cmd.env("LD_PRELOAD", preload)
                .env("VLOG_DUMP", format!("file:{}", dump.display()));
        }
        let out = cmd.output().unwrap();
        (out, std::fs::read_to_string(&dump).unwrap_or_default())
    };
    let early_first = format!("{} {lib}", early.display());
    let vlog_first = format!("{lib} {}", early.display());
    let (plain, _) = crash("segv", "");
    for (mode, preload, handler) in [
        ("segv", lib, None),
        ("handler", lib, Some("the program's own handler ran\n")),
        (
            "segv",
            early_first.as_str(),
            Some("the earlier handler ran\n"),
        ),
        (
            "segv",
            vlog_first.as_str(),
            Some("the earlier handler ran\n"),
        ),
    ] {
        let (out, dump) = crash(mode, preload);
        assert_eq!(out.status.signal(), Some(libc::SIGSEGV), "{mode} {preload}");
        assert_eq!(out.status.signal(), plain.status.signal());
        assert!(
            dump.starts_with("vlog: fatal signal SIGSEGV (11)"),
            "{dump}"
        );
        assert!(
            dump.contains(": debug : calls-crash : syslog:0 : the last message before the crash"),
            "{dump}"
        );
        let stdout = text(&out.stdout);
        assert_eq!(
            stdout.lines().count(),
            1 + usize::from(handler.is_some()),
            "{stdout}"
        );
        if let Some(handler) = handler {
            assert!(stdout.ends_with(handler), "{mode} {preload}: {stdout}");
        }
    }
}

/// A real rsyslogd reading the test's /dev/log socket, writing what it
/// receives (priority and the raw message) to `out.log`; stopped when
/// dropped.
struct Rsyslogd {
    child: std::process::Child,
    sock: PathBuf,
    out: PathBuf,
}

impl Rsyslogd {
    fn start(dir: &Path) -> Option<Rsyslogd> {
        let sock = dir.join("log.sock");
        let out = dir.join("out.log");
        let child = spawn_rsyslogd(
            dir,
            &format!(
                "global(workDirectory=\"{dir}\")\n\
                 module(load=\"imuxsock\" SysSock.Use=\"off\")\n\
                 input(type=\"imuxsock\" Socket=\"{sock}\")\n\
                 template(name=\"t\" type=\"string\" string=\"%pri% %rawmsg%\\n\")\n\
                 *.* action(type=\"omfile\" file=\"{out}\" template=\"t\")\n",
                dir = dir.display(),
                sock = sock.display(),
                out = out.display(),
            ),
        )?;
        let server = Rsyslogd { child, sock, out };
        for _ in 0..100 {
            if server.sock.exists() {
                return Some(server);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// What it wrote since `from` bytes, once nothing new has come for
    /// 500 ms.
    fn lines_since(&self, from: usize) -> Vec<String> {
        let mut seen = usize::MAX;
        loop {
            std::thread::sleep(Duration::from_millis(500));
            let all = std::fs::read(&self.out).unwrap_or_default();
            if all.len() == seen {
                return String::from_utf8_lossy(&all[from.min(all.len())..])
                    .lines()
                    .map(str::to_owned)
                    .collect();
            }
            seen = all.len();
        }
    }

    fn written(&self) -> usize {
        std::fs::metadata(&self.out).map_or(0, |m| m.len() as usize)
    }
}

impl Drop for Rsyslogd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A line rsyslogd wrote, for comparing two runs: the priority, and the
/// message after its timestamp with every number made N (pids, ports).
fn comparable(line: &str) -> String {
    let (pri, raw) = line.split_once(' ').unwrap_or((line, ""));
    let message = raw
        .find('>')
        .map_or(raw, |at| raw.get(at + 17..).unwrap_or(""));
    let mut out = format!("{pri} ");
    let mut in_number = false;
    for c in message.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push('N');
            }
            in_number = true;
        } else {
            out.push(c);
            in_number = false;
        }
    }
    out
}

fn sorted(mut lines: Vec<String>) -> Vec<String> {
    lines.sort();
    lines
}

/// A daemon run for the test in its own namespace, with its /dev/log the
/// test's rsyslogd.
struct Daemon {
    child: std::process::Child,
}

impl Daemon {
    fn start(dir: &Path, syslog: &Rsyslogd, argv: &[&str], env: &[(&str, &str)]) -> Daemon {
        Daemon::start_with(dir, syslog, argv, env, "")
    }

    /// `start`, with `also` run in the namespace first.
    fn start_with(
        dir: &Path,
        syslog: &Rsyslogd,
        argv: &[&str],
        env: &[(&str, &str)],
        also: &str,
    ) -> Daemon {
        let ns = dir.join(format!("ns-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&ns);
        std::fs::create_dir_all(&ns).unwrap();
        let mut cmd = in_namespace_with(&ns, &syslog.sock, Path::new(argv[0]), env, also);
        cmd.args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        Daemon {
            child: cmd.spawn().unwrap(),
        }
    }

    /// The daemon's pid: the namespace's shell executes it in place.
    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Sends `sig` and returns how the daemon ended, and its stderr.
    fn kill(mut self, sig: i32) -> (std::process::ExitStatus, String) {
        // SAFETY: a signal to the test's own child.
        unsafe { libc::kill(self.pid(), sig) };
        let out = std::mem::replace(&mut self.child, Command::new("true").spawn().unwrap())
            .wait_with_output()
            .unwrap();
        (out.status, text(&out.stderr))
    }
}

/// Waits until `lines` (what rsyslogd has written since `from`) has a line
/// containing `needle`, at most 10 s.
fn wait_for(syslog: &Rsyslogd, from: usize, needle: &str) -> bool {
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        let all = std::fs::read(&syslog.out).unwrap_or_default();
        if String::from_utf8_lossy(&all[from.min(all.len())..]).contains(needle) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// Lines of `dump` (vlog-dump's or a crash dump's text) recorded by `pid`.
fn by_pid<'a>(dump: &'a str, pid: &str) -> Vec<&'a str> {
    let mark = format!(": {pid}: ");
    dump.lines().filter(|l| l.contains(&mark)).collect()
}

/// The spy's record of a daemon's syslog(3) calls: proof that the daemon
/// logs through syslog(3) and not through a socket of its own.
fn spy_calls(
    dir: &Path,
    syslog: &Rsyslogd,
    argv: &[&str],
    also: &str,
    act: impl FnOnce(&Daemon),
) -> String {
    let spy = build_plain("syslog_spy", true);
    let record = dir.join("spy.txt");
    let _ = std::fs::remove_file(&record);
    let daemon = Daemon::start_with(
        dir,
        syslog,
        argv,
        &[
            ("LD_PRELOAD", spy.to_str().unwrap()),
            ("SYSLOG_SPY", record.to_str().unwrap()),
        ],
        also,
    );
    act(&daemon);
    daemon.kill(libc::SIGTERM);
    std::fs::read_to_string(&record).unwrap_or_default()
}

/// What a daemon's run with the library left, after the comparison with
/// a run without it (`with_and_without`).
struct Compared {
    /// The daemon's pid, and the lines rsyslogd received in the run.
    pid: String,
    lines: Vec<String>,
    /// The crash dump it wrote when killed with SIGSEGV.
    dump: String,
}

/// Runs the daemon `argv` without the library, then with it (a ring file
/// and a crash dump file named after `name` in `dir`), each time doing
/// `act` (which returns the lines rsyslogd received since the offset it is
/// given) and then killing it with SIGSEGV: rsyslogd received the same
/// lines both times (numbers aside, sorted: processes interleave), and the
/// daemon died of the signal as without the library.
fn with_and_without(
    dir: &Path,
    syslog: &Rsyslogd,
    argv: &[&str],
    also: &str,
    name: &str,
    act: impl Fn(usize) -> Vec<String>,
) -> Compared {
    let from = syslog.written();
    let daemon = Daemon::start_with(dir, syslog, argv, &[], also);
    let plain = act(from);
    let (plain_status, _) = daemon.kill(libc::SIGSEGV);
    let ring = dir.join(format!("{name}.ring"));
    let crash = dir.join(format!("{name}.crash"));
    let from = syslog.written();
    let daemon = Daemon::start_with(
        dir,
        syslog,
        argv,
        &[
            ("LD_PRELOAD", preload_lib().to_str().unwrap()),
            ("VLOG_BUFFER_FILE", ring.to_str().unwrap()),
            ("VLOG_DUMP", &format!("file:{}", crash.display())),
        ],
        also,
    );
    let pid = daemon.pid().to_string();
    let lines = act(from);
    let (status, stderr) = daemon.kill(libc::SIGSEGV);
    assert!(!plain.is_empty(), "{plain:?}");
    assert_eq!(
        sorted(plain.iter().map(|l| comparable(l)).collect()),
        sorted(lines.iter().map(|l| comparable(l)).collect()),
        "{name}: rsyslogd received other lines with the library"
    );
    assert_eq!(plain_status.signal(), Some(libc::SIGSEGV));
    assert_eq!(status.signal(), plain_status.signal(), "{stderr}");
    assert_eq!(status.core_dumped(), plain_status.core_dumped());
    let dump = std::fs::read_to_string(&crash).unwrap();
    assert!(
        dump.starts_with("vlog: fatal signal SIGSEGV (11)")
            && dump.contains(&format!("pid {pid},")),
        "{dump}"
    );
    Compared { pid, lines, dump }
}

/// OpenSSH's sshd, unmodified, on a loopback port: it closes every
/// descriptor from 3 up at its start and re-executes itself for each
/// connection. With the library, its messages still reach a real rsyslogd
/// as before (the same lines as a run without it); they are in the ring
/// under source `sshd` with their priorities, the listener's and the
/// re-executed child's in one ring file; its debug messages are kept in
/// the ring only when the output asks for info and up; SIGSEGV writes the
/// crash dump (after closefrom took the dump file's descriptor) and ends
/// it as without the library; after SIGKILL vlog-dump reads the ring file.
#[test]
fn sshd_under_the_preload_library() {
    if !namespaces_work() {
        return;
    }
    let sshd = Path::new("/usr/sbin/sshd");
    if !sshd.exists() || !Path::new("/usr/bin/ssh").exists() {
        needs_installed("no sshd or ssh (apt-get install openssh-server openssh-client)");
        return;
    }
    let dir = scratch_dir("preload-sshd");
    let Some(syslog) = Rsyslogd::start(&dir) else {
        needs_installed("cannot start rsyslogd (not installed?)");
        return;
    };
    std::fs::create_dir_all("/run/sshd").unwrap();
    let key = dir.join("hostkey");
    ssh_keygen(&key);
    let port = free_port();
    let config = dir.join("sshd_config");
    std::fs::write(
        &config,
        format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {key}\nPidFile {dir}/sshd.pid\n\
             LogLevel DEBUG1\nUsePAM no\nStrictModes no\n",
            key = key.display(),
            dir = dir.display()
        ),
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let argv = ["/usr/sbin/sshd", "-D", "-f", config];
    let listening = format!("Server listening on 127.0.0.1 port {port}.");
    // One connection that fails to log in: the listener forks, the child
    // re-executes sshd and logs the exchange. `last` is the line that ends
    // what rsyslogd receives of it (the child's last debug line, when debug
    // lines go there), so two runs are compared whole whatever the load.
    let visit_until = |from: usize, last: &str| {
        assert!(wait_for(&syslog, from, &listening), "sshd did not start");
        let ssh = Command::new("ssh")
            .args(["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no"])
            .args([
                "-o",
                "UserKnownHostsFile=/dev/null",
                "-p",
                &port.to_string(),
            ])
            .args(["nobody@127.0.0.1", "true"])
            .output()
            .unwrap();
        assert!(
            text(&ssh.stderr).contains("Permission denied"),
            "{}",
            text(&ssh.stderr)
        );
        assert!(wait_for(&syslog, from, last), "no '{last}'");
        syslog.lines_since(from)
    };
    let visit = |from: usize| visit_until(from, "debug1: audit_event: unhandled event 12");

    // The spy: sshd's messages go through syslog(3) (__syslog_chk).
    let from = syslog.written();
    let calls = spy_calls(&dir, &syslog, &argv, "", |_| {
        visit(from);
    });
    assert!(calls.contains("CALL openlog 32 sshd"), "{calls}");
    assert!(calls.contains("CALL __syslog_chk 7 %.500s"), "{calls}");
    assert!(calls.contains("CALL __syslog_chk 6 %.500s"), "{calls}");

    // Without the library, then with it: rsyslogd receives the same lines.
    // The crash dump has the listener's records and the child's, which
    // share the ring file.
    let Compared {
        pid: listener,
        lines: vlogged,
        dump,
    } = with_and_without(&dir, &syslog, &argv, "", "sshd", visit);
    assert!(vlogged.len() > 20, "{vlogged:?}");
    assert!(
        dump.contains(&format!(
            ": info : sshd : syslog:0 : {listening} [SYSLOG_FACILITY=4 SYSLOG_SEVERITY=6]"
        )),
        "{dump}"
    );
    let child_pid = vlogged
        .iter()
        .find(|l| l.contains("Connection closed by authenticating user"))
        .and_then(|l| l.split("sshd[").nth(1))
        .and_then(|l| l.split(']').next())
        .unwrap()
        .to_owned();
    assert_ne!(child_pid, listener);
    let child_lines = by_pid(&dump, &child_pid);
    assert!(
        child_lines
            .iter()
            .any(|l| l.contains(": debug : sshd : syslog:0 : debug1: ")),
        "{dump}"
    );
    assert!(
        child_lines.iter().any(|l| l.contains(
            ": info : sshd : syslog:0 : Connection closed by authenticating user nobody"
        )),
        "{dump}"
    );
    assert_eq!(
        by_pid(&dump, &child_pid).len() + by_pid(&dump, &listener).len(),
        vlogged.len(),
        "{dump}"
    );

    // The flight recorder: debug messages in the ring only, info and up to
    // rsyslogd; then SIGKILL, and the ring file read back.
    let lib = preload_lib().to_str().unwrap();
    let ring = dir.join("sshd-killed.ring");
    let from = syslog.written();
    let daemon = Daemon::start(
        &dir,
        &syslog,
        &argv,
        &[
            ("LD_PRELOAD", lib),
            ("VLOG_BUFFER_FILE", ring.to_str().unwrap()),
            ("VLOG_OUTPUTS", "2:syslog"),
        ],
    );
    let listener = daemon.pid().to_string();
    let sent = visit_until(from, "Connection closed by authenticating user nobody");
    daemon.kill(libc::SIGKILL);
    assert!(sent.iter().all(|l| !l.contains("debug1: ")), "{sent:?}");
    assert!(sent.iter().any(|l| l.contains(&listening)), "{sent:?}");
    let dump = text(&vlog_dump_allowing_skips(&[ring.to_str().unwrap()]).stdout);
    let debug = dump
        .lines()
        .filter(|l| l.contains(": debug : sshd : syslog:0 : debug1: "))
        .count();
    assert!(debug > 10, "{dump}");
    assert!(
        dump.contains(&format!(
            ": {listener}: info : sshd : syslog:0 : {listening}"
        )),
        "{dump}"
    );
    assert!(
        dump.contains(": info : sshd : syslog:0 : Connection closed by authenticating user nobody"),
        "{dump}"
    );
}

/// Debian's cron, unmodified, in the foreground: its messages (facility
/// cron, ident `cron`) reach a real rsyslogd as before, are in the ring,
/// and only in the ring when the output prints errors alone; SIGSEGV
/// writes the crash dump and ends it as without the library; after
/// SIGKILL vlog-dump reads the ring file.
#[test]
fn cron_under_the_preload_library() {
    if !namespaces_work() {
        return;
    }
    let cron = Path::new("/usr/sbin/cron");
    if !cron.exists() {
        needs_installed("no cron (apt-get install cron)");
        return;
    }
    let dir = scratch_dir("preload-cron");
    let Some(syslog) = Rsyslogd::start(&dir) else {
        needs_installed("cannot start rsyslogd (not installed?)");
        return;
    };
    // cron keeps one pid file for the machine, and a file saying it ran
    // since the machine started: each run gets a /run of its own, so a
    // cron the machine runs is no matter, and every run starts alike.
    let argv = ["/usr/sbin/cron", "-f", "-L", "15"];
    let own_run = "mount -t tmpfs tmpfs /run";
    let started = |from: usize| {
        assert!(
            wait_for(&syslog, from, "@reboot jobs"),
            "cron did not start"
        );
        syslog.lines_since(from)
    };
    let from = syslog.written();
    let calls = spy_calls(&dir, &syslog, &argv, own_run, |_| {
        started(from);
    });
    assert!(calls.contains("CALL openlog 72 cron"), "{calls}");
    assert!(
        calls.contains("CALL __syslog_chk 6 (%s) %s (%s)"),
        "{calls}"
    );

    let Compared {
        pid,
        lines: vlogged,
        dump,
    } = with_and_without(&dir, &syslog, &argv, own_run, "cron", started);
    let lines = by_pid(&dump, &pid);
    assert_eq!(lines.len(), vlogged.len(), "{dump}");
    assert!(
        lines
            .iter()
            .all(|l| l.contains(": info : cron : syslog:0 : (CRON) ")
                && l.ends_with("[SYSLOG_FACILITY=9 SYSLOG_SEVERITY=6]")),
        "{dump}"
    );

    // Only errors to rsyslogd: cron's info messages are in the ring alone.
    let lib = preload_lib().to_str().unwrap();
    let ring = dir.join("cron-killed.ring");
    let from = syslog.written();
    let daemon = Daemon::start_with(
        &dir,
        &syslog,
        &argv,
        &[
            ("LD_PRELOAD", lib),
            ("VLOG_BUFFER_FILE", ring.to_str().unwrap()),
            ("VLOG_OUTPUTS", "4:syslog"),
        ],
        own_run,
    );
    let ring_path = ring.to_str().unwrap().to_owned();
    let until = Instant::now() + Duration::from_secs(10);
    let mut dump = String::new();
    while Instant::now() < until && !dump.contains("@reboot jobs") {
        std::thread::sleep(Duration::from_millis(100));
        dump = text(&crate::support::run_vlog_dump(&[&ring_path]).stdout);
    }
    daemon.kill(libc::SIGKILL);
    assert!(
        dump.contains(": info : cron : syslog:0 : (CRON) INFO (pidfile fd = "),
        "{dump}"
    );
    let since = syslog.lines_since(from);
    assert!(since.is_empty(), "{since:?}");
    let after = text(&vlog_dump_allowing_skips(&[&ring_path]).stdout);
    assert!(after.contains("@reboot jobs"), "{after}");
}

/// An unmodified program that recovers from SIGSEGV as part of its work (a
/// write barrier whose SA_SIGINFO handler makes the page writable again),
/// run with and without the library: the same output and exit, and its
/// recovered faults cost no dump, only one note (they were 2,000 dumps in a
/// 321 MB file), even where the same store faults again and again with
/// the same registers and no syslog call between (`quiet`). A fault whose
/// handler returns without mending it comes back, as without vlog,
/// undumped: from outside it cannot be told from that barrier. A one-shot
/// (`SA_RESETHAND`) handler runs once, as without vlog, and the fault that
/// comes again is dumped. A handler that falls to the default action
/// is dumped once. Under a file size limit smaller than the dump file,
/// nothing raises SIGXFSZ.
#[test]
fn recovered_faults_cost_no_dump() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    if signal_test_skipped() {
        return;
    }
    let exe = build_plain("write_barrier", false);
    let dir = scratch_dir("preload-recover");
    let lib = preload_lib().to_str().unwrap();
    let run = |args: &[&str], preload: bool, fsize: Option<u64>| {
        let dump = dir.join(format!("{}.dump", args[0]));
        let _ = std::fs::remove_file(&dump);
        if fsize.is_some() {
            // Already past the limit: every write to it fails with EFBIG.
            std::fs::write(&dump, vec![b'#'; 1024]).unwrap();
            std::fs::set_permissions(&dump, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let mut cmd = Command::new(&exe);
        without_vlog_env(&mut cmd);
        cmd.args(args).env("VLOG_OUTPUTS", "4:stderr");
        if preload {
            cmd.env("LD_PRELOAD", lib)
                .env("VLOG_DUMP", format!("file:{}", dump.display()));
        }
        if let Some(limit) = fsize {
            // SAFETY: setrlimit only, between fork and exec.
            unsafe {
                cmd.pre_exec(move || {
                    let lim = libc::rlimit {
                        rlim_cur: limit,
                        rlim_max: limit,
                    };
                    if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                })
            };
        }
        let started = Instant::now();
        let out = cmd.output().unwrap();
        let seconds = started.elapsed().as_secs();
        (
            out,
            std::fs::read_to_string(&dump).unwrap_or_default(),
            seconds,
        )
    };
    let same = |args: &[&str], fsize: Option<u64>| {
        let (plain, _, _) = run(args, false, None);
        let (with, dump, seconds) = run(args, true, fsize);
        assert_eq!(
            (with.status.code(), with.status.signal()),
            (plain.status.code(), plain.status.signal()),
            "{args:?}: {:?} without the library, {:?} with it; stderr {}",
            plain.status,
            with.status,
            text(&with.stderr)
        );
        assert_eq!(text(&with.stdout), text(&plain.stdout), "{args:?}");
        (dump, seconds)
    };
    for (mode, fsize) in [("recover", None), ("recover", Some(512)), ("quiet", None)] {
        let (dump, seconds) = same(&[mode, "2000"], fsize);
        assert!(!dump.contains("fatal signal"), "{dump}");
        let notes = dump
            .matches("went to the program's own handler first")
            .count();
        if fsize.is_none() {
            assert_eq!(notes, 1, "{seconds} s:\n{dump}");
            assert!(dump.len() < 4096, "{} bytes:\n{dump}", dump.len());
        } else {
            assert_eq!(dump, "#".repeat(1024), "a write past the file size limit");
        }
    }
    let (dump, _) = same(&["stuck"], None);
    assert!(!dump.contains("vlog: fatal signal"), "{dump}");
    for mode in ["resethand", "reraise"] {
        let (dump, _) = same(&[mode], None);
        assert_eq!(
            dump.matches("vlog: fatal signal SIGSEGV").count(),
            1,
            "{mode}: {dump}"
        );
    }
    let (dump, _) = same(&["reraise"], None);
    assert_eq!(
        dump.matches("vlog: fatal signal SIGSEGV").count(),
        1,
        "{dump}"
    );
    assert!(
        dump.contains(": write-barrier : syslog:0 : the last message before the crash"),
        "{dump}"
    );
}

/// sshd's processes log a user's disconnect and end with _exit, and an
/// unchanged daemon never calls vlog_flush: under the library, with a file
/// output, the "Disconnected from user" line of every one of 50 logins is
/// in the file (a syslog(3) line is written before the call returns, as
/// glibc's is sent).
#[test]
fn every_disconnect_of_50_sshd_logins_reaches_the_file() {
    if skipped_under_tool("the preloaded programs do not run under the tool") {
        return;
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        say_skipped("sshd's logins need root (privilege separation)");
        return;
    }
    if !Path::new("/usr/sbin/sshd").exists() || !Path::new("/usr/bin/ssh").exists() {
        needs_installed("no sshd or ssh (apt-get install openssh-server openssh-client)");
        return;
    }
    let dir = scratch_dir("preload-sshd-logins");
    std::fs::create_dir_all("/run/sshd").unwrap();
    ssh_keygen(&dir.join("hostkey"));
    ssh_keygen(&dir.join("userkey"));
    std::fs::copy(dir.join("userkey.pub"), dir.join("authorized_keys")).unwrap();
    let port = free_port();
    let config = dir.join("sshd_config");
    std::fs::write(
        &config,
        format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/hostkey\nPidFile {d}/sshd.pid\n\
             UsePAM no\nStrictModes no\nPermitRootLogin yes\n\
             AuthorizedKeysFile {d}/authorized_keys\nLogLevel INFO\n",
            d = dir.display()
        ),
    )
    .unwrap();
    let log = dir.join("sshd.log");
    let outputs = format!("2:file:{}", log.display());
    let mut sshd = Command::new("/usr/sbin/sshd");
    sshd.args(["-D", "-f"]).arg(&config);
    without_vlog_env(&mut sshd);
    let mut sshd = sshd
        .env("LD_PRELOAD", preload_lib())
        .env("VLOG_OUTPUTS", &outputs)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start sshd");
    let count = |needle: &str| {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .matches(needle)
            .count()
    };
    // Until it listens (20 s at most).
    let listening = format!("Server listening on 127.0.0.1 port {port}.");
    for _ in 0..400 {
        if count(&listening) > 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let mut logins = 0;
    for _ in 0..50 {
        let ssh = Command::new("ssh")
            .arg("-i")
            .arg(dir.join("userkey"))
            .args(["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no"])
            .args(["-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"])
            .args(["-p", &port.to_string(), "root@127.0.0.1", "true"])
            .output()
            .unwrap();
        logins += usize::from(ssh.status.success());
    }
    // The last session's process may still be ending: until every
    // disconnect is there (20 s at most).
    for _ in 0..400 {
        if count("Disconnected from user root") >= logins {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = sshd.kill();
    let _ = sshd.wait();
    let (accepted, disconnected) = (
        count("Accepted publickey for root"),
        count("Disconnected from user root"),
    );
    assert!(
        logins == 50 && accepted == 50 && disconnected == 50,
        "{logins} logins: {accepted} accepted and {disconnected} disconnect lines in {}",
        log.display()
    );
}
