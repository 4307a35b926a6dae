//! fork: children forked while other threads log, daemon(3), and processes
//! sharing one ring file.

use crate::common::*;

#[test]
fn fork_while_logging() {
    let exe = build("fork", Link::Static);
    let rounds = if tool() == Tool::Valgrind {
        "50"
    } else {
        "1000"
    };
    assert_ok("fork", &run_with(&exe, &[rounds], &[]));
}

/// A child forked from a signal handler that interrupted vlog under its
/// lock: its printed line is written while it runs, by a writer thread of
/// its own, though its copy of the logger names the parent's.
#[test]
fn a_child_forked_inside_vlog_writes_its_lines() {
    let dir = scratch_dir("fork_in_handler.d");
    let exe = build("fork_in_handler", Link::Static);
    let out = run_with(&exe, &[dir.to_str().unwrap()], &[]);
    assert_ok("fork_in_handler", &out);
    for line in text(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("skipped"))
    {
        say_skipped(line);
    }
}

#[test]
fn forked_child_goes_on_writing_the_ring_file() {
    let ring = work().join("fork.ring");
    let _ = std::fs::remove_file(&ring);
    let exe = build("fork_ring_file", Link::Static);
    let out = run(&exe, &[("VLOG_BUFFER_FILE", ring.to_str().unwrap())]);
    assert_ok("fork_ring_file", &out);
    let dump = text(&vlog_dump(&[ring.to_str().unwrap()]).stdout);
    assert!(dump.contains(" : parent before fork\n"), "{dump}");
    assert!(dump.contains(" : child message 299\n"), "{dump}");
    let stats = text(&vlog_dump(&["--stats", ring.to_str().unwrap()]).stdout);
    assert!(
        stats.contains("records: 301\n") && stats.contains("torn: 0\n"),
        "{stats}"
    );
}

/// The real daemon(3): the started process exits at once, the daemon goes on
/// writing the ring file.
#[test]
fn a_daemon_goes_on_writing_the_ring_file() {
    let ring = work().join("daemon.ring");
    let _ = std::fs::remove_file(&ring);
    let exe = build("fork_ring_file", Link::Static);
    let out = run_with(
        &exe,
        &["daemon"],
        &[("VLOG_BUFFER_FILE", ring.to_str().unwrap())],
    );
    assert_ok("fork_ring_file daemon", &out);
    let ring = ring.to_str().unwrap();
    for _ in 0..200 {
        let dump = text(&vlog_dump(&[ring]).stdout);
        if dump.contains(" : daemon done\n") {
            assert!(dump.contains(" : before daemon()\n"), "{dump}");
            assert_eq!(dump.matches(" : daemon message ").count(), 300, "{dump}");
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("the daemon did not finish within 10 s");
}

/// A daemon and 4 forked workers log into one ring file at once: every
/// message is there, in order per process, nothing torn or missing; workers
/// killed while logging leave the ring usable.
#[test]
fn processes_sharing_a_ring_file_lose_nothing() {
    let ring = work().join("shared.ring");
    let _ = std::fs::remove_file(&ring);
    let exe = build("shared_ring", Link::Static);
    let out = run_with(
        &exe,
        &["4", "3000"],
        &[
            ("VLOG_BUFFER_FILE", ring.to_str().unwrap()),
            ("VLOG_BUFFER_SIZE", "16M"),
            ("VLOG_LEVEL", "debug"),
            ("VLOG_OUTPUTS", "4:stderr"),
        ],
    );
    assert_ok("shared_ring", &out);
    let ring = ring.to_str().unwrap();
    // A worker killed in the middle of a record leaves it uncommitted: the
    // dump says so (exit status 3), and the stats below bound how many.
    let dump = text(&vlog_dump_allowing_skips(&["--source", "test.shared", ring]).stdout);
    let mut next = [0; 5];
    for line in dump.lines().filter(|l| !l.contains("doomed worker")) {
        if let Some(rest) = line.split(" : process ").nth(1) {
            let (proc, msg) = rest.split_once(" message ").unwrap();
            let (proc, msg): (usize, i32) = (proc.parse().unwrap(), msg.parse().unwrap());
            assert_eq!(msg, next[proc], "process {proc} out of order");
            next[proc] += 1;
        }
    }
    assert_eq!(next, [3000; 5], "every message of every process");
    assert!(
        dump.contains(
            " : all workers done
"
        ),
        "{dump:?}"
    );
    assert!(
        dump.contains(
            " : daemon goes on after killed workers
"
        ),
        "{dump:?}"
    );
    let stats = text(&vlog_dump_allowing_skips(&["--stats", ring]).stdout);
    // Only a killed worker's last record may be missing or torn.
    for line in stats.lines() {
        if let Some(n) = line
            .strip_prefix("torn: ")
            .or(line.strip_prefix("missing: "))
        {
            assert!(n.parse::<u32>().unwrap() <= 20, "{stats}");
        }
    }
}

#[test]
fn a_child_forked_during_a_configuration_call_is_not_bound_by_it() {
    let exe = build("fork_configuring", Link::Static);
    let out = run_with(
        &exe,
        &[],
        &[
            ("VLOG_LEVEL", "2"),
            ("VLOG_BUFFER_SIZE", "8M"),
            ("VLOG_OUTPUTS", "2:stderr"),
        ],
    );
    assert_ok("fork_configuring", &out);
}
