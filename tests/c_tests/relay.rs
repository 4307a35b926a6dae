//! The relay: a child's output recorded line by line, every form and every
//! hostile line, filters before parsing, the tail, a signal handler feeding
//! the relay its thread feeds, and a child flooding a pipe while the relay's
//! source is off; a relay reading a pipe on vlog's own thread.

use crate::common::*;

#[test]
fn a_childs_lines_are_relayed_in_every_form_and_never_stop_it() {
    let dir = scratch_dir("relay-output");
    let json = dir.join("relay.json");
    // The flood is 100 MB; under a tool, which runs the reader some fifty
    // times slower, 8 MB (said, so a run under a tool is not taken for
    // the whole test).
    let megabytes = if tool() == Tool::None {
        "100"
    } else {
        eprintln!(
            "relay: under {:?}, the child writes 8 MB instead of 100",
            tool()
        );
        "8"
    };
    let exe = build("relay", Link::Static);
    assert_ok(
        "relay",
        &run_with(&exe, &[json.to_str().unwrap(), megabytes], &[]),
    );
}

#[test]
fn a_relay_reads_a_childs_pipe_on_its_own_thread() {
    check("relay_watch");
}

// ---- vlog-relay: a command's output relayed -----------------------------

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A vlog-relay run with only the given `VLOG_*` variables, started in the
/// scratch directory with descriptors 0, 1 and 2 alone (the test harness
/// may hold others open, cargo's jobserver among them, which a child would
/// inherit through it) and SIGINT, SIGQUIT and SIGHUP at their default, as
/// from a terminal (a shell's background job ignores them, and vlog-relay
/// starts its child as it was started: a SIGINT passed on would then be
/// ignored); the process, not yet waited for.
fn start_relay(args: &[&str], env: &[(&str, &str)]) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vlog-relay"));
    cmd.args(args).current_dir(work());
    // SAFETY: close_range(2) and signal(2) are async-signal-safe, and the
    // closure touches nothing of the parent's.
    unsafe {
        cmd.pre_exec(|| {
            libc::close_range(3, libc::c_uint::MAX, 0);
            for sig in [libc::SIGINT, libc::SIGQUIT, libc::SIGHUP] {
                libc::signal(sig, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    without_vlog_env(&mut cmd);
    cmd.envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.spawn().expect("run vlog-relay")
}

/// Waits for `child`, killing it and failing the test after `seconds`.
fn finish_within(seconds: u64, mut child: std::process::Child, what: &str) -> Output {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{what}: still running after {seconds} s (killed):\n{}",
                text(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

/// vlog-relay ARGS, which must end within a minute. A program just linked
/// can be busy for a moment (see `run_with`): vlog-relay then says "Text
/// file busy", and it is run again.
fn relay(args: &[&str], env: &[(&str, &str)]) -> Output {
    for _ in 0..50 {
        let out = finish_within(60, start_relay(args, env), &format!("vlog-relay {args:?}"));
        if !(out.status.code() == Some(126) && text(&out.stderr).contains("Text file busy")) {
            return out;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("vlog-relay {args:?}: the program stayed busy");
}

/// The ring file's records as vlog-dump --json prints them, one per line
/// (vlog-dump's output is checked to be UTF-8 whatever the child wrote).
fn json_records(ring: &Path) -> Vec<String> {
    let out = vlog_dump(&["--json", ring.to_str().unwrap()]);
    String::from_utf8(out.stdout)
        .expect("vlog-dump --json writes UTF-8")
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The one record that holds `needle`.
fn record<'a>(records: &'a [String], needle: &str) -> &'a str {
    let found: Vec<&String> = records.iter().filter(|r| r.contains(needle)).collect();
    assert!(
        found.len() == 1,
        "{} records hold {needle:?}:\n{}",
        found.len(),
        records.join("\n")
    );
    found[0]
}

/// Fails unless the record holding `needle` holds each of `parts` too.
fn assert_record(records: &[String], needle: &str, parts: &[&str]) {
    let r = record(records, needle);
    for part in parts {
        assert!(
            r.contains(part),
            "the record of {needle:?} lacks {part:?}:\n{r}"
        );
    }
}

fn child() -> std::path::PathBuf {
    build("relay_child", Link::Static)
}

#[test]
fn vlog_relay_records_every_line_form_of_a_command() {
    let dir = scratch_dir("vlog-relay-forms");
    let ring = dir.join("forms.ring");
    let exe = child();
    let out = relay(
        &["--source", "kid", "--", exe.to_str().unwrap(), "forms"],
        &[
            ("VLOG_BUFFER_FILE", ring.to_str().unwrap()),
            ("VLOG_BUFFER_SIZE", "4M"),
            ("VLOG_OUTPUTS", "4:stderr"),
        ],
    );
    assert_ok("vlog-relay forms", &out);
    let r = json_records(&ring);
    let (stdout, stderr) = ("\"source\":\"kid.stdout\"", "\"source\":\"kid.stderr\"");
    let prio = |p: &str| format!("\"priority\":\"{p}\"");
    assert_record(&r, "to stdout at the default", &[stdout, &prio("info")]);
    assert_record(&r, "a debug line on stdout", &[stdout, &prio("debug")]);
    assert_record(
        &r,
        "\"message\":\"hello\"",
        &[
            stderr,
            &prio("debug"),
            "\"CHILD_TIME\":\"2006-01-02T15:04:05.000000Z\"",
            "\"EXTRA\":\"hi\"",
            "\"NUMBERS\":\"[1,2,3]\"",
        ],
    );
    // A non-string @message is kept as its JSON text; a non-string @level
    // gives the stream's default (warning on stderr).
    assert_record(&r, "\"message\":\"5\"", &[stderr, &prio("info")]);
    assert_record(&r, "a number for a level", &[&prio("warning")]);
    // JSON that is not is recorded as it is, at the level of an @level met
    // before it went wrong (the level is found before the rest is read).
    assert_record(&r, "never closed", &[&prio("error"), "@level"]);
    assert_record(&r, "a prefixed error", &[&prio("error")]);
    assert_record(
        &r,
        "a syslog warning",
        &[&prio("warning"), "\"CHILD_SYSLOG_LEVEL\":4"],
    );
    assert_record(
        &r,
        "libvirt says hi",
        &[&prio("info"), "\"CHILD_FUNC\":\"virDomainCreate\""],
    );
    assert_record(&r, "not UTF-8: ", &[" end\""]);
    assert_record(&r, "a NUL", &["inside"]);
    assert_record(&r, "\"message\":\"ends in CR LF\"", &[]);
    // 1,000,000 bytes in pieces of a message's size: all of them kept.
    let pieces: Vec<&String> = r.iter().filter(|l| l.contains("\"FRAGMENT\":")).collect();
    assert_eq!(pieces.len(), 123, "the pieces of the long line");
    assert_record(&r, "\"FRAGMENT\":123}", &[&prio("warning")]);
    let xs: usize = pieces
        .iter()
        .map(|l| l.bytes().filter(|&b| b == b'x').count())
        .sum();
    assert_eq!(xs, 1_000_000);
    // After "panic: ", every line is an error, its own level or not.
    assert_record(&r, "panic: the child gives up", &[&prio("error")]);
    assert_record(&r, "after the panic", &[&prio("error")]);
    assert_record(&r, "a last line without its newline", &[&prio("error")]);
    assert_record(
        &r,
        "exited with status 0",
        &["\"source\":\"vlog-relay\"", &prio("info")],
    );
}

#[test]
fn vlog_relay_keeps_a_vlog_childs_priorities_and_sources() {
    let dir = scratch_dir("vlog-relay-vlog");
    let ring = dir.join("vlog.ring");
    let exe = child();
    let out = relay(
        &["-s", "kid", exe.to_str().unwrap(), "vlog"],
        &[("VLOG_BUFFER_FILE", ring.to_str().unwrap())],
    );
    assert_ok("vlog-relay vlog", &out);
    let r = json_records(&ring);
    assert_record(
        &r,
        "a debug message of a vlog child, 1",
        &["\"priority\":\"debug\"", "\"CHILD_SOURCE\":\"worker\""],
    );
    assert_record(
        &r,
        "an error of a vlog child",
        &["\"priority\":\"error\"", "\"CHILD_SOURCE\":\"worker\""],
    );
}

#[test]
fn vlog_relay_never_stops_a_flooding_child() {
    let dir = scratch_dir("vlog-relay-flood");
    let ring = dir.join("flood.ring");
    let exe = child();
    // The child's stdout off, its stderr kept: 100 MB for the reader to
    // find the line ends of, as fast as the child writes them.
    let out = relay(
        &["-s", "kid", exe.to_str().unwrap(), "flood", "100"],
        &[
            ("VLOG_BUFFER_FILE", ring.to_str().unwrap()),
            ("VLOG_FILTERS", "off:kid.stdout 1:kid.stderr 1:vlog-relay"),
        ],
    );
    assert_ok("vlog-relay flood", &out);
    let r = json_records(&ring);
    assert_record(&r, "flood done", &["\"source\":\"kid.stderr\""]);
    assert_record(&r, "exited with status 0", &[]);
    assert!(!r.iter().any(|l| l.contains("kid.stdout")), "{r:?}");
}

#[test]
fn vlog_relay_prints_a_crashed_childs_last_records() {
    let dir = scratch_dir("vlog-relay-crash");
    let ring = dir.join("crash.ring");
    let exe = child();
    let out = relay(
        &[exe.to_str().unwrap(), "crash"],
        &[("VLOG_BUFFER_FILE", ring.to_str().unwrap())],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(128 + libc::SIGSEGV), "{err}");
    assert!(err.contains("was killed by signal 11 (SIGSEGV)"), "{err}");
    // Its 20 last records by default, oldest first; the source is the
    // program's file name.
    let shown = &err[err.find("its last 20 records in the ring").expect(&err)..];
    assert!(
        shown.contains("relay_child.stderr : ?:0 : line 12\n"),
        "{err}"
    );
    assert!(!shown.contains(": line 11\n"), "{err}");
    let last = shown.find(": line 30\n").unwrap();
    assert!(
        shown[last..].contains("relay_child.stderr : ?:0 : last words\n"),
        "{err}"
    );
    // The ring file holds it all, and what became of the child.
    let r = json_records(&ring);
    assert_record(&r, "\"message\":\"line 1\"", &[]);
    assert_record(
        &r,
        "was killed by signal 11",
        &["\"source\":\"vlog-relay\"", "\"CHILD_SIGNAL\":11"],
    );

    // -n 3, and without a ring, the last bytes it wrote on stderr.
    let out = relay(&["-n", "3", exe.to_str().unwrap(), "crash"], &[]);
    let err = text(&out.stderr);
    let shown = &err[err.find("its last 3 records in the ring").expect(&err)..];
    assert!(
        !shown.contains(": line 28\n") && shown.contains(": line 29\n"),
        "{err}"
    );
    let out = relay(
        &[exe.to_str().unwrap(), "crash"],
        &[("VLOG_BUFFER_SIZE", "0")],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(139), "{err}");
    assert!(
        err.contains("there is no ring (VLOG_BUFFER_SIZE=0)"),
        "{err}"
    );
    assert!(err.ends_with("last words\n\n"), "{err}");
}

/// Starts vlog-relay on `relay_child MODE READY` and waits for the child
/// to say it is ready.
fn started(mode: &str, dir: &Path, env: &[(&str, &str)]) -> std::process::Child {
    let ready = dir.join(format!("{mode}.ready"));
    let exe = child();
    let mut run = start_relay(
        &[
            "-s",
            "kid",
            exe.to_str().unwrap(),
            mode,
            ready.to_str().unwrap(),
        ],
        env,
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ready.exists() {
        if let Some(status) = run.try_wait().unwrap() {
            let out = run.wait_with_output().unwrap();
            panic!(
                "vlog-relay {mode}: {status} before ready:\n{}",
                text(&out.stderr)
            );
        }
        assert!(Instant::now() < deadline, "vlog-relay {mode}: never ready");
        std::thread::sleep(Duration::from_millis(10));
    }
    run
}

#[test]
fn vlog_relay_passes_signals_on_and_exits_with_the_childs_status() {
    let dir = scratch_dir("vlog-relay-signals");
    let ring = dir.join("signals.ring");
    let env = [("VLOG_BUFFER_FILE", ring.to_str().unwrap())];
    // SIGTERM reaches the child, which handles it and exits 7; the SIGUSR1
    // it sent its parent did not come back to it.
    let run = started("signals", &dir, &env);
    // SAFETY: a signal to the process this test started.
    assert_eq!(unsafe { libc::kill(run.id() as i32, libc::SIGTERM) }, 0);
    let out = finish_within(30, run, "vlog-relay signals");
    assert_eq!(out.status.code(), Some(7), "{}", text(&out.stderr));
    let r = json_records(&ring);
    assert_record(&r, "still here after signalling the parent", &[]);
    assert_record(&r, "got SIGTERM", &["\"source\":\"kid.stderr\""]);
    assert_record(&r, "exited with status 7", &["\"priority\":\"info\""]);

    // The dump signal is vlog-relay's own: its ring (the child's records)
    // dumped, the child left alone. A child that does not handle SIGINT
    // dies of it: 128 + 2, its last records printed.
    let dump = dir.join("hang.dump");
    let dump_to = format!("file:{}", dump.display());
    let run = started(
        "hang",
        &dir,
        &[("VLOG_DUMP_SIGNAL", "USR2"), ("VLOG_DUMP", &dump_to)],
    );
    // The child said it is ready, but vlog-relay's thread may not have
    // recorded its line yet on a busy machine: asked again until a dump
    // holds it.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut dumps = 0;
    loop {
        // SAFETY: as above.
        assert_eq!(unsafe { libc::kill(run.id() as i32, libc::SIGUSR2) }, 0);
        dumps += 1;
        let dumped = loop {
            let dumped = std::fs::read_to_string(&dump).unwrap_or_default();
            if dumped.matches("vlog: end of dump").count() >= dumps {
                break dumped;
            }
            assert!(
                Instant::now() < deadline,
                "no dump after SIGUSR2:\n{dumped}"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        if dumped.contains("kid.stdout : ?:0 : hanging") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "never dumped the child's line:\n{dumped}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(run.id() as i32, libc::SIGINT) }, 0);
    let out = finish_within(30, run, "vlog-relay hang");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(128 + libc::SIGINT), "{err}");
    assert!(err.contains("was killed by signal 2 (SIGINT)"), "{err}");
    assert!(err.contains("kid.stdout : ?:0 : hanging\n"), "{err}");
}

#[test]
fn vlog_relay_says_what_it_could_not_do() {
    let dir = scratch_dir("vlog-relay-errors");
    let marker = dir.join("ran");
    let touch = format!("touch {}", marker.display());
    let sh = |env: &[(&str, &str)]| relay(&["--", "/bin/sh", "-c", &touch], env);
    let status = |out: &Output| out.status.code();

    assert_eq!(
        status(&relay(&["--", "/bin/sh", "-c", "exit 3"], &[])),
        Some(3)
    );
    let out = relay(&["--", "/nonexistent/program"], &[]);
    assert_eq!(status(&out), Some(127));
    assert!(
        text(&out.stderr).contains("cannot run /nonexistent/program: No such file"),
        "{:?}",
        text(&out.stderr)
    );
    // A command's name reaches the terminal with its control bytes escaped.
    let out = relay(&["--", "/nonexistent/\x1b[31mred\nline"], &[]);
    let err = text(&out.stderr);
    assert_eq!(status(&out), Some(127));
    assert!(err.contains("/nonexistent/\\x1b[31mred\\x0aline"), "{err}");
    assert!(!err.contains('\x1b') && err.lines().count() == 1, "{err}");
    let plain = dir.join("not-a-program");
    std::fs::write(&plain, "data").unwrap();
    let out = relay(&["--", plain.to_str().unwrap()], &[]);
    assert_eq!(status(&out), Some(126), "{}", text(&out.stderr));

    // A bad or unknown variable: one warning, as the library gives in any
    // daemon, and the command runs with that variable's default.
    let out_file = dir.join("never.log");
    let outputs = format!("1:file:{} 9:stderr", out_file.display());
    for (env, says) in [
        (
            vec![("VLOG_FILTERS", "bad")],
            "vlog: ignoring VLOG_FILTERS: malformed filter 'bad'",
        ),
        (
            vec![("VLOG_OUTPUTS", outputs.as_str())],
            "vlog: ignoring VLOG_OUTPUTS: invalid priority '9'",
        ),
        (
            vec![("VLOG_BUFFER_SIZE", "lots")],
            "vlog: ignoring VLOG_BUFFER_SIZE",
        ),
        (
            vec![("VLOG_FILTER", "1:x")],
            "vlog: ignoring VLOG_FILTER (did you mean VLOG_FILTERS?): vlog reads no such variable",
        ),
    ] {
        let _ = std::fs::remove_file(&marker);
        let out = sh(&env);
        let err = text(&out.stderr);
        assert_eq!(status(&out), Some(0), "{env:?}: {err}");
        assert!(
            err.lines().filter(|l| l.starts_with("vlog: ")).count() == 1 && err.contains(says),
            "{env:?}: {err}"
        );
        assert!(marker.exists() && !out_file.exists(), "{env:?}: {err}");
    }
    // A bad name, no command: 125, and nothing run.
    for args in [
        &["--source", "a b", "--", "/bin/true"][..],
        &["--source", "a:b", "/bin/true"],
        &["--priority", "7", "/bin/true"],
        &["--last", "-1", "/bin/true"],
        &[],
    ] {
        let out = relay(args, &[]);
        assert_eq!(status(&out), Some(125), "{args:?}: {}", text(&out.stderr));
    }
    let out = relay(&["--help"], &[]);
    assert_eq!(status(&out), Some(0));
    assert!(
        text(&out.stdout).contains("Exit status"),
        "{:?}",
        text(&out.stdout)
    );
    assert_ok("vlog-relay", &sh(&[]));
    assert!(marker.exists(), "{marker:?}");
}

#[test]
fn vlog_relay_ends_with_its_child_not_with_the_childs_descendants() {
    // A background process that keeps the child's stdout and stderr open
    // long after the child exited: vlog-relay takes what the pipes hold
    // and exits with the child (it would wait ten minutes for an end of
    // file).
    let dir = scratch_dir("vlog-relay-descendants");
    let pid_file = dir.join("sleeper.pid");
    let script = format!("sleep 600 & echo $! > {}; echo bye", pid_file.display());
    let out = relay(&["-p", "3", "--", "/bin/sh", "-c", &script], &[]);
    let sleeper: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: the background process this test started.
    unsafe { libc::kill(sleeper, libc::SIGKILL) };
    assert_ok("vlog-relay", &out);
    assert!(
        text(&out.stderr).contains("sh.stdout : ?:0 : bye"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn vlog_relay_waits_for_its_child_even_started_with_sigchld_ignored() {
    // With SIGCHLD ignored the kernel reaps children itself, and a wait
    // fails: vlog-relay takes it back for itself, and gives the child
    // SIGCHLD ignored as it came. (Python starts it so: a shell keeps
    // SIGCHLD for itself.)
    let sh = |command: &[&str]| {
        let mut args = vec![
            "-c",
            "import os, signal, sys\n\
             signal.signal(signal.SIGCHLD, signal.SIG_IGN)\n\
             os.execv(sys.argv[1], sys.argv[1:])",
            env!("CARGO_BIN_EXE_vlog-relay"),
            "-p",
            "3",
            "--",
        ];
        args.extend_from_slice(command);
        let mut cmd = Command::new("python3");
        cmd.args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        without_vlog_env(&mut cmd);
        finish_within(60, cmd.spawn().unwrap(), "vlog-relay, SIGCHLD ignored")
    };
    let out = sh(&["/bin/sh", "-c", "exit 3"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let out = sh(&["grep", "SigIgn", "/proc/self/status"]);
    assert_ok("vlog-relay grep", &out);
    let err = text(&out.stderr);
    let mask = err
        .split("SigIgn:\\t")
        .nth(1)
        .and_then(|rest| u64::from_str_radix(&rest[..16], 16).ok())
        .unwrap_or_else(|| panic!("no SigIgn line: {err}"));
    assert_ne!(mask & (1 << (libc::SIGCHLD - 1)), 0, "{err}");
}
