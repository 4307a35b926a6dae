//! Rings that outlive the process: ring files after SIGKILL, a ring file
//! taken up again, a foreign file left alone, rings in core files, read by
//! vlog-dump.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;

use crate::common::*;
use crate::crash::crash_exe;
use crate::environment::environment;

#[test]
fn ring_wraps_with_continuous_sequence() {
    check("ring_wrap");
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
    // A record is counted (next_seq) just before its end is published (the
    // tail): a kill between the two leaves one record readers do not reach
    // (DESIGN.md, section 6). One lock: at most one record is being
    // appended at any moment.
    let read = last_seq.unwrap() + 1;
    assert!(
        read == recorded || read + 1 == recorded,
        "every committed record is there: {read} read, {recorded} recorded"
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
        dump.contains("buffer_size=8388608\n"),
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
        say_skipped(&format!("cores go to a helper ({})", pattern.trim()));
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
        say_skipped(&format!(
            "no core file was written (core_pattern {})",
            pattern.trim()
        ));
        return;
    };
    assert!(status.core_dumped(), "{status:?}");
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

/// A ring file truncated while mapped (copytruncate, `: > ring`), a ring
/// file on a file system without room for it, and RLIMIT_FSIZE: no SIGBUS,
/// no SIGXFSZ; the ring goes on in memory with one warning, and logging,
/// vlog_dump and crash dumps go on.
#[test]
fn the_disk_and_other_processes_never_raise_a_signal_in_vlog() {
    if signal_test_skipped() {
        return;
    }
    let exe = build("disk", Link::Static);
    for mode in ["truncated", "truncated-lazy", "fsize"] {
        let dir = scratch_dir(&format!("disk-{mode}"));
        let d = dir.to_str().unwrap();
        let ring = format!("{d}/ring");
        let dump = format!("file:{d}/dump");
        let mut env = vec![
            ("VLOG_BUFFER_FILE", ring.as_str()),
            ("VLOG_BUFFER_SIZE", "64K"),
            ("VLOG_DUMP", dump.as_str()),
            ("VLOG_OUTPUTS", "4:file:/dev/null"),
            ("VLOG_LEVEL", "debug"),
        ];
        let args = match mode {
            "truncated-lazy" => {
                env[2].1 = "off";
                vec!["truncated", d, "lazy"]
            }
            "fsize" => {
                env[1].1 = "1M";
                vec!["fsize", d]
            }
            _ => vec![mode, d],
        };
        let out = run_with(&exe, &args, &env);
        assert_ok(&format!("disk {mode}"), &out);
    }
    // A ring file on a 256 KiB tmpfs, mounted here (root only).
    let dir = scratch_dir("disk-full");
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"])
        .arg(&dir)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        say_skipped("a ring file on a full tmpfs needs root to mount one");
        return;
    }
    let d = dir.to_str().unwrap().to_owned();
    let ring = format!("{d}/ring");
    let out = run_with(
        &exe,
        &["full", &d],
        &[
            ("VLOG_BUFFER_FILE", &ring),
            ("VLOG_BUFFER_SIZE", "4M"),
            ("VLOG_OUTPUTS", "4:file:/dev/null"),
        ],
    );
    let _ = Command::new("umount").arg(&dir).status();
    assert_ok("disk full", &out);
    let err = text(&out.stderr);
    assert_eq!(
        err.matches("keeping the ring in memory").count(),
        1,
        "{err}"
    );
}

/// A ring file from outside is hostile: forged head and tail near 2^64, a
/// 6 GB file, another user's file, one writable by others. vlog_init
/// returns at once with one warning and leaves the file as it was (or, for
/// a forged ring of its own user's, replaces it); vlog-dump ends with a
/// clear error or reads no more than the ring.
#[test]
fn a_hostile_ring_file_is_refused_or_read_within_its_size() {
    let exe = build("ring_files", Link::Static);
    let root_user = unsafe { libc::geteuid() } == 0;
    for case in ["forged", "huge", "foreign", "writable"] {
        let dir = scratch_dir(&format!("hostile-ring-{case}"));
        let ring = dir.join("ring");
        let r = ring.to_str().unwrap();
        let env = [("VLOG_BUFFER_FILE", r), ("VLOG_BUFFER_SIZE", "64K")];
        assert_ok("write", &run_with(&exe, &["write", "FORGED", "50"], &env));
        let want = match case {
            "forged" => {
                let mut bytes = std::fs::read(&ring).unwrap();
                let head = u64::MAX - 4095;
                bytes[32..40].copy_from_slice(&head.to_ne_bytes());
                bytes[40..48].copy_from_slice(&(head + 64).to_ne_bytes());
                std::fs::write(&ring, bytes).unwrap();
                "malformed ring header: head and tail"
            }
            "huge" => {
                let f = std::fs::OpenOptions::new().write(true).open(&ring).unwrap();
                f.set_len(6 << 30).unwrap();
                "larger than any vlog ring"
            }
            "foreign" if !root_user => {
                say_skipped("a ring file of another user needs root to make");
                continue;
            }
            "foreign" => {
                std::os::unix::fs::chown(&ring, Some(65534), Some(65534)).unwrap();
                "is owned by uid 65534"
            }
            _ => {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&ring, std::fs::Permissions::from_mode(0o666)).unwrap();
                "writable by others (mode 0666)"
            }
        };
        let before = std::fs::read(&ring).ok().filter(|_| case != "huge");
        let out = run_within(20, &exe, &["open"], &env);
        assert_ok(&format!("open {case}"), &out);
        let err = text(&out.stderr);
        assert_eq!(err.matches(want).count(), 1, "{case}: {err}");
        if case != "forged" {
            let len = std::fs::metadata(&ring).unwrap().len();
            if case == "huge" {
                assert_eq!(len, 6 << 30, "the huge file is left alone");
            } else {
                assert_eq!(std::fs::read(&ring).ok(), before, "{case}: left as it was");
            }
        }
        // vlog-dump: a clear error, or the ring's records, promptly.
        let dump = Command::new(env!("CARGO_BIN_EXE_vlog-dump"))
            .arg(&ring)
            .output()
            .unwrap();
        let dump_err = text(&dump.stderr);
        match case {
            "forged" => assert!(
                dump.status.code() == Some(1) || dump.status.success(),
                "{dump_err}"
            ),
            _ => assert!(
                text(&dump.stdout).contains("FORGED 49") || case == "forged",
                "{case}: {dump_err}"
            ),
        }
    }
}

/// vlog-dump on a forged ring: every mode ends (it used to spin forever).
#[test]
fn vlog_dump_ends_on_a_forged_ring_in_every_mode() {
    let exe = build("ring_files", Link::Static);
    let dir = scratch_dir("forged-dump");
    let ring = dir.join("ring");
    let r = ring.to_str().unwrap();
    let env = [("VLOG_BUFFER_FILE", r), ("VLOG_BUFFER_SIZE", "64K")];
    assert_ok("write", &run_with(&exe, &["write", "x", "50"], &env));
    let mut bytes = std::fs::read(&ring).unwrap();
    let head = u64::MAX - 4095;
    bytes[32..40].copy_from_slice(&head.to_ne_bytes());
    bytes[40..48].copy_from_slice(&(head + 64).to_ne_bytes());
    std::fs::write(&ring, bytes).unwrap();
    let dump = Path::new(env!("CARGO_BIN_EXE_vlog-dump"));
    for args in [&[][..], &["--json"], &["--stats"], &["--grep", "x"]] {
        let mut all: Vec<&str> = args.to_vec();
        all.push(r);
        let out = run_within(20, dump, &all, &[]);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(text(&out.stderr).contains("head and tail"), "{args:?}");
    }
}

/// Two programs on one ring file (two instances, a worker fork+exec'd, a
/// restart while the old one runs): the second joins the live ring in
/// place, both append under its lock, and no record is lost; its size
/// cannot change while it is shared.
#[test]
fn two_programs_share_one_ring_file_and_lose_nothing() {
    use std::io::{BufRead, BufReader, Write};
    let exe = build("ring_files", Link::Static);
    let dir = scratch_dir("shared-ring-file");
    let ring = dir.join("ring");
    let r = ring.to_str().unwrap();
    let start = |tag: &str| {
        let mut child = command(&exe)
            .args(["share", tag, "500"])
            .env("VLOG_BUFFER_FILE", r)
            .env("VLOG_BUFFER_SIZE", "256K")
            .env("VLOG_OUTPUTS", "4:file:/dev/null")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        assert_eq!(line, "ready\n", "{tag}");
        (child, out)
    };
    let (mut a, mut a_out) = start("first");
    let (mut b, mut b_out) = start("second");
    for child in [&mut a, &mut b] {
        child.stdin.as_mut().unwrap().write_all(b"go\n").unwrap();
    }
    for (tag, out) in [("first", &mut a_out), ("second", &mut b_out)] {
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        // (A program that failed said why on stderr, which it shares.)
        assert_eq!(line, "done\n", "{tag}");
    }
    let stats = text(&vlog_dump(&["--stats", r]).stdout);
    let records = text(&vlog_dump(&[r]).stdout);
    for child in [&mut a, &mut b] {
        child.stdin.as_mut().unwrap().write_all(b"exit\n").unwrap();
    }
    assert!(
        a.wait().unwrap().success() && b.wait().unwrap().success(),
        "{a:?}"
    );
    for tag in ["first", "second"] {
        for i in [0, 250, 499] {
            assert!(
                records.contains(&format!(": {tag} record {i}\n")),
                "{tag} {i}: {stats}"
            );
        }
        assert_eq!(
            records.matches(&format!(": {tag} record ")).count(),
            500,
            "{stats}"
        );
    }
    assert!(
        stats.contains("missing: 0\n") && stats.contains("torn: 0\n"),
        "{stats}"
    );
}

/// A vlog_dump blocked on a full pipe does not make a resize (and every
/// logging thread behind its lock) wait.
#[test]
fn a_blocked_dump_never_makes_the_logger_wait() {
    let exe = build("ring_files", Link::Static);
    let out = run_within(
        30,
        &exe,
        &["dump-resize"],
        &[("VLOG_OUTPUTS", "4:file:/dev/null")],
    );
    assert_ok("dump-resize", &out);
}

/// vlog-dump --follow of a ring file that is replaced by a fresh ring (its
/// sequence starts again) follows the new ring.
#[test]
fn vlog_dump_follows_a_ring_that_was_replaced() {
    use std::io::Read;
    let exe = build("ring_files", Link::Static);
    let dir = scratch_dir("follow-replaced");
    let ring = dir.join("ring");
    let r = ring.to_str().unwrap();
    let env = [("VLOG_BUFFER_FILE", r), ("VLOG_BUFFER_SIZE", "64K")];
    assert_ok(
        "write",
        &run_with(&exe, &["write", "old ring", "300"], &env),
    );
    let mut follow = Command::new(env!("CARGO_BIN_EXE_vlog-dump"))
        .args(["--follow", r])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let reader = {
        let seen = seen.clone();
        let mut stdout = follow.stdout.take().unwrap();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                seen.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        })
    };
    let wait_for = |what: &str| {
        for _ in 0..300 {
            if seen.lock().unwrap().contains(what) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!(
            "no {what:?} from vlog-dump --follow: {}",
            seen.lock().unwrap()
        );
    };
    wait_for(": old ring 299\n");
    std::fs::remove_file(&ring).unwrap();
    assert_ok("write", &run_with(&exe, &["write", "new ring", "20"], &env));
    wait_for(": new ring 19\n");
    follow.kill().unwrap();
    let said = text(&follow.wait_with_output().unwrap().stderr);
    reader.join().unwrap();
    let seen = seen.lock().unwrap().clone();
    assert!(seen.contains(": old ring 299\n"), "{seen}");
    assert!(said.contains("the ring was replaced"), "{said}");
    assert!(
        seen.contains(": new ring 0\n") && seen.contains(": new ring 19\n"),
        "{seen}"
    );
}
