//! Builds the C programs in `c-tests/` against the library cargo just built and
//! runs them. Each program checks one promise of the C API and exits 0; the
//! tests here add what only a driver can check (environment, stderr).

use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A scratch directory holding the built library (`lib/`) and the test
/// programs, set up once per run.
fn work() -> &'static Path {
    static WORK: OnceLock<PathBuf> = OnceLock::new();
    WORK.get_or_init(|| {
        let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("c-tests");
        let lib = work.join("lib");
        std::fs::create_dir_all(&lib).unwrap();
        // cargo test builds the staticlib and cdylib beside this test binary.
        let built = std::env::current_exe().unwrap();
        let deps = built.parent().unwrap();
        std::fs::copy(deps.join("libvlog.a"), lib.join("libvlog.a")).unwrap();
        std::fs::copy(deps.join("libvlog.so"), lib.join("libvlog.so.0")).unwrap();
        let link = lib.join("libvlog.so");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink("libvlog.so.0", &link).unwrap();
        work
    })
}

/// The tool the C programs run under (`VLOG_C_TESTS_TOOL`; `.ci/run` sets
/// it for its sanitizer and valgrind passes): none, `asan` (the programs are
/// built with AddressSanitizer and UBSan) or `valgrind` (memcheck).
#[derive(Clone, Copy, PartialEq, Debug)]
enum Tool {
    None,
    Asan,
    Valgrind,
}

fn tool() -> Tool {
    match std::env::var("VLOG_C_TESTS_TOOL").as_deref() {
        Ok("asan") => Tool::Asan,
        Ok("valgrind") => Tool::Valgrind,
        _ => Tool::None,
    }
}

/// True, after saying why, when a test cannot run under the current tool:
/// the tools handle signals, stacks and allocation themselves.
fn skipped_under_tool(why: &str) -> bool {
    let tool = tool();
    if tool != Tool::None {
        eprintln!("skipped under {tool:?}: {why}");
    }
    tool != Tool::None
}

/// `skipped_under_tool` for the tests of the crash handler, whose fatal
/// signals, alternate stacks and core files the tools handle themselves.
fn signal_test_skipped() -> bool {
    skipped_under_tool("the tool handles fatal signals, alternate stacks and core files itself")
}

#[derive(Clone, Copy, PartialEq)]
enum Link {
    Static,
    Shared,
}

fn cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".into())
}

fn run_compiler(mut cmd: Command) {
    let out = cmd.output().expect("run the C compiler");
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Compiles `c-tests/NAME.c` into a program; returns its path.
fn build(name: &str, link: Link) -> PathBuf {
    let work = work();
    let suffix = if link == Link::Static { "" } else { "-shared" };
    let exe = work.join(format!("{name}{suffix}"));
    let mut cmd = Command::new(cc());
    if tool() == Tool::Asan {
        cmd.args([
            "-fsanitize=address,undefined",
            "-fno-sanitize-recover=all",
            "-fno-omit-frame-pointer",
        ]);
    }
    cmd.args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-g", "-O1"])
        .arg("-I")
        .arg(root().join("include"))
        .arg(root().join("c-tests").join(format!("{name}.c")))
        .arg("-o")
        .arg(&exe);
    match link {
        Link::Static => {
            cmd.arg(work.join("lib/libvlog.a"));
        }
        Link::Shared => {
            let lib = work.join("lib");
            cmd.arg(format!("-L{}", lib.display()))
                .arg("-lvlog")
                .arg(format!("-Wl,-rpath,{}", lib.display()));
        }
    }
    cmd.args(["-lpthread", "-ldl", "-lm"]);
    run_compiler(cmd);
    exe
}

/// Runs a program with only the given `VLOG_*` variables set.
fn run(exe: &Path, env: &[(&str, &str)]) -> Output {
    run_with(exe, &[], env)
}

/// `run` with arguments.
fn run_with(exe: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = command(exe);
    cmd.args(args);
    for (key, _) in std::env::vars() {
        if key.starts_with("VLOG_") {
            cmd.env_remove(key);
        }
    }
    cmd.envs(env.iter().copied()).current_dir(work());
    // A program just written can be busy for a moment: another test thread's
    // fork may hold its descriptor until that child execs.
    for _ in 0..50 {
        match cmd.output() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            result => return result.expect("run the test program"),
        }
    }
    panic!("{}: still busy", exe.display());
}

/// A command that runs `exe` under the current tool, which reports through
/// the exit status (97) and stderr.
fn command(exe: &Path) -> Command {
    match tool() {
        Tool::None => Command::new(exe),
        Tool::Asan => {
            let mut cmd = Command::new(exe);
            cmd.env("ASAN_OPTIONS", "exitcode=97:detect_leaks=1").env(
                "UBSAN_OPTIONS",
                "print_stacktrace=1:halt_on_error=1:exitcode=97",
            );
            cmd
        }
        Tool::Valgrind => {
            let mut cmd = Command::new("valgrind");
            cmd.args([
                "-q",
                "--error-exitcode=97",
                "--leak-check=full",
                "--errors-for-leak-kinds=definite",
            ])
            .arg(exe);
            cmd
        }
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn assert_ok(name: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{name} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
}

fn check(name: &str) {
    let exe = build(name, Link::Static);
    assert_ok(name, &run(&exe, &[]));
}

#[test]
fn macros_check_inline_and_skip_arguments() {
    check("macros");
}

#[test]
fn macros_work_through_the_shared_library() {
    let exe = build("macros", Link::Shared);
    assert_ok("macros (shared)", &run(&exe, &[]));
    let out = Command::new("readelf")
        .arg("-d")
        .arg(work().join("lib/libvlog.so.0"))
        .output();
    if let Ok(out) = out {
        assert!(text(&out.stdout).contains("[libvlog.so.0]"), "soname");
    }
}

#[test]
fn filtered_call_never_formats() {
    check("filtered_no_format");
}

#[test]
fn null_arguments_are_safe() {
    check("null_args");
}

#[test]
fn long_messages_kept_then_truncated_with_marker() {
    check("long_messages");
}

#[test]
fn libvirt_syntax_and_atomic_rejection() {
    check("config_syntax");
}

#[test]
fn cached_levels_follow_configuration() {
    check("levels");
}

#[test]
fn file_outputs_format_and_reopen() {
    check("outputs");
}

#[test]
fn ring_wraps_with_continuous_sequence() {
    check("ring_wrap");
}

#[test]
fn four_threads_leave_intact_ordered_records() {
    check("threads");
}

#[test]
fn dump_to_any_fd() {
    check("dump_fd");
}

#[test]
fn shutdown_and_restart() {
    check("shutdown");
}

#[test]
fn fork_while_logging() {
    let exe = build("fork", Link::Static);
    let rounds = if tool() == Tool::Valgrind {
        "50"
    } else {
        "1000"
    };
    assert_ok("fork", &run_with(&exe, &[rounds], &[]));
}

#[test]
fn dlclosed_source_leaves_nothing_behind() {
    let work = work();
    let lib = work.join("lib");
    let mut cmd = Command::new(cc());
    cmd.args([
        "-std=c11", "-Wall", "-Wextra", "-Werror", "-g", "-shared", "-fPIC",
    ])
    .arg("-I")
    .arg(root().join("include"))
    .arg(root().join("c-tests/dlclose_plugin.c"))
    .arg("-o")
    .arg(work.join("dlclose_plugin.so"))
    .arg(format!("-L{}", lib.display()))
    .arg("-lvlog")
    .arg(format!("-Wl,-rpath,{}", lib.display()));
    run_compiler(cmd);
    let exe = build("dlclose", Link::Shared);
    assert_ok("dlclose", &run(&exe, &[]));
}

#[test]
fn header_is_clean_c99_c11_and_cxx() {
    let modes: [(&str, &[&str]); 4] = [
        ("cc", &["-std=c99"]),
        ("cc", &["-std=c11"]),
        ("c++", &["-std=c++11", "-x", "c++"]),
        ("c++", &["-std=c++17", "-x", "c++"]),
    ];
    for (i, (compiler, flags)) in modes.iter().enumerate() {
        let compiler = if *compiler == "cc" {
            cc()
        } else {
            std::env::var("CXX").unwrap_or_else(|_| "c++".into())
        };
        let exe = work().join(format!("header_only_{i}"));
        let mut cmd = Command::new(compiler);
        cmd.args(["-Wall", "-Wextra", "-Wpedantic", "-Werror"])
            .args(*flags)
            .arg("-I")
            .arg(root().join("include"))
            .arg(root().join("c-tests/header_only.c"))
            .args(["-x", "none"])
            .arg(work().join("lib/libvlog.a"))
            .args(["-lpthread", "-ldl", "-lm", "-o"])
            .arg(&exe);
        run_compiler(cmd);
        assert_ok("header_only", &run(&exe, &[]));
    }
}

/// The environment program, built once: several tests run it at once.
fn environment_exe() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| build("environment", Link::Static))
}

fn environment(env: &[(&str, &str)]) -> (String, String) {
    let out = run(environment_exe(), env);
    assert_ok("environment", &out);
    (text(&out.stdout), text(&out.stderr))
}

#[test]
fn env_flight_recorder_configuration() {
    let (dump, stderr) = environment(&[("VLOG_FILTERS", "1:qemu"), ("VLOG_OUTPUTS", "3:stderr")]);
    // stderr prints warnings and errors only...
    assert!(stderr.contains(" : qemu warning\n") && stderr.contains(" : qemu error\n"));
    assert!(stderr.contains(" : util warning\n"));
    assert!(
        !stderr.contains("qemu debug") && !stderr.contains("qemu info"),
        "{stderr}"
    );
    // ...while the ring keeps qemu's debug messages for a dump.
    assert!(dump.contains(": debug : qemu.monitor : main:"), "{dump}");
    assert!(dump.contains(" : qemu debug\n") && dump.contains(" : qemu info\n"));
    assert!(!dump.contains("util debug"));
    assert!(dump.contains("buffer_size=65536\n"));
}

#[test]
fn env_level_sets_default_output_too() {
    let (_, stderr) = environment(&[("VLOG_LEVEL", "info")]);
    assert!(
        stderr.contains(" : qemu info\n") && !stderr.contains("qemu debug"),
        "{stderr}"
    );
    let (_, stderr) = environment(&[("VLOG_LEVEL", "1")]);
    assert!(stderr.contains(" : qemu debug\n") && stderr.contains(" : util debug\n"));
    let (_, stderr) = environment(&[]);
    assert!(!stderr.contains("qemu info") && stderr.contains(" : qemu warning\n"));
}

#[test]
fn env_bad_values_warn_once_and_keep_defaults() {
    let (dump, stderr) = environment(&[
        ("VLOG_LEVEL", "loud"),
        ("VLOG_FILTERS", "1:qemu 9:util"),
        ("VLOG_OUTPUTS", "1:stderr 1:nowhere"),
        ("VLOG_BUFFER_SIZE", "12Q"),
    ]);
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.starts_with("vlog: ")).collect();
    assert_eq!(warnings.len(), 4, "{stderr}");
    for (var, token) in [
        ("VLOG_LEVEL", "'loud'"),
        ("VLOG_FILTERS", "'9'"),
        ("VLOG_OUTPUTS", "'nowhere'"),
        ("VLOG_BUFFER_SIZE", "'12Q'"),
    ] {
        assert!(
            warnings
                .iter()
                .any(|w| w.contains(var) && w.contains(token)),
            "no warning for {var} naming {token}: {stderr}"
        );
    }
    // Defaults: warning level, stderr output, 64K ring.
    assert!(stderr.contains(" : qemu warning\n") && !stderr.contains("qemu info"));
    assert!(dump.contains("buffer_size=65536\n"));
    assert!(!dump.contains("qemu debug"));
}

#[test]
fn env_buffer_size_and_relative_file_output() {
    let (dump, _) = environment(&[("VLOG_BUFFER_SIZE", "0")]);
    assert!(
        dump.starts_with("buffer_size=0\n") && dump.lines().count() == 1,
        "{dump}"
    );
    let (dump, _) = environment(&[("VLOG_BUFFER_SIZE", "1M")]);
    assert!(dump.contains("buffer_size=1048576\n"));

    let log = work().join("env-relative.log");
    let _ = std::fs::remove_file(&log);
    let (_, stderr) = environment(&[("VLOG_OUTPUTS", "2:file:env-relative.log")]);
    assert!(stderr.is_empty(), "{stderr}");
    let file = std::fs::read_to_string(&log).unwrap();
    assert!(file.contains(" : qemu warning\n") && !file.contains("qemu info"));
}

/// In a setuid process (AT_SECURE) the environment is ignored entirely: run a
/// copy of the program set-user-ID to nobody, as root.
#[test]
fn env_ignored_when_setuid() {
    if skipped_under_tool("a setuid program does not run under the tool") {
        return;
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to make a setuid program");
        return;
    }
    let dir = work().join("setuid");
    std::fs::create_dir_all(&dir).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let suid = dir.join("environment-suid");
    std::fs::copy(environment_exe(), &suid).unwrap();
    std::os::unix::fs::chown(&suid, Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(&suid, std::fs::Permissions::from_mode(0o4755)).unwrap();
    let log = dir.join("chosen-by-user.log");
    let _ = std::fs::remove_file(&log);
    let outputs = format!("1:file:{}", log.display());
    let out = run(
        &suid,
        &[
            ("VLOG_LEVEL", "debug"),
            ("VLOG_OUTPUTS", &outputs),
            ("VLOG_BUFFER_SIZE", "1M"),
        ],
    );
    assert_ok("environment (setuid)", &out);
    let stderr = text(&out.stderr);
    assert!(!log.exists(), "a setuid process obeyed VLOG_OUTPUTS");
    assert!(
        stderr.contains(" : qemu warning\n") && !stderr.contains("qemu info"),
        "{stderr}"
    );
    assert!(text(&out.stdout).contains("buffer_size=65536\n"));
}

#[test]
fn nested_call_from_signal_handler_is_dropped_not_deadlocked() {
    check("nested_signal");
}

#[test]
fn lock_free_dump_during_writes_prints_only_whole_records() {
    check("concurrent_dump");
}

#[test]
fn recording_allocates_nothing() {
    if skipped_under_tool("the tool replaces the allocator this test counts") {
        return;
    }
    check("no_alloc");
}

// ---- The crash handler -------------------------------------------------

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

fn crash_exe() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| build("crash", Link::Static))
}

/// Runs the crash program with core dumps allowed, in its own directory (where
/// any core lands and is removed), under a 30 s timeout.
fn crash(name: &str, args: &[&str], env: &[(&str, &str)]) -> (ExitStatus, String, String) {
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
    for (key, _) in std::env::vars() {
        if key.starts_with("VLOG_") {
            cmd.env_remove(key);
        }
    }
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

fn assert_dump(name: &str, stderr: &str, signal: &str, records: usize) {
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
        assert!(stderr.contains(&format!(" : last words 2 before {mode}\n")));
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
    assert!(stderr.contains(" : second thread about to overflow its stack\n"));
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

#[test]
fn previous_handler_is_called_with_the_original_arguments() {
    if signal_test_skipped() {
        return;
    }
    let (status, _, stderr) = crash("chain", &["chain"], &[]);
    assert_eq!(status.signal(), Some(libc::SIGSEGV), "{stderr}");
    let dump = stderr.find("vlog: end of dump").expect("dumped");
    let chained = stderr
        .find("previous handler: signal 11, address (nil)")
        .unwrap_or_else(|| panic!("previous handler not called with the fault address: {stderr}"));
    assert!(dump < chained, "the dump comes first");
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
    assert!(stderr.contains(" : last words 2 before dump-signal\n"));
    assert!(stderr.contains("\nvlog: end of dump, 3 records\n"));
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
}

// ---- The ring file and vlog-dump ---------------------------------------

fn vlog_dump(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_vlog-dump"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "vlog-dump {args:?}: {}",
        text(&out.stderr)
    );
    out
}

fn json_field<'a>(line: &'a str, name: &str) -> &'a str {
    let key = format!("\"{name}\":");
    let rest = &line[line.find(&key).unwrap() + key.len()..];
    let end = if let Some(stripped) = rest.strip_prefix('"') {
        1 + stripped.find('"').unwrap() + 1
    } else {
        rest.find([',', '}']).unwrap()
    };
    rest[..end].trim_matches('"')
}

#[test]
fn sigkill_leaves_every_committed_record_in_the_ring_file() {
    use std::io::BufRead;
    let ring = work().join("killed.ring");
    let _ = std::fs::remove_file(&ring);
    let exe = build("killed", Link::Static);
    let mut child = Command::new(&exe)
        .env("VLOG_BUFFER_FILE", &ring)
        .env("VLOG_BUFFER_SIZE", "256K")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut ready)
        .unwrap();
    assert_eq!(ready, "ready\n");
    std::thread::sleep(std::time::Duration::from_millis(300));
    child.kill().unwrap(); // SIGKILL
    assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGKILL));

    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(&ring).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let stats = text(&vlog_dump(&["--stats", ring.to_str().unwrap()]).stdout);
    assert!(stats.contains("torn: 0\n"), "{stats}");
    let out = text(&vlog_dump(&["--json", ring.to_str().unwrap()]).stdout);
    let mut last_seq: Option<u64> = None;
    let mut last_msg = [None::<u64>; 4];
    let mut n = 0;
    for line in out.lines() {
        let seq: u64 = json_field(line, "seq").parse().unwrap();
        assert!(last_seq.is_none_or(|s| seq == s + 1), "gap before {seq}");
        last_seq = Some(seq);
        let msg = json_field(line, "message");
        let mut words = msg.split(' ');
        let thread: usize = words.nth(1).unwrap().parse().unwrap();
        let i: u64 = words.nth(1).unwrap().parse().unwrap();
        assert!(
            last_msg[thread].is_none_or(|m| i == m + 1),
            "thread {thread} skips to {i}"
        );
        last_msg[thread] = Some(i);
        n += 1;
    }
    assert!(n > 1000, "{n} records");
    let recorded: u64 = stats
        .lines()
        .find_map(|l| l.strip_prefix("recorded: "))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        last_seq.unwrap() + 1,
        recorded,
        "every committed record is there"
    );
}

#[test]
fn ring_file_is_reused_and_a_foreign_file_never_overwritten() {
    let ring = work().join("reuse.ring");
    let _ = std::fs::remove_file(&ring);
    let env = [("VLOG_BUFFER_FILE", ring.to_str().unwrap())];
    environment(&env);
    environment(&env);
    let out = text(&vlog_dump(&["--grep", "qemu error", ring.to_str().unwrap()]).stdout);
    assert_eq!(out.lines().count(), 2, "both runs' records: {out}");
    let stats = text(&vlog_dump(&["--stats", ring.to_str().unwrap()]).stdout);
    assert!(
        stats.contains("records: 6\n") && stats.contains("recorded: 6\n"),
        "{stats}"
    );

    let foreign = work().join("foreign.txt");
    std::fs::write(&foreign, "precious data\n").unwrap();
    let (dump, stderr) = environment(&[("VLOG_BUFFER_FILE", foreign.to_str().unwrap())]);
    assert!(
        stderr.contains("is not a vlog ring; not overwriting it"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(&foreign).unwrap(),
        "precious data\n"
    );
    assert!(
        dump.contains("buffer_size=65536\n"),
        "still a ring in memory: {dump}"
    );
}

#[test]
fn vlog_dump_reads_the_ring_from_a_core_file() {
    if signal_test_skipped() {
        return;
    }
    let pattern = std::fs::read_to_string("/proc/sys/kernel/core_pattern").unwrap_or_default();
    if pattern.starts_with('|') {
        eprintln!("skipped: cores go to a helper ({})", pattern.trim());
        return;
    }
    let dir = work().join("core-run");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let status = Command::new("sh")
        .arg("-c")
        .arg("ulimit -c unlimited 2>/dev/null; exec \"$@\" 2>/dev/null")
        .arg("sh")
        .arg(crash_exe())
        .arg("segv")
        .current_dir(&dir)
        .env("VLOG_DUMP", "off")
        .status()
        .unwrap();
    assert_eq!(status.signal(), Some(libc::SIGSEGV));
    let core = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| e.file_name().to_string_lossy().starts_with("core"));
    let Some(core) = core else {
        eprintln!(
            "skipped: no core file was written (core_pattern {})",
            pattern.trim()
        );
        return;
    };
    assert!(status.core_dumped());
    let out = text(&vlog_dump(&[core.path().to_str().unwrap()]).stdout);
    assert!(out.contains(": warning : test.crash : main:"), "{out}");
    assert!(out.contains(" : last words 2 before segv\n"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_library_does_not_contain_the_ring_magic() {
    // A scan of a core file for the magic must find rings, not the constant.
    for lib in ["lib/libvlog.a", "lib/libvlog.so.0"] {
        let bytes = std::fs::read(work().join(lib)).unwrap();
        assert!(
            !bytes.windows(8).any(|w| w == b"VLOGRING"),
            "{lib} holds the magic"
        );
    }
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
    // The dump goes to a FIFO whose reader never reads: once its buffer is
    // full the handler blocks in write(2), and only the watchdog ends it.
    let (fifo, c) = make_fifo("crash-watchdog.fifo");
    // SAFETY: as above; the descriptor is closed below.
    let reader = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_NONBLOCK) };
    assert!(reader >= 0);
    let target = format!("file:{}", fifo.display());
    let started = std::time::Instant::now();
    let (status, _, stderr) = crash(
        "watchdog",
        &["flood"],
        &[
            ("VLOG_DUMP", &target),
            ("VLOG_BUFFER_SIZE", "4M"),
            ("VLOG_OUTPUTS", "4:stderr"),
        ],
    );
    let took = started.elapsed();
    // SAFETY: our own descriptor.
    unsafe { libc::close(reader) };
    let _ = std::fs::remove_file(&fifo);
    assert_eq!(status.signal(), Some(libc::SIGSEGV), "{stderr}");
    assert!(
        took >= std::time::Duration::from_millis(1900),
        "ended after {took:?}"
    );
    assert!(
        took < std::time::Duration::from_secs(10),
        "ended after {took:?}"
    );
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

#[test]
fn forked_child_goes_on_writing_the_ring_file() {
    let ring = work().join("fork.ring");
    let _ = std::fs::remove_file(&ring);
    let exe = build("fork_ring_file", Link::Static);
    let out = run(&exe, &[("VLOG_BUFFER_FILE", ring.to_str().unwrap())]);
    assert_ok("fork_ring_file", &out);
    let dump = text(&vlog_dump(&[ring.to_str().unwrap()]).stdout);
    assert!(dump.contains(" : parent before fork\n"), "{dump}");
    assert!(dump.contains(" : child message 299\n"), "{dump}");
    let stats = text(&vlog_dump(&["--stats", ring.to_str().unwrap()]).stdout);
    assert!(
        stats.contains("records: 301\n") && stats.contains("torn: 0\n"),
        "{stats}"
    );
}

#[test]
fn deferred_records_read_back_as_printf_text() {
    check("deferred");
}

#[test]
fn call_sites_beyond_the_dictionary_and_across_a_new_ring_read_back() {
    check("sites");
}

/// 2, 8 and 64 threads at full rate into a 16 KiB ring for a second each,
/// dumped without a lock all the while: intact records, consecutive
/// per-thread messages, exact accounting (`make soak` runs it longer).
#[test]
fn threads_at_full_rate_keep_the_ring_intact_and_counted() {
    let exe = build("soak", Link::Static);
    // valgrind runs one thread at a time: with 64 writers the dumping thread
    // would wait minutes for its turn.
    let counts: &[&str] = if tool() == Tool::Valgrind {
        &["2", "8"]
    } else {
        &["2", "8", "64"]
    };
    for &threads in counts {
        let out = run_with(&exe, &[threads, "1"], &[]);
        assert_ok(&format!("soak {threads}"), &out);
    }
}

#[test]
fn hostile_message_contents_are_escaped_the_same_in_outputs_and_ring() {
    let exe = build("hostile", Link::Static);
    let out = run_with(&exe, &[work().join("hostile.log").to_str().unwrap()], &[]);
    assert_ok("hostile", &out);
}

/// A string from outside used as the format does not compile (even without
/// -Werror); the same string logged with "%s" does. Neither does an argument of
/// the wrong type, with -Werror.
#[test]
fn a_non_literal_format_without_arguments_does_not_compile() {
    let compile = |name: &str, body: &str, flags: &[&str]| {
        let src = work().join(format!("{name}.c"));
        std::fs::write(
            &src,
            format!(
                "#include <vlog.h>\nVLOG_INIT(\"t\");\n{body}\nint main(void) {{ return 0; }}\n"
            ),
        )
        .unwrap();
        Command::new(cc())
            .args(["-std=c11", "-Wall", "-c", "-o", "/dev/null", "-I"])
            .arg(root().join("include"))
            .args(flags)
            .arg(&src)
            .output()
            .unwrap()
    };
    let bad = compile(
        "format_outside",
        "void f(const char *s) { VLOG_INFO(s); }",
        &[],
    );
    assert!(!bad.status.success());
    assert!(
        text(&bad.stderr).contains("format not a string literal and no format arguments"),
        "{}",
        text(&bad.stderr)
    );
    let good = compile(
        "format_literal",
        "void f(const char *s) { VLOG_INFO(\"%s\", s); }",
        &[],
    );
    assert_ok("format_literal", &good);
    let wrong = compile(
        "format_types",
        "void f(void) { VLOG_INFO(\"%d\", \"text\"); }",
        &["-Werror"],
    );
    assert!(!wrong.status.success(), "{}", text(&wrong.stderr));
}

/// Descriptors vlog keeps are close-on-exec; files it creates are 0600.
#[test]
fn kept_descriptors_are_close_on_exec_and_files_private() {
    let dir = scratch_dir("cloexec-files");
    let d = dir.to_str().unwrap();
    let exe = build("cloexec", Link::Static);
    let out = run_with(
        &exe,
        &[d],
        &[
            ("VLOG_OUTPUTS", &format!("1:file:{d}/out.log")),
            ("VLOG_DUMP", &format!("file:{d}/crash.txt")),
            ("VLOG_BUFFER_FILE", &format!("{d}/vlog.ring")),
        ],
    );
    assert_ok("cloexec", &out);
}

/// The real daemon(3): the started process exits at once, the daemon goes on
/// writing the ring file.
#[test]
fn a_daemon_goes_on_writing_the_ring_file() {
    let ring = work().join("daemon.ring");
    let _ = std::fs::remove_file(&ring);
    let exe = build("fork_ring_file", Link::Static);
    let out = run_with(
        &exe,
        &["daemon"],
        &[("VLOG_BUFFER_FILE", ring.to_str().unwrap())],
    );
    assert_ok("fork_ring_file daemon", &out);
    let ring = ring.to_str().unwrap();
    for _ in 0..200 {
        let dump = text(&vlog_dump(&[ring]).stdout);
        if dump.contains(" : daemon done\n") {
            assert!(dump.contains(" : before daemon()\n"), "{dump}");
            assert_eq!(dump.matches(" : daemon message ").count(), 300, "{dump}");
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("the daemon did not finish within 10 s");
}

/// A daemon and 4 forked workers log into one ring file at once: every
/// message is there, in order per process, nothing torn or missing; workers
/// killed while logging leave the ring usable.
#[test]
fn processes_sharing_a_ring_file_lose_nothing() {
    let ring = work().join("shared.ring");
    let _ = std::fs::remove_file(&ring);
    let exe = build("shared_ring", Link::Static);
    let out = run_with(
        &exe,
        &["4", "3000"],
        &[
            ("VLOG_BUFFER_FILE", ring.to_str().unwrap()),
            ("VLOG_BUFFER_SIZE", "16M"),
            ("VLOG_LEVEL", "debug"),
            ("VLOG_OUTPUTS", "4:stderr"),
        ],
    );
    assert_ok("shared_ring", &out);
    let ring = ring.to_str().unwrap();
    let dump = text(&vlog_dump(&["--source", "test.shared", ring]).stdout);
    let mut next = [0; 5];
    for line in dump.lines().filter(|l| !l.contains("doomed worker")) {
        if let Some(rest) = line.split(" : process ").nth(1) {
            let (proc, msg) = rest.split_once(" message ").unwrap();
            let (proc, msg): (usize, i32) = (proc.parse().unwrap(), msg.parse().unwrap());
            assert_eq!(msg, next[proc], "process {proc} out of order");
            next[proc] += 1;
        }
    }
    assert_eq!(next, [3000; 5], "every message of every process");
    assert!(dump.contains(
        " : all workers done
"
    ));
    assert!(dump.contains(
        " : daemon goes on after killed workers
"
    ));
    let stats = text(&vlog_dump(&["--stats", ring]).stdout);
    // Only a killed worker's last record may be missing or torn.
    for line in stats.lines() {
        if let Some(n) = line
            .strip_prefix("torn: ")
            .or(line.strip_prefix("missing: "))
        {
            assert!(n.parse::<u32>().unwrap() <= 20, "{stats}");
        }
    }
}

/// Structured fields through the outputs, the ring, vlog_dump and vlog-dump;
/// the JSON output and vlog-dump --json read back by Python's json module.
#[test]
fn structured_fields_reach_every_reader() {
    let dir = scratch_dir("fields-run");
    let (txt, json, ring) = (
        dir.join("out.log"),
        dir.join("out.json"),
        dir.join("fields.ring"),
    );
    let exe = build("fields", Link::Static);
    let out = run_with(
        &exe,
        &[txt.to_str().unwrap(), json.to_str().unwrap()],
        &[("VLOG_BUFFER_FILE", ring.to_str().unwrap())],
    );
    assert_ok("fields", &out);
    let stderr = text(&out.stderr);
    assert_eq!(stderr.matches("invalid field name").count(), 1, "{stderr}");
    let dumped = dir.join("dump.json");
    std::fs::write(
        &dumped,
        vlog_dump(&["--json", ring.to_str().unwrap()]).stdout,
    )
    .unwrap();
    let check = r#"
import json, sys
for path, printed in ((sys.argv[1], True), (sys.argv[2], False)):
    objs = [json.loads(l) for l in open(path, encoding="utf-8", errors="strict")]
    by_msg = {o["message"]: o.get("fields") for o in objs}
    assert by_msg["started guest1"] == {"VM": "guest1", "VCPUS": 4, "DELTA": -7}, by_msg
    assert by_msg["odd values"] == {"PATH": "/tmp/a b\n\"q\"\x1b[2J\ufffd",
                                    "NULL_VALUE": "(null)"}, by_msg
    assert ("ring only 1" in by_msg) != printed, path
    if not printed:
        assert by_msg["ring only 1"] == {"N": 1}
print("ok")
"#;
    let py = Command::new("python3")
        .arg("-c")
        .arg(check)
        .arg(&json)
        .arg(&dumped)
        .output()
        .expect("python3");
    assert_ok("fields json check (python3)", &py);
}

/// A journald started here for the test (it runs standalone as root), and
/// stopped when dropped.
struct Journald(std::process::Child);

impl Journald {
    fn start() -> Option<Journald> {
        let binary = Path::new("/lib/systemd/systemd-journald");
        // SAFETY: geteuid has no preconditions.
        if !binary.exists() || unsafe { libc::geteuid() } != 0 {
            return None;
        }
        std::fs::create_dir_all("/run/systemd/journal").ok()?;
        let child = Command::new(binary)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let journald = Journald(child);
        for _ in 0..100 {
            if std::os::unix::net::UnixDatagram::unbound()
                .and_then(|s| s.connect("/run/systemd/journal/socket"))
                .is_ok()
            {
                return Some(journald);
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        None
    }
}

impl Drop for Journald {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Entries journalctl shows for `matches`, as JSON lines, waiting up to 5 s
/// for `count` of them.
fn journal_entries(matches: &[&str], count: usize) -> String {
    let mut out = String::new();
    for _ in 0..100 {
        let run = Command::new("journalctl")
            .args(["-o", "json", "--no-pager"])
            .args(matches)
            .output()
            .expect("journalctl");
        out = text(&run.stdout);
        if out.lines().count() >= count {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    out
}

/// PRIO:journald against a real systemd-journald: every field, the priority
/// mapping, a multi-line message, structured fields; and the memfd path for
/// entries too large for a datagram.
#[test]
fn journald_output_reaches_a_real_journald() {
    let Some(_journald) = Journald::start() else {
        eprintln!("skipped: cannot start systemd-journald (not root, or not installed)");
        return;
    };
    let exe = build("journald", Link::Static);
    let out = run_with(&exe, &[], &[]);
    assert_ok("journald", &out);
    let pid = text(&out.stdout).trim().to_string();
    let entries = journal_entries(&[&format!("_PID={pid}"), "VLOG_SOURCE=test.journald"], 4);
    let check = r#"
import json, sys
objs = [json.loads(l) for l in sys.stdin.read().splitlines()]
by_msg = {o["MESSAGE"] if isinstance(o["MESSAGE"], str) else bytes(o["MESSAGE"]).decode(): o
          for o in objs}
want = {"debug entry 1": "7", "info entry": "6", "two\nlines": "4",
        "error entry with fields": "3"}
assert sorted(by_msg) == sorted(want), sorted(by_msg)
for msg, prio in want.items():
    o = by_msg[msg]
    assert o["PRIORITY"] == prio, o
    assert o["SYSLOG_IDENTIFIER"] == "journald", o
    assert o["CODE_FILE"].endswith("c-tests/journald.c") and o["CODE_FUNC"] == "main", o
    assert int(o["CODE_LINE"]) > 0 and o["VLOG_SOURCE"] == "test.journald", o
fields = by_msg["error entry with fields"]
assert fields["VM"] == "guest1" and fields["VCPUS"] == "4", fields
print("ok")
"#;
    let mut py = Command::new("python3")
        .arg("-c")
        .arg(check)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3");
    use std::io::Write;
    py.stdin
        .take()
        .unwrap()
        .write_all(entries.as_bytes())
        .unwrap();
    assert_ok("journald check (python3)", &py.wait_with_output().unwrap());

    // The memfd path: an entry passed as a sealed memfd over SCM_RIGHTS.
    let marker = format!("memfd entry {}", std::process::id());
    let entry = format!(
        "MESSAGE={marker}\nSYSLOG_IDENTIFIER=vlog-memfd-test\nBIG={}\n",
        "x".repeat(300_000)
    );
    vlog::internal::send_to_journald_via_memfd(entry.as_bytes()).expect("send through a memfd");
    let found = journal_entries(
        &[
            "SYSLOG_IDENTIFIER=vlog-memfd-test",
            &format!("MESSAGE={marker}"),
        ],
        1,
    );
    assert!(found.contains(&marker), "{found}");
}

/// An rsyslogd on loopback (UDP and TCP on `port`, and /dev/log when
/// `local`), writing what it receives to `out`; stopped when dropped.
struct Rsyslogd {
    child: std::process::Child,
    local: bool,
}

impl Rsyslogd {
    fn start(dir: &Path, port: u16, local: bool) -> Option<Rsyslogd> {
        let binary = Path::new("/usr/sbin/rsyslogd");
        if !binary.exists() {
            return None;
        }
        let conf = dir.join("rsyslog.conf");
        let imuxsock = if local {
            "module(load=\"imuxsock\" SysSock.Name=\"/dev/log\")"
        } else {
            ""
        };
        std::fs::write(
            &conf,
            format!(
                "global(workDirectory=\"{dir}\")\n{imuxsock}\n\
                 module(load=\"imudp\")\nmodule(load=\"imtcp\")\n\
                 input(type=\"imudp\" address=\"127.0.0.1\" port=\"{port}\")\n\
                 input(type=\"imtcp\" address=\"127.0.0.1\" port=\"{port}\")\n\
                 template(name=\"t\" type=\"string\" string=\"PRI=%pri% APP=%app-name% \
                 PROCID=%procid% SD=%structured-data% MSG=%msg%\\n\")\n\
                 *.* action(type=\"omfile\" file=\"{dir}/out.log\" template=\"t\")\n",
                dir = dir.display()
            ),
        )
        .ok()?;
        let child = Command::new(binary)
            .args(["-n", "-f"])
            .arg(&conf)
            .arg("-i")
            .arg(dir.join("rsyslogd.pid"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let server = Rsyslogd { child, local };
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Some(server);
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        None
    }
}

impl Drop for Rsyslogd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if self.local {
            let _ = std::fs::remove_file("/dev/log");
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Lines of `file` once it has `count` lines containing `needle` (5 s at most).
fn wait_for_lines(file: &Path, needle: &str, count: usize) -> String {
    let mut text = String::new();
    for _ in 0..100 {
        text = std::fs::read_to_string(file).unwrap_or_default();
        if text.matches(needle).count() >= count {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    text
}

/// PRIO:syslog to a real rsyslogd: RFC 5424 over UDP, TCP (octet counting)
/// and /dev/log, fields as SD-PARAMs; a collector that is down costs no wait,
/// its lines are counted and reported once, and the output reconnects when it
/// comes up.
#[test]
fn syslog_output_reaches_a_real_rsyslogd() {
    let dir = scratch_dir("rsyslog-run");
    let port = free_port();
    let local = !Path::new("/dev/log").exists();
    let Some(server) = Rsyslogd::start(&dir, port, local) else {
        eprintln!("skipped: cannot start rsyslogd (not installed?)");
        return;
    };
    let exe = build("syslog", Link::Static);
    let port_text = port.to_string();
    let mut args = vec!["send", port_text.as_str()];
    if local {
        args.push("local");
    }
    let out = run_with(&exe, &args, &[]);
    assert_ok("syslog send", &out);
    let received = wait_for_lines(&dir.join("out.log"), "MSG=", if local { 9 } else { 6 });
    for app in ["vlogudp", "vlogtcp"]
        .iter()
        .chain(if local { &["vloglocal"][..] } else { &[] })
    {
        for (pri, msg) in [
            ("31", "debug message 1"),
            ("28", "warning message"),
            ("27", "error with fields"),
        ] {
            // /dev/log takes the traditional form (no structured data: the
            // fields follow the message as in a text line).
            let local = *app == "vloglocal";
            let fields = if local && msg == "error with fields" {
                " [VM=guest \"1\" VCPUS=4]"
            } else {
                ""
            };
            let line = received
                .lines()
                .find(|l| {
                    l.contains(&format!("APP={app} ")) && l.ends_with(&format!("{msg}{fields}"))
                })
                .unwrap_or_else(|| panic!("{app}: no '{msg}' in:\n{received}"));
            assert!(line.starts_with(&format!("PRI={pri} ")), "{line}");
            if !local {
                assert!(line.contains("SOURCE=\"test.syslog\""), "{line}");
                assert!(line.contains("CODE_FUNC=\"main\""), "{line}");
            }
            if !local && msg == "error with fields" {
                assert!(
                    line.contains("VM=\"guest \\\"1\\\"\" VCPUS=\"4\""),
                    "{line}"
                );
            }
        }
    }
    // After fork, parent and child each reach the collector over TCP.
    for msg in ["parent after fork", "from the child 1", "from the child 2"] {
        let received = wait_for_lines(&dir.join("out.log"), msg, 3);
        let over_tcp = received
            .lines()
            .filter(|l| l.contains("APP=vlogtcp ") && l.ends_with(msg))
            .count();
        assert_eq!(over_tcp, 1, "{msg}:\n{received}");
    }
    drop(server);

    // A collector that is down, then comes up.
    let dir = scratch_dir("rsyslog-down");
    let port = free_port();
    let mut child = command(&exe)
        .args(["down", &port.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    use std::io::{BufRead, Write};
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut ready)
        .unwrap();
    assert_eq!(ready, "ready\n");
    let server = Rsyslogd::start(&dir, port, false).expect("rsyslogd");
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_ok("syslog down", &out);
    let stderr = text(&out.stderr);
    assert_eq!(
        stderr.matches("cannot write to syslog").count(),
        1,
        "{stderr}"
    );
    assert_eq!(stderr.matches(" works again; ").count(), 1, "{stderr}");
    let received = wait_for_lines(&dir.join("out.log"), "after the collector started", 1);
    assert!(
        received.contains("after the collector started"),
        "{received}"
    );
    drop(server);
}

/// JSON lines read back by a real JSON parser (Python's, decoding the file as
/// strict UTF-8): every field, and messages with quotes, controls, NULs,
/// invalid and valid multi-byte UTF-8.
#[test]
fn json_output_is_valid_utf8_json_with_every_field() {
    let path = work().join("out.json");
    let exe = build("json_output", Link::Static);
    let out = run_with(&exe, &[path.to_str().unwrap()], &[]);
    assert_ok("json_output", &out);
    let pid = text(&out.stdout).trim().to_string();
    let check = r#"
import json, sys
want = [
    "plain text",
    "quote \" and backslash \\ and slash /",
    "newline\ntab\tcr\rbell\x07esc\x1b[31m del\x7f",
    "nul \x00 here",
    "bad \ufffd\ufffd bytes",
    "cut \ufffd",
    "utf8 \u00e9 \u20ac \U0001f600 \u009b",
    "x" * 2500 + "\u00e9" + "x" * 2498,
]
lines = open(sys.argv[1], encoding="utf-8", errors="strict").read().split("\n")
assert lines.pop() == "", "the file ends with a newline"
objs = [json.loads(line) for line in lines]
got = [o["message"] for o in objs]
bad = [(i, g[:80], w[:80]) for i, (g, w) in enumerate(zip(got, want)) if g != w]
assert len(got) == len(want) and not bad, (len(got), bad)
for o in objs:
    assert sorted(o) == sorted(["seq", "time", "time_ns", "pid", "tid", "priority",
                                "source", "file", "line", "func", "message"]), o
    assert o["pid"] == int(sys.argv[2]) and o["tid"] == o["pid"], o
    assert o["priority"] == "error" and o["source"] == "test.json", o
    assert o["file"].endswith("json_output.c") and o["func"] == "main", o
    assert isinstance(o["line"], int) and o["line"] > 0, o
print("ok")
"#;
    let py = Command::new("python3")
        .arg("-c")
        .arg(check)
        .arg(&path)
        .arg(&pid)
        .output()
        .expect("python3");
    assert_ok("json check (python3)", &py);
}

/// A fresh directory under the work directory.
fn scratch_dir(name: &str) -> PathBuf {
    let dir = work().join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Outputs that fail (full disk, FIFO, rotation, fd 2 reused, stderr a pipe
/// with no reader) never stop logging, never block, never raise SIGPIPE, and
/// are reported once.
#[test]
fn failing_outputs_are_reported_once_and_logging_goes_on() {
    let exe = build("output_failures", Link::Static);
    for mode in ["fifo", "rotate", "stderr"] {
        let dir = scratch_dir(&format!("outputs-{mode}"));
        let out = run_with(&exe, &[mode, dir.to_str().unwrap()], &[]);
        assert_ok(&format!("output_failures {mode}"), &out);
    }
    // A full file system: a 64 KiB tmpfs, mounted here (root only).
    let dir = scratch_dir("outputs-full");
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(&dir)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if mounted {
        let out = run_with(&exe, &["full", dir.to_str().unwrap()], &[]);
        let _ = Command::new("umount").arg(&dir).status();
        assert_ok("output_failures full", &out);
        let stderr = text(&out.stderr);
        assert_eq!(
            stderr.matches("No space left on device").count(),
            1,
            "{stderr}"
        );
        assert_eq!(stderr.matches(" works again; ").count(), 1, "{stderr}");
    } else {
        eprintln!("skipping the full file system case: cannot mount a tmpfs (not root?)");
    }
    // stderr a pipe whose reader has gone: EPIPE, and the process lives on.
    let mut fds = [0; 2];
    // SAFETY: pipe(2) fills the two-element array.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both descriptors were just created and are owned here.
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read_end);
    let out = Command::new(&exe)
        .arg("stderr-pipe")
        .env_remove("VLOG_OUTPUTS")
        .stderr(Stdio::from(write_end))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr-pipe: {:?}", out.status);
}

/// errno survives every kind of logging call, the first (which initialises
/// vlog) and one whose output fails included.
#[test]
fn logging_never_changes_errno() {
    let ring = work().join("errno_kept.ring");
    let _ = std::fs::remove_file(&ring);
    let exe = build("errno_kept", Link::Static);
    let out = run(
        &exe,
        &[
            ("VLOG_LEVEL", "debug"),
            ("VLOG_BUFFER_FILE", ring.to_str().unwrap()),
            ("VLOG_OUTPUTS", "4:file:/dev/full"),
        ],
    );
    assert_ok("errno_kept", &out);
    // The failing output is reported once, not per message.
    let stderr = text(&out.stderr);
    assert_eq!(stderr.matches("cannot write to").count(), 1, "{stderr}");
}

#[test]
fn percent_n_is_never_executed() {
    check("percent_n");
}

/// vlog-dump renders a ring file's deferred records exactly as the program's
/// own vlog_dump did.
#[test]
fn vlog_dump_renders_deferred_records_like_the_program() {
    let ring = work().join("deferred.ring");
    let _ = std::fs::remove_file(&ring);
    let exe = build("deferred", Link::Static);
    let out = run(&exe, &[("VLOG_BUFFER_FILE", ring.to_str().unwrap())]);
    assert_ok("deferred", &out);
    let own = text(&out.stdout);
    let own = own.strip_suffix("ok\n").unwrap_or(&own);
    let read = text(&vlog_dump(&[ring.to_str().unwrap()]).stdout);
    assert!(read.lines().count() > 20, "{read}");
    assert_eq!(read, own);
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
