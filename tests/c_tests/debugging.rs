//! Debugging powers: bytes kept as bytes (`VLOG_HEXDUMP`), shown as
//! `hexdump -C` shows them and as hex that decodes back to them.

use crate::common::*;
use std::path::Path;
use std::process::Command;

/// What `hexdump -C` makes of the bytes in `file`.
fn hexdump_c(file: &Path) -> String {
    let out = Command::new("hexdump")
        .arg("-C")
        .arg(file)
        .output()
        .expect("run hexdump (bsdextrautils or util-linux)");
    assert!(
        out.status.success(),
        "hexdump -C {file:?}: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// The lines after the record line that ends in `message` (and its fields),
/// up to the next record line: the record's hex dump.
fn dump_after(log: &str, message: &str) -> String {
    let mut lines = log.split_inclusive('\n');
    let head = lines
        .by_ref()
        .find(|l| l.contains(&format!(" : {message}")))
        .unwrap_or_else(|| panic!("no record \"{message}\" in:\n{log}"));
    assert!(head.starts_with("20"), "{head}");
    lines.take_while(|l| !l.starts_with("20")).collect()
}

#[test]
fn a_hexdump_is_hexdump_c_in_text_and_hex_in_json() {
    let dir = scratch_dir("hexdump-files");
    let exe = build("hexdump", Link::Static);
    let out = run_with(&exe, &[dir.to_str().unwrap()], &[]);
    assert_ok("hexdump", &out);
    for file in ["text.log", "dump.txt"] {
        let log = std::fs::read_to_string(dir.join(file)).unwrap();
        for (message, bytes) in [
            ("dump 0", "bytes.0"),
            ("dump 1", "bytes.1"),
            ("dump 15", "bytes.15"),
            ("dump 16", "bytes.16"),
            ("dump 17", "bytes.17"),
            ("dump 4096", "bytes.4096"),
            ("dump 5000 [VLOG_HEXDUMP_OMITTED=904]", "bytes.5000"),
            ("dump zeros", "bytes.zeros"),
            ("fn", "bytes.fn"),
        ] {
            let got = dump_after(&log, message);
            let want = hexdump_c(&dir.join(bytes));
            assert!(
                got == want,
                "{file}, \"{message}\": the record's dump\n{got}\nis not hexdump -C's\n{want}"
            );
        }
        let guarded = dump_after(&log, "guarded [VLOG_HEXDUMP_OMITTED=1073737728]");
        assert!(guarded.ends_with("*\n00001000\n"), "{guarded}");
    }
    let check = r#"
import json, sys, os
d = sys.argv[1]
objs = [json.loads(l) for l in open(os.path.join(d, "out.json"), encoding="utf-8")]
seen = 0
for o in objs:
    m = o["message"]
    if not (m.startswith("dump ") or m == "fn"):
        continue
    f = o["fields"]
    name = "bytes." + (m[5:] if m != "fn" else "fn")
    want = open(os.path.join(d, name), "rb").read()
    assert bytes.fromhex(f["VLOG_HEXDUMP"]) == want, (m, f["VLOG_HEXDUMP"][:80])
    assert f["VLOG_HEXDUMP"] == f["VLOG_HEXDUMP"].lower(), m
    omitted = f.get("VLOG_HEXDUMP_OMITTED")
    assert omitted == (904 if m == "dump 5000" else None), (m, f)
    seen += 1
assert seen == 9, seen
print("ok")
"#;
    python_script("hexdump JSON (python3)", check, &[dir.as_os_str()]);
}

/// The records of a crash dump, oldest first: the lines between its ring
/// header and its end line.
fn dump_records(dump: &str) -> Vec<&str> {
    dump.lines()
        .skip_while(|l| !l.starts_with("vlog: ring, oldest first"))
        .filter(|l| l.starts_with("20"))
        .collect()
}

#[test]
fn a_check_that_holds_costs_nothing_and_dcheck_goes_with_ndebug() {
    for exe in [
        build("checks", Link::Static),
        build_as(
            "checks",
            Link::Static,
            "_ndebug",
            &root().join("include"),
            &["-DNDEBUG"],
        ),
    ] {
        let out = run_with(&exe, &["holds"], &[]);
        assert_ok(&format!("{exe:?} holds"), &out);
        assert_eq!(text(&out.stdout), "held\n");
    }
}

#[test]
fn a_failed_check_is_the_dumps_last_record_and_the_process_aborts() {
    use std::os::unix::process::ExitStatusExt;
    let exe = build("checks", Link::Static);
    // The outputs print every record (the ring full of lines they have not
    // written: the check is made over them, not after them), or errors
    // alone (the threads record as fast as they can).
    for (mode, message, level) in [
        (
            "fails",
            "check failed: monitor >= 0 && argc % 2 == 0: no monitor for guest1 (50%)",
            1,
        ),
        ("fatal", "fatal: giving up on guest1", 1),
        (
            "fails",
            "check failed: monitor >= 0 && argc % 2 == 0: no monitor for guest1 (50%)",
            4,
        ),
        ("fatal", "fatal: giving up on guest1", 4),
    ] {
        let mode_at = format!("{mode} (outputs at {level})");
        let mode = mode_at.split(' ').next().unwrap();
        let dir = scratch_dir(&format!("checks-{mode}-{level}"));
        let dump = dir.join("crash");
        let log = dir.join("out.log");
        let outputs = format!(
            "{level}:file:{} 4:json:{}",
            log.display(),
            dir.join("out.json").display()
        );
        // Nothing a failed check does waits for long.
        let out = run_within(
            120,
            &exe,
            &[mode],
            &[
                ("VLOG_DUMP", &format!("file:{}", dump.display())),
                ("VLOG_OUTPUTS", &outputs),
                // The check's own site is off: it is recorded all the same.
                ("VLOG_FILTERS", "off:func=main 1:test.checks"),
            ],
        );
        let stderr = text(&out.stderr);
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGABRT),
            "{mode_at}: {:?}: {stderr}",
            out.status
        );
        let dump = std::fs::read_to_string(&dump)
            .unwrap_or_else(|e| panic!("{mode_at}: dump: {e}; {stderr}"));
        assert!(
            dump.starts_with("vlog: fatal signal SIGABRT"),
            "{mode_at}: {dump}"
        );
        let records = dump_records(&dump);
        let last = records
            .last()
            .unwrap_or_else(|| panic!("{mode_at}: no records:\n{dump}"));
        assert!(
            last.ends_with(&format!(
                ": error : test.checks : main:{} : {message}",
                line_of(mode)
            )),
            "{mode_at}: the dump's last record is\n{last}\nof\n{}",
            records[records.len().saturating_sub(5)..].join("\n")
        );
        assert!(records.len() > 100, "{mode_at}: {} records", records.len());
        // In the outputs once, before the abort or by the crash handler.
        let log = std::fs::read_to_string(&log).unwrap();
        let lines: Vec<&str> = log.lines().filter(|l| l.contains(message)).collect();
        assert_eq!(
            lines.len(),
            1,
            "{mode_at}: {:?}",
            &log[log.len().saturating_sub(2000)..]
        );
        // Its last line, then its backtrace's: no thread recorded after
        // the check.
        let mut tail = log.lines().rev().take_while(|l| !l.contains(message));
        let frames = tail.by_ref().filter(|l| l.starts_with("  #")).count();
        assert!(
            frames >= 2 && tail.next().is_none(),
            "{mode_at}: the file ends\n{}",
            &log[log.len().saturating_sub(2000)..]
        );
        let json = std::fs::read_to_string(dir.join("out.json")).unwrap();
        let line = json
            .lines()
            .find(|l| l.contains(&format!("\"message\":\"{message}\"")))
            .unwrap_or_else(|| panic!("{mode_at}: {json}"));
        assert!(
            line.contains("\"VLOG_BACKTRACE\":\"#0 0x") && line.contains("/checks"),
            "{mode_at}: {line}"
        );
    }
}

/// A failed check never waits for an output: stderr on a pipe nobody
/// reads (vlog's writer thread stuck on it, holding the outputs' lock)
/// does not keep the process alive; it ends by SIGABRT, and the ring file
/// read back ends with the check. (The crash handler's own write of the
/// lines stderr had not written is stuck too: its watchdog ends it.)
#[test]
fn a_failed_check_never_waits_for_a_stuck_output() {
    use std::os::unix::process::ExitStatusExt;
    if tool() == Tool::Valgrind {
        // Valgrind writes its report of the SIGABRT to that stderr too, and
        // waits for it for good.
        say_skipped("under valgrind: its own report would wait on the stuck stderr");
        return;
    }
    let exe = build("checks", Link::Static);
    let dir = scratch_dir("checks-stuck");
    let ring = dir.join("ring");
    let dump = dir.join("crash");
    let _ = std::fs::remove_file(&ring);
    // run_within reads neither pipe before the end: stderr fills.
    let out = run_within(
        120,
        &exe,
        &["fails"],
        &[
            ("VLOG_BUFFER_FILE", ring.to_str().unwrap()),
            ("VLOG_DUMP", &format!("file:{}", dump.display())),
            ("VLOG_OUTPUTS", "1:stderr"),
            ("VLOG_FILTERS", "1:test.checks"),
        ],
    );
    assert_eq!(out.status.signal(), Some(libc::SIGABRT), "{:?}", out.status);
    // The stuck stderr is passed over at the crash: the dump after it is
    // written whole, with the lines stderr did not take.
    let dump = std::fs::read_to_string(&dump).unwrap_or_default();
    let lines: Vec<&str> = dump.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("vlog: an output took nothing for 1 s"))
            && lines
                .last()
                .is_some_and(|l| l.starts_with("vlog: end of dump"))
            && lines
                .iter()
                .rev()
                .skip(1)
                .find(|l| !l.starts_with("  #"))
                .is_some_and(|l| l.contains(" : check failed: monitor >= 0")),
        "the crash dump:\n{dump}"
    );
    let read = vlog_dump(&[ring.to_str().unwrap()]);
    let records = text(&read.stdout);
    let last = records
        .lines()
        .rfind(|l| l.starts_with("20"))
        .unwrap_or_default();
    assert!(
        last.contains(" : check failed: monitor >= 0"),
        "the ring's last record:\n{last}"
    );
}

/// Eight threads fail checks at once: one is recorded, its thread the one
/// the dump is of, and the others wait for the end.
#[test]
fn of_checks_failing_at_once_the_first_is_the_last_record() {
    use std::os::unix::process::ExitStatusExt;
    let exe = build("checks", Link::Static);
    for round in 0..5 {
        let dir = scratch_dir(&format!("checks-two-{round}"));
        let dump = dir.join("crash");
        let out = run_within(
            60,
            &exe,
            &["two"],
            &[
                ("VLOG_DUMP", &format!("file:{}", dump.display())),
                (
                    "VLOG_OUTPUTS",
                    &format!("1:file:{}", dir.join("out.log").display()),
                ),
            ],
        );
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGABRT),
            "{round}: {:?}",
            out.status
        );
        let dump = std::fs::read_to_string(&dump).unwrap();
        let tid = dump
            .split(", tid ")
            .nth(1)
            .and_then(|s| s.split(',').next())
            .unwrap_or_else(|| panic!("{round}: no tid in\n{dump}"));
        let records = dump_records(&dump);
        let checks: Vec<&&str> = records
            .iter()
            .filter(|r| r.contains("check failed"))
            .collect();
        assert_eq!(checks.len(), 1, "{round}: {records:?}");
        let last = records.last().unwrap();
        assert!(
            last.contains(&format!(": {tid}: error : test.checks : fail_at_once:")),
            "{round}: the dump is of thread {tid}, its last record\n{last}"
        );
    }
}

/// A check's format with a `%n` is logged as it is, never run.
#[test]
fn a_checks_percent_n_is_logged_not_run() {
    use std::os::unix::process::ExitStatusExt;
    let exe = build("checks", Link::Static);
    let dir = scratch_dir("checks-fmtn");
    let log = dir.join("out.log");
    let out = run_within(
        60,
        &exe,
        &["fmtn"],
        &[("VLOG_OUTPUTS", &format!("1:file:{}", log.display()))],
    );
    assert_eq!(out.status.signal(), Some(libc::SIGABRT), "{:?}", out.status);
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(
        log.contains(" : check failed: n == 1: [format with %n not run] n %d%n\n"),
        "{log}"
    );
}

/// The line of `checks.c`'s call in `mode`.
fn line_of(mode: &str) -> usize {
    let src = std::fs::read_to_string(root().join("c-tests/checks.c")).unwrap();
    let call = match mode {
        "fails" => "VLOG_CHECK(monitor",
        _ => "VLOG_FATAL(",
    };
    1 + src.lines().position(|l| l.contains(call)).unwrap()
}
