//! vlog-dump on ring files made here with the library, and on bad input.

use std::path::PathBuf;
use std::process::Command;

use vlog::internal::{parse_time, Priority, Record, Ring};

mod support;

use support::{run_vlog_dump as vlog_dump, text};

/// An info record of source "s" with `message` and encoded `fields`.
fn plain<'a>(message: &'a [u8], fields: &'a [u8]) -> Record<'a> {
    Record {
        seq: 0,
        time_ns: 1,
        tid: 1,
        line: 1,
        priority: Priority::Info,
        source: b"s",
        file: b"f",
        func: b"fn",
        message,
        fields,
        context: false,
        id: 0,
    }
}

fn scratch(name: &str) -> PathBuf {
    support::scratch("vlog-dump", name)
}

/// A ring file with 100 records: priorities cycling debug..error, sources
/// "qemu.monitor" and "util.file" alternating, one second apart from
/// 2026-11-30 00:00:00 UTC.
fn ring_file(name: &str) -> PathBuf {
    let path = scratch(name);
    let _ = std::fs::remove_file(&path);
    let mut ring = Ring::create_file(&path, 64 * 1024, None, true).unwrap();
    let base = parse_time("2026-11-30 00:00:00").unwrap();
    for i in 0..100u64 {
        let msg = format!("message {i}");
        ring.append(&Record {
            seq: 0,
            time_ns: base + i * 1_000_000_000,
            tid: 7,
            line: i as u32,
            priority: Priority::ALL[(i % 4) as usize],
            source: if i % 2 == 0 {
                b"qemu.monitor"
            } else {
                b"util.file"
            },
            file: b"f.c",
            func: b"fn",
            message: msg.as_bytes(),
            fields: b"",
            context: false,
            id: 0,
        })
        .unwrap();
    }
    path
}

#[test]
fn prints_every_record_as_text_lines() {
    let path = ring_file("all.ring");
    let out = vlog_dump(&[path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().count(), 100);
    assert!(
        stdout.starts_with(
            "2026-11-30 00:00:00.000+0000: 7: debug : qemu.monitor : fn:0 : message 0\n"
        ),
        "{stdout:?}"
    );
    assert!(
        stdout.ends_with(": 7: error : util.file : fn:99 : message 99\n"),
        "{stdout:?}"
    );
}

#[test]
fn filters_combine() {
    let path = ring_file("filters.ring");
    let p = path.to_str().unwrap();
    let count = |args: &[&str]| {
        let mut all = args.to_vec();
        all.push(p);
        let out = vlog_dump(&all);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        text(&out.stdout).lines().count()
    };
    assert_eq!(count(&["--priority", "error"]), 25);
    assert_eq!(count(&["--priority", "3"]), 50);
    assert_eq!(count(&["--source", "qemu"]), 50);
    assert_eq!(count(&["--source", "u*.f?le"]), 50);
    assert_eq!(count(&["--since", "2026-11-30 00:01:00"]), 40);
    assert_eq!(count(&["--until", "2026-11-30 00:00:09.5"]), 10);
    assert_eq!(count(&["--grep", "message 4"]), 11);
    // qemu is every even record; info and up among those is i % 4 == 2.
    assert_eq!(
        count(&["--priority", "info", "--source", "qemu", "--grep", "1"]),
        3
    );
}

#[test]
fn json_and_stats() {
    let path = ring_file("json.ring");
    let out = vlog_dump(&["--json", "--grep", "message 42", path.to_str().unwrap()]);
    assert_eq!(
        text(&out.stdout),
        "{\"seq\":42,\"time\":\"2026-11-30 00:00:42.000+0000\",\"time_ns\":1795996842000000000,\
         \"tid\":7,\"priority\":\"warning\",\"source\":\"qemu.monitor\",\"file\":\"f.c\",\"line\":42,\
         \"func\":\"fn\",\"message\":\"message 42\"}\n"
    );
    let out = vlog_dump(&["--stats", path.to_str().unwrap()]);
    let stats = text(&out.stdout);
    for want in [
        "records: 100\n",
        "recorded: 100\n",
        "lost: 0\n",
        "torn: 0\n",
        "span: 99.000 s\n",
        "held: 100\n",
        "covers: 99.000 s\n",
    ] {
        assert!(stats.contains(want), "{want:?} in {stats}");
    }
    // What the ring covers is the ring's, not the selection's.
    let out = vlog_dump(&["--stats", "--grep", "message 4", path.to_str().unwrap()]);
    let stats = text(&out.stdout);
    for want in ["records: 11\n", "held: 100\n", "covers: 99.000 s\n"] {
        assert!(stats.contains(want), "{want:?} in {stats}");
    }
    let out = vlog_dump(&["--stats", "--unprinted", path.to_str().unwrap()]);
    let stats = text(&out.stdout);
    assert!(stats.contains("held: 100\n"), "--unprinted: {stats}");
    let out = vlog_dump(&["--stats", "--json", path.to_str().unwrap()]);
    let stats = text(&out.stdout);
    assert!(
        stats.contains(",\"held\":100,") && stats.contains(",\"covers_s\":99.000"),
        "{stats}"
    );
}

#[test]
fn finds_several_rings_inside_a_larger_file() {
    let a = std::fs::read(ring_file("a.ring")).unwrap();
    let mut blob = vec![0x55u8; 4096];
    blob.extend_from_slice(&a);
    blob.extend_from_slice(&[0u8; 8192]);
    blob.extend_from_slice(&a);
    let path = scratch("core-like");
    std::fs::write(&path, &blob).unwrap();
    let out = vlog_dump(&["--grep", "message 99", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("(ring 1 of 2) (65536 bytes) ==\n"),
        "{stdout}"
    );
    assert_eq!(stdout.matches(" : message 99\n").count(), 2);
}

#[test]
fn bad_input_is_a_clear_error_never_a_panic() {
    let ring = std::fs::read(ring_file("bad.ring")).unwrap();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "empty",
            Vec::new(),
            "the file is empty: no ring was ever written to it",
        ),
        (
            "random",
            (0..100_000u32)
                .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
                .collect(),
            "no vlog ring",
        ),
        (
            "truncated",
            ring[..30_000].to_vec(),
            "truncated: the ring needs 82176 bytes, only 30000",
        ),
        (
            "future",
            {
                let mut r = ring.clone();
                r[8..12].copy_from_slice(&9u32.to_ne_bytes());
                r
            },
            "ring layout version 9 is newer than this reader understands",
        ),
    ];
    for (name, bytes, want) in cases {
        let path = scratch(&format!("bad-{name}"));
        std::fs::write(&path, bytes).unwrap();
        let out = vlog_dump(&[path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{name}");
        let stderr = text(&out.stderr);
        assert!(stderr.contains(want), "{name}: {stderr}");
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
    }
    let out = vlog_dump(&["/nonexistent/ring"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("/nonexistent/ring: cannot open"),
        "{:?}",
        text(&out.stderr)
    );
    for args in [
        &["--bogus", "x"][..],
        &["--priority", "7", "x"],
        &["--since", "yesterday", "x"],
        &[],
    ] {
        let out = vlog_dump(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(err.contains("Try 'vlog-dump --help'"), "{args:?}: {err}");
        assert!(
            err.lines().count() <= 8,
            "a short error, not the help: {err}"
        );
    }
}

#[test]
fn follow_prints_records_as_they_arrive() {
    let path = scratch("follow.ring");
    let _ = std::fs::remove_file(&path);
    let mut ring = Ring::create_file(&path, 64 * 1024, None, true).unwrap();
    let rec = |msg: &'static str| plain(msg.as_bytes(), b"");
    ring.append(&rec("before follow")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_vlog-dump"))
        .args(["--follow", path.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    ring.append(&rec("while following")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(700));
    child.kill().unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(stdout.matches(" : before follow\n").count(), 1, "{stdout}");
    assert_eq!(
        stdout.matches(" : while following\n").count(),
        1,
        "{stdout}"
    );
}

/// A damaged record goes to stderr in words, never among the records, in
/// text and JSON alike, and exit status 3 says records were skipped.
#[test]
fn damage_is_said_on_stderr_and_in_the_exit_status() {
    let path = ring_file("damaged.ring");
    let mut bytes = std::fs::read(&path).unwrap();
    // A byte in the middle of the data area: some record's checksum fails.
    let data = bytes.len() - 64 * 1024;
    bytes[data + 1000] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    for args in [&[][..], &["--json"]] {
        let mut all = args.to_vec();
        all.push(path.to_str().unwrap());
        let out = vlog_dump(&all);
        assert_eq!(out.status.code(), Some(3), "{args:?}");
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(!stdout.contains("skipped"), "{args:?}: {stdout}");
        assert!(
            stderr.contains("damaged.ring: record "),
            "{args:?}: {stderr}"
        );
        assert!(stderr.contains(" skipped: "), "{args:?}: {stderr}");
        assert!(
            !stderr.contains("Malformed") && !stderr.contains("Checksum"),
            "{stderr}"
        );
    }
}

/// JSON stats, several files named in records and stats, --grep in the
/// structured fields, --version.
#[test]
fn stats_in_json_files_named_fields_searched() {
    let a = ring_file("named-a.ring");
    let b = ring_file("named-b.ring");
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let out = vlog_dump(&["--json", "--stats", a]);
    assert!(out.status.success(), "{out:?}");
    let stats = text(&out.stdout);
    assert!(stats.starts_with("{\"file\":\""), "{stats}");
    assert!(
        stats.contains(",\"records\":100,\"recorded\":100,\"lost\":0,"),
        "{stats}"
    );
    let out = vlog_dump(&["--stats", a, b]);
    let stats = text(&out.stdout);
    assert!(
        stats.contains(&format!("file: {a}\n")) && stats.contains(&format!("file: {b}\n")),
        "{stats:?}"
    );
    let out = vlog_dump(&["--grep", "message 7", a, b]);
    let records = text(&out.stdout);
    assert_eq!(records.lines().count(), 22, "{records}");
    for line in records.lines() {
        assert!(line.starts_with(a) || line.starts_with(b), "{line}");
    }
    let out = vlog_dump(&["--json", a, b]);
    assert!(
        text(&out.stdout)
            .lines()
            .all(|l| l.starts_with("{\"file\":")),
        "{:?}",
        text(&out.stdout)
    );
    let version = text(&vlog_dump(&["--version"]).stdout);
    assert_eq!(
        version,
        format!("vlog-dump {}\n", env!("CARGO_PKG_VERSION"))
    );
}

/// --grep finds a value that is only in a record's structured fields.
#[test]
fn grep_searches_structured_fields() {
    let path = scratch("fields.ring");
    let _ = std::fs::remove_file(&path);
    let mut ring = Ring::create_file(&path, 64 * 1024, None, true).unwrap();
    let mut fields = Vec::new();
    let vm = vlog::internal::Field {
        name: b"VM",
        value: vlog::internal::Value::Str(b"guest-42"),
    };
    vlog::internal::encode_fields([vm].into_iter(), &mut fields);
    for (msg, fields) in [("with fields", &fields[..]), ("without", &b""[..])] {
        ring.append(&plain(msg.as_bytes(), fields)).unwrap();
    }
    drop(ring);
    let out = text(&vlog_dump(&["--grep", "guest-42", path.to_str().unwrap()]).stdout);
    assert!(
        out.contains(" : with fields") && !out.contains(" : without"),
        "{out}"
    );
}

/// A crash that scribbles over the ring, with zeros or random bytes, 64,
/// 256 or 4096 of them at several offsets: every record the damage did not
/// touch is printed (the newest included), and what it touched is counted
/// and said, never reported as nothing missing.
#[test]
fn damage_of_any_size_costs_only_the_records_it_touched() {
    let path = scratch("scribbled.ring");
    let _ = std::fs::remove_file(&path);
    let mut ring = Ring::create_file(&path, 64 * 1024, None, true).unwrap();
    // Where each record lies in the data area (none wraps: 950 records of
    // 64 bytes each in 64 KiB).
    let mut spans = Vec::new();
    let mut at = 0usize;
    for i in 0..950u64 {
        let msg = format!("message {i}");
        let len = (48 + 1 + 1 + 2 + msg.len()).div_ceil(8) * 8;
        spans.push((at, at + len));
        at += len;
        ring.append(&plain(msg.as_bytes(), b"")).unwrap();
    }
    drop(ring);
    assert!(at < 64 * 1024);
    let clean = std::fs::read(&path).unwrap();
    let data = clean.len() - 64 * 1024;
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for size in [64usize, 256, 4096] {
        for offset in [20_000usize, 30_000, 50_000] {
            for random in [false, true] {
                let mut bytes = clean.clone();
                for b in &mut bytes[data + offset..data + offset + size] {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    *b = if random { seed as u8 } else { 0 };
                }
                let damaged = scratch(&format!("scribbled-{size}-{offset}-{random}.ring"));
                std::fs::write(&damaged, &bytes).unwrap();
                let case = format!("{size} bytes at {offset}, random {random}");
                let touched: Vec<usize> = (0..950)
                    .filter(|&i| spans[i].0 < offset + size && offset < spans[i].1)
                    .collect();
                let out = vlog_dump(&[damaged.to_str().unwrap()]);
                let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
                assert_eq!(out.status.code(), Some(3), "{case}: {stderr}");
                let printed: Vec<usize> = stdout
                    .lines()
                    .map(|l| l.rsplit("message ").next().unwrap().parse().unwrap())
                    .collect();
                let untouched: Vec<usize> = (0..950).filter(|i| !touched.contains(i)).collect();
                assert_eq!(printed, untouched, "{case}: touched {touched:?}\n{stderr}");
                assert!(
                    stderr.contains("bytes of damaged records passed over"),
                    "{case}: {stderr}"
                );
                let stats = text(&vlog_dump(&["--stats", damaged.to_str().unwrap()]).stdout);
                let count = |name: &str| -> usize {
                    stats
                        .lines()
                        .find_map(|l| l.strip_prefix(&format!("{name}: ")))
                        .unwrap_or_else(|| panic!("{case}: no {name} in {stats}"))
                        .parse()
                        .unwrap()
                };
                assert_eq!(
                    count("torn") + count("missing"),
                    touched.len(),
                    "{case}: {stats}"
                );
                assert!(count("damaged") >= size.min(8), "{case}: {stats}");
            }
        }
    }
}
