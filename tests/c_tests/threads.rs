//! Threads and re-entrancy: threads at full rate into one ring, lock-free
//! dumps beside them, a signal handler that logs on a thread inside vlog.

use crate::common::*;

#[test]
fn four_threads_leave_intact_ordered_records() {
    check("threads");
}

#[test]
fn nested_call_from_signal_handler_is_dropped_not_deadlocked() {
    check("nested_signal");
}

#[test]
fn lock_free_dump_during_writes_prints_only_whole_records() {
    check("concurrent_dump");
}

/// 2, 8 and 64 threads at full rate into a 16 KiB ring for a second each,
/// dumped without a lock all the while: intact records, consecutive
/// per-thread messages, exact accounting (`make soak` runs it longer).
#[test]
fn threads_at_full_rate_keep_the_ring_intact_and_counted() {
    let exe = build("soak", Link::Static);
    // valgrind runs one thread at a time: with 64 writers the dumping thread
    // would wait minutes for its turn.
    let counts: &[&str] = if tool() == Tool::Valgrind {
        &["2", "8"]
    } else {
        &["2", "8", "64"]
    };
    for &threads in counts {
        let out = run_with(&exe, &[threads, "1"], &[]);
        assert_ok(&format!("soak {threads}"), &out);
    }
}

#[test]
fn a_signal_handler_that_logs_inside_any_entry_point_never_deadlocks() {
    // Under AddressSanitizer the part that interposes malloc is left out.
    check_saying_skips("reentrant");
}

/// A cancel pending during any call acts as the call returns, never inside
/// vlog; the part with a signal handler that prints is left out under
/// valgrind, which cannot unwind its own signal frames.
#[test]
fn a_thread_cancelled_while_it_logs_leaves_vlog_whole() {
    let exe = build("cancel", Link::Static);
    let args: &[&str] = if tool() == Tool::Valgrind {
        &["no-handler"]
    } else {
        &[]
    };
    let out = run_with(&exe, args, &[]);
    assert_ok("cancel", &out);
    // No VLOG_* variable: the first call, not a constructor, sets vlog up.
    let first = run_with(&exe, &["first-call"], &[]);
    assert_ok("cancel first-call", &first);
    // A cancel left pending at exit, while vlog's exit handler waits for a
    // receiver that takes nothing: the process ends as exit(7) says.
    let exiting = run_within(60, &exe, &["exit-drain"], &[]);
    assert_eq!(
        exiting.status.code(),
        Some(7),
        "cancel exit-drain: {}\n{}",
        exiting.status,
        text(&exiting.stderr)
    );
    for line in text(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("skipped"))
    {
        say_skipped(line);
    }
}

#[test]
fn a_cancel_while_a_caller_waits_for_a_full_pipe_acts_as_the_call_returns() {
    let exe = build("cancel_room", Link::Static);
    let out = run_with(
        &exe,
        &[],
        &[
            ("VLOG_WRITER", "caller"),
            ("VLOG_OUTPUTS", "2:stderr"),
            ("VLOG_LEVEL", "2"),
        ],
    );
    assert_ok("cancel_room", &out);
}

#[test]
fn every_entry_point_works_while_its_thread_exits() {
    let exe = build("thread_exit", Link::Static);
    let log = scratch_dir("thread_exit.d").join("log");
    assert_ok(
        "thread_exit",
        &run_with(&exe, &[log.to_str().unwrap()], &[]),
    );
}

/// Eviction's walk done ahead without the lock is taken only by the ring
/// it walked, never by a later ring mapped at its address.
#[test]
fn a_walk_done_ahead_is_never_taken_by_another_ring() {
    check("walk_ahead");
}

/// A thread stopped in the middle of copying its record (in flight, its
/// commit word not yet written): a signal handler that logs, dumps,
/// another thread filling the ring (by the flight recorder's way and the
/// general one), a forked child, a resize, another thread's error whose
/// walk passes the stopped line over (written by its thread as it goes
/// on, from the ring it is in, resized or removed meanwhile too), and a
/// crash meanwhile.
#[test]
fn a_record_in_flight_is_waited_for_reported_and_never_overwritten() {
    use std::os::unix::process::ExitStatusExt;
    let exe = build("in_flight", Link::Static);
    for mode in [
        "handler-logs",
        "readers",
        "evict",
        "fork",
        "resize",
        "passed-over",
        "passed-over-resize",
        "passed-over-noring",
    ] {
        let out = run_with(&exe, &[mode], &[]);
        assert_ok(&format!("in_flight {mode}"), &out);
        if mode == "evict" {
            // The errors logged while the ring was stalled, printed past it.
            let stderr = text(&out.stderr);
            let printed = (0..50)
                .filter(|i| stderr.contains(&format!(" : stalled error {i}\n")))
                .count();
            assert_eq!(printed, 50, "{stderr}");
        }
    }
    if signal_test_skipped() {
        return;
    }
    let out = run_with(&exe, &["crash"], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.signal(), Some(libc::SIGABRT), "{stderr}");
    for wanted in [
        "never committed (its writer was still writing it",
        "test.in_flight : copier:",
        "vlog: end of dump",
    ] {
        assert!(stderr.contains(wanted), "{wanted:?} not in:\n{stderr}");
    }
}

/// Every kind of logging call uses at most 8 KiB of its caller's stack
/// (the records are read into buffers on the heap, not on the stack of a
/// thread that writes its own line), with the writer thread and without,
/// through file, JSON (`?sync`) and syslog outputs and an error's context:
/// measured over a painted stack, and run from a thread whose stack is
/// `PTHREAD_STACK_MIN`, its first call among them; and a failed check,
/// measured by a SIGABRT handler of the program's after abort(3).
#[test]
fn a_small_stack_suffices_for_every_kind_of_call() {
    if skipped_under_tool("the tool's own frames make the stack larger") {
        return;
    }
    let dir = scratch_dir("small-stack");
    let d = dir.to_str().unwrap();
    let outputs = format!("1:file:{d}/a.log 1:json:{d}/b.json?sync 1:syslog:x@udp://127.0.0.1:9");
    // Without a `?sync` output, a line the writer thread prints takes the
    // flight recorder's way (reserved, then copied on the caller's stack).
    let printed = format!("1:file:{d}/c.log 1:json:{d}/d.json");
    let exe = build("small_stack", Link::Static);
    for (writer, outputs) in [
        ("thread", &outputs),
        ("caller", &outputs),
        ("thread", &printed),
    ] {
        for mode in ["measure", "min", "check"] {
            let out = run_with(
                &exe,
                &[mode],
                &[
                    ("VLOG_OUTPUTS", outputs.as_str()),
                    ("VLOG_WRITER", writer),
                    ("VLOG_CONTEXT", "20"),
                ],
            );
            assert_ok(
                &format!("small_stack {mode}, VLOG_WRITER={writer}, {outputs}"),
                &out,
            );
            if mode != "min" {
                println!(
                    "VLOG_WRITER={writer}, {outputs}: {}",
                    text(&out.stdout).replace('\n', ", ")
                );
            }
        }
    }
}

/// A daemon under seccomp: with a filter that allows exactly the system
/// calls vlog(7) lists for a written line and for exit, on every thread,
/// every kind of logging call, a levels' watcher that logs told of a
/// change of the filters, a flush and exit(0) pass, with the writer
/// thread and with `VLOG_WRITER=caller` (a call outside the list would
/// kill the process with SIGSYS, and the kind it was in is said).
#[test]
fn every_kind_of_call_passes_a_filter_of_the_documented_system_calls() {
    if skipped_under_tool("the tool makes system calls of its own") {
        return;
    }
    if !cfg!(target_arch = "x86_64") {
        say_skipped("the filter is written for x86_64's system call numbers");
        return;
    }
    let dir = scratch_dir("seccomp-run");
    let exe = build("seccomp", Link::Static);
    for writer in ["thread", "caller"] {
        let out = run_with(&exe, &[dir.to_str().unwrap()], &[("VLOG_WRITER", writer)]);
        let said = text(&out.stdout);
        assert!(
            out.status.success() && said.ends_with("exit\n"),
            "VLOG_WRITER={writer}: {} after: {said}\n{}",
            out.status,
            text(&out.stderr)
        );
    }
    let lines = std::fs::read_to_string(dir.join("a.log")).unwrap_or_default();
    assert!(lines.contains("an error with its context"), "{lines}");
    // A failed check: its line, the crash dump and SIGABRT, not SIGSYS.
    use std::os::unix::process::ExitStatusExt;
    for writer in ["thread", "caller"] {
        let out = run_with(
            &exe,
            &[dir.to_str().unwrap(), "check"],
            &[("VLOG_WRITER", writer)],
        );
        let said = text(&out.stdout);
        let stderr = text(&out.stderr);
        assert!(
            out.status.signal() == Some(libc::SIGABRT)
                && said.ends_with("check\n")
                && stderr.contains("vlog: end of dump"),
            "VLOG_WRITER={writer}, a failed check: {} after: {said}\n{stderr}",
            out.status
        );
        let lines = std::fs::read_to_string(dir.join("a.log")).unwrap_or_default();
        assert!(
            lines.contains("check failed: argc == 2: a failed check under seccomp"),
            "{lines}"
        );
    }
}
