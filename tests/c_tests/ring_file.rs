//! Rings that outlive the process: ring files after SIGKILL, a ring file
//! taken up again, a foreign file left alone, rings in core files, read by
//! vlog-dump.

use std::os::unix::process::ExitStatusExt;
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
        eprintln!("SKIPPED: a ring file on a full tmpfs needs root to mount one");
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
