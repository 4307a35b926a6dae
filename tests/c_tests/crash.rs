//! The crash handler: every fatal signal dumped and then dying as without
//! vlog, stack overflows, threads crashing at once, handlers chained, dump
//! signals, the watchdog.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::OnceLock;

use crate::common::*;

pub(crate) fn crash_exe() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| build("crash", Link::Static))
}

/// Runs the crash program with core dumps allowed, in its own directory (where
/// any core lands and is removed), under a 30 s timeout.
pub(crate) fn crash(
    name: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> (ExitStatus, String, String) {
    let dir = work().join("crash-runs").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("ulimit -c unlimited 2>/dev/null; exec \"$@\"")
        .arg("sh")
        .arg(crash_exe())
        .args(args)
        .current_dir(&dir);
    without_vlog_env(&mut cmd);
    cmd.envs(env.iter().copied());
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Read the output while the program runs (a dump can exceed a pipe's
    // buffer), and kill it if it hangs.
    let pid = child.id() as libc::pid_t;
    let (done, result) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(child.wait_with_output()));
    let out = match result.recv_timeout(std::time::Duration::from_secs(30)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("crash {name}: hung");
        }
    };
    let _ = std::fs::remove_dir_all(&dir);
    (out.status, text(&out.stdout), text(&out.stderr))
}

pub(crate) fn assert_dump(name: &str, stderr: &str, signal: &str, records: usize) {
    let header = format!("vlog: fatal signal {signal} (");
    assert_eq!(
        stderr.matches("vlog: fatal signal ").count(),
        1,
        "{name}: {stderr}"
    );
    let at = stderr
        .find(&header)
        .unwrap_or_else(|| panic!("{name}: no dump header: {stderr}"));
    let dump = &stderr[at..];
    let first = dump.lines().next().unwrap();
    for part in [
        ", code ",
        ", address 0x",
        ", pid ",
        ", tid ",
        ", time ",
        " records, ",
        " lost",
    ] {
        assert!(
            first.contains(part),
            "{name}: header lacks {part:?}: {first}"
        );
    }
    assert!(
        dump.contains("\nvlog: backtrace of thread "),
        "{name}: {dump}"
    );
    // Its frames, as a record's backtrace shows them: each an object and
    // the address within it.
    let frames = dump
        .split("\nvlog: backtrace of thread ")
        .nth(1)
        .unwrap_or("")
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with("  #"))
        .collect::<Vec<_>>();
    assert!(
        frames.len() >= 2
            && frames
                .iter()
                .all(|f| f.contains(" 0x") && f.contains("+0x")),
        "{name}: {dump}"
    );
    assert!(
        dump.contains("\nvlog: ring, oldest first:\n"),
        "{name}: {dump}"
    );
    assert!(
        dump.contains(&format!("\nvlog: end of dump, {records} records\n")),
        "{name}: {dump}"
    );
    let ring = &dump[dump.find("vlog: ring, oldest first:").unwrap()..];
    assert!(
        ring.contains(": warning : test.crash : main:"),
        "{name}: {ring}"
    );
}

/// A new FIFO in the scratch directory: its path, and the path as a C string.
fn make_fifo(name: &str) -> (PathBuf, std::ffi::CString) {
    let fifo = work().join(name);
    let _ = std::fs::remove_file(&fifo);
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    (fifo, c)
}

#[test]
fn each_fatal_signal_is_dumped_then_dies_as_without_vlog() {
    if signal_test_skipped() {
        return;
    }
    for (mode, signal, number) in [
        ("segv", "SIGSEGV", libc::SIGSEGV),
        ("bus", "SIGBUS", libc::SIGBUS),
        ("ill", "SIGILL", libc::SIGILL),
        ("fpe", "SIGFPE", libc::SIGFPE),
        ("abrt", "SIGABRT", libc::SIGABRT),
        ("sys", "SIGSYS", libc::SIGSYS),
        ("trap", "SIGTRAP", libc::SIGTRAP),
    ] {
        let (with, _, stderr) = crash(mode, &[mode], &[]);
        let (without, _, plain) = crash(&format!("{mode}-plain"), &["--no-vlog", mode], &[]);
        assert_eq!(with.signal(), Some(number), "{mode}: {with}: {stderr}");
        assert_eq!(with.signal(), without.signal(), "{mode}");
        assert_eq!(
            with.core_dumped(),
            without.core_dumped(),
            "{mode}: core flag differs"
        );
        assert_dump(mode, &stderr, signal, 3);
        assert!(
            stderr.contains(&format!(" : last words 2 before {mode}\n")),
            "{stderr:?}"
        );
        assert!(!plain.contains("vlog:"), "{mode}: {plain}");
    }
}

#[test]
fn stack_overflow_is_dumped_on_main_and_other_threads() {
    if signal_test_skipped() {
        return;
    }
    let (status, _, stderr) = crash("overflow-main", &["overflow-main"], &[]);
    assert_eq!(status.signal(), Some(libc::SIGSEGV), "{stderr}");
    assert_dump("overflow-main", &stderr, "SIGSEGV", 3);
    let (status, _, stderr) = crash("overflow-thread", &["overflow-thread"], &[]);
    assert_eq!(status.signal(), Some(libc::SIGSEGV), "{stderr}");
    assert_dump("overflow-thread", &stderr, "SIGSEGV", 4);
    assert!(
        stderr.contains(" : second thread about to overflow its stack\n"),
        "{stderr:?}"
    );
}

/// A daemon that blocks every signal (to read them from a signalfd) still
/// gets its dump: a blocked fault signal would kill it with no handler run,
/// so vlog unblocks the fault signals at a thread's first call, every 1024
/// calls and before a line the thread writes itself. Blocked before
/// vlog_init, after it on the main thread, and inherited by a new thread.
#[test]
fn a_program_that_blocks_every_signal_gets_its_dump() {
    if signal_test_skipped() {
        return;
    }
    for (mode, last) in [
        ("blocked-before", "last words 2 before blocked-before"),
        ("blocked-error", "an error after every signal was blocked"),
        (
            "blocked-later",
            "warning 1099 after every signal was blocked",
        ),
        ("blocked-thread", "a thread with every signal blocked"),
    ] {
        let (status, _, stderr) = crash(mode, &[mode], &[]);
        assert_eq!(status.signal(), Some(libc::SIGSEGV), "{mode}: {stderr}");
        assert_eq!(
            stderr.matches("vlog: fatal signal SIGSEGV (").count(),
            1,
            "{mode}: no dump: {stderr}"
        );
        let ring = stderr
            .find("vlog: ring, oldest first:")
            .map_or("", |at| &stderr[at..]);
        assert!(ring.contains(last), "{mode}: '{last}' not dumped: {stderr}");
        assert!(ring.contains("\nvlog: end of dump, "), "{mode}: {stderr}");
    }
}

#[test]
fn crash_while_another_thread_holds_the_lock() {
    if signal_test_skipped() {
        return;
    }
    let (fifo, _) = make_fifo("crash-locked.fifo");
    let (status, _, stderr) = crash("locked", &["locked", fifo.to_str().unwrap()], &[]);
    assert_eq!(status.signal(), Some(libc::SIGSEGV), "{stderr}");
    assert!(stderr.contains("vlog: fatal signal SIGSEGV ("), "{stderr}");
    assert!(stderr.contains("\nvlog: end of dump, "), "{stderr}");
    assert!(
        stderr.contains(" : filling the fifo "),
        "the ring was dumped: {stderr}"
    );
    let _ = std::fs::remove_file(&fifo);
}

#[test]
fn two_threads_crashing_at_once_give_one_dump() {
    if signal_test_skipped() {
        return;
    }
    for round in 0..5 {
        let (status, _, stderr) = crash("two", &["two"], &[]);
        assert_eq!(
            status.signal(),
            Some(libc::SIGSEGV),
            "round {round}: {stderr}"
        );
        assert_eq!(
            stderr.matches("vlog: fatal signal").count(),
            1,
            "round {round}: {stderr}"
        );
        assert_eq!(
            stderr.matches("vlog: end of dump").count(),
            1,
            "round {round}: {stderr}"
        );
    }
}

/// A SA_SIGINFO handler installed before vlog's gets the fault first, with
/// the kernel's arguments (it may recover: see `crash::recover`); it sets
/// SIG_DFL and re-raises, falling to the default action, and vlog dumps the
/// crash before that ends the process.
#[test]
fn previous_handler_is_called_with_the_original_arguments() {
    if signal_test_skipped() {
        return;
    }
    let (status, _, stderr) = crash("chain", &["chain"], &[]);
    assert_eq!(status.signal(), Some(libc::SIGSEGV), "{stderr}");
    let dump = stderr
        .find("vlog: end of dump")
        .unwrap_or_else(|| panic!("not dumped: {stderr}"));
    let chained = stderr
        .find("previous handler: signal 11, address (nil)")
        .unwrap_or_else(|| panic!("previous handler not called with the fault address: {stderr}"));
    assert!(
        chained < dump,
        "the program's handler comes first: {stderr}"
    );
    assert_eq!(stderr.matches("vlog: fatal signal").count(), 1, "{stderr}");
}

/// The other order: vlog set itself up at the program's first message, then
/// the program installed a handler that calls the one it replaced. The
/// program's handler runs, vlog's dumps, and the process dies by the signal.
#[test]
fn a_handler_installed_after_vlog_that_chains_gets_the_dump() {
    if signal_test_skipped() {
        return;
    }
    let (status, _, stderr) = crash("chain-after", &["chain-after"], &[]);
    assert_eq!(status.signal(), Some(libc::SIGSEGV), "{stderr}");
    let later = stderr
        .find("later handler: signal 11")
        .expect("the program's handler ran");
    let dump = stderr
        .find("vlog: end of dump")
        .expect("vlog's handler dumped");
    assert!(later < dump, "{stderr}");
    assert!(stderr.contains(" : the first call\n"), "{stderr}");
}

#[test]
fn dump_signal_dumps_and_the_process_goes_on() {
    let (status, stdout, stderr) = crash(
        "dump-signal",
        &["dump-signal"],
        &[("VLOG_DUMP_SIGNAL", "USR2")],
    );
    assert!(status.success(), "{stderr}");
    assert_eq!(stdout, "survived\n");
    assert!(
        stderr.contains("vlog: dump requested by signal, pid "),
        "{stderr}"
    );
    assert!(
        stderr.contains(" : last words 2 before dump-signal\n"),
        "{stderr:?}"
    );
    assert!(
        stderr.contains("\nvlog: end of dump, 3 records\n"),
        "{stderr:?}"
    );
    assert!(
        stderr.ends_with(" : still running after the dump\n"),
        "{stderr}"
    );
}

#[test]
fn vlog_dump_env_off_and_file() {
    if signal_test_skipped() {
        return;
    }
    let (status, _, stderr) = crash("off", &["segv"], &[("VLOG_DUMP", "off")]);
    assert_eq!(status.signal(), Some(libc::SIGSEGV));
    assert!(!stderr.contains("vlog: fatal"), "{stderr}");

    let file = work().join("crash-dump.txt");
    let _ = std::fs::remove_file(&file);
    let target = format!("file:{}", file.display());
    let (status, _, stderr) = crash("file", &["segv"], &[("VLOG_DUMP", &target)]);
    assert_eq!(status.signal(), Some(libc::SIGSEGV));
    assert!(!stderr.contains("vlog: fatal"), "{stderr}");
    let dump = std::fs::read_to_string(&file).unwrap();
    assert_dump("file", &dump, "SIGSEGV", 3);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // Beside the text, the ring itself, as a ring file vlog-dump reads.
    let image = format!("{}.ring", file.display());
    let out = text(&vlog_dump(&[&image]).stdout);
    assert!(out.contains(" : last words 2 before segv\n"), "{out}");
    let mode = std::fs::metadata(&image).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    let (_, _, stderr) = crash("bad", &["segv"], &[("VLOG_DUMP", "syslog")]);
    assert!(
        stderr.contains("vlog: ignoring VLOG_DUMP: invalid dump destination 'syslog'"),
        "{stderr}"
    );
    assert!(
        stderr.contains("vlog: fatal signal SIGSEGV"),
        "default kept: {stderr}"
    );

    // A dump file that cannot be opened is a bad VLOG_DUMP like any other:
    // one line naming it and its value, and dumps to stderr, not nowhere.
    let (status, _, stderr) = crash(
        "bad-dump-file",
        &["segv"],
        &[("VLOG_DUMP", "file:/nonexistent/dir/crash")],
    );
    assert_eq!(status.signal(), Some(libc::SIGSEGV));
    assert_eq!(
        stderr
            .matches("vlog: ignoring VLOG_DUMP=file:/nonexistent/dir/crash: cannot open dump file")
            .count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("crash dumps go to stderr"), "{stderr}");
    assert!(!stderr.contains("os error"), "{stderr}");
    assert_dump("bad-dump-file", &stderr, "SIGSEGV", 3);
}

/// No empty crash file before a crash: `VLOG_DUMP=file:PATH` proves the
/// path can be written at start-up and leaves nothing there; the first
/// crash makes the file, the next appends to it.
#[test]
fn a_dump_file_is_made_by_the_first_crash_only() {
    use std::os::unix::process::ExitStatusExt;
    if skipped_under_tool("the tool's own fault handler takes the signal before vlog's") {
        return;
    }
    let dir = scratch_dir("dump-file-made");
    let path = dir.join("crash");
    let _ = std::fs::remove_file(&path);
    let exe = build("dump_file", Link::Static);
    let spec = format!("file:{}", path.display());
    for run in 1..=2 {
        let mut cmd = std::process::Command::new(&exe);
        without_vlog_env(&mut cmd);
        let out = cmd.arg(&path).env("VLOG_DUMP", &spec).output().unwrap();
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGSEGV),
            "run {run}: {:?} {}",
            out.status,
            text(&out.stderr)
        );
        let dumped = std::fs::read_to_string(&path).unwrap_or_default();
        assert_eq!(
            dumped.matches("vlog: fatal signal SIGSEGV").count(),
            run,
            "run {run}: {dumped}"
        );
        assert!(
            !dumped.contains("opened it again"),
            "a file made at the crash is not one the program closed: {dumped}"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the dump file's mode");
    }
}

/// A daemon that chroots after configuration: its first crash makes the
/// dump file (and the ring image) where VLOG_DUMP named it, through the
/// directory kept from configuration, never at the same path in the jail
/// (whose users may have made it).
#[test]
fn a_dump_file_made_after_a_chroot_is_made_outside_the_jail() {
    use std::os::unix::process::ExitStatusExt;
    if chroot_test_skipped() {
        return;
    }
    let dir = scratch_dir("dump-file-chroot");
    let jail = dir.join("jail");
    let path = dir.join("crash");
    let in_jail = jail.join(dir.strip_prefix("/").unwrap()).join("crash");
    std::fs::create_dir_all(in_jail.parent().unwrap()).unwrap();
    for p in [&path, &in_jail] {
        let _ = std::fs::remove_file(p);
    }
    let exe = build("dump_file", Link::Static);
    let spec = format!("file:{}", path.display());
    let out = run_with(
        &exe,
        &[path.to_str().unwrap(), jail.to_str().unwrap()],
        &[("VLOG_DUMP", &spec)],
    );
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGSEGV),
        "{}",
        text(&out.stderr)
    );
    let dumped = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        dumped.contains("vlog: fatal signal SIGSEGV"),
        "{dumped:?} {}",
        text(&out.stderr)
    );
    assert!(!in_jail.exists(), "a dump file was made in the jail");
    let image = dir.join("crash.ring");
    assert!(image.exists(), "no ring image beside the dump file");
    assert!(!jail
        .join(dir.strip_prefix("/").unwrap())
        .join("crash.ring")
        .exists());
}

#[test]
fn alternate_stacks_are_given_but_never_replaced() {
    if signal_test_skipped() {
        return;
    }
    check("altstack");
}

#[test]
fn watchdog_ends_a_dump_that_hangs() {
    if signal_test_skipped() {
        return;
    }
    // The dump goes to stderr, a pipe whose reader never reads: once its
    // buffer is full the handler blocks in write(2), and only the watchdog
    // ends it. (A dump file is never a FIFO: vlog(7), FILES.)
    let mut ends = [0 as libc::c_int; 2];
    // SAFETY: `ends` has room for the two descriptors.
    assert_eq!(
        unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) },
        0
    );
    // SAFETY: both ends are ours, each owned once from here.
    let (reader, writer) = unsafe {
        use std::os::fd::FromRawFd;
        (
            std::os::fd::OwnedFd::from_raw_fd(ends[0]),
            std::os::fd::OwnedFd::from_raw_fd(ends[1]),
        )
    };
    let mut cmd = Command::new(crash_exe());
    without_vlog_env(&mut cmd);
    cmd.arg("flood")
        .env("VLOG_BUFFER_SIZE", "4M")
        .env("VLOG_OUTPUTS", "4:stderr")
        .current_dir(work())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::from(writer));
    let started = std::time::Instant::now();
    let mut child = cmd.spawn().unwrap();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > std::time::Duration::from_secs(30) {
            let _ = child.kill();
            panic!("the dump was not ended after 30 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let took = started.elapsed();
    drop(reader);
    // Stuck: nothing written for 5 s (after the pipe filled), and ended.
    assert_eq!(status.signal(), Some(libc::SIGSEGV), "{status:?}");
    assert!(
        took >= std::time::Duration::from_secs(5),
        "ended after {took:?}"
    );
}

/// Under a file size limit (`ulimit -f 1`: 1 KiB), a fault the program
/// recovers from (siglongjmp out of its handler) is dumped as far as the
/// limit lets it, and the program goes on: the crash path raises no
/// SIGXFSZ, which would have killed it once its handler let the signal in.
#[test]
fn a_file_size_limit_cuts_the_dump_and_never_raises_sigxfsz() {
    if signal_test_skipped() {
        return;
    }
    let exe = build("crash_handback", Link::Static);
    let dir = scratch_dir("crash-fsize");
    let dump = dir.join("dump");
    let mut cmd = Command::new("sh");
    without_vlog_env(&mut cmd);
    cmd.arg("-c")
        .arg("ulimit -f 1 && exec \"$0\" recover")
        .arg(&exe)
        .env("VLOG_DUMP", format!("file:{}", dump.display()))
        .env("DUMP_PATH", &dump)
        .env("HANDBACK_MODE", "recover")
        .current_dir(&dir);
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{:?}: {}{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(text(&out.stdout), "recovered twice\n");
    let len = std::fs::metadata(&dump).map_or(0, |m| m.len());
    assert!(len > 0 && len <= 1024, "{len} bytes");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Eight programs crash at once, each with 160,000 records in a 16 MiB
/// ring: on two cores each dump takes seconds, and every one is written
/// whole (its end line, and its ring image first), since each makes
/// progress; the watchdog ends only a dump that is stuck.
#[test]
fn dumps_that_make_progress_are_never_cut_short() {
    if signal_test_skipped() {
        return;
    }
    let dir = scratch_dir("crash-many");
    let runs: Vec<_> = (0..8)
        .map(|i| {
            let target = format!("file:{}/{i}.crash", dir.display());
            let mut cmd = Command::new(crash_exe());
            without_vlog_env(&mut cmd);
            cmd.args(["flood", "160000"])
                .env("VLOG_DUMP", target)
                .env("VLOG_BUFFER_SIZE", "16M")
                .env("VLOG_OUTPUTS", "4:stderr")
                .current_dir(&dir)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (i, run) in runs.into_iter().enumerate() {
        let out = run.wait_with_output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.signal(), Some(libc::SIGSEGV), "{i}: {err}");
        let dump = std::fs::read_to_string(dir.join(format!("{i}.crash"))).unwrap_or_default();
        let tail: String = dump
            .chars()
            .rev()
            .take(300)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        assert!(
            dump.ends_with(" records\n") && dump.contains("\nvlog: end of dump, "),
            "dump {i} cut short ({} bytes): ...{tail}\n{err}",
            dump.len()
        );
        let image = dir.join(format!("{i}.crash.ring"));
        let stats = vlog_dump(&["--stats", image.to_str().unwrap()]);
        assert!(
            text(&stats.stdout).contains("records: "),
            "image {i}: {}",
            text(&stats.stdout)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn crash_inside_vlog_with_the_lock_held_by_the_crashing_thread() {
    if signal_test_skipped() {
        return;
    }
    let (status, _, stderr) = crash("inside", &["inside"], &[]);
    assert_eq!(status.signal(), Some(libc::SIGSEGV), "{stderr}");
    assert_dump("inside", &stderr, "SIGSEGV", 3);
}

/// With no output printing them, the last words are deferred records: the
/// crash handler renders them, without allocating, to the same text.
#[test]
fn crash_dump_renders_deferred_records() {
    if signal_test_skipped() {
        return;
    }
    let (status, _, stderr) = crash("deferred", &["segv"], &[("VLOG_OUTPUTS", "4:stderr")]);
    assert_eq!(status.signal(), Some(libc::SIGSEGV), "{stderr}");
    assert_dump("deferred", &stderr, "SIGSEGV", 3);
    for i in 0..3 {
        let line = format!(" : last words {i} before segv\n");
        assert!(stderr.contains(&line), "{line:?} in {stderr}");
    }
    assert_eq!(
        stderr.matches(" : last words ").count(),
        3,
        "printed only by the dump"
    );
}

#[test]
fn dump_signal_through_the_api_and_its_refusals() {
    let (status, stdout, stderr) = crash("dump-signal-api", &["dump-signal-api"], &[]);
    assert!(status.success(), "{status}: {stderr}");
    assert_eq!(stdout, "survived\n");
    assert!(
        stderr.contains("vlog: dump requested by signal, pid "),
        "{stderr}"
    );
    assert!(
        stderr.contains("\nvlog: end of dump, 3 records\n"),
        "{stderr}"
    );
}

#[test]
fn explicit_install_works_even_with_vlog_dump_off() {
    if signal_test_skipped() {
        return;
    }
    let (status, _, stderr) = crash("explicit", &["explicit"], &[("VLOG_DUMP", "off")]);
    assert_eq!(status.signal(), Some(libc::SIGSEGV), "{stderr}");
    assert_dump("explicit", &stderr, "SIGSEGV", 3);
}

/// Runs `crash_handback MODE` with its dump going to a file; returns the
/// exit status, stdout and the dump file's text.
fn handback(mode: &str, env: &[(&str, &str)]) -> (ExitStatus, String, String) {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    let exe = EXE.get_or_init(|| build("crash_handback", Link::Static));
    let dir = scratch_dir(&format!("handback-{mode}.d"));
    let dump = dir.join("dump");
    let spec = format!("file:{}", dump.display());
    let mut all = vec![("VLOG_DUMP", spec.as_str())];
    all.extend_from_slice(env);
    let path = dump.to_str().unwrap().to_owned();
    all.push(("DUMP_PATH", &path));
    all.push(("HANDBACK_MODE", mode));
    let out = run_with(exe, &[mode], &all);
    let dumped = std::fs::read_to_string(&dump).unwrap_or_default();
    (out.status, text(&out.stdout), dumped)
}

#[test]
fn a_fault_the_program_recovers_from_hands_back_alarm_handler_and_mask() {
    if signal_test_skipped() {
        return;
    }
    let (status, stdout, dump) = handback("recover", &[]);
    assert!(status.success(), "{status}: {stdout}");
    assert_eq!(stdout, "recovered twice\n");
    // Each fault was dumped, the second as well as the first.
    assert_eq!(
        dump.matches("vlog: fatal signal SIGSEGV").count(),
        2,
        "{dump}"
    );
    assert!(dump.contains(": recovered 0"), "{dump}");
}

/// The same with a SA_SIGINFO handler, which can see the address and may
/// mend the fault: it gets each fault before any dump, and a fault it
/// recovers from costs no dump, a note at most (see `crash::recover`).
#[test]
fn a_fault_a_siginfo_handler_recovers_from_is_not_dumped() {
    if signal_test_skipped() {
        return;
    }
    let (status, stdout, dump) = handback("recover-siginfo", &[]);
    assert!(status.success(), "{status}: {stdout}");
    assert_eq!(stdout, "recovered twice\n");
    assert!(!dump.contains("vlog: fatal signal"), "{dump}");
    assert_eq!(
        dump.matches("went to the program's own handler first")
            .count(),
        1,
        "{dump}"
    );
}

/// A dump file that reached its limit (16 MiB for a small ring) is emptied
/// before the next dump, which is kept whole: dumps never fill the disk.
#[test]
fn a_full_dump_file_is_emptied_for_the_newest_dump() {
    use std::os::unix::fs::PermissionsExt;
    if signal_test_skipped() {
        return;
    }
    let exe = build("crash_handback", Link::Static);
    let dir = scratch_dir("dump-cap.d");
    let dump = dir.join("dump");
    let spec = format!("file:{}", dump.display());
    // A dump file of `len` bytes that starts with `head`; the dump file
    // after two faults the program recovers from, each dumped.
    let after_two_dumps_from = |head: &[u8], len: u64| -> Vec<u8> {
        let mut file = std::fs::File::create(&dump).unwrap();
        std::io::Write::write_all(&mut file, head).unwrap();
        file.set_len(len).unwrap();
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .unwrap();
        drop(file);
        let out = run_with(
            &exe,
            &["recover"],
            // A ring whose limit is the least, 16 MiB (`dump_file_cap`).
            &[
                ("VLOG_DUMP", spec.as_str()),
                ("HANDBACK_MODE", "recover"),
                ("VLOG_BUFFER_SIZE", "64K"),
            ],
        );
        assert!(
            out.status.success(),
            "{:?}: {}",
            out.status,
            text(&out.stderr)
        );
        std::fs::read(&dump).unwrap()
    };
    let after_two_dumps = |head: &[u8]| after_two_dumps_from(head, 16 << 20);
    // Earlier dumps: the file starts as a dump does.
    let dumped = after_two_dumps(b"vlog: fatal signal SIGSEGV (11), an earlier dump\n");
    let dumped = String::from_utf8_lossy(&dumped);
    assert!(
        dumped.starts_with(
            "vlog: the dump file held 16777216 bytes of earlier dumps, its limit: emptied for this one\n\
             vlog: fatal signal SIGSEGV"
        ),
        "{:?}",
        &dumped[..dumped.len().min(300)]
    );
    // The second fault's dump follows the first: the file is small again.
    assert_eq!(dumped.matches("vlog: fatal signal SIGSEGV").count(), 2);
    assert!(dumped.len() < 1 << 20, "{} bytes", dumped.len());

    // One byte short of the limit: the first dump is appended (the file
    // passes the limit by one dump), the second empties it first. So a
    // program that crashes and recovers over and over never has more than
    // the limit and one dump in the file.
    let dumped = after_two_dumps_from(
        b"vlog: fatal signal SIGSEGV (11), an earlier dump\n",
        (16 << 20) - 1,
    );
    let dumped = String::from_utf8_lossy(&dumped);
    assert!(
        dumped.starts_with("vlog: the dump file held ") && dumped.len() < 1 << 20,
        "{} bytes: {:?}",
        dumped.len(),
        &dumped[..dumped.len().min(300)]
    );
    assert_eq!(dumped.matches("vlog: fatal signal SIGSEGV").count(), 1);

    // A file that does not start as a dump does (a log file named as the
    // dump file too) is never emptied: the dumps are appended.
    let log_start = b"2026-12-02 10:00:00.000+0000: 1: info : a log line\n";
    let kept = after_two_dumps(log_start);
    assert!(
        kept.starts_with(log_start) && kept.len() > 16 << 20,
        "{} bytes",
        kept.len()
    );
}

#[test]
fn the_dump_signal_chains_the_programs_own_handler() {
    if signal_test_skipped() {
        return;
    }
    let (status, stdout, dump) = handback("signal-chain", &[("VLOG_DUMP_SIGNAL", "USR2")]);
    assert!(status.success(), "{status}: {stdout}");
    assert_eq!(stdout, "chained\n");
    assert!(dump.contains("vlog: dump requested by signal"), "{dump}");
}

#[test]
fn a_crash_during_a_requested_dump_is_dumped_at_once() {
    if signal_test_skipped() {
        return;
    }
    let start = std::time::Instant::now();
    let (status, _, dump) = handback("during-dump", &[("VLOG_DUMP_SIGNAL", "USR2")]);
    let took = start.elapsed();
    assert_eq!(status.signal(), Some(libc::SIGSEGV), "{status}");
    assert!(dump.contains("vlog: dump requested by signal"), "{dump:?}");
    assert!(dump.contains("vlog: fatal signal SIGSEGV"), "no crash dump");
    assert!(dump.contains("vlog: end of dump"), "{dump:?}");
    assert!(took < std::time::Duration::from_secs(20), "{took:?}");
}

#[test]
fn a_child_forked_during_a_requested_dump_dumps_its_own_crash() {
    if signal_test_skipped() {
        return;
    }
    let (status, stdout, dump) = handback("fork-in-dump", &[("VLOG_DUMP_SIGNAL", "USR2")]);
    assert!(status.success(), "{status}: {stdout}");
    assert_eq!(stdout, "the child died by its signal\n");
    assert!(
        dump.contains("vlog: fatal signal SIGSEGV"),
        "no crash dump from the child"
    );
    assert!(dump.contains(": the child crashes"), "{dump:?}");
}

#[test]
fn a_programs_small_alternate_stack_is_kept_and_never_overflowed() {
    if signal_test_skipped() {
        return;
    }
    let exe = build("small_altstack", Link::Static);
    let dir = scratch_dir("small-altstack");
    let dump = dir.join("dump");
    let spec = format!("file:{}", dump.display());
    let env = [("SMALL_DUMP", spec.as_str())];
    let out = run_with(&exe, &["dump"], &env);
    assert_ok("small_altstack dump", &out);
    assert_eq!(text(&out.stdout), "went on\n");
    let dumped = std::fs::read_to_string(&dump).unwrap();
    assert!(dumped.contains("message 49 before the signal"), "{dumped}");
    assert!(dumped.contains("vlog: end of dump, 50 records"), "{dumped}");

    let crash_dump = dir.join("crash");
    let spec = format!("file:{}", crash_dump.display());
    let env = [("SMALL_DUMP", spec.as_str())];
    let dump = crash_dump;
    let out = run_with(&exe, &["crash"], &env);
    assert_eq!(out.status.code(), Some(42), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "the program's handler\n");
    let dumped = std::fs::read_to_string(&dump).unwrap();
    assert_eq!(
        dumped,
        "vlog: fatal signal SIGSEGV, no dump: this thread's alternate signal stack (8192 \
         bytes, the program's own) is too small for one (40960 bytes); a ring file \
         (VLOG_BUFFER_FILE) keeps the records for vlog-dump\n"
    );
}

/// A child forked while another thread's crash is dumped logs an error and
/// goes on: its outputs are not stopped (the thread dumping is not in it),
/// nor does it wait for a dump that is not its own.
#[test]
fn a_child_forked_during_a_crash_dump_logs_and_goes_on() {
    if signal_test_skipped() {
        return;
    }
    let (status, _, _) = handback("fork-in-crash", &[]);
    assert_eq!(status.signal(), Some(libc::SIGSEGV), "{status}");
    let marker = work().join("handback-fork-in-crash.d").join("dump.child");
    let mut logged = String::new();
    for _ in 0..400 {
        logged = std::fs::read_to_string(&marker).unwrap_or_default();
        if !logged.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(logged, "the child logged\n", "no word from the child");
}

/// A signal the program had ignored, which vlog took for its dump: after the
/// dump it is ignored, as without vlog, and the program and its outputs go
/// on (a line logged after it is written).
#[test]
fn a_signal_the_program_ignored_is_dumped_and_the_program_goes_on() {
    if signal_test_skipped() {
        return;
    }
    let exe = build("crash_handback", Link::Static);
    let dir = scratch_dir("handback-ignored.d");
    let dump = dir.join("dump");
    let spec = format!("file:{}", dump.display());
    // Started with SIGTRAP ignored, as a shell's `trap '' TRAP` leaves it.
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "trap '' TRAP; exec \"$0\" ignored"])
        .arg(command(&exe).get_program());
    without_vlog_env(&mut cmd);
    let out = cmd
        .env("VLOG_DUMP", &spec)
        .env("DUMP_PATH", &dump)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        out.status,
        text(&out.stderr)
    );
    assert_eq!(text(&out.stdout), "went on\n");
    let dumped = std::fs::read_to_string(&dump).unwrap_or_default();
    assert!(dumped.contains("vlog: fatal signal SIGTRAP"), "{dumped}");
}

/// Lines a journald output holds for a full queue at a crash are in the
/// dump, every one, though more than the dump's 384 KiB of records came
/// after them (`dump_held.c`, in a mount namespace of its own whose
/// journal socket is the program's: root only).
#[test]
fn a_crash_dump_has_the_lines_an_output_held() {
    if signal_test_skipped() {
        return;
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        say_skipped("a journal socket of the test's own needs root");
        return;
    }
    let exe = build("dump_held", Link::Static);
    let dump = scratch_dir("dump-held.d").join("stderr");
    let out = Command::new("unshare")
        .args(["--mount", "sh", "-c"])
        .arg(
            "mkdir -p /run/systemd/journal && mount -t tmpfs none /run/systemd/journal && \
             exec \"$0\" \"$1\"",
        )
        .arg(&exe)
        .arg(&dump)
        .env("VLOG_BUFFER_SIZE", "1M")
        .env_remove("VLOG_OUTPUTS")
        .output()
        .unwrap();
    assert_ok("dump_held", &out);
}

/// Lines a stderr output holds for a full pipe at a crash are in the dump
/// or the pipe, every one, though more than the dump's 384 KiB of records
/// came after them (`dump_held_pipe.c`).
#[test]
fn a_crash_dump_has_the_lines_a_pipe_output_held() {
    if signal_test_skipped() {
        return;
    }
    let exe = build("dump_held_pipe", Link::Static);
    let dump = scratch_dir("dump-held-pipe.d").join("dump");
    let target = format!("file:{}", dump.display());
    let out = run_with(
        &exe,
        &[dump.to_str().unwrap()],
        &[("VLOG_DUMP", &target), ("VLOG_BUFFER_SIZE", "1M")],
    );
    assert_ok("dump_held_pipe", &out);
}
