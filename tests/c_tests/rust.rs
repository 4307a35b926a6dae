//! A C program with a Rust static library in it (c-tests/rust_bridge.c,
//! c-tests/rust/): the library's records, its own and mio's (a crate that
//! logs through `log`), go through vlog-bridge into the program's
//! libvlog.so: one ring, one set of filters, changed at run time through
//! the control socket, one crash dump.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common::*;
use crate::control::{open_dir, vlog_ctl};

/// c-tests/rust built as the static library a daemon's maintainers would
/// link (cargo, with its committed Cargo.lock), once per run.
fn probe_lib() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("rust-probe");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let out = Command::new(cargo)
            .args(["build", "--locked", "--manifest-path"])
            .arg(root().join("c-tests/rust/Cargo.toml"))
            .arg("--target-dir")
            .arg(&target)
            .output()
            .expect("run cargo");
        assert_ok("cargo build of c-tests/rust", &out);
        target.join("debug/libbridge_probe.a")
    })
}

fn program() -> PathBuf {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| build_linking("rust_bridge", Link::Shared, &[probe_lib()]))
        .clone()
}

/// The JSON lines a run printed (`VLOG_OUTPUTS=1:json:stderr`) whose
/// source is `source`.
fn from<'a>(lines: &'a str, source: &str) -> Vec<&'a str> {
    let key = format!("\"source\":\"{source}\"");
    lines.lines().filter(|l| l.contains(&key)).collect()
}

fn records(filters: &str) -> String {
    let out = run_with(
        &program(),
        &["records"],
        &[("VLOG_OUTPUTS", "1:json:stderr"), ("VLOG_FILTERS", filters)],
    );
    assert_ok(
        &format!("rust_bridge records, VLOG_FILTERS={filters:?}"),
        &out,
    );
    text(&out.stderr)
}

#[test]
fn rust_records_are_in_the_c_programs_ring_under_its_filters() {
    // vlog's default level (warn): the C records and the library's
    // warning, with its file, line, module and key-values; no debug.
    let all = records("");
    let c = from(&all, "test.c_side");
    assert_eq!(c.len(), 2, "{all}");
    let rust = from(&all, "probe.net");
    assert_eq!(rust.len(), 1, "{all}");
    for part in [
        "\"priority\":\"warning\"",
        "\"file\":\"src/lib.rs\"",
        "\"line\":",
        "\"func\":\"bridge_probe\"",
        "\"message\":\"round 1: datagram back\"",
        "\"fields\":{\"round\":1,\"bytes\":4,\"from\":\"127.0.0.1:",
    ] {
        assert!(rust[0].contains(part), "{part} in {}", rust[0]);
    }
    assert!(from(&all, "mio.poll").is_empty(), "{all}");
    // In the order they were made: C, Rust, C.
    let order: Vec<&str> = all
        .lines()
        .filter_map(|l| l.split("\"message\":\"").nth(1))
        .collect();
    assert_eq!(
        order.iter().map(|m| &m[..10]).collect::<Vec<_>>(),
        ["C before R", "round 1: d", "C after Ru"],
        "{all}"
    );

    // `1:mio`: mio's trace records, as debug, under the source mio.poll;
    // the library's own debug record is not wanted.
    let mio = records("1:mio");
    let poll = from(&mio, "mio.poll");
    assert_eq!(poll.len(), 1, "{mio}");
    assert!(
        poll[0].contains("\"priority\":\"debug\"")
            && poll[0].contains("registering event source with poller: token=Token(1)")
            && poll[0].contains("mio-1.")
            && poll[0].contains("\"func\":\"mio::poll\""),
        "{}",
        poll[0]
    );
    assert_eq!(from(&mio, "probe.net").len(), 1, "{mio}");

    // `1:probe`: the library's debug record too, and no mio.
    let probe = records("1:probe 4:mio");
    let net = from(&probe, "probe.net");
    assert_eq!(net.len(), 2, "{probe}");
    assert!(net[1].contains("round 1: detail"), "{probe}");
    assert!(from(&probe, "mio.poll").is_empty(), "{probe}");

    // `off:probe`: nothing of the library; the C records stay.
    let off = records("off:probe");
    assert!(from(&off, "probe.net").is_empty(), "{off}");
    assert_eq!(from(&off, "test.c_side").len(), 2, "{off}");
}

#[test]
fn vlog_ctl_filters_switch_rust_records_at_run_time() {
    let dir = open_dir("rust-serve");
    let socket = dir.join("ctl.sock");
    let errors = dir.join("stderr");
    let mut cmd = command(&program());
    without_vlog_env(&mut cmd);
    cmd.args(["serve", dir.to_str().unwrap()])
        .env("VLOG_CONTROL", &socket)
        .env("VLOG_OUTPUTS", "1:json:stderr")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&errors).unwrap());
    let mut child = spawn(&mut cmd);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !dir.join("ready").exists() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "rust_bridge serve ended: {status}: {}",
                std::fs::read_to_string(&errors).unwrap_or_default()
            );
        }
        assert!(Instant::now() < deadline, "rust_bridge serve did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut round = |n: u32| {
        writeln!(stdin, "{n}").unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        assert_eq!(line, format!("round {n}\n"), "round {n}");
    };
    let ctl = |filters: &str| {
        let out = vlog_ctl(&[socket.to_str().unwrap(), "filters", filters]);
        assert_ok(&format!("vlog-ctl filters {filters:?}"), &out);
    };
    round(2);
    ctl("1:mio");
    round(3);
    ctl("\"\"");
    round(4);
    drop(stdin); // the end of its input: it exits
    let status = child.wait().unwrap();
    let all = std::fs::read_to_string(&errors).unwrap();
    assert!(status.success(), "{status}: {all}");
    let poll = from(&all, "mio.poll");
    assert_eq!(poll.len(), 1, "only round 3's registration: {all}");
    assert!(poll[0].contains("token=Token(3)"), "{all}");
    assert_eq!(from(&all, "probe.net").len(), 4, "a warning a round: {all}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_crash_dumps_c_and_rust_records_in_order() {
    if signal_test_skipped() {
        return;
    }
    let out = run_with(
        &program(),
        &["crash"],
        &[("VLOG_FILTERS", "1:mio"), ("VLOG_OUTPUTS", "4:stderr")],
    );
    let stderr = text(&out.stderr);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(libc::SIGSEGV), "{stderr}");
    let dump = &stderr[stderr
        .find("vlog: fatal signal SIGSEGV (")
        .unwrap_or_else(|| panic!("no dump: {stderr}"))..];
    assert!(dump.contains("\nvlog: end of dump, 5 records\n"), "{dump}");
    let mut at = 0;
    for (source, message) in [
        ("test.c_side", "C before Rust"),
        (
            "mio.poll",
            "registering event source with poller: token=Token(1)",
        ),
        (
            "probe.net",
            "round 1: datagram back [round=1 bytes=4 from=127.0.0.1:",
        ),
        ("test.c_side", "C after Rust"),
        ("test.c_side", "C about to crash"),
    ] {
        let found = dump[at..]
            .lines()
            .position(|l| l.contains(&format!(" : {source} : ")) && l.contains(message))
            .unwrap_or_else(|| panic!("{message} from {source}, in order: {dump}"));
        at += dump[at..]
            .lines()
            .take(found + 1)
            .map(|l| l.len() + 1)
            .sum::<usize>();
    }
}

/// README's "Log from Rust in the same daemon": its library and daemon are
/// examples/parser and examples/rustd.c, word for word; its commands,
/// pasted in the source tree after `make`, print what it shows (the times
/// and pids aside).
#[test]
fn readmes_rust_example_prints_what_it_shows() {
    if skipped_under_tool("the example builds and runs its own program") {
        return;
    }
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let at = readme
        .find("### Log from Rust in the same daemon\n")
        .expect("README's Rust section");
    let section = &readme[at..];
    let section = &section[..section[4..].find("\n### ").map_or(section.len(), |e| e + 4)];
    let block = |lang: &str| -> String {
        let start = section
            .find(&format!("\n```{lang}\n"))
            .unwrap_or_else(|| panic!("a {lang} block in README's Rust section"))
            + lang.len()
            + 5;
        section[start..start + section[start..].find("```\n").unwrap()].to_owned()
    };
    for (lang, file) in [
        ("toml", "examples/parser/Cargo.toml"),
        ("rust", "examples/parser/src/lib.rs"),
        ("c", "examples/rustd.c"),
    ] {
        let text = std::fs::read_to_string(root().join(file)).unwrap();
        assert_eq!(block(lang), text, "README's {lang} block is not {file}");
    }
    let make = Command::new("make")
        .args(["-s", "lib"])
        .current_dir(root())
        .output()
        .unwrap();
    assert_ok("make lib", &make);
    let mut sh = Command::new("bash");
    without_vlog_env(&mut sh);
    let out = sh
        .args(["-euo", "pipefail", "-c", &block("sh")])
        .current_dir(root())
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .unwrap();
    assert_ok("README's Rust commands", &out);
    // What follows the time and the pid.
    let lines = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with("20"))
            .map(|l| l.splitn(3, ": ").nth(2).unwrap_or(l).to_owned())
            .collect()
    };
    assert_eq!(
        lines(&text(&out.stderr)),
        lines(&block("text")),
        "README's Rust example printed:\n{}",
        text(&out.stderr)
    );
}
