//! The three programs follow one convention (DESIGN.md, "The tools'
//! convention"): an error is `PROG: message` on stderr with nothing of
//! Rust's or the parser's own text, a bad command line adds the short usage
//! (the man page's SYNOPSIS) and a pointer to --help, the same short option
//! means the same thing in each, and every exit status is the one the man
//! page gives.

use std::process::Command;

mod support;

use support::{root, text};

struct Program {
    name: &'static str,
    exe: &'static str,
    usage_status: i32,
}

const PROGRAMS: [Program; 3] = [
    Program {
        name: "vlog-dump",
        exe: env!("CARGO_BIN_EXE_vlog-dump"),
        usage_status: 2,
    },
    Program {
        name: "vlog-ctl",
        exe: env!("CARGO_BIN_EXE_vlog-ctl"),
        usage_status: 2,
    },
    Program {
        name: "vlog-relay",
        exe: env!("CARGO_BIN_EXE_vlog-relay"),
        usage_status: 125,
    },
];

fn program(name: &str) -> &'static Program {
    PROGRAMS.iter().find(|p| p.name == name).unwrap()
}

/// Runs `name` with `args` (no VLOG_* variable): its status, stdout, stderr.
fn run(name: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let mut cmd = Command::new(program(name).exe);
    cmd.args(args).env("LC_ALL", "C");
    for (var, _) in std::env::vars() {
        if var.starts_with("VLOG_") {
            cmd.env_remove(var);
        }
    }
    let out = cmd.output().unwrap();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

/// Every line of `stderr` is the program's: `PROG: ...`, or the usage and
/// --help lines after a bad command line; none carries Rust's or clap's text.
fn assert_said_by(name: &str, args: &[&str], stderr: &str) {
    assert!(!stderr.is_empty(), "{name} {args:?} said nothing");
    for line in stderr.lines() {
        let ours = line.starts_with(&format!("{name}: "))
            || line.starts_with(&format!("Usage: {name} "))
            || line.starts_with(&format!("       {name} "))
            || line == format!("Try '{name} --help' for more information.");
        assert!(
            ours,
            "{name} {args:?}: a line not in the convention: {line:?}\n{stderr}"
        );
        for foreign in ["(os error", "error:", "tip:", "<", "panicked"] {
            assert!(
                !line.contains(foreign),
                "{name} {args:?}: {foreign:?} in {line:?}"
            );
        }
    }
}

/// A bad command line: one `PROG: message` line naming `what`, the usage,
/// the pointer to --help, the usage status; nothing run.
fn assert_usage_error(name: &str, args: &[&str], what: &str) {
    let (status, stdout, stderr) = run(name, args);
    assert_eq!(
        status,
        Some(program(name).usage_status),
        "{name} {args:?}: {stderr}"
    );
    assert_eq!(stdout, "", "{name} {args:?}");
    assert_said_by(name, args, &stderr);
    let first = stderr.lines().next().unwrap();
    assert!(
        first.contains(what),
        "{name} {args:?}: {first:?} lacks {what:?}"
    );
    assert!(
        stderr.contains(&format!("\nUsage: {name} ")),
        "{name} {args:?}: no usage: {stderr}"
    );
    assert!(
        stderr.ends_with(&format!("Try '{name} --help' for more information.\n")),
        "{name} {args:?}: {stderr}"
    );
}

/// The usage forms of the man page's SYNOPSIS, without spaces.
fn synopsis(name: &str) -> Vec<String> {
    let page = std::fs::read_to_string(root().join(format!("man/{name}.1"))).unwrap();
    let at = page.find(".SH SYNOPSIS\n").unwrap() + ".SH SYNOPSIS\n".len();
    let end = at + page[at..].find(".SH ").unwrap();
    let mut forms = vec![String::new()];
    for line in page[at..end].lines() {
        if line == ".br" {
            forms.push(String::new());
        } else if let Some((_, words)) = line.split_once(' ') {
            // .B vlog-ctl, .RB [ \-\-json ], .I SOCKET COMMAND, .RI [ ARG ...]
            let plain = words.replace("\\-", "-").replace(' ', "");
            forms.last_mut().unwrap().push_str(&plain);
        }
    }
    forms.retain(|f| !f.contains("--help"));
    forms
}

#[test]
fn help_and_version_go_to_stdout_and_the_usage_is_the_man_pages() {
    for p in &PROGRAMS {
        let (status, stdout, stderr) = run(p.name, &["--help"]);
        assert_eq!(status, Some(0), "{} --help: {stderr}", p.name);
        assert_eq!(stderr, "", "{} --help", p.name);
        let usage: Vec<String> = stdout
            .lines()
            .skip_while(|l| !l.starts_with("Usage: "))
            .take_while(|l| l.starts_with("Usage: ") || l.starts_with("       "))
            .map(|l| l[7..].replace(' ', ""))
            .collect();
        assert_eq!(
            usage,
            synopsis(p.name),
            "{}: --help's usage against the man page",
            p.name
        );
        assert!(
            stdout.contains("Exit status:"),
            "{} --help: {stdout}",
            p.name
        );
        let (status, stdout, _) = run(p.name, &["--version"]);
        assert_eq!(status, Some(0));
        assert_eq!(
            stdout,
            format!("{} {}\n", p.name, env!("CARGO_PKG_VERSION"))
        );
    }
}

#[test]
fn a_bad_command_line_is_said_the_same_way_by_every_program() {
    for p in &PROGRAMS {
        assert_usage_error(p.name, &["--bogus"], "unknown option '--bogus'");
        assert_usage_error(p.name, &[], "missing");
    }
    assert_usage_error(
        "vlog-dump",
        &["-p", "9", "f"],
        "--priority: invalid priority '9'",
    );
    assert_usage_error(
        "vlog-relay",
        &["-p", "9", "true"],
        "--priority: invalid priority '9'",
    );
    assert_usage_error(
        "vlog-dump",
        &["--follow", "a", "b"],
        "--follow takes one FILE",
    );
    assert_usage_error("vlog-ctl", &["/nowhere", "frob"], "unknown command 'frob'");
    assert_usage_error(
        "vlog-ctl",
        &["/nowhere", "level"],
        "level needs its new value",
    );
    // -p is --priority wherever it exists: vlog-ctl's --pid has no short form.
    assert_usage_error("vlog-ctl", &["-p", "1", "show"], "unknown option '-p'");
}

#[test]
fn the_same_short_option_means_the_same_thing() {
    for (name, short, long) in [
        ("vlog-dump", "-p,", "--priority"),
        ("vlog-dump", "-s,", "--source"),
        ("vlog-dump", "-g,", "--grep"),
        ("vlog-relay", "-p,", "--priority"),
        ("vlog-relay", "-s,", "--source"),
    ] {
        let (_, stdout, _) = run(name, &["--help"]);
        assert!(
            stdout.contains(&format!("{short} {long}")),
            "{name}: {short} is not {long}:\n{stdout}"
        );
    }
}

#[test]
fn vlog_relay_reads_its_options_as_env_does() {
    // An option before the command is vlog-relay's: unknown, 125, nothing run.
    assert_usage_error(
        "vlog-relay",
        &["--bogus", "true"],
        "unknown option '--bogus'",
    );
    // After the first word that is not an option, or after --, every word is
    // the command's.
    let (status, _, stderr) = run("vlog-relay", &["sh", "-c", "exit 3", "--bogus"]);
    assert_eq!(status, Some(3), "{stderr}");
    let (status, _, stderr) = run("vlog-relay", &["--", "--bogus"]);
    assert_eq!(status, Some(127), "{stderr}");
    assert_said_by("vlog-relay", &["--", "--bogus"], &stderr);
    assert!(
        stderr.contains("cannot run --bogus: No such file"),
        "{stderr}"
    );
    let (status, _, stderr) = run("vlog-relay", &["/"]);
    assert_eq!(status, Some(126), "{stderr}");
    assert_said_by("vlog-relay", &["/"], &stderr);
    // A status other than 0 is the command's answer, not vlog-relay's
    // warning: nothing printed.
    let (status, _, stderr) = run("vlog-relay", &["false"]);
    assert_eq!((status, stderr.as_str()), (Some(1), ""));
}

#[test]
fn failures_are_said_in_peoples_words_with_the_documented_status() {
    let dir = support::scratch("tools", "x");
    let dir = dir.parent().unwrap();
    let junk = dir.join("junk");
    std::fs::write(&junk, b"not a ring").unwrap();
    let missing = dir.join("missing");
    // A socket whose program is gone: its file stays, nobody listens.
    let stale = dir.join("stale.sock");
    let _ = std::fs::remove_file(&stale);
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    let cases: [(&str, Vec<&str>, i32, &str); 7] = [
        (
            "vlog-dump",
            vec![missing.to_str().unwrap()],
            1,
            "No such file or directory",
        ),
        ("vlog-dump", vec![junk.to_str().unwrap()], 1, "junk"),
        (
            "vlog-ctl",
            vec![missing.to_str().unwrap(), "show"],
            3,
            "No such file or directory",
        ),
        (
            "vlog-ctl",
            vec!["--pid", "999999999", "show"],
            3,
            "no process 999999999",
        ),
        (
            "vlog-ctl",
            vec![junk.to_str().unwrap(), "show"],
            3,
            "junk: not a socket",
        ),
        (
            "vlog-ctl",
            vec![stale.to_str().unwrap(), "show"],
            3,
            "stale.sock: nobody is listening on this socket (has the program exited?)",
        ),
        (
            "vlog-relay",
            vec!["/nonexistent/command"],
            127,
            "cannot run /nonexistent/command",
        ),
    ];
    for (name, args, want, what) in cases {
        let (status, _, stderr) = run(name, &args);
        assert_eq!(status, Some(want), "{name} {args:?}: {stderr}");
        assert_said_by(name, &args, &stderr);
        assert!(stderr.contains(what), "{name} {args:?}: {stderr}");
        assert!(
            !stderr.contains("Usage:"),
            "{name} {args:?}: not a usage error: {stderr}"
        );
    }
    // Every value refused is repeated in the refusal (a usage error).
    let usage: [(&str, Vec<&str>, i32, &str); 3] = [
        (
            "vlog-ctl",
            vec!["--pid", "abc", "show"],
            2,
            "--pid: invalid value 'abc'",
        ),
        (
            "vlog-relay",
            vec!["-n", "abc", "true"],
            125,
            "--last: invalid value 'abc'",
        ),
        (
            "vlog-dump",
            vec!["--since", "yesterday", junk.to_str().unwrap()],
            2,
            "'yesterday'",
        ),
    ];
    for (name, args, want, what) in usage {
        let (status, _, stderr) = run(name, &args);
        assert_eq!(status, Some(want), "{name} {args:?}: {stderr}");
        assert_said_by(name, &args, &stderr);
        assert!(stderr.contains(what), "{name} {args:?}: {stderr}");
    }
    // A bad variable: vlog's one warning, as in any program, and the
    // command runs.
    let mut relay = Command::new(program("vlog-relay").exe);
    relay.arg("true").env("VLOG_LEVEL", "bogus");
    let out = relay.output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.starts_with("vlog: ignoring VLOG_LEVEL: invalid level 'bogus'")
            && stderr.lines().count() == 1,
        "{stderr}"
    );
}

#[test]
fn every_exit_status_is_in_the_man_page() {
    let statuses: [(&str, &[u8]); 3] = [
        ("vlog-dump", &[0, 1, 2, 3]),
        ("vlog-ctl", &[0, 1, 2, 3]),
        ("vlog-relay", &[125, 126, 127]),
    ];
    for (name, codes) in statuses {
        let page = std::fs::read_to_string(root().join(format!("man/{name}.1"))).unwrap();
        let at = page
            .find(".SH EXIT STATUS\n")
            .expect("an EXIT STATUS section");
        let section = &page[at..at + page[at + 1..].find("\n.SH ").unwrap()];
        for code in codes {
            assert!(
                section.contains(&format!("\n.B {code}\n")),
                "{name}(1) EXIT STATUS lacks {code}"
            );
        }
        let (_, help, _) = run(name, &["--help"]);
        let exit = &help[help.find("Exit status:").unwrap()..];
        for code in codes {
            assert!(
                exit.contains(&code.to_string()),
                "{name} --help lacks {code}: {exit}"
            );
        }
    }
}
