//! An error brings its context: the records its output did not print,
//! marked, oldest first, then the error; bounded, quiet when asked,
//! never a record twice; in files, JSON, journald (a real one) and fluent.
//! (`c-tests/context.c`, which checks its file itself.)

use std::process::Command;

use crate::common::*;

/// Runs `context MODE FILE` in a fresh directory, the daemon's debug
/// records kept in the ring.
fn run_mode(mode: &str, env: &[(&str, &str)]) -> std::process::Output {
    let exe = build("context", Link::Static);
    let dir = scratch_dir(&format!("context-{mode}"));
    let file = dir.join("out.log");
    let mut all = vec![("VLOG_FILTERS", "1:daemon")];
    all.extend_from_slice(env);
    run_with(&exe, &[mode, file.to_str().unwrap()], &all)
}

#[test]
fn an_error_brings_its_threads_records_once_and_not_the_other_threads() {
    assert_ok("context threads", &run_mode("threads", &[]));
}

#[test]
fn no_context_when_off_or_for_an_expected_error() {
    assert_ok("context quiet", &run_mode("quiet", &[]));
    // VLOG_CONTEXT=0 from the environment, and a bad value ignored with
    // one warning, the default in force.
    let exe = build("context", Link::Static);
    let dir = scratch_dir("context-env");
    let file = dir.join("out.log");
    let show = |env: &[(&str, &str)]| {
        let mut all = vec![("VLOG_FILTERS", "1:daemon")];
        all.extend_from_slice(env);
        let out = run_with(&exe, &["json", file.to_str().unwrap()], &all);
        let _ = std::fs::remove_file(&file);
        out
    };
    let out = show(&[("VLOG_CONTEXT", "0")]);
    assert!(
        !out.status.success(),
        "with VLOG_CONTEXT=0 the JSON check finds no context"
    );
    let out = show(&[("VLOG_CONTEXT", "lots")]);
    assert_ok("context json, VLOG_CONTEXT=lots ignored", &out);
    let err = text(&out.stderr);
    assert!(
        err.contains("ignoring VLOG_CONTEXT: invalid number of records 'lots'"),
        "{err}"
    );
}

#[test]
fn a_json_context_record_has_its_own_seq_and_time() {
    assert_ok("context json", &run_mode("json", &[]));
}

#[test]
fn a_relays_error_brings_the_relays_own_lines() {
    assert_ok("context relay", &run_mode("relay", &[]));
}

#[test]
fn records_overwritten_since_the_last_context_are_counted() {
    assert_ok("context wrap", &run_mode("wrap", &[]));
}

#[test]
fn a_forked_child_has_its_own_memory_of_contexts() {
    assert_ok("context fork", &run_mode("fork", &[]));
}

#[test]
fn records_printed_or_from_before_a_change_are_never_context() {
    assert_ok("context reset", &run_mode("reset", &[]));
}

#[test]
fn a_context_reads_at_most_the_last_4_mib_of_the_ring() {
    assert_ok("context window", &run_mode("window", &[]));
}

#[test]
fn processes_sharing_a_ring_file_never_print_a_line_twice() {
    let dir = scratch_dir("context-forkring-ring");
    let ring = dir.join("ring");
    assert_ok(
        "context forkring",
        &run_mode("forkring", &[("VLOG_BUFFER_FILE", ring.to_str().unwrap())]),
    );
}

#[test]
fn a_context_prints_at_most_64_kib_however_long_its_records_render() {
    assert_ok("context bytes", &run_mode("bytes", &[]));
}

#[test]
fn a_forked_childs_context_has_nothing_from_before_the_fork() {
    assert_ok("context forkall", &run_mode("forkall", &[]));
}

#[test]
fn a_process_that_does_not_read_the_ring_reads_no_context_beyond_4_mib() {
    let dir = scratch_dir("context-forkbig-ring");
    let ring = dir.join("ring");
    assert_ok(
        "context forkbig",
        &run_mode(
            "forkbig",
            &[
                ("VLOG_BUFFER_FILE", ring.to_str().unwrap()),
                ("VLOG_BUFFER_SIZE", "16M"),
            ],
        ),
    );
}

/// journald (a real one): the context's entry carries VLOG_CONTEXT=1, its
/// own VLOG_SEQ and VLOG_TIME.
#[test]
fn a_journald_context_entry_is_marked() {
    let Some(_journald) = super::real_daemons::Journald::start() else {
        say_skipped("cannot start systemd-journald (not root, or not installed)");
        return;
    };
    let out = run_mode("journald", &[]);
    assert_ok("context journald", &out);
    let pid = text(&out.stdout).trim().to_string();
    let entries =
        super::real_daemons::journal_entries(&[&format!("_PID={pid}"), "VLOG_SOURCE=daemon"], 2);
    let context = entries
        .lines()
        .find(|l| l.contains("journald context record"))
        .unwrap_or_else(|| panic!("no context entry in:\n{entries}"));
    let error = entries
        .lines()
        .find(|l| l.contains("journald error"))
        .unwrap_or_else(|| panic!("no error entry in:\n{entries}"));
    assert_eq!(json_field(context, "VLOG_CONTEXT"), "1", "{context}");
    assert_eq!(json_field(context, "PRIORITY"), "7", "{context}");
    assert!(
        json_field(context, "VLOG_TIME").starts_with("20"),
        "{context}"
    );
    assert!(
        json_field(context, "VLOG_SEQ").parse::<u64>().is_ok(),
        "{context}"
    );
    assert!(!error.contains("VLOG_CONTEXT"), "{error}");
}

/// fluent: the context's event has `context: true`, its own seq, and its
/// own time as the event's.
#[test]
fn a_fluent_context_event_is_marked() {
    let python = Command::new("/usr/bin/python3")
        .args(["-c", "import msgpack"])
        .output();
    if !python.is_ok_and(|o| o.status.success()) {
        needs_installed("no python3-msgpack (apt-get install python3-msgpack)");
        return;
    }
    let dir = scratch_dir("context-fluent");
    let rx = super::fluent::Receiver::start(&dir, true, 0, &[]);
    let exe = build("context", Link::Static);
    let out = run_with(&exe, &["fluent", &rx.url], &[("VLOG_FILTERS", "1:daemon")]);
    assert_ok("context fluent", &out);
    let lines = rx.wait_for("the error and its context", |l| {
        l.iter().any(|l| l.contains("fluent error"))
    });
    let context = lines
        .iter()
        .find(|l| l.contains("fluent context record"))
        .unwrap_or_else(|| panic!("no context event in:\n{}", lines.join("\n")));
    assert!(context.contains("\"context\": true"), "{context}");
    assert!(context.contains("\"priority\": \"debug\""), "{context}");
    let error = lines.iter().find(|l| l.contains("fluent error")).unwrap();
    assert!(!error.contains("\"context\": true"), "{error}");
}

/// `exe ARGS` as the first process of a pid namespace of its own (under
/// the pass's tool), with `env`; None when no namespace can be made here.
fn in_pid_namespace(exe: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Option<Command> {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let probe = Command::new("unshare")
        .args(if root {
            &["--pid", "--fork", "true"][..]
        } else {
            &["-Urp", "--fork", "true"][..]
        })
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        return None;
    }
    let inner = command(exe);
    let mut cmd = Command::new("unshare");
    cmd.args(if root {
        &["--pid", "--fork", "--"][..]
    } else {
        &["-Urp", "--fork", "--"][..]
    })
    .arg(inner.get_program())
    .args(inner.get_args())
    .args(args);
    for (key, value) in inner.get_envs() {
        if let Some(value) = value {
            cmd.env(key, value);
        }
    }
    without_vlog_env(&mut cmd);
    cmd.envs(env.iter().copied()).current_dir(work());
    Some(cmd)
}

/// Two processes share a ring file, each the pid 1 of its own pid
/// namespace (so their main threads' ids are the same): an error of one
/// prints its own thread's records as context, never the other's.
#[test]
fn an_error_never_brings_another_processs_records() {
    let dir = scratch_dir("context-namespaces");
    let ring = dir.join("ring");
    let out_file = dir.join("b.log");
    let exe = build("shared_context", Link::Static);
    let env = [
        ("VLOG_BUFFER_FILE", ring.to_str().unwrap()),
        ("VLOG_FILTERS", "1:test.shared"),
    ];
    let Some(mut a) = in_pid_namespace(&exe, &["a"], &env) else {
        say_skipped("no pid namespace can be made here (unshare --pid)");
        return;
    };
    let piped = std::process::Stdio::piped;
    let mut a = a.stdin(piped()).stdout(piped()).spawn().expect("start a");
    let mut b = in_pid_namespace(&exe, &["b", out_file.to_str().unwrap()], &env)
        .unwrap()
        .stdin(piped())
        .stdout(piped())
        .stderr(piped())
        .spawn()
        .expect("start b");
    let line_of = |child: &mut std::process::Child| {
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
            &mut line,
        )
        .unwrap();
        line
    };
    use std::io::Write;
    // b's own records, then a's (the same thread id), then b's error.
    assert_eq!(line_of(&mut b), "ready\n", "b did not start");
    a.stdin.as_mut().unwrap().write_all(b"go\n").unwrap();
    assert_eq!(line_of(&mut a), "logged\n", "a did not log");
    b.stdin.as_mut().unwrap().write_all(b"go\n").unwrap();
    let b = b.wait_with_output().unwrap();
    drop(a.stdin.take());
    let a_status = a.wait().unwrap();
    assert_ok("shared_context b", &b);
    assert!(a_status.success(), "a: {a_status:?}");
    // Both wrote the one ring: it holds a's records and b's.
    let dump = text(&vlog_dump(&[ring.to_str().unwrap()]).stdout);
    assert!(
        dump.contains("session key for alice 19") && dump.contains("b failed"),
        "{dump}"
    );
}
