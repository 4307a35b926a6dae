//! vlog's writer thread: lines written off the calling thread, in batches,
//! and none lost that was accepted: not at exit, not when the ring is too
//! small for the burst, not at a crash, not across fork; after SIGKILL, the
//! ring file says which were not written yet. (`c-tests/writer.c`.)

use std::collections::HashMap;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;

use crate::common::*;

/// Runs `writer MODE FILE` in a fresh directory; its output, and the file.
fn run_mode(mode: &str, env: &[(&str, &str)]) -> (std::process::Output, std::path::PathBuf) {
    let exe = build("writer", Link::Static);
    let dir = scratch_dir(&format!("writer-{mode}"));
    let file = dir.join("out.log");
    let out = run_with(&exe, &[mode, file.to_str().unwrap()], env);
    (out, file)
}

/// The messages of `file`'s lines.
fn messages(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    text.lines()
        .map(|l| l.rsplit(" : ").next().unwrap_or("").to_owned())
        .collect()
}

/// Checks that `got` holds `prefix 0` to `prefix n-1` once each, in order.
fn assert_all_in_order(got: &[String], prefix: &str, n: usize) {
    let mine: Vec<&String> = got.iter().filter(|m| m.starts_with(prefix)).collect();
    let want: Vec<String> = (0..n).map(|i| format!("{prefix}{i}")).collect();
    let first_wrong = mine.iter().zip(&want).position(|(g, w)| *g != w);
    assert!(
        mine.len() == n && first_wrong.is_none(),
        "{prefix}: {} lines, first out of place at {first_wrong:?}: {:?}",
        mine.len(),
        first_wrong.map(|i| (mine[i], &want[i]))
    );
}

#[test]
fn four_threads_of_info_lines_reach_the_file_whole_and_in_order() {
    let (out, file) = run_mode("threads", &[]);
    assert_ok("writer threads", &out);
    let got = messages(&file);
    for t in 0..4 {
        assert_all_in_order(&got, &format!("thread {t} line "), 100_000);
    }
    assert_eq!(got.len(), 400_000, "lines in {}", file.display());
}

#[test]
fn an_error_line_is_written_when_its_call_returns() {
    let (out, _) = run_mode("error", &[]);
    assert_ok("writer error", &out);
}

#[test]
fn a_ring_too_small_for_the_burst_loses_no_line() {
    let (out, file) = run_mode("small", &[]);
    assert_ok("writer small", &out);
    let got = messages(&file);
    let lines: Vec<String> = got
        .iter()
        .filter_map(|m| m.strip_suffix(", with some words to fill the ring sooner"))
        .map(str::to_owned)
        .collect();
    assert_all_in_order(&lines, "small ring line ", 20_000);
}

#[test]
fn a_crash_right_after_a_burst_writes_every_line_and_the_whole_dump() {
    if signal_test_skipped() {
        return;
    }
    let dump = work().join("writer-crash.dump");
    let _ = std::fs::remove_file(&dump);
    let dump_env = format!("file:{}", dump.display());
    // A ring that holds the burst: the crash comes while the writer thread
    // lets it gather, and the crash handler writes it.
    let (out, file) = run_mode(
        "crash",
        &[("VLOG_DUMP", &dump_env), ("VLOG_BUFFER_SIZE", "4M")],
    );
    assert_killed_by(&out, libc::SIGSEGV);
    assert_all_in_order(&messages(&file), "crash burst line ", 2000);
    let dump = std::fs::read_to_string(&dump).unwrap_or_default();
    assert!(
        dump.starts_with("vlog: fatal signal SIGSEGV")
            && dump.contains("vlog: ring, oldest first:\n")
            && dump.contains(" : crash burst line 1999\nvlog: end of dump, "),
        "{dump}"
    );
}

#[test]
fn after_sigkill_vlog_dump_lists_the_lines_not_yet_written() {
    let ring = work().join("writer-killed.ring");
    let _ = std::fs::remove_file(&ring);
    let (out, file) = run_mode("killed", &[("VLOG_BUFFER_FILE", ring.to_str().unwrap())]);
    assert_eq!(out.status.signal(), Some(libc::SIGKILL), "{:?}", out.status);
    let written = messages(&file);
    let listed = text(&vlog_dump(&["--unprinted", ring.to_str().unwrap()]).stdout);
    let unprinted: Vec<String> = listed
        .lines()
        .map(|l| l.rsplit(" : ").next().unwrap_or("").to_owned())
        .collect();
    // Each line is in the file or listed (a batch written just as the
    // process was killed may be both).
    let mut seen: HashMap<&str, u32> = HashMap::new();
    for m in written.iter().chain(&unprinted) {
        *seen.entry(m.as_str()).or_default() += 1;
    }
    let missing: Vec<usize> = (0..1000)
        .filter(|i| !seen.contains_key(format!("killed burst line {i}").as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "neither written nor listed: {missing:?}; {} written, {} listed: {listed}",
        written.len(),
        unprinted.len()
    );
    // What is listed runs from some line to the last, in order.
    if let Some(first) = unprinted.first() {
        let from: usize = first["killed burst line ".len()..].parse().unwrap();
        let want: Vec<String> = (from..1000)
            .map(|i| format!("killed burst line {i}"))
            .collect();
        assert_eq!(unprinted, want, "{listed}");
    }
}

#[test]
fn a_forked_child_writes_its_own_lines_and_none_of_its_parents() {
    let (out, file) = run_mode("fork", &[]);
    assert_ok("writer fork", &out);
    let got = messages(&file);
    assert_all_in_order(&got, "before the fork ", 100);
    assert_all_in_order(&got, "in the child ", 100);
    assert_all_in_order(&got, "in the parent ", 100);
    assert_eq!(got.len(), 300, "{got:?}");
}

#[test]
fn with_the_writer_thread_off_the_program_stays_single_threaded() {
    let (out, file) = run_mode("alone", &[("VLOG_WRITER", "caller")]);
    assert_ok("writer alone, VLOG_WRITER=caller", &out);
    assert_all_in_order(&messages(&file), "alone ", 1000);
    let (out, _) = run_mode("alone", &[("VLOG_WRITER", "none")]);
    assert!(
        text(&out.stderr).contains("ignoring VLOG_WRITER: 'none' is not a writer"),
        "{}",
        text(&out.stderr)
    );
}

/// Review findings, each a probe that failed before its fix.
#[test]
fn lines_after_a_fault_the_program_recovers_from_are_still_written() {
    if signal_test_skipped() {
        return;
    }
    let (out, _) = run_mode("recover", &[]);
    assert_ok("writer recover", &out);
}

#[test]
fn a_forked_child_sharing_the_ring_file_writes_none_of_its_parents_lines() {
    let ring = work().join("writer-sharedfork.ring");
    let _ = std::fs::remove_file(&ring);
    let (out, file) = run_mode(
        "sharedfork",
        &[("VLOG_BUFFER_FILE", ring.to_str().unwrap())],
    );
    assert_ok("writer sharedfork", &out);
    let parent = messages(&file);
    let child = messages(&file.with_extension("log.child"));
    assert_all_in_order(&parent, "parent line ", 500);
    assert_eq!(parent.len(), 500, "the parent's file: {parent:?}");
    assert_all_in_order(&child, "child line ", 100);
    assert_eq!(child.len(), 100, "the child's file: {child:?}");
}

#[test]
fn lines_of_exit_handlers_and_destructors_after_vlogs_are_written() {
    let (out, file) = run_mode("atexit", &[]);
    assert_ok("writer atexit", &out);
    let got = messages(&file);
    for want in [
        "main runs",
        "from an exit handler registered before vlog's",
        "from a destructor",
    ] {
        assert!(got.iter().any(|m| m == want), "{want:?} not in {got:?}");
    }
}

#[test]
fn a_thread_whose_only_cancellation_points_are_info_lines_ends_on_a_cancel() {
    let (out, _) = run_mode("cancel", &[]);
    assert_ok("writer cancel", &out);
}

/// The messages of the file's lines as `tT lI`, without the padding that
/// follows (the small-ring modes' lines).
fn thread_and_line(file: &Path) -> Vec<String> {
    messages(file)
        .iter()
        .map(|m| m.splitn(3, ' ').take(2).collect::<Vec<_>>().join(" "))
        .collect()
}

#[test]
fn eight_threads_into_a_small_ring_lose_no_line() {
    let (out, file) = run_mode("smallmany", &[]);
    assert_ok("writer smallmany", &out);
    let got = thread_and_line(&file);
    for t in 0..8 {
        assert_all_in_order(&got, &format!("t{t} l"), 5000);
    }
}

/// Lines so long that making room for one in a 16 KiB ring moves the head
/// past the tail for a moment: every line is written, and no walk that
/// met that moment calls records damaged (a false "lines are lost").
#[test]
fn huge_lines_into_a_small_ring_lose_none_and_say_none_lost() {
    let (out, file) = run_mode("smallhuge", &[]);
    assert_ok("writer smallhuge", &out);
    let text = std::fs::read_to_string(&file).unwrap();
    let said: Vec<&str> = text.lines().filter(|l| l.contains(" : vlog : ")).collect();
    assert!(said.is_empty(), "vlog said: {said:?}");
    let got = thread_and_line(&file);
    for t in 0..4 {
        assert_all_in_order(&got, &format!("t{t} l"), 1500);
    }
}

/// A crash while three other threads flood a file output through a 4 MiB
/// ring file (`c-tests/crash_flood.c`; the dump to a pipe read slowly, so
/// that it takes a while), ten times: every line a call had returned from
/// before the fault is in the log file, the crash dump or the ring
/// (`vlog-dump --unprinted`), or the log file says how many were lost.
#[test]
fn a_crash_while_other_threads_log_keeps_every_line_they_logged() {
    if signal_test_skipped() {
        return;
    }
    let exe = build("crash_flood", Link::Static);
    for round in 0..10 {
        let dir = scratch_dir("writer-crash-flood");
        let (log, ring, dump, progress) = (
            dir.join("out.log"),
            dir.join("flood.ring"),
            dir.join("crash.dump"),
            dir.join("progress"),
        );
        let outputs = format!("2:file:{}", log.display());
        let out = run_with(
            &exe,
            &[progress.to_str().unwrap(), dump.to_str().unwrap()],
            &[
                ("VLOG_OUTPUTS", &outputs),
                ("VLOG_LEVEL", "info"),
                ("VLOG_BUFFER_FILE", ring.to_str().unwrap()),
                ("VLOG_BUFFER_SIZE", "4M"),
            ],
        );
        assert_killed_by(&out, libc::SIGSEGV);
        // The dump's reader, the program's child, ends with the pipe.
        let mut dump_text = String::new();
        for _ in 0..400 {
            dump_text = std::fs::read_to_string(&dump).unwrap_or_default();
            if dump_text.contains("vlog: end of dump") {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let counters = std::fs::read(&progress).unwrap();
        let at_fault: Vec<u64> = (3..6)
            .map(|i| u64::from_ne_bytes(counters[8 * i..8 * i + 8].try_into().unwrap()))
            .collect();
        // Every "tN line I" found anywhere.
        let mut seen = std::collections::HashSet::new();
        let mut take = |text: &str| {
            for line in text.lines() {
                let Some(msg) = line.rsplit(" : ").next() else {
                    continue;
                };
                if let Some((t, i)) = msg
                    .strip_prefix('t')
                    .and_then(|m| m.split_once(" line "))
                    .and_then(|(t, i)| Some((t.parse::<usize>().ok()?, i.parse::<u64>().ok()?)))
                {
                    seen.insert((t, i));
                }
            }
        };
        let log_text = std::fs::read_to_string(&log).unwrap_or_default();
        take(&log_text);
        take(&dump_text);
        take(&text(
            &vlog_dump_allowing_skips(&["--unprinted", ring.to_str().unwrap()]).stdout,
        ));
        let missing: Vec<(usize, u64)> = (0..3)
            .flat_map(|t| (0..at_fault[t]).map(move |i| (t, i)))
            .filter(|k| !seen.contains(k))
            .collect();
        // What the log file says it lost, if anything.
        let said_lost: u64 = log_text
            .lines()
            .filter(|l| l.contains(" : vlog : ") && l.contains(" lost"))
            .filter_map(|l| {
                l.rsplit(" : ")
                    .next()?
                    .split(' ')
                    .next()?
                    .parse::<u64>()
                    .ok()
            })
            .sum();
        assert!(
            missing.len() as u64 <= said_lost,
            "round {round}: {} lines logged before the fault (of {at_fault:?}) are nowhere, the \
             log file says {said_lost} lost; first missing {:?}; stderr:\n{}",
            missing.len(),
            &missing[..missing.len().min(5)],
            text(&out.stderr)
        );
    }
}

/// Four threads call exit() at once, each after 2,000 lines
/// (`c-tests/exit_race.c`), 40 times: every line is in the file, whichever
/// thread's exit runs first or last; and at quick_exit(3).
#[test]
fn every_line_is_written_when_several_threads_exit_at_once() {
    let exe = build("exit_race", Link::Static);
    let rounds = if tool() == Tool::Valgrind { 5 } else { 40 };
    for round in 0..rounds {
        let dir = scratch_dir("writer-exit-race");
        let log = dir.join("out.log");
        let outputs = format!("2:file:{}", log.display());
        let out = run(&exe, &[("VLOG_OUTPUTS", &outputs), ("VLOG_LEVEL", "info")]);
        assert_ok(&format!("exit_race round {round}"), &out);
        let got = messages(&log);
        for t in 0..4 {
            assert_all_in_order(&got, &format!("t{t} line "), 2000);
        }
    }
    // quick_exit(3) from every thread at once: the same.
    for round in 0..rounds / 2 {
        let dir = scratch_dir("writer-quick-exit");
        let log = dir.join("out.log");
        let outputs = format!("2:file:{}", log.display());
        let out = run_with(
            &exe,
            &["quick"],
            &[("VLOG_OUTPUTS", &outputs), ("VLOG_LEVEL", "info")],
        );
        assert_ok(&format!("exit_race quick, round {round}"), &out);
        let got = messages(&log);
        for t in 0..4 {
            assert_all_in_order(&got, &format!("t{t} line "), 2000);
        }
    }
}
