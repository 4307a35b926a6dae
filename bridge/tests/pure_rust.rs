//! A Rust program with vlog's core built in (as `embedded` builds one):
//! `tracing` spans and events and `log` records, through the JSON and
//! journald outputs, each record as a C call with the same fields makes
//! it. Each case runs in a child process of this test binary (vlog starts
//! once per process, from its environment).

#[path = "../../tests/support/journald.rs"]
mod journald;

use std::ffi::{c_char, c_int};
use std::process::{Command, Output};

use tracing_subscriber::prelude::*;
use vlog as _;

/// The variable that makes this binary the child.
const CHILD: &str = "BRIDGE_TEST_CHILD";

/// Runs the child `case` with `env` (and only those `VLOG_*` variables):
/// its pid and what it did.
fn run_child(case: &str, env: &[(&str, &str)]) -> (u32, Output) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    for (key, _) in std::env::vars() {
        if key.starts_with("VLOG_") {
            cmd.env_remove(key);
        }
    }
    cmd.args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env(CHILD, case)
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().expect("run the child");
    let pid = child.id();
    (pid, child.wait_with_output().unwrap())
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[repr(C)]
struct Field {
    key: *const c_char,
    str: *const c_char,
    num: i64,
    is_num: c_int,
}

#[repr(C)]
struct Source {
    level: c_int,
    name: *const c_char,
    name_len: usize,
}

extern "C" {
    fn vlog_write_fields(
        src: *const Source,
        prio: c_int,
        file: *const c_char,
        line: c_int,
        func: *const c_char,
        msg: *const c_char,
        len: usize,
        full_len: usize,
        fields: *const Field,
        nfields: usize,
    ) -> c_int;
    fn vlog_flush() -> c_int;
    fn vlog_set_filters(filters: *const c_char) -> c_int;
    fn vlog_shutdown();
}

fn set_filters(filters: &std::ffi::CStr) {
    // SAFETY: a NUL-terminated string.
    assert_eq!(unsafe { vlog_set_filters(filters.as_ptr()) }, 0);
}

/// A value whose Debug logs (a field recorded into the span it is in).
struct Loud;

impl std::fmt::Debug for Loud {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        tracing::warn!(target: "app::loud", "logged from a field's Debug");
        f.write_str("loud")
    }
}

/// A layer beside vlog's that panics when a callsite's interest is asked
/// again while PANIC_NOW is set: its panic is the program's.
static PANIC_NOW: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

struct Panicky;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Panicky {
    fn register_callsite(
        &self,
        _: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        if PANIC_NOW.swap(false, std::sync::atomic::Ordering::SeqCst) {
            panic!("another layer's panic, while vlog's watcher rebuilds");
        }
        tracing::subscriber::Interest::sometimes()
    }
}

/// The cases after the common part, each its own child.
fn more(case: &str) {
    match case {
        // A filter replaced by another of the same level: the callsite
        // that was off is asked again.
        "refilter" => {
            let bar = |n: u32| tracing::debug!(target: "bar", n, "bar debug");
            set_filters(c"1:foo 3:*");
            bar(1);
            set_filters(c"1:bar 3:*");
            bar(2);
        }
        // A field recorded into the span it is in, its Debug logging.
        "record" => {
            let span = tracing::warn_span!("outer", x = tracing::field::Empty);
            let _in = span.enter();
            span.record("x", tracing::field::debug(Loud));
            tracing::warn!(target: "app::loud", "after the record");
        }
        // Forks while other threads name new targets: every child logs.
        "fork" => {
            let stop = std::sync::atomic::AtomicBool::new(false);
            std::thread::scope(|s| {
                for t in 0..2 {
                    let stop = &stop;
                    s.spawn(move || {
                        let mut i = 0u64;
                        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                            // Always a new one (the table's writes).
                            let target = format!("fork::t{t}::n{i}");
                            log::warn!(target: &target, "naming");
                            i += 1;
                        }
                    });
                }
                let mut failed = None;
                for round in 0..200 {
                    // SAFETY: the child only logs and leaves with _exit.
                    let pid = unsafe { libc::fork() };
                    assert!(pid >= 0);
                    if pid == 0 {
                        // SAFETY: alarm and _exit take no pointer.
                        unsafe { libc::alarm(5) };
                        log::warn!(target: "fork::child", round; "the child logs");
                        unsafe { libc::_exit(0) };
                    }
                    let mut status = 0;
                    // SAFETY: our own child.
                    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
                    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
                        failed = Some((round, status));
                        break;
                    }
                }
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
                // (Said once the threads stopped: the scope waits for them.)
                if let Some((round, status)) = failed {
                    println!("child {round}: status {status:#x} (SIGALRM: it hung)");
                    std::process::exit(1);
                }
            });
            println!("forks ok");
        }
        // vlog_shutdown with the layer in: vlog does not start again (its
        // output file stays closed) until a call is made.
        "shutdown" => {
            let path = std::env::var("OUT").unwrap();
            let open = || {
                std::fs::read_dir("/proc/self/fd")
                    .unwrap()
                    .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                    .any(|l| l == std::path::Path::new(&path))
            };
            // A callsite, which the rebuild vlog_shutdown makes asks again.
            tracing::warn!(target: "app::x", "before the shutdown");
            assert!(open(), "the output file is open while vlog runs");
            // SAFETY: takes no pointer.
            unsafe { vlog_shutdown() };
            assert!(!open(), "vlog started again after vlog_shutdown");
            println!("shutdown ok");
        }
        // A panic in another layer while vlog's watcher rebuilds tracing's
        // interest is said by the program's hook.
        "panic-in-watcher" => {
            tracing::info!(target: "x", "a callsite, for the rebuild to ask again");
            PANIC_NOW.store(true, std::sync::atomic::Ordering::SeqCst);
            set_filters(c"1:x");
        }
        _ => {}
    }
}

/// What a C call makes of the event the child's span and warning make: the
/// same message and fields (the event's, then the span's), from source
/// `c.side`.
fn c_call() {
    let text = |key: &'static std::ffi::CStr, value: &'static std::ffi::CStr| Field {
        key: key.as_ptr(),
        str: value.as_ptr(),
        num: 0,
        is_num: 0,
    };
    let num = |key: &'static std::ffi::CStr, value: i64| Field {
        key: key.as_ptr(),
        str: std::ptr::null(),
        num: value,
        is_num: 1,
    };
    let fields = [
        text(c"vm", c"guest1"),
        num(c"vcpus", 4),
        num(c"request_id", 7),
        text(c"path", c"/vm/1"),
    ];
    let source = Source {
        level: 0,
        name: c"c.side".as_ptr(),
        name_len: 6,
    };
    let msg = b"vm started";
    // SAFETY: valid strings and fields; the source outlives the call (it
    // is not registered: vlog_write_fields reads it only during the call).
    let kept = unsafe {
        vlog_write_fields(
            &source,
            3,
            c"c-side.c".as_ptr(),
            12,
            c"start_vm".as_ptr(),
            msg.as_ptr().cast(),
            msg.len(),
            msg.len(),
            fields.as_ptr(),
            fields.len(),
        )
    };
    assert_eq!(kept, 1);
}

/// The child: what each case records.
#[test]
fn child() {
    let Ok(case) = std::env::var(CHILD) else {
        return;
    };
    if case == "panic-in-watcher" {
        // Installed before vlog's own, which goes in front of it.
        let theirs = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            eprintln!("PROGRAM'S HOOK: {info}");
            theirs(info)
        }));
    }
    vlog_bridge::log::init().expect("the log backend");
    let vlog = tracing_subscriber::registry()
        .with(vlog_bridge::tracing::layer().expect("the tracing layer"));
    // (Only where it is needed: a layer that says "sometimes" has every
    // call asked, whatever vlog's layer said.)
    if case == "panic-in-watcher" {
        vlog.with(Panicky).init();
    } else {
        vlog.init();
    }
    if !matches!(case.as_str(), "json" | "journald" | "panic") {
        return more(&case);
    }
    let span = tracing::info_span!("request", request_id = 7, path = "/vm/1");
    {
        let _entered = span.enter();
        tracing::warn!(target: "app::disk", vm = "guest1", vcpus = 4, "vm started");
        let step = tracing::debug_span!("step", step = "boot", vm = "outer");
        let _inner = step.enter();
        tracing::error!(target: "app::disk", vm = "guest2", "inner event");
    }
    c_call();
    tracing::info!(target: "app::disk", "info outside any span");
    tracing::trace!(target: "app::disk", "trace as debug");
    tracing::debug!(target: "app::net", "filtered out");
    log::warn!(target: "app::log", attempt = 2, peer = "10.0.0.7"; "a log record");
    log::debug!(target: "app::log", "filtered out");
    // SAFETY: takes no pointer.
    assert_eq!(unsafe { vlog_flush() }, 0);
    if case == "panic" {
        panic!("the program's own panic, said by its own hook");
    }
}

/// Removes `"key":value,` (a string without escapes, or a number) from a
/// JSON line.
fn without(line: &str, keys: &[&str]) -> String {
    let mut line = line.to_owned();
    for key in keys {
        let start = format!("\"{key}\":");
        let Some(at) = line.find(&start) else {
            continue;
        };
        let rest = &line[at + start.len()..];
        let end = if let Some(s) = rest.strip_prefix('"') {
            s.find('"').unwrap() + 2
        } else {
            rest.find([',', '}']).unwrap()
        };
        let mut cut = at + start.len() + end;
        if line[cut..].starts_with(',') {
            cut += 1;
        }
        line.replace_range(at..cut, "");
    }
    line
}

/// Runs the child `case` with every record as JSON on stderr (and `env`),
/// requires its success, and returns that stderr.
fn json_child(case: &str, env: &[(&str, &str)]) -> String {
    let env: Vec<_> = [("VLOG_OUTPUTS", "1:json:stderr")]
        .into_iter()
        .chain(env.iter().copied())
        .collect();
    let (_, out) = run_child(case, &env);
    let all = text(&out.stderr);
    assert!(out.status.success(), "{}: {all}", out.status);
    all
}

fn source_lines<'a>(all: &'a str, source: &str) -> Vec<&'a str> {
    let key = format!("\"source\":\"{source}\"");
    all.lines().filter(|l| l.contains(&key)).collect()
}

#[test]
fn tracing_and_log_records_are_json_as_a_c_records() {
    let all = json_child("json", &[("VLOG_FILTERS", "1:app.disk")]);
    let disk = source_lines(&all, "app.disk");
    assert_eq!(disk.len(), 4, "{all}");
    // The event with its span's fields, as the C call with those fields.
    let c = source_lines(&all, "c.side");
    assert_eq!(c.len(), 1, "{all}");
    let varying = ["seq", "time", "time_ns", "source", "file", "line", "func"];
    assert_eq!(without(disk[0], &varying), without(c[0], &varying), "{all}");
    assert!(
        disk[0].contains("\"file\":\"bridge/tests/pure_rust.rs\"")
            && disk[0].contains("\"func\":\"pure_rust\"")
            && disk[0].contains(
                "\"fields\":{\"vm\":\"guest1\",\"vcpus\":4,\"request_id\":7,\"path\":\"/vm/1\"}"
            ),
        "{}",
        disk[0]
    );
    // Nested spans, innermost first; the event's own vm wins.
    assert!(
        disk[1].contains("\"priority\":\"error\"")
            && disk[1].contains(
                "\"fields\":{\"vm\":\"guest2\",\"step\":\"boot\",\"request_id\":7,\"path\":\"/vm/1\"}"
            ),
        "{}",
        disk[1]
    );
    // Out of the span: no span fields; trace is debug.
    assert!(
        disk[2].contains("\"priority\":\"info\"") && !disk[2].contains("\"fields\""),
        "{}",
        disk[2]
    );
    assert!(
        disk[3].contains("\"priority\":\"debug\"") && disk[3].contains("trace as debug"),
        "{}",
        disk[3]
    );
    assert!(source_lines(&all, "app.net").is_empty(), "{all}");
    let log = source_lines(&all, "app.log");
    assert_eq!(log.len(), 1, "{all}");
    assert!(
        log[0].contains("\"priority\":\"warning\"")
            && log[0].contains("\"fields\":{\"attempt\":2,\"peer\":\"10.0.0.7\"}"),
        "{}",
        log[0]
    );
}

#[test]
fn tracing_records_reach_journald_as_a_c_records() {
    let Some(_journald) = journald::Journald::start() else {
        // Past the harness's capture, as vlog's own tests say it.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED tracing_records_reach_journald_as_a_c_records: cannot start \
             systemd-journald (not root, or not installed)"
        );
        return;
    };
    let (pid, out) = run_child("journald", &[("VLOG_OUTPUTS", "1:journald")]);
    assert!(
        out.status.success(),
        "{}: {}",
        out.status,
        text(&out.stderr)
    );
    let entries = journald::journal_entries(&[&format!("_PID={pid}"), "MESSAGE=vm started"], 2);
    let lines: Vec<&str> = entries.lines().collect();
    assert_eq!(lines.len(), 2, "{entries}");
    // The fields journald stores for each, in journald's names.
    let fields = |entry: &str| -> Vec<String> {
        let mut names: Vec<String> = entry
            .trim_matches(['{', '}'])
            .split("\",\"")
            .filter_map(|kv| kv.trim_start_matches('"').split_once("\":"))
            .map(|(k, v)| format!("{k}={}", v.trim_matches('"')))
            .filter(|kv| {
                [
                    "VM=",
                    "VCPUS=",
                    "REQUEST_ID=",
                    "PATH=",
                    "PRIORITY=",
                    "MESSAGE=",
                ]
                .iter()
                .any(|p| kv.starts_with(p))
            })
            .collect();
        names.sort();
        names
    };
    let (rust, c): (Vec<&str>, Vec<&str>) = lines
        .iter()
        .partition(|l| l.contains("\"VLOG_SOURCE\":\"app.disk\""));
    assert_eq!((rust.len(), c.len()), (1, 1), "{entries}");
    assert_eq!(fields(rust[0]), fields(c[0]), "{entries}");
    assert_eq!(
        fields(rust[0]),
        [
            "MESSAGE=vm started",
            "PATH=/vm/1",
            "PRIORITY=4",
            "REQUEST_ID=7",
            "VCPUS=4",
            "VM=guest1"
        ],
        "{entries}"
    );
    assert!(
        rust[0].contains("\"CODE_FILE\":\"bridge/tests/pure_rust.rs\"")
            && rust[0].contains("\"CODE_FUNC\":\"pure_rust\""),
        "{}",
        rust[0]
    );
}

#[test]
fn the_programs_own_panics_keep_their_hook() {
    let (_, out) = run_child("panic", &[("VLOG_OUTPUTS", "4:stderr")]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("the program's own panic, said by its own hook"),
        "vlog's hook took the program's panic: {stderr}"
    );
}

#[test]
fn a_filter_replaced_by_one_of_the_same_level_is_followed() {
    let all = json_child("refilter", &[]);
    let bar = source_lines(&all, "bar");
    assert_eq!(bar.len(), 1, "{all}");
    assert!(bar[0].contains("\"fields\":{\"n\":2}"), "{all}");
}

#[test]
fn a_span_field_whose_debug_logs_records_no_deadlock() {
    let all = json_child("record", &[]);
    let loud = source_lines(&all, "app.loud");
    assert_eq!(loud.len(), 2, "{all}");
    assert!(loud[1].contains("\"x\":\"loud\""), "{all}");
}

#[test]
fn a_child_forked_while_targets_are_named_logs() {
    let (_, out) = run_child("fork", &[("VLOG_OUTPUTS", "4:stderr")]);
    assert!(
        out.status.success() && text(&out.stdout).contains("forks ok"),
        "{}: {}{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
}

#[test]
fn vlog_shutdown_with_the_layer_leaves_vlog_stopped() {
    let path =
        std::env::temp_dir().join(format!("vlog-bridge-shutdown-{}.log", std::process::id()));
    let spec = format!("1:file:{}", path.display());
    let out_path = path.to_str().unwrap();
    let (_, out) = run_child("shutdown", &[("OUT", out_path), ("VLOG_OUTPUTS", &spec)]);
    let _ = std::fs::remove_file(&path);
    assert!(
        out.status.success() && text(&out.stdout).contains("shutdown ok"),
        "{}: {}{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
}

#[test]
fn a_panic_while_the_watcher_rebuilds_is_the_programs() {
    let (_, out) = run_child("panic-in-watcher", &[("VLOG_OUTPUTS", "4:stderr")]);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("PROGRAM'S HOOK: ") && stderr.contains("another layer's panic"),
        "{}: {stderr}",
        out.status
    );
}
