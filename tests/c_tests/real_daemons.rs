//! Outputs against the real programs on the other end, started by the
//! test: systemd-journald and rsyslogd.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::*;

pub(crate) use crate::support::{journal_entries, Journald};

/// Runs the Python `script` with `input` on its standard input: it passes
/// when the script exits 0.
fn python_check(name: &str, script: &str, input: &str) {
    use std::io::Write;
    let mut py = Command::new("python3")
        .arg("-c")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3");
    py.stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    assert_ok(name, &py.wait_with_output().unwrap());
}

/// PRIO:journald against a real systemd-journald: every field, the priority
/// mapping, a multi-line message, structured fields; and the memfd path for
/// entries too large for a datagram.
#[test]
fn journald_output_reaches_a_real_journald() {
    let Some(_journald) = Journald::start() else {
        say_skipped("cannot start systemd-journald (not root, or not installed)");
        return;
    };
    let exe = build("journald", Link::Static);
    let out = run_with(&exe, &[], &[]);
    assert_ok("journald", &out);
    let pid = text(&out.stdout).trim().to_string();
    let entries = journal_entries(&[&format!("_PID={pid}"), "VLOG_SOURCE=test.journald"], 5);
    let check = r#"
import json, sys
objs = [json.loads(l) for l in sys.stdin.read().splitlines()]
by_msg = {o["MESSAGE"] if isinstance(o["MESSAGE"], str) else bytes(o["MESSAGE"]).decode(): o
          for o in objs}
want = {"debug entry 1": "7", "info entry": "6", "two\nlines": "4",
        "error entry with fields": "3", "entry with OpenTelemetry's names": "3"}
assert sorted(by_msg) == sorted(want), sorted(by_msg)
for msg, prio in want.items():
    o = by_msg[msg]
    assert o["PRIORITY"] == prio, o
    assert o["SYSLOG_IDENTIFIER"] == "journald", o
    assert o["CODE_FILE"].endswith("c-tests/journald.c") and o["CODE_FUNC"] == "main", o
    assert int(o["CODE_LINE"]) > 0 and o["VLOG_SOURCE"] == "test.journald", o
fields = by_msg["error entry with fields"]
assert fields["VM"] == "guest1" and fields["VCPUS"] == "4", fields
otel = by_msg["entry with OpenTelemetry's names"]
assert otel["HTTP_METHOD"] == "GET" and otel["USER_ID"] == "42", otel
assert not any("." in k for k in otel), otel
print("ok")
"#;
    python_check("journald check (python3)", check, &entries);

    // The memfd path: an entry passed as a sealed memfd over SCM_RIGHTS.
    let marker = format!("memfd entry {}", std::process::id());
    let entry = format!(
        "MESSAGE={marker}\nSYSLOG_IDENTIFIER=vlog-memfd-test\nBIG={}\n",
        "x".repeat(300_000)
    );
    vlog::internal::send_to_journald_via_memfd(entry.as_bytes()).expect("send through a memfd");
    let found = journal_entries(
        &[
            "SYSLOG_IDENTIFIER=vlog-memfd-test",
            &format!("MESSAGE={marker}"),
        ],
        1,
    );
    assert!(found.contains(&marker), "{found}");
}

/// A thread's fields reach journald as fields of each of its entries, and
/// of no other thread's.
#[test]
fn thread_fields_reach_a_real_journald_on_their_own_threads_entries() {
    let Some(_journald) = Journald::start() else {
        say_skipped("cannot start systemd-journald (not root, or not installed)");
        return;
    };
    let exe = build("thread_fields", Link::Static);
    let out = run_with(&exe, &["journald"], &[]);
    assert_ok("thread_fields journald", &out);
    let pid = text(&out.stdout).trim().to_string();
    let entries = journal_entries(
        &[&format!("_PID={pid}"), "VLOG_SOURCE=test.thread_fields"],
        10,
    );
    let check = r#"
import json, sys
objs = [json.loads(l) for l in sys.stdin.read().splitlines()]
says = [o for o in objs if " says " in o["MESSAGE"]]
assert len(says) == 10, [o["MESSAGE"] for o in objs]
for o in says:
    mine = o["MESSAGE"].startswith("worker 0")
    assert o["REQUEST_ID"] == ("req-A" if mine else "req-B"), o
    assert o["WORKER"] == ("0" if mine else "1"), o
    if mine:
        assert o["TRACE_ID"] == "4bf92f3577b34da6a3ce929d0e0e4736", o
        assert o["SPAN_ID"] == "00f067aa0ba902b7" and o["TRACE_FLAGS"] == "01", o
    else:
        assert "TRACE_ID" not in o, o
print("ok")
"#;
    python_check("journald check (python3)", check, &entries);
}

/// Held by a test while it may make /dev/log for its rsyslogd and until
/// that is gone: tests run in parallel, and the path is the machine's.
static DEV_LOG: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// An rsyslogd on loopback (UDP and TCP on `port`, and /dev/log when
/// `local`), writing what it receives to `out`; stopped when dropped.
struct Rsyslogd {
    child: std::process::Child,
    local: bool,
}

impl Rsyslogd {
    fn start(dir: &Path, port: u16, local: bool) -> Option<Rsyslogd> {
        let imuxsock = if local {
            "module(load=\"imuxsock\" SysSock.Name=\"/dev/log\")"
        } else {
            ""
        };
        let child = spawn_rsyslogd(
            dir,
            &format!(
                "global(workDirectory=\"{dir}\")\n{imuxsock}\n\
                 module(load=\"imudp\")\nmodule(load=\"imtcp\")\n\
                 input(type=\"imudp\" address=\"127.0.0.1\" port=\"{port}\")\n\
                 input(type=\"imtcp\" address=\"127.0.0.1\" port=\"{port}\")\n\
                 template(name=\"t\" type=\"string\" string=\"PRI=%pri% APP=%app-name% \
                 PROCID=%procid% SD=%structured-data% MSG=%msg%\\n\")\n\
                 *.* action(type=\"omfile\" file=\"{dir}/out.log\" template=\"t\")\n",
                dir = dir.display()
            ),
        )?;
        let server = Rsyslogd { child, local };
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Some(server);
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        None
    }
}

impl Drop for Rsyslogd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if self.local {
            let _ = std::fs::remove_file("/dev/log");
        }
    }
}

/// Lines of `file` once it has `count` lines containing `needle` (5 s at most).
fn wait_for_lines(file: &Path, needle: &str, count: usize) -> String {
    // Bounded for a machine whose every core is busy; the caller's
    // assertions say what was missing.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        if text.matches(needle).count() >= count || std::time::Instant::now() > deadline {
            return text;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// PRIO:syslog to a real rsyslogd: RFC 5424 over UDP, TCP (octet counting)
/// and /dev/log, fields as SD-PARAMs; a collector that is down costs no wait,
/// its lines are counted and reported once, and the output reconnects when it
/// comes up.
#[test]
fn syslog_output_reaches_a_real_rsyslogd() {
    let _dev_log = DEV_LOG.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch_dir("rsyslog-run");
    let port = free_port();
    let local = !Path::new("/dev/log").exists();
    let Some(server) = Rsyslogd::start(&dir, port, local) else {
        needs_installed("cannot start rsyslogd (not installed?)");
        return;
    };
    let exe = build("syslog", Link::Static);
    let port_text = port.to_string();
    let mut args = vec!["send", port_text.as_str()];
    if local {
        args.push("local");
    }
    let out = run_with(&exe, &args, &[]);
    assert_ok("syslog send", &out);
    // (Not "MSG=": rsyslogd's own start line has one.)
    let received = wait_for_lines(
        &dir.join("out.log"),
        " APP=vlog",
        if local { 12 } else { 8 },
    );
    for app in ["vlogudp", "vlogtcp"]
        .iter()
        .chain(if local { &["vloglocal"][..] } else { &[] })
    {
        for (pri, msg) in [
            ("31", "debug message 1"),
            ("28", "warning message"),
            ("27", "error with fields"),
        ] {
            // /dev/log takes the traditional form (no structured data: the
            // fields follow the message as in a text line).
            let local = *app == "vloglocal";
            let fields = if local && msg == "error with fields" {
                " [VM=\"guest \\\"1\\\"\" VCPUS=4]"
            } else {
                ""
            };
            let line = received
                .lines()
                .find(|l| {
                    l.contains(&format!("APP={app} ")) && l.ends_with(&format!("{msg}{fields}"))
                })
                .unwrap_or_else(|| panic!("{app}: no '{msg}' in:\n{received}"));
            assert!(line.starts_with(&format!("PRI={pri} ")), "{line}");
            if !local {
                assert!(line.contains("SOURCE=\"test.syslog\""), "{line}");
                assert!(line.contains("CODE_FUNC=\"main\""), "{line}");
            }
            if !local && msg == "error with fields" {
                assert!(
                    line.contains("VM=\"guest \\\"1\\\"\" VCPUS=\"4\""),
                    "{line}"
                );
            }
        }
        // Trace context: OpenTelemetry's element after vlog's, over the
        // network; as any field on /dev/log.
        let line = received
            .lines()
            .find(|l| l.contains(&format!("APP={app} ")) && l.contains("traced message"))
            .unwrap_or_else(|| panic!("{app}: no 'traced message' in:\n{received}"));
        if *app == "vloglocal" {
            assert!(
                line.contains("TRACE_ID=4bf92f3577b34da6a3ce929d0e0e4736"),
                "{line}"
            );
        } else {
            assert!(
                line.contains(
                    "][opentelemetry trace_id=\"4bf92f3577b34da6a3ce929d0e0e4736\" \
                     span_id=\"00f067aa0ba902b7\" trace_flags=\"01\"] MSG="
                ) && !line.contains("TRACE_ID"),
                "{line}"
            );
        }
    }
    // After fork, parent and child each reach the collector over TCP.
    for msg in ["parent after fork", "from the child 1", "from the child 2"] {
        let received = wait_for_lines(&dir.join("out.log"), msg, 3);
        let over_tcp = received
            .lines()
            .filter(|l| l.contains("APP=vlogtcp ") && l.ends_with(msg))
            .count();
        assert_eq!(over_tcp, 1, "{msg}:\n{received}");
    }
    // vlog's own records with `?facility=local3`: 19 * 8 + 4 and + 3.
    let out = run_with(&exe, &["facility", &port_text], &[]);
    assert_ok("syslog facility", &out);
    let received = wait_for_lines(&dir.join("out.log"), " in local3", 2);
    for (pri, msg) in [("156", "warning in local3"), ("155", "error in local3")] {
        let line = received
            .lines()
            .find(|l| l.contains("APP=vlogfac ") && l.ends_with(msg))
            .unwrap_or_else(|| panic!("no '{msg}' in:\n{received}"));
        assert!(line.starts_with(&format!("PRI={pri} ")), "{line}");
    }
    drop(server);

    // A collector that is down, then comes up.
    let dir = scratch_dir("rsyslog-down");
    let port = free_port();
    let mut child = command(&exe)
        .args(["down", &port.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    use std::io::{BufRead, Write};
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut ready)
        .unwrap();
    assert_eq!(ready, "ready\n");
    let server = Rsyslogd::start(&dir, port, false).expect("rsyslogd");
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_ok("syslog down", &out);
    let stderr = text(&out.stderr);
    assert_eq!(
        stderr.matches("cannot write to syslog").count(),
        1,
        "{stderr}"
    );
    assert_eq!(stderr.matches(" works again; ").count(), 1, "{stderr}");
    let received = wait_for_lines(&dir.join("out.log"), "after the collector started", 1);
    assert!(
        received.contains("after the collector started"),
        "{received}"
    );
    drop(server);
}

/// syslog(3) calls taken over by libvlog-syslog.so reach a real rsyslogd
/// with the PRI glibc would send (the call's facility and severity, not
/// vlog's four levels), over UDP, TCP and, where the test may make it,
/// /dev/log.
#[test]
fn syslog_calls_keep_their_facility_and_severity() {
    if skipped_under_tool("the preloaded programs do not run under the tool") {
        return;
    }
    let _dev_log = DEV_LOG.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch_dir("rsyslog-pri");
    let port = free_port();
    let local = !Path::new("/dev/log").exists();
    let Some(server) = Rsyslogd::start(&dir, port, local) else {
        needs_installed("cannot start rsyslogd (not installed?)");
        return;
    };
    let exe = crate::preload::build_plain("syslog_calls", false);
    let mut outputs =
        format!("1:syslog:priudp@udp://127.0.0.1:{port} 1:syslog:pritcp@tcp://127.0.0.1:{port}");
    if local {
        outputs.push_str(" 1:syslog:prilocal");
    }
    let out = run_with(
        &exe,
        &["pri"],
        &[
            (
                "LD_PRELOAD",
                crate::preload::preload_lib().to_str().unwrap(),
            ),
            ("VLOG_OUTPUTS", &outputs),
        ],
    );
    assert_ok("syslog_calls pri", &out);
    let apps: &[&str] = if local {
        &["priudp", "pritcp", "prilocal"]
    } else {
        &["priudp", "pritcp"]
    };
    // (Not "MSG=": rsyslogd's own start line has one.)
    let received = wait_for_lines(&dir.join("out.log"), " APP=pri", 3 * apps.len());
    for app in apps {
        // LOG_AUTHPRIV|LOG_CRIT is 10 * 8 + 2; LOG_LOCAL3|LOG_EMERG 19 * 8;
        // openlog's LOG_DAEMON with LOG_NOTICE 3 * 8 + 5.
        for (pri, msg) in [
            ("82", "authpriv crit"),
            ("152", "local3 emerg"),
            ("29", "daemon notice"),
        ] {
            let line = received
                .lines()
                .find(|l| l.contains(&format!("APP={app} ")) && l.contains(msg))
                .unwrap_or_else(|| panic!("{app}: no '{msg}' in:\n{received}"));
            assert!(line.starts_with(&format!("PRI={pri} ")), "{line}");
        }
    }
    drop(server);
}

/// Runs `exe ARGS` beside a journald of its own, in a mount and network
/// namespace (its own /run and journal, its own
/// `net.unix.max_dgram_qlen`: how many datagrams journald's socket queues
/// before a sender must wait), and reads the program's entries there (by
/// its identifier: the journal is the program's alone, and an entry
/// journald reads after the program exited may come without `_PID`) once
/// `want` have come, or one matches `last` (a grep pattern: an entry
/// journald gets after every other), or 20 s passed. Returns the program's
/// output and the entries' messages, one a line; None when no such
/// namespace can be made.
fn run_beside_a_private_journald(
    exe: &Path,
    args: &str,
    qlen: u32,
    want: usize,
    last: &str,
) -> Option<(String, String)> {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root || !Path::new("/lib/systemd/systemd-journald").exists() {
        return None;
    }
    let script = r#"
set -eu
mount -t tmpfs tmpfs /run
[ -d /var/log/journal ] && mount -t tmpfs tmpfs /var/log/journal
mkdir -p /run/systemd/journal
echo "$QLEN" > /proc/sys/net/unix/max_dgram_qlen
/lib/systemd/systemd-journald >/dev/null 2>&1 &
journald=$!
trap 'kill $journald; wait $journald || true' EXIT
for _ in $(seq 400); do [ -S /run/systemd/journal/socket ] && break; sleep 0.05; done
out=$("$EXE" $ARGS 2>/dev/null || true)
echo "$out"
ident=$(basename "$EXE")
for _ in $(seq 400); do
    entries=$(journalctl --no-pager -o cat "SYSLOG_IDENTIFIER=$ident")
    [ "$(printf '%s' "$entries" | grep -c .)" -ge "$WANT" ] && break
    printf '%s' "$entries" | grep -q -e "$LAST" && break
    sleep 0.05
done
journalctl --no-pager -o cat "SYSLOG_IDENTIFIER=$ident"
"#;
    let out = Command::new("unshare")
        .args(["--mount", "--net", "--fork", "bash", "-c", script])
        .env("QLEN", qlen.to_string())
        .env("EXE", exe)
        .env("ARGS", args)
        .env("WANT", want.to_string())
        .env("LAST", last)
        .env_remove("VLOG_OUTPUTS")
        .output()
        .ok()?;
    assert_ok("a private journald", &out);
    let all = text(&out.stdout);
    let (first, rest) = all.split_once('\n').unwrap_or((&all, ""));
    Some((first.to_owned(), rest.to_owned()))
}

/// A burst of 2,000 warnings and an error into journald, whose socket
/// queues 10 datagrams at a time (the kernel's default) or 512 (systemd's):
/// every one reaches it, none counted lost. journald's native protocol has
/// no flow control but the queue: a full one is waited on, as libsystemd's
/// sd_journal_send waits, never a reason to drop.
#[test]
fn a_burst_into_a_slow_journald_loses_nothing() {
    if skipped_under_tool("journald runs beside the program, not under the tool") {
        return;
    }
    let exe = build("journald_burst", Link::Static);
    for qlen in [10, 512] {
        let Some((program, entries)) =
            run_beside_a_private_journald(&exe, "", qlen, 2001, "^$never")
        else {
            say_skipped("a private journald needs root, unshare and systemd-journald");
            return;
        };
        let lost = program.split(' ').nth(1).unwrap_or("?");
        let warnings = entries
            .lines()
            .filter(|l| l.starts_with("burst warning "))
            .count();
        let errors = entries
            .lines()
            .filter(|l| l.starts_with("burst error after 2000"))
            .count();
        assert!(
            warnings == 2000 && errors == 1 && lost == "0",
            "qlen {qlen}: {warnings} warnings and {errors} errors in the journal, {lost} counted \
             lost (program said {program:?})"
        );
    }
}

/// A crash right after a burst, before vlog's writer thread sent it all to
/// journald: the crash handler sends journald one entry saying how many
/// lines it did not get (the crash dump has them), so the journal's count
/// and that one add up to the burst. Run until the crash came before some
/// lines were sent (five runs at most: the writer thread waits 5 ms for a
/// burst to gather, and the crash comes at once).
#[test]
fn journald_is_told_what_a_crash_kept_from_it() {
    if signal_test_skipped() {
        return;
    }
    let exe = build("journald_burst", Link::Static);
    for run in 0..5 {
        let Some((_, entries)) = run_beside_a_private_journald(
            &exe,
            "crash",
            512,
            2000,
            "not sent when the process crashed",
        ) else {
            say_skipped("a private journald needs root, unshare and systemd-journald");
            return;
        };
        let warnings = entries
            .lines()
            .filter(|l| l.starts_with("burst warning "))
            .count();
        let told: usize = entries
            .lines()
            .filter_map(|l| l.strip_prefix("vlog: "))
            .filter(|l| l.contains(" lines for this output were not sent when the process crashed"))
            .filter_map(|l| l.split(' ').next()?.parse::<usize>().ok())
            .sum();
        assert_eq!(
            warnings + told,
            2000,
            "run {run}: {warnings} warnings in the journal, {told} told of:\n{entries}"
        );
        if told > 0 {
            return;
        }
    }
    panic!("in five runs the crash never came before the writer thread sent the burst");
}
