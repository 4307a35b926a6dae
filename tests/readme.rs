//! Every shell and C snippet of README.md and of the man pages' EXAMPLES,
//! run as a reader pastes them, in the order given, in one shell: once as
//! root would (the README's `make` and `sudo make install`, the prefix moved
//! to a scratch directory so the test leaves /usr/local alone) and once as a
//! user would (literally, with HOME a scratch directory). What a snippet is
//! said to print is checked against what it printed.
//!
//! The pages mark what is not a plain shell snippet, on the line before it:
//! - README: `<!-- run: as root -->`, `<!-- run: as a user -->` (one flow
//!   only), `<!-- needs: WHAT -->` (run only where WHAT is here; otherwise
//!   said SKIPPED), `<!-- file: NAME -->` before a C block (saved as NAME
//!   in the shell's directory), `<!-- output -->` before a text block (what
//!   the snippet before it prints);
//! - man pages: `.\" file: NAME`, `.\" needs: WHAT`, `.\" not a command`;
//!   in a block whose lines start with `$ `, those are the commands and the
//!   lines after each are what it prints.
//!
//! Printed lines are compared with every run of digits (and hex number)
//! made one, so times, pids and counts may differ, but a call site's line
//! (`main:24`) is compared as it is; a line `...` stands for any lines.
//! Every command of a snippet must succeed (an ERR trap, and pipefail),
//! but one whose line says it crashes (`# crashes`) and a man page's
//! `$ command` whose status the next one shows (`$ echo $?`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

mod support;

use support::{root, say_skipped, text};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Flow {
    Root,
    User,
}

#[derive(Debug)]
enum Body {
    Shell(String),
    /// A C file, saved under its name in the shell's directory.
    File(String, String),
}

#[derive(Debug)]
struct Snippet {
    /// `README.md:123`, for the messages.
    origin: String,
    body: Body,
    /// Lines the snippet prints.
    prints: Vec<String>,
    needs: Option<String>,
    only: Option<Flow>,
    /// A man page's `$ command`.
    dollar: bool,
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap()
}

/// The README's snippets, in order.
fn readme() -> Vec<Snippet> {
    let text = read("README.md");
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<Snippet> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(lang) = lines[i].strip_prefix("```") else {
            i += 1;
            continue;
        };
        let marker = i
            .checked_sub(1)
            .and_then(|m| lines[m].strip_prefix("<!-- "))
            .and_then(|m| m.strip_suffix(" -->"))
            .unwrap_or("");
        let start = i + 1;
        let end = start
            + lines[start..]
                .iter()
                .position(|l| *l == "```")
                .expect("a closed block");
        let body = lines[start..end].join("\n") + "\n";
        let origin = format!("README.md:{}", i + 1);
        let snippet = |body| Snippet {
            origin: origin.clone(),
            body,
            prints: Vec::new(),
            needs: marker.strip_prefix("needs: ").map(str::to_owned),
            only: match marker {
                "run: as root" => Some(Flow::Root),
                "run: as a user" => Some(Flow::User),
                _ => None,
            },
            dollar: false,
        };
        match (lang, marker) {
            ("sh", _) => out.push(snippet(Body::Shell(body))),
            ("c", m) if m.starts_with("file: ") => {
                out.push(snippet(Body::File(m[6..].to_owned(), body)))
            }
            ("c", _) => panic!("{origin}: a C block without <!-- file: NAME -->"),
            ("text", "output") => {
                let last = out.last_mut().expect("output after a snippet");
                assert!(
                    matches!(last.body, Body::Shell(_)),
                    "{origin}: output after a C file"
                );
                last.prints = body.lines().map(str::to_owned).collect();
            }
            _ => {}
        }
        i = end + 1;
    }
    out
}

/// Roff as the terminal shows it, for the escapes the examples use.
fn unroff(line: &str) -> String {
    line.replace("\\-", "-")
        .replace("\\e", "\\")
        .replace("\\&", "")
        .replace("\\(dq", "\"")
}

/// The snippets of a man page's EXAMPLES section, in order.
fn man(page: &str) -> Vec<Snippet> {
    let text = read(page);
    let at = text.find(".SH EXAMPLES\n").expect("an EXAMPLES section");
    let end = at + 1 + text[at + 1..].find("\n.SH ").unwrap();
    let lines: Vec<&str> = text[at..end].lines().collect();
    let base = text[..at].lines().count();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i] != ".nf" && lines[i] != ".EX" {
            i += 1;
            continue;
        }
        let close = if lines[i] == ".nf" { ".fi" } else { ".EE" };
        let marker = i
            .checked_sub(1)
            .and_then(|m| lines[m].strip_prefix(".\\\" "))
            .unwrap_or("");
        let start = i + 1;
        let stop = start + lines[start..].iter().position(|l| *l == close).unwrap();
        let block: Vec<String> = lines[start..stop].iter().map(|l| unroff(l)).collect();
        let origin = format!("{page}:{}", base + i + 1);
        i = stop + 1;
        if marker == "not a command" {
            continue;
        }
        let needs = marker.strip_prefix("needs: ").map(str::to_owned);
        if let Some(name) = marker.strip_prefix("file: ") {
            let body = block.join("\n") + "\n";
            out.push(Snippet {
                origin,
                body: Body::File(name.to_owned(), body),
                prints: Vec::new(),
                needs,
                only: None,
                dollar: false,
            });
            continue;
        }
        if !block.iter().any(|l| l.starts_with("$ ")) {
            out.push(Snippet {
                origin,
                body: Body::Shell(block.join("\n") + "\n"),
                prints: Vec::new(),
                needs,
                only: None,
                dollar: false,
            });
            continue;
        }
        // `$ command`, then what it prints: one snippet per command.
        for line in block {
            match line.strip_prefix("$ ") {
                Some(command) => out.push(Snippet {
                    origin: origin.clone(),
                    body: Body::Shell(format!("{command}\n")),
                    prints: Vec::new(),
                    needs: needs.clone(),
                    only: None,
                    dollar: true,
                }),
                None => out.last_mut().unwrap().prints.push(line),
            }
        }
    }
    out
}

/// Whether what a snippet needs is here, or why not.
fn available(needs: &str) -> Result<(), String> {
    // SAFETY: a plain query.
    let root = unsafe { libc::geteuid() } == 0;
    let ok = match needs {
        "root and sshd" => root && Path::new("/usr/sbin/sshd").exists(),
        "systemd" => {
            Path::new("/run/systemd/system").exists()
                && Command::new("systemctl")
                    .args(["is-active", "--quiet", "myd"])
                    .status()
                    .is_ok_and(|s| s.success())
        }
        // Not tried: a test does not reach out of the machine.
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("needs {needs}, not here"))
    }
}

/// A line as compared: every number made one.
fn normal(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"0x") && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit) {
            i += 2;
            while b.get(i).is_some_and(u8::is_ascii_hexdigit) {
                i += 1;
            }
            out.push_str("0x0");
        } else if b[i].is_ascii_digit() {
            let start = i;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            // A call site's line (`main:24`, `disk.c:42`, `?:0`) is what
            // the page says, exactly; a time's `16:20` is not.
            let site = start >= 2
                && b[start - 1] == b':'
                && (b[start - 2].is_ascii_alphabetic() || b"_?.".contains(&b[start - 2]));
            if site {
                out.push_str(&line[start..i]);
            } else {
                out.push('0');
            }
        } else {
            let c = line[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("readme")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `make install` builds in the source tree: one flow at a time.
static INSTALLING: Mutex<()> = Mutex::new(());

const MARK: &str = "@@snippet ";
const STATUS: &str = "@@status ";
const FAILED: &str = "@@failed ";

fn run_flow(flow: Flow) {
    let _one = INSTALLING.lock().unwrap_or_else(|p| p.into_inner());
    let dir = scratch(match flow {
        Flow::Root => "root",
        Flow::User => "user",
    });
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let prefix = dir.join("prefix");
    let mut snippets = readme();
    for page in [
        "man/vlog.3",
        "man/vlog.7",
        "man/vlog-syslog.7",
        "man/vlog-dump.1",
        "man/vlog-ctl.1",
        "man/vlog-relay.1",
    ] {
        snippets.extend(man(page));
    }
    // A command that fails says its line; the snippet's last status is
    // said after it.
    // stderr joins stdout, so that what a snippet prints is compared in the
    // order a reader sees it on a terminal.
    let mut script =
        format!("exec </dev/null 2>&1\nset -o pipefail\ntrap 'echo \"{FAILED}$LINENO\"' ERR\n");
    let mut ran = Vec::new();
    for (n, s) in snippets.iter().enumerate() {
        if s.only.is_some_and(|only| only != flow) {
            continue;
        }
        if let Some(needs) = &s.needs {
            if needs.starts_with("root") && flow == Flow::User {
                continue;
            }
            if let Err(why) = available(needs) {
                say_skipped(&format!("{} ({flow:?}): {why}", s.origin));
                continue;
            }
        }
        // The markers, then the status the snippet before left (`$ echo
        // $?` reads it).
        script.push_str(&format!(
            "printf '\\n{MARK}{n}\\n'; (exit ${{vlog_s:-0}})\n"
        ));
        match &s.body {
            Body::Shell(body) => {
                let mut body = body.clone();
                if flow == Flow::Root {
                    // Root's install, moved to a scratch prefix, which the
                    // shell and pkg-config are then told about as "as a
                    // user" tells them about $HOME/.local.
                    let p = prefix.display();
                    if body == "make\nsudo make install\n" {
                        body = format!(
                            "make -s >/dev/null\nmake -s install PREFIX={p} >/dev/null\nexport \
                             PKG_CONFIG_PATH={p}/lib/pkgconfig PATH={p}/bin:$PATH \
                             MANPATH={p}/share/man:\n"
                        );
                    }
                    body = body.replace("/usr/local/lib/", &format!("{p}/lib/"));
                }
                script.push_str(&body);
                script.push_str(&format!("vlog_s=$?; echo \"{STATUS}$vlog_s\"\n"));
            }
            Body::File(name, body) => {
                script.push_str(&format!(
                    "cat > {name} <<'VLOG_SNIPPET_END'\n{body}VLOG_SNIPPET_END\n"
                ));
                script.push_str(&format!("vlog_s=$?; echo \"{STATUS}$vlog_s\"\n"));
            }
        }
        ran.push(n);
    }
    std::fs::write(dir.join("snippets.sh"), &script).unwrap();
    let mut cmd = Command::new("timeout");
    for (var, _) in std::env::vars().filter(|(k, _)| k.starts_with("VLOG_")) {
        cmd.env_remove(var);
    }
    let out = cmd
        .args(["900", "bash"])
        .arg(dir.join("snippets.sh"))
        .current_dir(root())
        .env("HOME", &home)
        .env("TMPDIR", &dir)
        .env("LC_ALL", "C")
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("PKG_CONFIG_PATH")
        .env_remove("MANPATH")
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    // Kept beside the script, to read after a failure.
    std::fs::write(dir.join("output"), &stdout).unwrap();
    // Each snippet's part of stdout and of stderr.
    let part = |all: &str, n: usize| -> String {
        let head = format!("\n{MARK}{n}\n");
        let Some(at) = all.find(&head) else {
            return String::new();
        };
        let rest = &all[at + head.len()..];
        let end = rest
            .find(&format!("\n{MARK}"))
            .map_or(rest.len(), |e| e + 1);
        rest[..end].to_owned()
    };
    let mut failed = Vec::new();
    for n in ran {
        let s = &snippets[n];
        let o = part(&stdout, n);
        let said = format!(
            "{} ({flow:?}):\n--- snippet\n{}\n--- output (stdout and stderr)\n{o}",
            s.origin,
            match &s.body {
                Body::Shell(b) => b.as_str(),
                Body::File(name, _) => name.as_str(),
            }
        );
        // A `$ command` of a man page may fail on purpose: the `$ echo $?`
        // after it says how.
        let shown = |next: Option<&Snippet>| {
            next.is_some_and(|n| matches!(&n.body, Body::Shell(b) if b == "echo $?\n"))
        };
        let may_fail = s.dollar && shown(snippets.get(n + 1));
        let status = o
            .lines()
            .find_map(|l| l.strip_prefix(STATUS).map(str::to_owned));
        if status.as_deref() != Some("0") && !may_fail {
            failed.push(format!("exit status {status:?}: {said}"));
            continue;
        }
        // Every command that failed, unless its line says it crashes.
        let lines: Vec<&str> = script.lines().collect();
        let unexpected: Vec<&str> = o
            .lines()
            .filter_map(|l| l.strip_prefix(FAILED)?.parse::<usize>().ok())
            .map(|at| lines.get(at.wrapping_sub(1)).copied().unwrap_or("?"))
            // The line that hands a status on to the next snippet fails
            // when the status it hands on does.
            .filter(|line| !line.starts_with(&format!("printf '\\n{MARK}")))
            .filter(|line| !may_fail && !line.contains("# crashes"))
            .collect();
        if !unexpected.is_empty() {
            failed.push(format!("these commands failed: {unexpected:?}: {said}"));
            continue;
        }
        let script_path = format!("{}: line ", dir.join("snippets.sh").display());
        let mut printed: Vec<String> = o
            .lines()
            .filter(|l| !l.starts_with(STATUS) && !l.starts_with(FAILED))
            .map(|l| shells_word(l, &script_path))
            .map(|l| normal(&l))
            .collect();
        // The newline before the next snippet's mark.
        while printed.last().is_some_and(|l| l.is_empty()) {
            printed.pop();
        }
        let want: Vec<String> = s.prints.iter().map(|l| normal(l)).collect();
        // A snippet that shows no output is not compared, but for a loop
        // that waits for something: it says nothing while it waits.
        let waits = matches!(&s.body, Body::Shell(b) if b.contains("until "));
        if (!s.prints.is_empty() || waits) && !shown_as_printed(&want, &printed) {
            failed.push(format!(
                "what the page shows is not what it printed, line for line \
                 ('...' for any lines):\n--- shown\n{}\n{said}",
                s.prints.join("\n")
            ));
        }
    }
    assert!(
        failed.is_empty(),
        "{} snippet(s) failed:\n{}\n(the whole run's output ends: {}; stderr: {stderr})",
        failed.len(),
        failed.join("\n\n"),
        &stdout[stdout.len().saturating_sub(2000)..]
    );
}

/// A script's shell reports a crash as `SCRIPT: line N: PID Segmentation
/// fault      COMMAND`; a reader's interactive shell says `Segmentation
/// fault`: the page shows that.
fn shells_word(line: &str, script_path: &str) -> String {
    let Some(rest) = line.strip_prefix(script_path) else {
        return line.to_owned();
    };
    let rest = rest.trim_start_matches(|c: char| c.is_ascii_digit());
    let rest = rest.strip_prefix(':').unwrap_or(rest).trim_start();
    let rest = rest
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .trim_start();
    rest.split("  ").next().unwrap_or(rest).to_owned()
}

/// Whether the lines a page shows are the lines printed, in order, where
/// a shown line `...` stands for any number of printed lines (none too).
fn shown_as_printed(shown: &[String], printed: &[String]) -> bool {
    // matched[j]: the shown lines so far match printed[..j].
    let mut matched = vec![false; printed.len() + 1];
    matched[0] = true;
    for line in shown {
        let mut next = vec![false; printed.len() + 1];
        for j in 0..=printed.len() {
            next[j] = if line == "..." {
                matched[j] || (j > 0 && next[j - 1])
            } else {
                j > 0 && matched[j - 1] && printed[j - 1] == *line
            };
        }
        matched = next;
    }
    matched[printed.len()]
}

#[test]
fn shown_lines_match_printed_lines_in_order() {
    let v = |s: &[&str]| s.iter().map(|l| l.to_string()).collect::<Vec<_>>();
    assert!(shown_as_printed(
        &v(&["a", "...", "d"]),
        &v(&["a", "b", "c", "d"])
    ));
    assert!(shown_as_printed(&v(&["a", "...", "b"]), &v(&["a", "b"])));
    assert!(!shown_as_printed(&v(&["b", "a"]), &v(&["a", "b"])), "order");
    assert!(
        !shown_as_printed(&v(&["a"]), &v(&["a", "b"])),
        "a line not shown"
    );
    assert!(shown_as_printed(&v(&["..."]), &v(&[])));
}

#[test]
fn the_snippets_run_as_written_as_root() {
    run_flow(Flow::Root);
}

#[test]
fn the_snippets_run_as_written_as_a_user() {
    run_flow(Flow::User);
}

#[test]
fn every_page_marks_its_snippets_so_that_none_is_left_out() {
    let readme = readme();
    assert!(readme.len() >= 8, "{readme:?}");
    // The Quick start, each flow's install, and a C file are among them.
    assert!(readme.iter().any(|s| s.only == Some(Flow::Root)));
    assert!(readme.iter().any(|s| s.only == Some(Flow::User)));
    assert!(readme.iter().any(|s| matches!(s.body, Body::File(..))));
    for page in [
        "man/vlog.3",
        "man/vlog-dump.1",
        "man/vlog-ctl.1",
        "man/vlog-relay.1",
    ] {
        let snippets = man(page);
        assert!(
            snippets.iter().any(|s| !s.prints.is_empty()),
            "{page}: no example says what it prints: {snippets:?}"
        );
    }
    assert_eq!(normal("pid 4242, 0x7f3a at 12.5 s"), "pid 0, 0x0 at 0.0 s");
    assert_eq!(normal("16:20:01.123: main:24 ?:0"), "0:0:0.0: main:24 ?:0");
}
