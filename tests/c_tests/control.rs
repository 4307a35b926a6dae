//! The control socket: every command from a client's side, the socket
//! file's rules, hostile requests, fork, a program that closes every
//! descriptor, four threads logging while the filters change, a program's
//! own loop serving it, dump and follow while the ring wraps (all in
//! `c-tests/control.c`); then vlog-ctl against a running daemon, and who
//! may use the socket, with clients of other users (setpriv).

use crate::common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A directory of the test's own, 0700 (a socket's directory must be
/// writable by nobody else).
fn private_dir(name: &str) -> PathBuf {
    let dir = scratch_dir(name);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

fn mode(name: &str) -> PathBuf {
    let dir = private_dir(&format!("control-{name}"));
    let exe = build("control", Link::Static);
    let out = run_within(90, &exe, &[name, dir.to_str().unwrap()], &[]);
    assert_ok(&format!("control {name}"), &out);
    for skipped in text(&out.stderr)
        .lines()
        .filter_map(|l| l.strip_prefix("SKIPPED "))
    {
        say_skipped(skipped);
    }
    dir
}

#[test]
fn the_socket_file_is_removed_at_exit() {
    let dir = mode("exits");
    assert!(!dir.join("ctl.sock").exists(), "{dir:?}");
}

#[test]
fn a_bad_vlog_control_is_warned_about_and_makes_nothing() {
    let dir = private_dir("control-bad-env");
    let exe = build("control", Link::Static);
    for (value, said) in [
        (
            "relative/ctl.sock",
            "ignoring VLOG_CONTROL: invalid control socket 'relative/ctl.sock'",
        ),
        (
            "/nonexistent-dir/ctl.sock",
            "ignoring VLOG_CONTROL: cannot open the control socket",
        ),
    ] {
        // `exits` opens its own socket after the first call read this.
        let out = run_within(
            30,
            &exe,
            &["exits", dir.to_str().unwrap()],
            &[("VLOG_CONTROL", value)],
        );
        assert_ok("control exits", &out);
        assert!(text(&out.stderr).contains(said), "{}", text(&out.stderr));
    }
    assert!(
        !Path::new("/nonexistent-dir").exists(),
        "{:?}",
        Path::new("/nonexistent-dir")
    );
}

#[test]
fn every_command_answers_with_the_environments_parsers_and_errors() {
    mode("commands");
}

#[test]
fn the_socket_file_is_made_safely_and_never_takes_anothers() {
    mode("files");
}

#[test]
fn oversized_silent_and_stalled_clients_hold_up_nobody() {
    mode("hostile");
}

#[test]
fn a_forked_child_does_not_serve_its_parents_socket() {
    if tool() == Tool::Valgrind {
        // As in the fork tests: memcheck counts the parent's threads'
        // records in the child's heap as the child's leaks.
        say_skipped(
            "under Valgrind: the parent's control thread's records read as the child's leaks",
        );
        return;
    }
    mode("fork");
}

#[test]
fn a_program_that_closes_every_descriptor_gets_a_new_socket_and_keeps_its_files() {
    mode("closes-all");
}

#[test]
fn filters_changed_under_four_logging_threads_apply_to_the_next_message() {
    mode("threads");
}

/// A signal handler that logs while the program's loop serves a round (the
/// server's lock held) and another thread forks (the logger's lock held,
/// waiting for the server's): dropped and counted, never a deadlock.
#[test]
fn a_handler_inside_a_round_never_waits_for_a_forking_thread() {
    mode("handler-in-round");
}

#[test]
fn a_programs_own_loop_serves_it_and_a_signal_handler_cannot_deadlock_it() {
    mode("own-loop");
}

#[test]
fn dump_and_follow_while_the_ring_wraps() {
    mode("wraps");
}

// ---- vlog-ctl against a running daemon ---------------------------------

/// `c-tests/control.c serve`: logs every 20 ms with its socket at
/// `dir/ctl.sock` (VLOG_CONTROL), until killed.
pub(crate) struct Daemon {
    child: Child,
}

impl Daemon {
    pub(crate) fn start(exe: &Path, dir: &Path, control: &str, user: Option<u32>) -> Daemon {
        let env = [
            ("VLOG_CONTROL", control),
            ("VLOG_BUFFER_SIZE", "1M"),
            ("VLOG_OUTPUTS", "4:stderr"),
        ];
        Daemon::start_mode(exe, dir, "serve", &env, user)
    }

    /// `c-tests/control.c MODE dir` with `env`, once it says it is ready.
    pub(crate) fn start_mode(
        exe: &Path,
        dir: &Path,
        mode: &str,
        env: &[(&str, &str)],
        user: Option<u32>,
    ) -> Daemon {
        let ready = dir.join("ready");
        let _ = std::fs::remove_file(&ready);
        let mut cmd = match user {
            Some(uid) => {
                let mut c = Command::new("setpriv");
                c.arg(format!("--reuid={uid}"))
                    .arg(format!("--regid={uid}"))
                    .arg("--clear-groups")
                    .arg(exe);
                c
            }
            None => command(exe),
        };
        without_vlog_env(&mut cmd);
        cmd.args([mode, dir.to_str().unwrap()])
            .envs(env.iter().copied())
            .stdin(Stdio::null());
        let mut daemon = Daemon {
            child: spawn(&mut cmd),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !ready.exists() {
            if let Some(status) = daemon.child.try_wait().unwrap() {
                panic!("the daemon ended: {status}");
            }
            assert!(Instant::now() < deadline, "the daemon did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        daemon
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn vlog_ctl_as(user: Option<(u32, Option<u32>)>, args: &[&str]) -> Output {
    let exe = env!("CARGO_BIN_EXE_vlog-ctl");
    let mut cmd = match user {
        Some((uid, group)) => {
            let mut c = Command::new("setpriv");
            c.arg(format!("--reuid={uid}"))
                .arg(format!("--regid={uid}"));
            match group {
                Some(g) => c.arg(format!("--groups={g}")),
                None => c.arg("--clear-groups"),
            };
            c.arg(copied_ctl(exe));
            c
        }
        None => Command::new(exe),
    };
    cmd.args(args).stdin(Stdio::null()).output().unwrap()
}

pub(crate) fn vlog_ctl(args: &[&str]) -> Output {
    vlog_ctl_as(None, args)
}

/// vlog-ctl copied where any user may run it (the build directory may be
/// under a home only its owner may enter).
pub(crate) fn copied_ctl(exe: &str) -> PathBuf {
    let dir = open_dir("vlog-ctl-bin");
    let copy = dir.join("vlog-ctl");
    if !copy.exists() {
        std::fs::copy(exe, &copy).unwrap();
    }
    copy
}

/// A directory under /tmp that every user may enter (0755), made afresh
/// per run.
pub(crate) fn open_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(format!("/tmp/vlog-test-{}-{name}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

pub(crate) fn ok_stdout(args: &[&str]) -> String {
    let out = vlog_ctl(args);
    assert_ok(&format!("vlog-ctl {args:?}"), &out);
    text(&out.stdout)
}

/// `held` means one thing in every tool: the intact records the ring holds
/// now. A daemon at rest whose ring wrapped: vlog-ctl's stats and
/// vlog-dump --stats of its ring file say the same number.
#[test]
fn held_is_the_same_number_in_vlog_ctl_and_vlog_dump() {
    let dir = private_dir("control-held");
    let exe = build("control", Link::Static);
    let sock = dir.join("ctl.sock");
    let ring = dir.join("d.ring");
    let s = sock.to_str().unwrap();
    let env = [
        ("VLOG_CONTROL", s),
        ("VLOG_BUFFER_SIZE", "16K"),
        ("VLOG_BUFFER_FILE", ring.to_str().unwrap()),
        ("VLOG_FILTERS", "1:qemu"),
    ];
    let _daemon = Daemon::start_mode(&exe, &dir, "rest", &env, None);
    let number = |text: &str, name: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("no '{name}' line: {text}"))
    };
    let ctl = ok_stdout(&[s, "stats"]);
    let out = vlog_dump(&["--stats", ring.to_str().unwrap()]);
    assert_ok("vlog-dump --stats", &out);
    let dump = text(&out.stdout);
    assert!(number(&ctl, "lost ") > 0, "the ring did not wrap: {ctl}");
    assert_eq!(
        number(&ctl, "held "),
        number(&dump, "held:"),
        "vlog-ctl:\n{ctl}\nvlog-dump:\n{dump}"
    );
    assert_eq!(
        number(&ctl, "records "),
        number(&dump, "recorded:"),
        "{ctl}\n{dump}"
    );
}

#[test]
fn vlog_ctl_changes_a_running_daemons_filters_and_takes_its_ring() {
    let dir = private_dir("control-ctl");
    let exe = build("control", Link::Static);
    let sock = dir.join("ctl.sock");
    let daemon = Daemon::start(&exe, &dir, sock.to_str().unwrap(), None);
    let s = sock.to_str().unwrap();

    let shown = ok_stdout(&[s, "show"]);
    assert!(
        shown.starts_with("VLOG_LEVEL=3\nVLOG_FILTERS=''\n"),
        "{shown}"
    );
    assert!(shown.contains(&format!("VLOG_CONTROL={s}\n")), "{shown}");
    let said = ok_stdout(&[s, "dump"]);
    assert!(!said.contains("tick"), "{said}");

    assert_eq!(
        ok_stdout(&[s, "filters", "1:qemu"]),
        "VLOG_FILTERS=1:qemu\n"
    );
    std::thread::sleep(Duration::from_millis(300));
    let dumped = ok_stdout(&[s, "dump", "--source", "qemu"]);
    assert!(dumped.contains(": debug : qemu.monitor : say:"), "{dumped}");
    assert!(!dumped.contains("request"), "{dumped}");
    let json = ok_stdout(&[s, "dump", "--json", "--grep", "served"]);
    assert!(json.lines().all(|l| l.starts_with("{\"seq\":")), "{json}");
    let said = ok_stdout(&[s, "--json", "show"]);
    assert!(
        said.starts_with("{\"ok\":true,\"VLOG_LEVEL\":\"3\""),
        "{said}"
    );

    // The same through --pid.
    let pid = daemon.pid().to_string();
    let said = ok_stdout(&["--pid", &pid, "stats"]);
    assert!(said.starts_with("buffer_size 1048576\nrecords "), "{said}");
    assert!(said.lines().any(|l| l == "dropped_in_flight 0"), "{said}");
    // What the ring holds and the time it covers, for sizing it.
    let held: u64 = said
        .lines()
        .find_map(|l| l.strip_prefix("held "))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no held line: {said}"));
    assert!(held > 0, "{said}");
    assert!(
        said.lines()
            .any(|l| l.strip_prefix("covers_s ").is_some_and(|v| {
                v.split_once('.').is_some_and(|(s, ms)| {
                    s.parse::<u64>().is_ok() && ms.len() == 3 && ms.parse::<u32>().is_ok()
                })
            })),
        "{said}"
    );
    let json = ok_stdout(&[s, "--json", "stats"]);
    let covers = json.split("\"covers_s\":").nth(1).unwrap_or("");
    assert!(
        covers.starts_with(|c: char| c.is_ascii_digit()),
        "a number: {json}"
    );
    // vlog-dump's short options mean the same through vlog-ctl.
    let short = ok_stdout(&[s, "dump", "-p", "debug", "-s", "qemu"]);
    assert!(short.contains(": debug : qemu.monitor : say:"), "{short}");
    assert!(!short.contains(" : vlog : "), "{short}");
    // An option left without its value is the program's error, never
    // given the option vlog-ctl adds (its encoded frames) as one.
    let out = vlog_ctl(&[s, "dump", "--grep"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--grep needs a value"),
        "{}",
        text(&out.stderr)
    );
    // The change is in the ring, naming who made it.
    let changes = ok_stdout(&[s, "dump", "--source", "vlog"]);
    assert!(
        changes.contains("filters changed through the control socket by uid")
            && changes.contains("[OLD=\"\" NEW=1:qemu PEER_UID="),
        "{changes}"
    );

    // follow --json: new records, as they come.
    let mut follow = Command::new(env!("CARGO_BIN_EXE_vlog-ctl"))
        .args([s, "follow", "--json", "--source", "qemu"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(follow.stdout.take().unwrap()));
    for _ in 0..5 {
        let line = lines.next().unwrap().unwrap();
        assert!(
            line.starts_with("{\"seq\":") && line.contains("\"source\":\"qemu.monitor\""),
            "{line}"
        );
    }
    follow.kill().unwrap();
    follow.wait().unwrap();

    // Errors and exit codes.
    let bad = vlog_ctl(&[s, "filters", "9:qemu"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        text(&bad.stderr).contains("invalid priority '9' in filter '9:qemu'"),
        "{:?}",
        text(&bad.stderr)
    );
    assert_eq!(vlog_ctl(&[s, "frobnicate"]).status.code(), Some(2));
    assert_eq!(vlog_ctl(&[s]).status.code(), Some(2));
    let gone = vlog_ctl(&[dir.join("none.sock").to_str().unwrap(), "show"]);
    assert_eq!(gone.status.code(), Some(3));
    assert!(
        text(&gone.stderr).contains("No such file or directory"),
        "{:?}",
        text(&gone.stderr)
    );
    let nobody = vlog_ctl(&["--pid", "999999999", "show"]);
    assert_eq!(nobody.status.code(), Some(3));
    assert!(
        text(&nobody.stderr).contains("no process 999999999"),
        "{:?}",
        text(&nobody.stderr)
    );
    let me = std::process::id().to_string();
    let none = vlog_ctl(&["--pid", &me, "show"]);
    assert!(
        text(&none.stderr).contains("has no control socket"),
        "{}",
        text(&none.stderr)
    );

    drop(daemon);
}

/// Whether this run may make processes of other users (root).
pub(crate) fn can_change_user() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let setpriv = Command::new("setpriv").arg("--version").output().is_ok();
    if !root || !setpriv {
        needs_installed("clients of other users need root and setpriv (util-linux)");
    }
    root && setpriv
}

#[test]
fn only_the_daemons_user_root_and_its_group_may_use_the_socket() {
    if !can_change_user() {
        return;
    }
    let exe = build("control", Link::Static);
    // A root daemon whose socket lets group 65530 in.
    let dir = open_dir("control-uids");
    let sock = dir.join("ctl.sock");
    let spec = format!("{}?group=65530", sock.display());
    let daemon = Daemon::start(&exe, &dir, &spec, None);
    let s = sock.to_str().unwrap();
    let said = ok_stdout(&[s, "show"]);
    assert!(said.contains("?group=65530"), "{said}");
    // A member of the group may; another user may not reach the file.
    let member = vlog_ctl_as(Some((65534, Some(65530))), &[s, "filters", "1:qemu"]);
    assert_ok("vlog-ctl as a member of the group", &member);
    let other = vlog_ctl_as(Some((65534, None)), &[s, "show"]);
    assert_eq!(other.status.code(), Some(3), "{}", text(&other.stderr));
    assert!(
        text(&other.stderr).contains("Permission denied"),
        "{:?}",
        text(&other.stderr)
    );
    // With the file opened to everyone by mistake, the credentials still
    // refuse: one line, and the connection closed.
    std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o666)).unwrap();
    let refused = vlog_ctl_as(Some((65534, None)), &[s, "filters", "1:*"]);
    assert_eq!(refused.status.code(), Some(1));
    assert_eq!(
        text(&refused.stderr),
        "vlog-ctl: refused: uid 65534 may not control this process (uid 0, root and group 65530 may)\n"
    );
    let said = ok_stdout(&[s, "show"]);
    assert!(said.contains("VLOG_FILTERS=1:qemu\n"), "{said}");
    drop(daemon);

    // A daemon of user 65534: its own user may, and root.
    let dir = open_dir("control-nobody");
    let own = dir.join("own");
    let _ = std::fs::create_dir(&own);
    std::os::unix::fs::chown(&own, Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o700)).unwrap();
    let copy = dir.join("control");
    std::fs::copy(&exe, &copy).unwrap();
    let sock = own.join("ctl.sock");
    let daemon = Daemon::start(&copy, &own, sock.to_str().unwrap(), Some(65534));
    let s = sock.to_str().unwrap();
    let same = vlog_ctl_as(Some((65534, None)), &[s, "level", "debug"]);
    assert_ok("vlog-ctl as the daemon's user", &same);
    let said = ok_stdout(&[s, "show"]);
    assert!(said.starts_with("VLOG_LEVEL=1\n"), "{said}");
    let meta = std::fs::symlink_metadata(&sock).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    drop(daemon);
    let _ = std::fs::remove_dir_all(open_dir("control-uids"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `VLOG_CONFIG`: the same settings as the variables, from a file the
/// daemon's user owns; the environment wins; `vlog-ctl SOCKET reload`
/// applies the file again, all or nothing; a file another user could
/// write, or that is not the daemon's, is refused with its reason.
#[test]
fn a_configuration_file_is_read_at_start_and_reloaded() {
    use std::os::unix::fs::PermissionsExt;
    let dir = private_dir("control-config");
    let exe = build("control", Link::Static);
    let conf = dir.join("vlog.conf");
    let write = |text: &str, mode: u32| {
        let _ = std::fs::remove_file(&conf);
        std::fs::write(&conf, text).unwrap();
        std::fs::set_permissions(&conf, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    write(
        "# the daemon's logging\nVLOG_FILTERS=\"1:qemu 3:util\"\nVLOG_CONTEXT=5\nVLOG_LEVELS=2\n",
        0o600,
    );
    let sock = dir.join("ctl.sock");
    let s = sock.to_str().unwrap();
    let c = conf.to_str().unwrap();
    let daemon = Daemon::start_mode(
        &exe,
        &dir,
        "rest",
        &[
            ("VLOG_CONTROL", s),
            ("VLOG_CONFIG", c),
            ("VLOG_BUFFER_SIZE", "1M"),
        ],
        None,
    );
    let shown = ok_stdout(&[s, "show"]);
    assert!(
        shown.contains("VLOG_FILTERS='1:qemu 3:util'\n") && shown.contains("VLOG_CONTEXT=5"),
        "{shown}"
    );
    // The file changed, then reloaded: its settings in force, the rest kept.
    write("VLOG_FILTERS=1:util\nVLOG_LEVEL=info\n", 0o644);
    let said = ok_stdout(&[s, "reload"]);
    assert_eq!(said, "VLOG_LEVEL=2\nVLOG_FILTERS=1:util\n");
    let shown = ok_stdout(&[s, "show"]);
    assert!(
        shown.starts_with("VLOG_LEVEL=2\nVLOG_FILTERS=1:util\n")
            && shown.contains("VLOG_CONTEXT=5"),
        "{shown}"
    );
    // All or nothing, every reason said.
    write(
        "VLOG_FILTERS=9:x\nVLOG_OUTPUT=1:stderr\nVLOG_LEVEL=1\n",
        0o600,
    );
    let out = vlog_ctl(&[s, "reload"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("not reloaded, nothing changed")
            && err.contains(
                "line 2: vlog reads no setting 'VLOG_OUTPUT' (did you mean VLOG_OUTPUTS?)"
            )
            && err.contains("invalid priority '9'"),
        "{err}"
    );
    assert!(ok_stdout(&[s, "show"]).starts_with("VLOG_LEVEL=2\nVLOG_FILTERS=1:util\n"));
    // The file rules: only the daemon's own file, which nobody else may write.
    write("VLOG_LEVEL=1\n", 0o664);
    let err = text(&vlog_ctl(&[s, "reload"]).stderr);
    assert!(err.contains("others may write to it"), "{err}");
    write("VLOG_LEVEL=1\n", 0o600);
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        std::os::unix::fs::chown(&conf, Some(65534), None).unwrap();
        let err = text(&vlog_ctl(&[s, "reload"]).stderr);
        assert!(err.contains("it belongs to uid 65534"), "{err}");
    }
    let _ = std::fs::remove_file(&conf);
    std::os::unix::fs::symlink("/etc/passwd", &conf).unwrap();
    let err = text(&vlog_ctl(&[s, "reload"]).stderr);
    assert!(err.contains("symbolic link"), "{err}");
    // The changes are in the ring, naming who made them.
    let changes = ok_stdout(&[s, "dump", "--source", "vlog"]);
    assert!(
        changes.contains("configuration reloaded from VLOG_CONFIG") && changes.contains("SET="),
        "{changes}"
    );
    drop(daemon);

    // The environment wins over the file, at start and at reload.
    write("VLOG_FILTERS=1:qemu\n", 0o600);
    let _daemon = Daemon::start_mode(
        &exe,
        &dir,
        "rest",
        &[
            ("VLOG_CONTROL", s),
            ("VLOG_CONFIG", c),
            ("VLOG_FILTERS", "1:from-env"),
        ],
        None,
    );
    assert!(ok_stdout(&[s, "show"]).contains("VLOG_FILTERS=1:from-env\n"));
    assert_eq!(ok_stdout(&[s, "reload"]), "");
    assert!(ok_stdout(&[s, "show"]).contains("VLOG_FILTERS=1:from-env\n"));
}
