//! The README's commands, run as a reader pastes them: the Quick start (with
//! the install moved from /usr/local to a scratch prefix, set up as the
//! README's "Installing" says for any other prefix), linked shared and
//! static; and the C example of "Using it from C", built with the lines the
//! README gives.

use std::path::{Path, PathBuf};
use std::process::Command;

mod support;

use support::{assert_ok, root, text};

/// The first fenced block of `lang` after the heading `heading`.
fn block(heading: &str, lang: &str) -> String {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let at = readme
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("README has no heading {heading:?}"));
    let rest = &readme[at..];
    let open = format!("```{lang}\n");
    let start = rest.find(&open).expect("a code block") + open.len();
    let len = rest[start..].find("\n```\n").expect("the block's end");
    rest[start..start + len + 1].to_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("readme")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_quick_start_prints_the_crash_dump_as_written() {
    let quick = block("## Quick start: from install to a crash dump", "sh");
    let install = "make install PREFIX=/usr/local && ldconfig\n";
    assert!(
        quick.starts_with(install),
        "the Quick start begins with the install line: {quick}"
    );
    for (name, link) in [("shared", None), ("static", Some("-static"))] {
        let dir = scratch(name);
        let prefix = dir.join("prefix");
        let mut script = quick.replacen(
            install,
            &format!("make -s install PREFIX={} >/dev/null\n", prefix.display()),
            1,
        );
        if let Some(flag) = link {
            // "Installing": cc -static daemon.c $(pkg-config --static ...)
            script = script.replace(
                "cc daemon.c $(pkg-config --cflags --libs vlog)",
                &format!("cc {flag} daemon.c $(pkg-config --static --cflags --libs vlog)"),
            );
        }
        let p = prefix.display();
        let out = Command::new("bash")
            .arg("-c")
            .arg(&script)
            .current_dir(root())
            .env("TMPDIR", &dir)
            // What "Installing" says to set for a prefix of one's own.
            .env("PKG_CONFIG_PATH", format!("{p}/lib/pkgconfig"))
            .env(
                "PATH",
                format!("{p}/bin:{}", std::env::var("PATH").unwrap_or_default()),
            )
            .env("MANPATH", format!("{p}/share/man:"))
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .unwrap();
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(
            stderr.contains("warning : daemon : main:9 : about to dereference NULL\n"),
            "{name}: {stderr}"
        );
        let dump = stderr
            .find("vlog: fatal signal SIGSEGV (11)")
            .unwrap_or_else(|| panic!("{name}: no crash dump on stderr: {stderr}"));
        for i in 0..5 {
            let line = format!("debug : daemon : main:8 : step {i} of the work\n");
            assert!(stderr[dump..].contains(&line), "{name}: {line}: {stderr}");
            assert!(stdout.contains(&line), "{name}: vlog-dump: {stdout}");
        }
        assert!(out.status.success(), "{name}: vlog-dump failed: {stderr}");
    }
}

#[test]
fn the_c_example_builds_with_the_lines_the_readme_gives() {
    let example = block("## Using it from C", "c");
    let dir = scratch("example");
    std::fs::write(dir.join("daemon.c"), example).unwrap();
    let make = Command::new("make")
        .args(["-s", "lib"])
        .current_dir(root())
        .output()
        .unwrap();
    assert_ok("make lib", &make);
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines: Vec<&str> = readme
        .lines()
        .filter(|l| l.starts_with("cc -Iinclude daemon.c"))
        .collect();
    assert_eq!(lines.len(), 2, "the static and the shared line");
    for line in lines {
        // Run from the source tree, as the README says; the program goes to
        // the scratch directory.
        let cmd = line
            .replace(" daemon.c ", &format!(" {}/daemon.c ", dir.display()))
            .replace(
                "-o daemon",
                &format!("-o {}/daemon -Wall -Wextra -Werror", dir.display()),
            );
        let out = Command::new("bash")
            .arg("-c")
            .arg(&cmd)
            .current_dir(root())
            .output()
            .unwrap();
        assert_ok(line, &out);
        let run = Command::new(dir.join("daemon"))
            .env("VLOG_FILTERS", "1:qemu")
            .env("VLOG_OUTPUTS", "3:stderr")
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .unwrap();
        assert_ok(&format!("the program of {line}"), &run);
        assert!(
            text(&run.stderr).contains("error : qemu.monitor : send_command:"),
            "{}",
            text(&run.stderr)
        );
    }
}

#[test]
fn the_vlog_relay_example_prints_what_it_says() {
    let script = block("### vlog-relay: a flight recorder for any program", "sh")
        .replace(
            "target/release/vlog-relay",
            env!("CARGO_BIN_EXE_vlog-relay"),
        )
        .replace("target/release/vlog-dump", env!("CARGO_BIN_EXE_vlog-dump"));
    let dir = scratch("vlog-relay");
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(&dir)
        .env_remove("VLOG_FILTERS")
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        stderr.contains("was killed by signal 11 (SIGSEGV); its last 2 records in the ring"),
        "{stderr}"
    );
    let step = "debug : sh.stdout : ?:0 : step 1 [CHILD_LEVEL=DEBUG]\n";
    assert!(stderr.contains(step), "{stderr}");
    assert!(
        stdout.contains("info : sh.stdout : ?:0 : started\n"),
        "{stdout}"
    );
    assert!(stdout.contains(step), "{stdout}");
    assert!(out.status.success(), "vlog-dump: {stderr}");
}
