//! What every C test uses: the library copied once into a scratch
//! directory, C programs built against it (static or shared, under the
//! sanitizer or valgrind pass's tool), run with only the `VLOG_*` variables
//! a test gives, and vlog-dump.

use crate::support::run_vlog_dump;
pub(crate) use crate::support::{assert_ok, needs_installed, root, say_skipped, text};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// A scratch directory holding the built library (`lib/`) and the test
/// programs, set up once per run.
pub(crate) fn work() -> &'static Path {
    static WORK: OnceLock<PathBuf> = OnceLock::new();
    WORK.get_or_init(|| {
        let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("c-tests");
        let lib = work.join("lib");
        std::fs::create_dir_all(&lib).unwrap();
        // cargo test builds the static library beside this test binary; the
        // shared one is linked from it as `make` links it (versioned
        // symbols), so the programs load what `make install` installs.
        let built = std::env::current_exe().unwrap();
        let deps = built.parent().unwrap();
        std::fs::copy(static_lib(deps), lib.join("libvlog.a")).unwrap();
        let mut link = Command::new(root().join("link/libvlog.sh"));
        link.arg(lib.join("libvlog.a"))
            .arg(lib.join("libvlog.so.0"))
            .env("CC", cc());
        run_compiler(link);
        let link = lib.join("libvlog.so");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink("libvlog.so.0", &link).unwrap();
        work
    })
}

/// The static library this run built, in `deps`: cargo names it
/// `libvlog-HASH.a`, a hash per configuration (`cargo build` and `cargo
/// test` may each have one). The newest is this run's sources: cargo
/// rebuilds the library whenever a source is newer than it.
fn static_lib(deps: &Path) -> PathBuf {
    let built = |e: &std::fs::DirEntry| e.metadata().and_then(|m| m.modified()).ok();
    std::fs::read_dir(deps)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with("libvlog-") && name.ends_with(".a")
        })
        .max_by_key(built)
        .map(|e| e.path())
        .unwrap_or_else(|| panic!("no libvlog-*.a in {deps:?}: the crate's staticlib"))
}

/// The tool the C programs run under (`VLOGTEST_TOOL`; `.ci/run` sets
/// it for its sanitizer and valgrind passes): none, `asan` (the programs are
/// built with AddressSanitizer and UBSan) or `valgrind` (memcheck).
#[derive(Clone, Copy, PartialEq, Debug)]
pub(crate) enum Tool {
    None,
    Asan,
    Valgrind,
}

pub(crate) fn tool() -> Tool {
    match std::env::var("VLOGTEST_TOOL").as_deref() {
        Ok("asan") => Tool::Asan,
        Ok("valgrind") => Tool::Valgrind,
        _ => Tool::None,
    }
}

/// True, after saying why, when a test cannot run under the current tool:
/// the tools handle signals, stacks and allocation themselves.
pub(crate) fn skipped_under_tool(why: &str) -> bool {
    let tool = tool();
    if tool != Tool::None {
        say_skipped(&format!("under {tool:?}: {why}"));
    }
    tool != Tool::None
}

/// `skipped_under_tool` for the tests of the crash handler, whose fatal
/// signals, alternate stacks and core files the tools handle themselves.
/// Whether a test that chroots cannot run here: under a tool, which cannot
/// reach its own files from the jail, or not as root; says why.
pub(crate) fn chroot_test_skipped() -> bool {
    if skipped_under_tool("after a chroot the tool cannot reach its own files") {
        return true;
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        say_skipped("chroot needs root");
        return true;
    }
    false
}

pub(crate) fn signal_test_skipped() -> bool {
    skipped_under_tool("the tool handles fatal signals, alternate stacks and core files itself")
}

#[derive(Clone, Copy, PartialEq, Debug)]
pub(crate) enum Link {
    Static,
    Shared,
}

pub(crate) fn cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".into())
}

pub(crate) fn run_compiler(mut cmd: Command) {
    let out = cmd.output().expect("run the C compiler");
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Compiles `c-tests/NAME.c` into a program; returns its path.
pub(crate) fn build(name: &str, link: Link) -> PathBuf {
    build_as(name, link, "", &root().join("include"), &[])
}

/// `build`, as program `name` + `variant`, with the headers in `include`
/// and more compiler arguments.
pub(crate) fn build_as(
    name: &str,
    link: Link,
    variant: &str,
    include: &Path,
    extra: &[&str],
) -> PathBuf {
    build_full(name, link, variant, include, &cc(), extra, &[])
}

/// `build`, linked with static libraries `libs` too (after the program's
/// source, before vlog's: a Rust static library that calls vlog).
pub(crate) fn build_linking(name: &str, link: Link, libs: &[&Path]) -> PathBuf {
    build_full(name, link, "", &root().join("include"), &cc(), &[], libs)
}

/// `build` with another compiler (a C++ one, with `-x c++`) and more
/// compiler arguments (a `-std=` among them replaces the default C11).
pub(crate) fn build_with(
    name: &str,
    link: Link,
    variant: &str,
    compiler: &str,
    extra: &[&str],
) -> PathBuf {
    build_full(
        name,
        link,
        variant,
        &root().join("include"),
        compiler,
        extra,
        &[],
    )
}

fn build_full(
    name: &str,
    link: Link,
    variant: &str,
    include: &Path,
    compiler: &str,
    extra: &[&str],
    libs: &[&Path],
) -> PathBuf {
    let work = work();
    let suffix = if link == Link::Static { "" } else { "-shared" };
    let exe = work.join(format!("{name}{variant}{suffix}"));
    // Tests that share a program build it at once: each links its own file
    // and renames it into place, so no test ever runs a program another is
    // still writing (a half-linked file is not executable yet).
    static BUILDS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let built = work.join(format!(
        ".{name}{variant}{suffix}.{}.{n}",
        std::process::id()
    ));
    let mut cmd = Command::new(compiler);
    if tool() == Tool::Asan {
        cmd.args([
            "-fsanitize=address,undefined",
            "-fno-sanitize-recover=all",
            "-fno-omit-frame-pointer",
        ]);
    }
    if !extra.iter().any(|a| a.starts_with("-std=")) {
        cmd.arg("-std=c11");
    }
    cmd.args(["-Wall", "-Wextra", "-Werror", "-g", "-O1"])
        .args(extra)
        .arg("-I")
        .arg(include)
        .arg(root().join("c-tests").join(format!("{name}.c")))
        .arg("-o")
        .arg(&built);
    // The library is a library whatever `-x` said of the source.
    cmd.args(["-x", "none"]).args(libs);
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
    std::fs::rename(&built, &exe).unwrap();
    exe
}

/// Takes the test run's own `VLOG_*` variables out of `cmd`'s environment:
/// a program gets only those its test gives it.
pub(crate) fn without_vlog_env(cmd: &mut Command) {
    for (key, _) in std::env::vars() {
        if key.starts_with("VLOG_") {
            cmd.env_remove(key);
        }
    }
}

/// Runs a program with only the given `VLOG_*` variables set.
pub(crate) fn run(exe: &Path, env: &[(&str, &str)]) -> Output {
    run_with(exe, &[], env)
}

/// `run` with arguments.
pub(crate) fn run_with(exe: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = command(exe);
    cmd.args(args);
    without_vlog_env(&mut cmd);
    cmd.envs(env.iter().copied())
        .current_dir(work())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    spawn(&mut cmd)
        .wait_with_output()
        .expect("run the test program")
}

/// Starts `cmd`. A program just written can be busy for a moment: another
/// test thread's fork may hold its descriptor until that child execs
/// (ETXTBSY), so a busy one is tried again, for a second at most.
pub(crate) fn spawn(cmd: &mut Command) -> std::process::Child {
    for _ in 0..50 {
        match cmd.spawn() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            result => return result.expect("start the test program"),
        }
    }
    panic!("{:?}: still busy after a second", cmd.get_program());
}

/// A command that runs `exe` under the current tool, which reports through
/// the exit status (97) and stderr.
pub(crate) fn command(exe: &Path) -> Command {
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

pub(crate) fn check(name: &str) {
    let exe = build(name, Link::Static);
    assert_ok(name, &run(&exe, &[]));
}

/// `check`, for a program that leaves a part out under a tool that owns
/// malloc and says so on stdout (`skipped ...`): said as the test's skip.
pub(crate) fn check_saying_skips(name: &str) {
    let exe = build(name, Link::Static);
    let out = run(&exe, &[]);
    assert_ok(name, &out);
    for line in text(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("skipped"))
    {
        say_skipped(line);
    }
}

// ---- The ring file and vlog-dump ---------------------------------------

pub(crate) fn vlog_dump(args: &[&str]) -> Output {
    let out = run_vlog_dump(args);
    assert!(
        out.status.success(),
        "vlog-dump {args:?}: {}",
        text(&out.stderr)
    );
    out
}

/// `vlog_dump` of a ring where some records may be skipped (a writer killed
/// in the middle of one): exit status 0, or 3 when it says what it skipped.
pub(crate) fn vlog_dump_allowing_skips(args: &[&str]) -> Output {
    let out = run_vlog_dump(args);
    assert!(
        matches!(out.status.code(), Some(0 | 3)),
        "vlog-dump {args:?}: {:?} {}",
        out.status,
        text(&out.stderr)
    );
    out
}

pub(crate) fn json_field<'a>(line: &'a str, name: &str) -> &'a str {
    let key = format!("\"{name}\":");
    let rest = &line[line.find(&key).unwrap() + key.len()..];
    let end = if let Some(stripped) = rest.strip_prefix('"') {
        1 + stripped.find('"').unwrap() + 1
    } else {
        rest.find([',', '}']).unwrap()
    };
    rest[..end].trim_matches('"')
}

/// A fresh directory under the work directory.
/// Fails the test, with the program's stderr, unless signal `sig` killed it.
pub(crate) fn assert_killed_by(out: &Output, sig: i32) {
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        out.status.signal(),
        Some(sig),
        "{:?}: {}",
        out.status,
        crate::support::text(&out.stderr)
    );
}

pub(crate) fn scratch_dir(name: &str) -> PathBuf {
    let dir = work().join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `run_with`, failing the test if the program has not ended after
/// `seconds` (it is killed): for what used to hang.
pub(crate) fn run_within(seconds: u64, exe: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = command(exe);
    cmd.args(args).current_dir(work());
    without_vlog_env(&mut cmd);
    cmd.envs(env.iter().copied())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = spawn(&mut cmd);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{} {args:?} still running after {seconds} s (killed):\n{}",
                exe.display(),
                text(&out.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// A real rsyslogd in the foreground with `config` (written to
/// `dir/rsyslog.conf`), or None when it is not installed or does not start.
pub(crate) fn spawn_rsyslogd(dir: &Path, config: &str) -> Option<std::process::Child> {
    let binary = Path::new("/usr/sbin/rsyslogd");
    if !binary.exists() {
        return None;
    }
    let conf = dir.join("rsyslog.conf");
    std::fs::write(&conf, config).ok()?;
    Command::new(binary)
        .args(["-n", "-f"])
        .arg(&conf)
        .arg("-i")
        .arg(dir.join("rsyslogd.pid"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()
}

/// A loopback TCP port nothing listens on now: bound, then let go.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A new ed25519 key pair without a passphrase at `path` (and `path`.pub).
pub fn ssh_keygen(path: &Path) {
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .output()
        .unwrap();
    assert_ok("ssh-keygen", &out);
}

/// Runs the Python `script` with `args`: it passes when the script exits 0,
/// and what it printed is shown when it does not.
pub fn python_script<S: AsRef<std::ffi::OsStr>>(name: &str, script: &str, args: &[S]) {
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("python3");
    assert_ok(name, &out);
}
