//! Outputs: files and their rotation, JSON, outputs that fail, and the
//! descriptors and files vlog keeps.

use std::io::{BufRead, BufReader, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::*;

#[test]
fn file_outputs_format_and_reopen() {
    check("outputs");
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
    # "id": the call site's message id, on a record it made as format and
    # arguments (eight hex digits).
    assert sorted(k for k in o if k != "id") == sorted(["seq", "time", "time_ns", "pid",
        "tid", "priority", "source", "file", "line", "func", "message"]), o
    assert "id" not in o or (len(o["id"]) == 8 and int(o["id"], 16) > 0), o
    assert o["pid"] == int(sys.argv[2]) and o["tid"] == o["pid"], o
    assert o["priority"] == "error" and o["source"] == "test.json", o
    assert o["file"].endswith("json_output.c") and o["func"] == "main", o
    assert isinstance(o["line"], int) and o["line"] > 0, o
print("ok")
"#;
    python_script(
        "json check (python3)",
        check,
        &[path.as_os_str(), std::ffi::OsStr::new(&pid)],
    );
}

/// Outputs that fail (full disk, FIFO, rotation, fd 2 reused, stderr a pipe
/// with no reader) never stop logging, never block for good (a FIFO that
/// stops taking lines is waited on for 5 s, once), never raise SIGPIPE, and
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
        say_skipped("the full file system case: cannot mount a tmpfs (not root?)");
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

/// The descriptor rules: vlog writes, truncates or closes only a descriptor
/// that is still the file it opened (device and inode), and otherwise opens
/// its file again by its path; log rotation never adopts fd 2; its own
/// descriptors are never 0, 1 or 2, and sit where the program's own opens
/// do not land (a daemon that closes everything and opens its files over
/// and over, while a thread logs, gets none of vlog's lines); shutting
/// down closes what it opened; a refused configuration creates no file and
/// opens no connection.
#[test]
fn vlog_touches_only_descriptors_that_are_still_its_own() {
    let exe = build("descriptors", Link::Static);
    let quick = if tool() == Tool::None { "" } else { "1" };
    for mode in [
        "closed", "reopen", "stdio", "cycles", "rejected", "takeover",
    ] {
        let dir = scratch_dir(&format!("descriptors-{mode}"));
        let d = dir.to_str().unwrap();
        let dump = format!("file:{d}/dump");
        let outputs = format!("3:file:{d}/env-new 3:file:{d}/missing/y");
        if matches!(mode, "closed" | "stdio") && signal_test_skipped() {
            continue;
        }
        let mut env = match mode {
            "rejected" => vec![("VLOG_OUTPUTS", outputs.as_str())],
            "reopen" => vec![],
            _ => vec![("VLOG_DUMP", dump.as_str())],
        };
        if !quick.is_empty() {
            env.push(("VLOGTEST_QUICK", quick));
        }
        let out = run_with(&exe, &[mode, d], &env);
        assert_ok(&format!("descriptors {mode}"), &out);
        if mode == "rejected" {
            let err = text(&out.stderr);
            let left_out = format!("ignoring the output '3:file:{d}/missing/y' of VLOG_OUTPUTS");
            assert_eq!(err.matches(&left_out).count(), 1, "{err}");
        }
    }
}

/// The syslog outputs escape ESC, NUL, CR and LF in messages and field
/// values as the text lines do; vlog's own warnings escape what they quote.
#[test]
fn syslog_outputs_and_vlogs_warnings_escape_control_bytes() {
    let exe = build("escapes", Link::Static);
    let out = run(&exe, &[]);
    assert_ok("escapes", &out);
    let err = text(&out.stderr);
    assert!(
        err.contains("'bad\\nname\\x1b[2J' is not a valid field name"),
        "{err}"
    );
    assert!(!out.stderr.contains(&0x1b), "a raw ESC on stderr: {err}");
    assert_eq!(
        err.lines()
            .filter(|l| l.contains("is not a valid field name"))
            .count(),
        1,
        "{err}"
    );
}

/// `?max=64K&keep=3`, text and JSON: 1 MB leaves exactly PATH and PATH.1-3,
/// none over 64 KiB, every line whole, none lost but those rotated away.
#[test]
fn rotating_files_stay_bounded_and_lose_no_line_they_keep() {
    let exe = build("rotation", Link::Static);
    for form in ["file", "json"] {
        let dir = scratch_dir(&format!("rotation-{form}"));
        let out = run_with(&exe, &["sizes", dir.to_str().unwrap(), form], &[]);
        assert_ok(&format!("rotation sizes {form}"), &out);
    }
    // Without a ring, the rotations are said in the files, not on stderr.
    let dir = scratch_dir("rotation-no-ring");
    let out = run_with(
        &exe,
        &["sizes", dir.to_str().unwrap(), "file", "noring"],
        &[],
    );
    assert_ok("rotation sizes without a ring", &out);
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("a new one started"), "{stderr}");
    // Another process rotated it away: the next line goes to the new PATH.
    let dir = scratch_dir("rotation-follow");
    assert_ok(
        "rotation follow",
        &run_with(&exe, &["follow", dir.to_str().unwrap()], &[]),
    );
    // Another user's read lock on the file (anyone who may read it can
    // take one) neither stops the rotation nor makes a line wait: one
    // warning, the bound kept.
    // (In /tmp: the user who locks must reach it.)
    let dir = std::env::temp_dir().join(format!("vlog-rotation-lock-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("r.log");
    std::fs::write(&path, b"").unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let locker = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c"])
        .arg("import fcntl, sys, time\nf = open(sys.argv[1])\nfcntl.lockf(f, fcntl.LOCK_SH)\nprint('locked', flush=True)\ntime.sleep(120)")
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    match locker {
        // SAFETY: geteuid has no preconditions.
        Ok(mut locker) if unsafe { libc::geteuid() } == 0 => {
            let mut line = String::new();
            let stdout = locker.stdout.take().unwrap();
            std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).unwrap();
            assert_eq!(line, "locked\n", "the locker did not lock");
            let out = run_with(&exe, &["sizes", dir.to_str().unwrap(), "file"], &[]);
            let _ = locker.kill();
            let _ = locker.wait();
            assert_ok("rotation under another user's lock", &out);
            let stderr = text(&out.stderr);
            assert_eq!(
                stderr
                    .matches("a process of uid 65534 holds a lock")
                    .count(),
                1,
                "{stderr}"
            );
            let _ = std::fs::remove_dir_all(&dir);
        }
        _ => say_skipped("another user's lock on a rotating file: needs root and setpriv"),
    }
    // PATH.1 a link to another file: never rotated over, nothing lost.
    let dir = scratch_dir("rotation-in-the-way");
    let out = run_with(&exe, &["in-the-way", dir.to_str().unwrap()], &[]);
    assert_ok("rotation in-the-way", &out);
    assert_eq!(
        text(&out.stderr).matches("cannot rotate ").count(),
        1,
        "{}",
        text(&out.stderr)
    );
}

/// Two daemons, each with a forked child, write one rotating file: every
/// line of all four is in the files, once, whole.
#[test]
fn processes_sharing_a_rotating_file_lose_no_line() {
    let exe = build("rotation", Link::Static);
    let dir = scratch_dir("rotation-shared");
    let path = dir.join("shared.log");
    let outputs = format!("1:file:{}?max=64K&keep=99", path.display());
    let n = 2000;
    let env = [
        ("VLOG_OUTPUTS", outputs.as_str()),
        ("VLOG_BUFFER_SIZE", "1M"),
    ];
    let spawn = |tag: &str| {
        let mut cmd = Command::new(&exe);
        cmd.args(["writer", tag, &n.to_string()])
            .env_clear()
            .envs(env)
            .current_dir(work())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd.spawn().unwrap()
    };
    let (a, b) = (spawn("A"), spawn("B"));
    for (tag, child) in [("A", a), ("B", b)] {
        let out = child.wait_with_output().unwrap();
        assert_ok(&format!("rotation writer {tag}"), &out);
        // One starting while the other rotates opens the file it finds.
        let err = text(&out.stderr);
        assert!(!err.contains("ignoring the output"), "{tag}: {err}");
    }
    let mut seen = std::collections::HashMap::<String, Vec<u32>>::new();
    let mut files = 0;
    let mut largest = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let entry = entry.unwrap();
        let bytes = std::fs::read(entry.path()).unwrap();
        files += 1;
        largest = largest.max(bytes.len());
        let body = String::from_utf8(bytes).unwrap();
        assert!(
            body.is_empty() || body.ends_with('\n'),
            "{:?} ends in a cut line",
            entry.path()
        );
        for line in body.lines() {
            let Some(at) = line.find(" seq ") else {
                continue;
            };
            let who = line[..at].rsplit(' ').next().unwrap().to_owned();
            let seq: u32 = line[at + 5..at + 11]
                .parse()
                .unwrap_or_else(|_| panic!("{line}"));
            seen.entry(who).or_default().push(seq);
        }
    }
    assert!(files >= 10, "{files} files: the file was not rotated");
    let mut writers: Vec<_> = seen.keys().cloned().collect();
    writers.sort();
    assert_eq!(
        writers,
        ["A-child", "A-parent", "B-child", "B-parent"],
        "{seen:?}"
    );
    for (who, seqs) in &mut seen {
        seqs.sort();
        let want: Vec<u32> = (0..n).collect();
        assert!(
            *seqs == want,
            "{who}: {} lines, missing or twice: {:?}",
            seqs.len(),
            want.iter()
                .filter(|s| seqs.binary_search(s).is_err())
                .take(10)
                .collect::<Vec<_>>()
        );
    }
    eprintln!("{files} files, the largest {largest} bytes");
}

/// Rotation on a file system with no inode left for the new file: one
/// warning, the lines go on to PATH, none lost (root: a tmpfs is mounted).
#[test]
fn rotation_on_a_full_file_system_degrades_with_one_warning() {
    let exe = build("rotation", Link::Static);
    let dir = scratch_dir("rotation-full");
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=4m,nr_inodes=2", "tmpfs"])
        .arg(&dir)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        say_skipped("rotation on a full file system: cannot mount a tmpfs (not root?)");
        return;
    }
    let out = run_with(&exe, &["full", dir.to_str().unwrap()], &[]);
    let _ = Command::new("umount").arg(&dir).status();
    assert_ok("rotation full", &out);
    let stderr = text(&out.stderr);
    assert_eq!(
        stderr.matches("vlog: cannot rotate ").count(),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains("cannot start a new file (No space left on device)"),
        "{stderr}"
    );
}

/// A file followed to where another process rotated it is the one the
/// crash handler writes the pending lines to.
#[test]
fn a_crash_after_following_a_rotation_writes_the_pending_lines_to_the_new_file() {
    if skipped_under_tool("the tool handles fatal signals itself") {
        return;
    }
    let exe = build("rotation", Link::Static);
    let dir = scratch_dir("rotation-crash-follow");
    let dump = format!("file:{}", dir.join("dump").display());
    let out = run_with(
        &exe,
        &["crash-follow", dir.to_str().unwrap()],
        &[("VLOG_DUMP", dump.as_str())],
    );
    assert_killed_by(&out, libc::SIGSEGV);
    let new = std::fs::read_to_string(dir.join("r.log")).unwrap();
    for i in 0..5 {
        assert!(new.contains(&format!(": pending {i}\n")), "r.log:\n{new}");
    }
    assert!(new.contains(": followed\n"), "r.log:\n{new}");
}

/// Readers slow for a moment lose no line (`c-tests/slow_readers.c`): a
/// pipe on stderr another process made non-blocking, read slowly; a
/// syslog daemon at /dev/log whose queue holds 10 datagrams (a mount and
/// network namespace of the test's own), read slowly.
#[test]
fn readers_slow_for_a_moment_lose_no_line() {
    let exe = build("slow_readers", Link::Static);
    assert_ok("slow_readers pipe", &run_with(&exe, &["pipe"], &[]));
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        say_skipped("a /dev/log of the test's own needs root (a mount namespace)");
        return;
    }
    let dir = scratch_dir("slow-readers-devlog");
    let sock = dir.join("log.sock");
    let script = r#"set -e; dir=$1; sock=$2; shift 2
mkdir -p "$dir/dev-up" "$dir/dev-work"
mount -t overlay overlay -o "lowerdir=/dev,upperdir=$dir/dev-up,workdir=$dir/dev-work" /dev
ln -sfn "$sock" /dev/log
echo 10 > /proc/sys/net/unix/max_dgram_qlen
exec "$@""#;
    let inner = command(&exe);
    let mut cmd = std::process::Command::new("unshare");
    cmd.args(["--mount", "--net", "--propagation", "private", "--"])
        .args(["sh", "-c", script, "sh"])
        .arg(&dir)
        .arg(&sock)
        .arg(inner.get_program())
        .args(inner.get_args())
        .args(["devlog", sock.to_str().unwrap()]);
    for (key, value) in inner.get_envs() {
        if let Some(value) = value {
            cmd.env(key, value);
        }
    }
    without_vlog_env(&mut cmd);
    let out = cmd.current_dir(&dir).output().expect("unshare");
    assert_ok("slow_readers devlog", &out);
}

/// The README's logrotate stanza, run by the distribution's logrotate up to
/// four times (the stanza keeps four rotated files) while a program logs:
/// every line is in the log or a rotated file (the newest plain, the older
/// compressed), once each, in order.
#[test]
fn logrotate_rotates_a_vlog_file_and_loses_no_line() {
    let Some(logrotate) = ["/usr/sbin/logrotate", "/sbin/logrotate"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
    else {
        needs_installed("no logrotate (apt-get install logrotate)");
        return;
    };
    let dir = scratch_dir("logrotate");
    let log = dir.join("myd.log");
    // The README's stanza, its path made this test's.
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let stanza = readme
        .split("cat > myd.logrotate <<EOF\n")
        .nth(1)
        .and_then(|rest| rest.split("\nEOF\n").next())
        .expect("the README's logrotate stanza")
        .replace("$PWD/myd.log", log.to_str().unwrap());
    let conf = dir.join("myd.logrotate");
    std::fs::write(&conf, &stanza).unwrap();
    let exe = build("paced", Link::Static);
    let lines = 3000;
    let mut cmd = command(&exe);
    without_vlog_env(&mut cmd);
    let mut child = cmd
        .args([&lines.to_string(), "1000"])
        .env("VLOG_OUTPUTS", format!("3:file:{}", log.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut rotations = 0;
    while rotations < 4 && child.try_wait().unwrap().is_none() {
        // A rotation each time the new file has lines.
        if std::fs::metadata(&log).is_ok_and(|m| m.len() > 0) {
            let out = Command::new(logrotate)
                .args(["-f", "-s"])
                .arg(dir.join("state"))
                .arg(&conf)
                .output()
                .unwrap();
            assert_ok("logrotate", &out);
            rotations += 1;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert_ok("paced", &out);
    assert!(
        rotations >= 2,
        "only {rotations} rotations: the program ran too fast"
    );
    // Oldest first: myd.log.4.gz .. myd.log.2.gz, myd.log.1, myd.log.
    let mut kept = String::new();
    for n in (2..=4).rev() {
        let gz = dir.join(format!("myd.log.{n}.gz"));
        if gz.exists() {
            let z = Command::new("zcat").arg(&gz).output().unwrap();
            assert_ok("zcat", &z);
            kept.push_str(&String::from_utf8_lossy(&z.stdout));
        }
    }
    for name in ["myd.log.1", "myd.log"] {
        kept.push_str(&std::fs::read_to_string(dir.join(name)).unwrap_or_default());
    }
    let numbers: Vec<u64> = kept
        .lines()
        .filter_map(|l| l.split(" : line ").nth(1)?.parse().ok())
        .collect();
    let want: Vec<u64> = (0..lines).collect();
    assert!(
        numbers == want,
        "{rotations} rotations: {} lines kept of {lines}; first missing or out of place: {:?}; stderr: {}",
        numbers.len(),
        numbers.iter().zip(&want).position(|(a, b)| a != b),
        text(&out.stderr)
    );
}

/// A daemon that chroots after configuring vlog: reopening a file output
/// (after logrotate moved the file away) makes the file where it was
/// configured, through the directory vlog kept, never at the same path in
/// the jail (whose users may have made it); what can only go by path stops
/// with a message that says why: a file rotated by vlog (`?max=`, one
/// warning, its lines going on to it), a new ring file, a reload of
/// VLOG_CONFIG, the control socket made anew.
#[test]
fn after_a_chroot_vlog_uses_no_path_of_the_old_root() {
    if chroot_test_skipped() {
        return;
    }
    let dir = scratch_dir("chroot-files");
    let logs = dir.join("logs");
    let jail = dir.join("jail");
    let jailed = jail.join(logs.strip_prefix("/").unwrap());
    let _ = std::fs::remove_dir_all(&logs);
    let _ = std::fs::remove_dir_all(&jail);
    std::fs::create_dir_all(&logs).unwrap();
    std::fs::create_dir_all(&jailed).unwrap();
    let config = logs.join("vlog.conf");
    std::fs::write(&config, "VLOG_FILTERS=1:test\n").unwrap();
    let socket = logs.join("ctl.sock");
    let exe = build("chroot_files", Link::Static);
    let mut cmd = command(&exe);
    without_vlog_env(&mut cmd);
    let mut child = cmd
        .args([logs.to_str().unwrap(), jail.to_str().unwrap()])
        .env("VLOG_BUFFER_FILE", logs.join("ring"))
        .env("VLOG_CONTROL", &socket)
        .env("VLOG_CONFIG", &config)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut stdin = child.stdin.take().unwrap();
    let mut said = String::new();
    stdout.read_line(&mut said).unwrap();
    if said != "chrooted\n" {
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        panic!("chroot_files said {said:?}: {}", text(&out.stderr));
    }
    // logrotate: the file renamed away.
    std::fs::rename(logs.join("d.log"), logs.join("d.log.1")).unwrap();
    stdin.write_all(b"go\n").unwrap();
    said.clear();
    stdout.read_line(&mut said).unwrap();
    let reload = crate::control::vlog_ctl(&[socket.to_str().unwrap(), "reload"]);
    stdin.write_all(b"go\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(said, "reload\n", "{err}");
    assert_ok("chroot_files", &out);
    let refused = text(&reload.stderr);
    assert!(
        !reload.status.success() && refused.contains("root moved"),
        "the reload: {refused}"
    );
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    let old = read(&logs.join("d.log.1"));
    let new = read(&logs.join("d.log"));
    assert!(old.contains("before the chroot"), "{old}");
    assert_eq!(new.matches("after the chroot").count(), 400, "{new}\n{err}");
    let rotated = read(&logs.join("r.log"));
    assert_eq!(rotated.matches("after the chroot").count(), 400, "{err}");
    assert_eq!(
        err.matches("rotation stopped").count(),
        1,
        "one warning for the rotation:\n{err}"
    );
    assert!(
        err.contains("a new one cannot be made") && err.contains("root moved"),
        "the control socket: {err}"
    );
    let in_jail: Vec<_> = std::fs::read_dir(&jailed)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(in_jail.is_empty(), "made in the jail: {in_jail:?}\n{err}");
}
