//! The fluent output against a receiver of the Forward protocol written
//! for the tests (`tests/fluent_receiver.py`, decoding with Debian's
//! python3-msgpack), itself checked first against a reference sender
//! (Debian's python3-fluent-logger) and against every mode of the spec
//! built by hand; then vlog's records field by field and type by type, over
//! TCP and a Unix socket, with and without acknowledgements, and receivers
//! that are late, that close the connection in the middle of a batch, that
//! never acknowledge and that read slowly.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Debian's python3, where python3-msgpack and python3-fluent-logger are.
const PYTHON: &str = "/usr/bin/python3";

/// False, after saying so, when the receiver's Python modules are missing
/// (`.ci/run` installs them).
fn have_python_modules() -> bool {
    let ok = Command::new(PYTHON)
        .args(["-c", "import msgpack, fluent.sender"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        needs_installed("no python3-msgpack or python3-fluent-logger (apt-get install python3-msgpack python3-fluent-logger)");
    }
    ok
}

pub(crate) struct Receiver {
    child: Child,
    out: PathBuf,
    /// `tcp://127.0.0.1:PORT` or `unix:/PATH`.
    pub(crate) url: String,
    port: u16,
}

impl Receiver {
    pub(crate) fn start(dir: &Path, unix: bool, port: u16, extra: &[&str]) -> Receiver {
        let out = dir.join("received.jsonl");
        let script = root().join("tests/fluent_receiver.py");
        let mut cmd = Command::new(PYTHON);
        cmd.arg(&script).arg("--out").arg(&out).args(extra);
        let ready;
        if unix {
            let sock = dir.join("fluent.sock");
            let _ = std::fs::remove_file(&sock);
            cmd.arg("--unix").arg(&sock);
            ready = PathBuf::from(format!("{}.ready", sock.display()));
        } else {
            ready = dir.join("port");
            let _ = std::fs::remove_file(&ready);
            cmd.arg("--tcp")
                .arg(&ready)
                .args(["--port", &port.to_string()]);
        }
        let child = cmd
            .stdin(Stdio::null())
            .spawn()
            .expect("start the receiver");
        let deadline = Instant::now() + Duration::from_secs(20);
        while !ready.exists() {
            assert!(Instant::now() < deadline, "the receiver never listened");
            std::thread::sleep(Duration::from_millis(10));
        }
        let (url, port) = if unix {
            (format!("unix:{}", dir.join("fluent.sock").display()), 0)
        } else {
            let port: u16 = std::fs::read_to_string(&ready).unwrap().parse().unwrap();
            (format!("tcp://127.0.0.1:{port}"), port)
        };
        Receiver {
            child,
            out,
            url,
            port,
        }
    }

    fn lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.out)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// The lines once `done` holds of them, or the test fails after 30 s.
    pub(crate) fn wait_for(&self, what: &str, done: impl Fn(&[String]) -> bool) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let lines = self.lines();
            if done(&lines) {
                return lines;
            }
            assert!(
                Instant::now() < deadline,
                "the receiver never got {what}:\n{}",
                lines.join("\n")
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn events(lines: &[String]) -> Vec<&String> {
    lines
        .iter()
        .filter(|l| l.contains("\"record\": "))
        .collect()
}

fn count(lines: &[String], needle: &str) -> usize {
    lines.iter().filter(|l| l.contains(needle)).count()
}

/// The one event holding `needle`, which must hold each of `parts`.
fn assert_event(lines: &[String], needle: &str, parts: &[&str]) {
    assert_events(lines, needle, parts, true);
}

/// The events holding `needle` (one, or at least one when a batch may
/// have been sent twice), each of which must hold each of `parts`.
fn assert_events(lines: &[String], needle: &str, parts: &[&str], exactly_once: bool) {
    let found: Vec<&String> = events(lines)
        .into_iter()
        .filter(|l| l.contains(needle))
        .collect();
    assert!(
        found.len() == 1 || (!exactly_once && !found.is_empty()),
        "events holding {needle:?}: {found:#?}"
    );
    for event in found {
        for part in parts {
            assert!(
                event.contains(part),
                "the event of {needle:?} lacks {part:?}:\n{event}"
            );
        }
    }
}

#[test]
fn the_test_receiver_decodes_a_reference_sender_and_every_mode() {
    if !have_python_modules() {
        return;
    }
    let dir = scratch_dir("fluent-reference");
    let rx = Receiver::start(&dir, false, 0, &[]);
    // python3-fluent-logger's sender (Message mode, EventTime), then the
    // other modes built with msgpack by hand, each with a chunk to
    // acknowledge.
    let script = format!(
        r#"
import gzip, socket, struct, time, msgpack
from fluent import sender
s = sender.FluentSender("ref", host="127.0.0.1", port={port}, nanosecond_precision=True)
assert s.emit("logger", {{"i": 5, "s": "text", "f": 1.5, "neg": -3}}), s.last_error
s.close()
et = msgpack.ExtType(0, struct.pack(">II", 1700000000, 123456789))
def pack(*events):
    return b"".join(msgpack.packb(e) for e in events)
msgs = [
    ["fwd", [[1700000001, {{"mode": "forward", "n": 1}}], [et, {{"mode": "forward", "n": 2}}]], {{"chunk": "c-fwd", "size": 2}}],
    ["packed", pack([et, {{"mode": "packed", "n": 1}}], [et, {{"mode": "packed", "n": 2}}]), {{"chunk": "c-packed"}}],
    ["gz", gzip.compress(pack([et, {{"mode": "gzip", "n": 1}}])), {{"compressed": "gzip", "chunk": "c-gz"}}],
    ["msg", et, {{"mode": "message"}}, {{"chunk": "c-msg"}}],
]
c = socket.create_connection(("127.0.0.1", {port}))
for m in msgs:
    c.sendall(msgpack.packb(m, use_bin_type=True))
unpacker = msgpack.Unpacker(raw=False)
acks = []
while len(acks) < 4:
    unpacker.feed(c.recv(4096))
    acks.extend(unpacker)
assert [a["ack"] for a in acks] == ["c-fwd", "c-packed", "c-gz", "c-msg"], acks
"#,
        port = rx.port
    );
    let out = Command::new(PYTHON)
        .arg("-c")
        .arg(&script)
        .output()
        .unwrap();
    assert_ok("the reference senders", &out);
    let lines = rx.wait_for("every event", |l| events(l).len() == 7);
    assert_event(
        &lines,
        "\"tag\": \"ref.logger\"",
        &[
            "\"mode\": \"Message\"",
            "\"event_time\": true",
            "\"i\": 5",
            "\"s\": \"text\"",
            "\"f\": 1.5",
            "\"neg\": -3",
            "\"types\": {\"i\": \"int\", \"s\": \"str\", \"f\": \"float\", \"neg\": \"int\"}",
        ],
    );
    assert_event(
        &lines,
        "\"n\": 1}, \"chunk\": \"c-fwd\"",
        &[
            "\"mode\": \"Forward\"",
            "\"time\": 1700000001",
            "\"event_time\": false",
        ],
    );
    assert_event(
        &lines,
        "\"n\": 2}, \"chunk\": \"c-fwd\"",
        &["\"time\": [1700000000, 123456789]"],
    );
    assert_eq!(count(&lines, "\"mode\": \"PackedForward\""), 2);
    assert_event(
        &lines,
        "\"mode\": \"gzip\"",
        &["\"mode\": \"CompressedPackedForward\""],
    );
    assert_event(
        &lines,
        "\"mode\": \"message\"",
        &["\"tag\": \"msg\"", "\"event_time\": true"],
    );
    for chunk in ["c-fwd", "c-packed", "c-gz", "c-msg"] {
        assert_eq!(
            count(&lines, &format!("{{\"acked\": \"{chunk}\"}}")),
            1,
            "{chunk}"
        );
    }
    assert_eq!(receiver_errors(&lines), 0, "{lines:#?}");
}

fn fluent_exe() -> PathBuf {
    build("fluent", Link::Static)
}

/// The checked records, over `rx` with output `options`.
fn records_reach(rx: &Receiver, options: &str) -> Vec<String> {
    let outputs = format!("1:fluent:app.test@{}{options} 4:stderr", rx.url);
    let out = run_within(60, &fluent_exe(), &["records", &outputs], &[]);
    assert_ok("fluent records", &out);
    // Everything was sent at vlog_flush and at exit, and nothing was said
    // about events not sent.
    assert!(
        !text(&out.stderr).contains("not sent"),
        "{}",
        text(&out.stderr)
    );
    rx.wait_for("every event", |l| events(l).len() >= 3004)
}

fn check_records(lines: &[String], exactly_once: bool) {
    assert_events(
        lines,
        "\"message\": \"plain message 42\"",
        &[
            "\"mode\": \"PackedForward\"",
            "\"tag\": \"app.test\"",
            "\"event_time\": true",
            "\"priority\": \"info\"",
            "\"severity\": 6",
            "\"source\": \"test.fluent\"",
            "\"func\": \"records\"",
            "\"ident\": \"fluent\"",
            "\"line\": \"int\"",
            "\"pid\": \"int\"",
            "\"tid\": \"int\"",
            "\"seq\": \"int\"",
        ],
        exactly_once,
    );
    assert_events(
        lines,
        "\"message\": \"with fields\"",
        &[
            "\"priority\": \"warning\"",
            "\"severity\": 4",
            "\"USER\": \"alice\"",
            "\"BYTES\": -12345678901",
            "\"SMALL\": 7",
            "\"USER\": \"str\"",
            "\"BYTES\": \"int\"",
            "\"SMALL\": \"int\"",
        ],
        exactly_once,
    );
    assert_events(
        lines,
        "not UTF-8: ",
        &["\"not UTF-8: \u{FFFD}\u{FFFD}!\"", "\"severity\": 3"],
        exactly_once,
    );
    assert_events(
        lines,
        &format!("\"message\": \"{}\"", "x".repeat(8191)),
        &[],
        exactly_once,
    );
    assert_eq!(count(lines, "filtered out"), 0);
    // Each message's count, read once.
    let mut seen = std::collections::HashMap::new();
    for event in events(lines) {
        let at = event.find("\"message\": \"").expect("a message") + 12;
        let end = at + event[at..].find("\", \"priority\"").expect("its end");
        *seen.entry(&event[at..end]).or_insert(0) += 1;
    }
    for i in 0..3000 {
        let n = seen.get(format!("bulk {i}").as_str()).copied().unwrap_or(0);
        assert!(n >= 1, "bulk {i} never arrived");
        assert!(!exactly_once || n == 1, "bulk {i} arrived {n} times");
    }
    assert_eq!(receiver_errors(lines), 0);
}

/// Lines where the receiver said it could not decode a message.
fn receiver_errors(lines: &[String]) -> usize {
    lines
        .iter()
        .filter(|l| l.starts_with("{\"error\": "))
        .count()
}

#[test]
fn fluent_sends_every_record_with_its_fields_and_types() {
    if !have_python_modules() {
        return;
    }
    let dir = scratch_dir("fluent-records");
    let rx = Receiver::start(&dir, false, 0, &[]);
    let lines = records_reach(&rx, "?size=4K");
    check_records(&lines, true);
    // One connection; no chunk without ?ack.
    assert_eq!(count(&lines, "\"connected\""), 1);
    assert_eq!(count(&lines, "\"chunk\": null"), events(&lines).len());
}

#[test]
fn fluent_batches_are_acknowledged_over_a_unix_socket() {
    if !have_python_modules() {
        return;
    }
    let dir = scratch_dir("fluent-unix");
    let rx = Receiver::start(&dir, true, 0, &[]);
    let lines = records_reach(&rx, "?ack&size=4K");
    check_records(&lines, true);
    let acked = count(&lines, "\"acked\"");
    assert!(acked >= 10, "{acked} batches");
}

#[test]
fn fluent_waits_for_a_receiver_that_comes_later() {
    if !have_python_modules() {
        return;
    }
    let dir = scratch_dir("fluent-later");
    let port = free_port();
    let outputs = format!("1:fluent:late@tcp://127.0.0.1:{port}?ack 4:stderr");
    let exe = fluent_exe();
    let mut cmd = command(&exe);
    cmd.args(["later", &outputs])
        .current_dir(work())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    without_vlog_env(&mut cmd);
    let program = cmd.spawn().unwrap();
    std::thread::sleep(Duration::from_millis(800));
    let rx = Receiver::start(&dir, false, port, &[]);
    let out = program.wait_with_output().unwrap();
    assert_ok("fluent later", &out);
    let lines = rx.wait_for("all 20 events", |l| events(l).len() >= 20);
    for i in 0..10 {
        assert_eq!(count(&lines, &format!("before the receiver {i}\"")), 1);
        assert_eq!(count(&lines, &format!("after the receiver {i}\"")), 1);
    }
}

#[test]
fn fluent_sends_again_what_a_broken_connection_did_not_acknowledge() {
    if !have_python_modules() {
        return;
    }
    let dir = scratch_dir("fluent-broken");
    // The first connection is closed after 20,000 bytes: in the middle of
    // a batch, with earlier batches acknowledged or not.
    let rx = Receiver::start(&dir, false, 0, &["--close-after", "20000"]);
    let lines = records_reach(&rx, "?ack&size=4K");
    check_records(&lines, false);
    assert!(count(&lines, "\"connected\"") >= 2, "{}", lines.join("\n"));
    assert_eq!(count(&lines, "\"closed\": 1"), 1);
}

#[test]
fn fluent_never_waits_for_a_receiver_that_never_acknowledges() {
    if !have_python_modules() {
        return;
    }
    let dir = scratch_dir("fluent-never-ack");
    let rx = Receiver::start(&dir, false, 0, &["--never-ack"]);
    let outputs = format!("1:fluent:t@{}?ack&size=4K&queue=128K 4:stderr", rx.url);
    // A ring smaller than the flood (3 MB of lines), so that the calls go
    // on while the queue overflows, as in a daemon that logs for longer.
    let out = run_within(
        60,
        &fluent_exe(),
        &["flood", &outputs, "20000"],
        &[("VLOG_BUFFER_SIZE", "64K")],
    );
    assert_ok("fluent flood", &out);
    let stdout = text(&out.stdout);
    let lost: u64 = stdout
        .trim()
        .strip_prefix("lost ")
        .unwrap()
        .parse()
        .unwrap();
    assert!(lost > 10_000, "{stdout}");
    let err = text(&out.stderr);
    assert_eq!(err.matches("is full").count(), 1, "{err}");
}

#[test]
fn fluent_keeps_up_with_a_slow_receiver() {
    if !have_python_modules() {
        return;
    }
    let dir = scratch_dir("fluent-slow");
    let rx = Receiver::start(&dir, false, 0, &["--slow", "2"]);
    let lines = records_reach(&rx, "?size=16K");
    check_records(&lines, true);
}

#[test]
fn a_refused_fluent_output_connects_to_nothing() {
    if !have_python_modules() {
        return;
    }
    let dir = scratch_dir("fluent-refused");
    let rx = Receiver::start(&dir, false, 0, &[]);
    let outputs = format!("1:fluent:t@{}", rx.url);
    let out = run_within(60, &fluent_exe(), &["refused", &outputs], &[]);
    assert_ok("fluent refused", &out);
    std::thread::sleep(Duration::from_millis(300));
    assert!(rx.lines().is_empty(), "{:?}", rx.lines());
}

#[test]
fn a_relayed_childs_hclog_line_reaches_fluent_with_its_fields_and_types() {
    if !have_python_modules() {
        return;
    }
    let dir = scratch_dir("fluent-relay");
    let rx = Receiver::start(&dir, false, 0, &[]);
    let outputs = format!("1:fluent:relayed@{}?ack", rx.url);
    let line = r#"{"@level":"warn","@timestamp":"2006-01-02T15:04:05.000000Z","@message":"from the child","@module":"db","user":"bob","n":42,"big":-9000000000,"ratio":0.5,"list":[1,2],"obj":{"a":"b"},"ok":true}"#;
    let out = Command::new(env!("CARGO_BIN_EXE_vlog-relay"))
        .args([
            "-s",
            "kid",
            "--",
            "/bin/sh",
            "-c",
            &format!("echo '{line}' >&2"),
        ])
        .env("VLOG_OUTPUTS", &outputs)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_ok("vlog-relay to fluent", &out);
    let lines = rx.wait_for("the child's line", |l| {
        l.iter().any(|e| e.contains("from the child"))
    });
    assert_event(
        &lines,
        "\"message\": \"from the child\"",
        &[
            "\"source\": \"kid.stderr\"",
            "\"priority\": \"warning\"",
            "\"CHILD_LEVEL\": \"warn\"",
            "\"CHILD_TIME\": \"2006-01-02T15:04:05.000000Z\"",
            "\"CHILD_MODULE\": \"db\"",
            "\"USER\": \"bob\"",
            "\"N\": 42",
            "\"BIG\": -9000000000",
            "\"RATIO\": \"0.5\"",
            "\"LIST\": \"[1,2]\"",
            "\"OBJ\": \"{\\\"a\\\":\\\"b\\\"}\"",
            "\"OK\": \"true\"",
            "\"N\": \"int\"",
            "\"BIG\": \"int\"",
            "\"USER\": \"str\"",
        ],
    );
}

#[test]
fn a_forked_child_sends_its_own_events_never_its_parents() {
    if !have_python_modules()
        || tool() == Tool::Valgrind
            && skipped_under_tool(
                "a forked child's heap holds what its parent's threads own (std's \
                 thread records of vlog's ticker), which memcheck counts as the child's \
                 leaks",
            )
    {
        return;
    }
    let dir = scratch_dir("fluent-fork");
    let rx = Receiver::start(&dir, false, 0, &[]);
    // A batch a minute old at most: "parent before" is still in it at the
    // fork, in the child's copy of the queue too.
    let outputs = format!("1:fluent:f@{}?age=60000 4:stderr", rx.url);
    let out = run_within(60, &fluent_exe(), &["fork", &outputs], &[]);
    assert_ok("fluent fork", &out);
    let lines = rx.wait_for("three events", |l| events(l).len() >= 3);
    std::thread::sleep(Duration::from_millis(300));
    let lines = if rx.lines().len() > lines.len() {
        rx.lines()
    } else {
        lines
    };
    assert_eq!(
        count(&lines, "\"message\": \"parent before\""),
        1,
        "{lines:#?}"
    );
    assert_eq!(count(&lines, "\"message\": \"parent after\""), 1);
    assert_eq!(count(&lines, "\"message\": \"child "), 1);
    assert_eq!(count(&lines, "\"connected\""), 2);
}

#[test]
fn a_program_that_closes_the_socket_gets_nothing_of_vlogs_in_its_file() {
    if !have_python_modules() {
        return;
    }
    let dir = scratch_dir("fluent-closefds");
    let rx = Receiver::start(&dir, false, 0, &[]);
    let outputs = format!("1:fluent:c@{} 4:stderr", rx.url);
    let file = dir.join("program-file");
    let out = run_within(
        60,
        &fluent_exe(),
        &["closefds", &outputs, file.to_str().unwrap()],
        &[],
    );
    assert_ok("fluent closefds", &out);
    let lines = rx.wait_for("both events", |l| events(l).len() >= 2);
    assert_eq!(count(&lines, "\"message\": \"before\""), 1);
    assert_eq!(count(&lines, "\"message\": \"after\""), 1);
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 0);
    assert!(
        text(&out.stderr).contains("was closed by the program"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_flush_waiting_for_a_receiver_never_makes_a_logging_thread_wait() {
    if !have_python_modules() {
        return;
    }
    let dir = scratch_dir("fluent-flushing");
    let rx = Receiver::start(&dir, false, 0, &["--never-ack"]);
    let outputs = format!("1:fluent:t@{}?ack 4:stderr", rx.url);
    let out = run_within(60, &fluent_exe(), &["flushing", &outputs], &[]);
    assert_ok("fluent flushing", &out);
    // The flush (and the one at exit) gave up on what was never
    // acknowledged, and said so.
    assert!(
        text(&out.stderr).contains("not sent"),
        "{}",
        text(&out.stderr)
    );
}

/// A batch goes out by its age on CLOCK_MONOTONIC: the wall clock stepped
/// back an hour between two events (inside the program, by its own
/// clock_gettime) holds neither back, and the events keep their wall times.
#[test]
fn a_wall_clock_stepped_back_holds_no_batch_back() {
    use std::io::{BufRead, BufReader, Write};
    if !have_python_modules() {
        return;
    }
    let dir = scratch_dir("fluent-clock");
    let rx = Receiver::start(&dir, false, 0, &[]);
    let outputs = format!("1:fluent:t@{}?age=200", rx.url);
    let exe = fluent_exe();
    let mut cmd = command(&exe);
    cmd.args(["clockback", &outputs])
        .current_dir(work())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    without_vlog_env(&mut cmd);
    let mut child = cmd.spawn().expect("start fluent clockback");
    let mut said = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut said)
        .unwrap();
    assert_eq!(said, "logged\n");
    let lines = rx.wait_for("both events, by their age alone", |l| {
        count(l, "after the step") == 1 && count(l, "before the step") == 1
    });
    let _ = child.stdin.take().unwrap().write_all(b"done\n");
    let status = child.wait().unwrap();
    assert!(status.success(), "fluent clockback: {status}");
    // The second event's wall time is an hour before the first's.
    let time_of = |needle: &str| -> f64 {
        let event = events(&lines)
            .into_iter()
            .find(|l| l.contains(needle))
            .unwrap();
        let at = event.find("\"time\": [").expect("a time") + 9;
        event[at..]
            .split(',')
            .next()
            .unwrap()
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("the time in {event}: {e}"))
    };
    let step = time_of("before the step") - time_of("after the step");
    assert!(
        (3599.0..3601.0).contains(&step),
        "step {step}:\n{}",
        lines.join("\n")
    );
}

/// A receiver slower than the program keeps the queue at the edge of full:
/// that is one episode, reported once when it begins and once when the
/// queue has drained below half, at most one pair per 10 s; never a flap
/// of `is full` / `works again` pairs for each event that fits. The
/// receiver reads nothing until the program has seen its queue overflow,
/// so the episode begins however slowly the program runs.
#[test]
fn a_slow_receiver_is_reported_once_per_episode() {
    if !have_python_modules() {
        return;
    }
    let dir = scratch_dir("fluent-flap");
    let go = dir.join("go");
    let _ = std::fs::remove_file(&go);
    let go = go.to_str().unwrap().to_owned();
    let rx = Receiver::start(&dir, false, 0, &["--slow", "1", "--wait-for", &go]);
    let outputs = format!("1:fluent:t@{}?size=4K&queue=128K 4:stderr", rx.url);
    let started = Instant::now();
    // A small ring: its callers hand their lines to the output as the
    // ring fills, so the queue's overflow is counted while the program
    // floods (with the default 8M most lines would still wait in the
    // ring for a writer thread that a slow machine or valgrind holds
    // back).
    let out = run_within(
        300,
        &fluent_exe(),
        &["flood", &outputs, "100000", &go],
        &[("VLOG_BUFFER_SIZE", "64K")],
    );
    let seconds = started.elapsed().as_secs();
    assert_ok("fluent flood", &out);
    let stdout = text(&out.stdout);
    let err = text(&out.stderr);
    let lost: u64 = stdout
        .trim()
        .strip_prefix("lost ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count of lost lines: {stdout}\n{err}"));
    assert!(lost > 0, "nothing counted lost:\n{err}");
    let full = err.matches("is full").count();
    let again = err.matches("works again").count();
    let most = 1 + seconds as usize / 10;
    assert!(
        (1..=most).contains(&full) && again <= full,
        "{full} reports of a full queue and {again} of recovery in {seconds} s \
         (at most {most} pairs):\n{err}"
    );
}

/// `VLOG_WRITER=caller` means no thread of vlog's, whatever the outputs:
/// with a fluent output the program stays single-threaded (so
/// `unshare(CLONE_NEWUSER)` works), its events reach the receiver through
/// the calls and the exit handler, and every way to a thread (a collector
/// named by a host name, the control socket's thread, a relay's reading
/// thread) is refused with a message that says why.
#[test]
fn the_caller_writer_starts_no_thread_with_a_fluent_output() {
    if !have_python_modules() {
        return;
    }
    let dir = scratch_dir("fluent-alone");
    let rx = Receiver::start(&dir, false, 0, &[]);
    let outputs = format!("1:fluent:t@{} 4:stderr", rx.url);
    let out = run_within(
        60,
        &fluent_exe(),
        &["alone", &outputs],
        &[("VLOG_WRITER", "caller")],
    );
    assert_ok("fluent alone", &out);
    let stdout = text(&out.stdout);
    if let Some(why) = stdout
        .lines()
        .find_map(|l| l.strip_prefix("unshare refused: "))
    {
        say_skipped(&format!(
            "unshare(CLONE_NEWUSER) refused here ({why}); the thread count was checked instead"
        ));
    } else {
        assert!(stdout.contains("unshared"), "{stdout}");
    }
    rx.wait_for("both events, sent without a thread", |l| {
        count(l, "alone before") == 1 && count(l, "alone after") == 1
    });
    // From the environment, only the output that needs a thread is left
    // out, said once; the others are in force.
    let log = dir.join("env.log");
    let outputs = format!("1:fluent:t@tcp://localhost:24224 2:file:{}", log.display());
    let (_, err) =
        crate::environment::environment(&[("VLOG_WRITER", "caller"), ("VLOG_OUTPUTS", &outputs)]);
    assert_eq!(
        err.matches("ignoring the output").count(),
        1,
        "the host-named output: {err}"
    );
    let written = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        written.contains("qemu"),
        "the file output: {written:?}\n{err}"
    );
}

/// What a program that logged once and exits waits in its exit handler,
/// as it says: (times, at most ms).
fn exit_waits(outputs: &str) -> (u64, u64) {
    let out = run_within(60, &fluent_exe(), &["exit", outputs], &[]);
    assert_ok("fluent exit", &out);
    let stdout = text(&out.stdout);
    let said = stdout
        .lines()
        .find_map(|l| l.strip_prefix("exit waited "))
        .unwrap_or_else(|| panic!("nothing said of the exit's waits: {stdout}"));
    let numbers: Vec<u64> = said
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    assert_eq!(numbers.len(), 2, "{stdout}");
    (numbers[0], numbers[1])
}

/// At exit, nothing is waited for where nothing can move: no receiver
/// (connection refused), over TCP and a Unix socket. A receiver that never
/// acknowledges holds the exit at most for the documented idle bound, as
/// no byte moves meanwhile. Each counted from the
/// program's own poll, so no clock is read by the test.
#[test]
fn exit_waits_only_while_bytes_move() {
    if !have_python_modules() {
        return;
    }
    let port = free_port();
    let dir = scratch_dir("fluent-exit");
    let nowhere = dir.join("nobody.sock");
    for outputs in [
        format!("1:fluent:t@tcp://127.0.0.1:{port}"),
        format!("1:fluent:t@tcp://127.0.0.1:{port}?ack"),
        format!("1:fluent:t@unix:{}", nowhere.display()),
    ] {
        let (times, _) = exit_waits(&outputs);
        assert_eq!(times, 0, "{outputs}: waited {times} times at exit");
    }
    // A receiver whose name is still being looked up (150 ms) as the
    // program exits is waited for: it can move. Not under valgrind, where
    // the lookup itself takes longer than the 200 ms an exit waits.
    if tool() == Tool::Valgrind {
        say_skipped(
            "under valgrind: an exit waiting for a name looked up in 150 ms (the lookup takes longer there)",
        );
    } else {
        let rx = Receiver::start(&dir, false, 0, &[]);
        let outputs = format!("1:fluent:t@tcp://localhost:{}", rx.port);
        let out = run_within(60, &fluent_exe(), &["exit", &outputs], &[("SLOW_DNS", "1")]);
        assert_ok("fluent exit, name looked up", &out);
        rx.wait_for("the event sent once the name was known", |l| {
            count(l, "at exit") >= 1
        });
    }
    let rx = Receiver::start(&dir, false, 0, &["--never-ack"]);
    let outputs = format!("1:fluent:t@{}?ack", rx.url);
    // vlog(7): at exit, at most 200 ms in which nothing moved (each wait
    // rounded up to a whole ms).
    let (times, ms) = exit_waits(&outputs);
    assert!(
        ms <= 200 + times,
        "{outputs}: waited {times} times, up to {ms} ms in all, at exit"
    );
    rx.wait_for("the event", |l| count(l, "at exit") >= 1);
}
