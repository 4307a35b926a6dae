//! Helpers every test binary shares (each includes this module; not every
//! binary uses every helper).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The source tree.
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A scratch path `name` in directory `dir` of cargo's temporary area.
pub fn scratch(dir: &str, name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Fails the test, with everything the program printed, unless it exited 0.
pub fn assert_ok(name: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{name} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
}

static SKIPPED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Says that (part of) the running test is skipped, and why, where the test
/// run's output shows it: straight to stderr, past the test harness's
/// capture of `eprintln!`, and again after the run's summary line.
pub fn say_skipped(why: &str) {
    use std::io::Write;
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    let line = format!("SKIPPED {test}: {why}");
    let _ = writeln!(std::io::stderr(), "{line}");
    let mut skipped = SKIPPED.lock().unwrap_or_else(|p| p.into_inner());
    if skipped.is_empty() {
        // SAFETY: registering a plain function that lives as long as the
        // program.
        unsafe { libc::atexit(say_skipped_at_exit) };
    }
    skipped.push(line);
}

/// After the harness's summary line: what was skipped, once more.
extern "C" fn say_skipped_at_exit() {
    use std::io::Write;
    let skipped = SKIPPED.lock().unwrap_or_else(|p| p.into_inner());
    let mut err = std::io::stderr();
    let _ = writeln!(
        err,
        "{} skipped in this run (the tests passed without them):",
        skipped.len()
    );
    for line in skipped.iter() {
        let _ = writeln!(err, "  {line}");
    }
}

/// A program `.ci/run` installs is missing: under `CI=true` the test fails
/// (the machine is not what CI promises), elsewhere it is skipped, saying so.
pub fn needs_installed(why: &str) {
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{why}, and CI=true: .ci/run installs it");
    }
    say_skipped(why);
}

/// Runs vlog-dump (the one cargo built for this test run).
pub fn run_vlog_dump(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vlog-dump"))
        .args(args)
        .output()
        .unwrap()
}

#[path = "journald.rs"]
mod journald;
#[allow(unused_imports)]
pub use journald::{journal_entries, Journald};
