//! Backtraces (`VLOG_BACKTRACE`, the `bt:` filter): each frame vlog-dump
//! names from a ring file left by a SIGKILL is the frame gdb names at the
//! same call, in the program and in a library loaded with dlopen.

use crate::common::*;
use crate::control::vlog_ctl;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// The line of the call marked `SITE: name` in `c-tests/file`.
fn site_line(file: &str, name: &str) -> u32 {
    let source = std::fs::read_to_string(root().join("c-tests").join(file)).unwrap();
    let marker = format!("/* SITE: {name} */");
    let at = source.lines().position(|l| l.contains(&marker));
    at.unwrap_or_else(|| panic!("no {marker} in {file}")) as u32 + 1
}

/// A frame as named: its function, and its file (the last component) and
/// line where known.
#[derive(Debug, PartialEq, Clone)]
struct Named {
    function: String,
    place: Option<(String, u32)>,
}

fn place(text: &str) -> Option<(String, u32)> {
    let (file, line) = text.rsplit_once(':')?;
    let file = file.rsplit('/').next().unwrap_or(file);
    Some((file.to_string(), line.parse().ok()?))
}

/// The frames vlog-dump shows after the record line that ends in
/// `message`: `#N 0xADDR FUNCTION+0xOFF (FILE:LINE) in OBJECT+0xOFF`.
fn vlog_frames(dump: &str, message: &str) -> Vec<Named> {
    let mut lines = dump.lines();
    lines
        .by_ref()
        .find(|l| l.ends_with(&format!(" : {message}")))
        .unwrap_or_else(|| panic!("no record \"{message}\" in:\n{dump}"));
    lines
        .take_while(|l| l.starts_with("  #"))
        .map(|l| {
            let named = l.split(' ').nth(4).unwrap_or("");
            let function = named.split("+0x").next().unwrap_or("").to_string();
            let place = l
                .split_once(" (")
                .and_then(|(_, rest)| rest.split_once(") in "))
                .and_then(|(p, _)| place(p));
            Named { function, place }
        })
        .collect()
}

/// The frames of each `bt` in gdb's output, in order: `#0  f (...) at
/// FILE:LINE` and `#1  0xADDR in f (...) at FILE:LINE`.
fn gdb_frames(out: &str) -> Vec<Vec<Named>> {
    let mut all: Vec<Vec<Named>> = Vec::new();
    for line in out.lines().filter(|l| l.starts_with('#')) {
        if line.starts_with("#0 ") {
            all.push(Vec::new());
        }
        let rest = line.split_once("  ").map_or("", |(_, r)| r);
        let rest = rest.split_once(" in ").map_or(
            rest,
            |(a, r)| {
                if a.starts_with("0x") {
                    r
                } else {
                    rest
                }
            },
        );
        let function = rest.split(' ').next().unwrap_or("").to_string();
        let place = rest.rsplit_once(" at ").and_then(|(_, p)| place(p));
        if let Some(frames) = all.last_mut() {
            frames.push(Named { function, place });
        }
    }
    all
}

/// Up to and including `calls`, which either mode calls from its own
/// line of `main`.
fn to_calls(frames: &[Named]) -> Vec<Named> {
    let end = frames.iter().position(|f| f.function == "calls");
    frames[..end.map_or(frames.len(), |e| e + 1)].to_vec()
}

fn build_library() -> std::path::PathBuf {
    let work = work();
    let lib = work.join("lib");
    let so = work.join("backtrace_lib.so");
    let mut cmd = Command::new(cc());
    cmd.args([
        "-std=c11", "-Wall", "-Wextra", "-Werror", "-g", "-O0", "-shared", "-fPIC",
    ]);
    if tool() == Tool::Asan {
        cmd.args(["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]);
    }
    cmd.arg("-I")
        .arg(root().join("include"))
        .arg(root().join("c-tests/backtrace_lib.c"))
        .arg("-o")
        .arg(&so)
        .arg(format!("-L{}", lib.display()))
        .arg("-lvlog")
        .arg(format!("-Wl,-rpath,{}", lib.display()));
    run_compiler(cmd);
    so
}

fn wait_for(path: &Path, child: &mut std::process::Child) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !path.exists() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the program ended before {path:?}: {status}");
        }
        assert!(Instant::now() < deadline, "no {path:?} after 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A backtrace turned on at one `file:line` of a running program through
/// its control socket, and VLOG_BACKTRACE's: read back by vlog-dump from
/// the ring file the SIGKILL left, each frame named as gdb names it at
/// the same call (function, file and line), in the program and in a
/// library at an address dlopen chose. Before the change the same calls
/// kept none.
#[test]
fn a_backtrace_read_back_names_what_gdb_names() {
    use std::os::unix::process::ExitStatusExt;
    let so = build_library();
    let exe = build_as(
        "backtrace",
        Link::Shared,
        "",
        &root().join("include"),
        &["-O0"],
    );
    let dir = scratch_dir("backtrace");
    let ring = dir.join("ring");
    let sock = dir.join("ctl.sock");
    for f in [&ring, &dir.join("ready"), &dir.join("go")] {
        let _ = std::fs::remove_file(f);
    }
    let program = site_line("backtrace.c", "program");
    let library = site_line("backtrace_lib.c", "library");
    let always = site_line("backtrace.c", "always");

    let mut cmd = command(&exe);
    without_vlog_env(&mut cmd);
    cmd.args(["serve", dir.to_str().unwrap(), so.to_str().unwrap()])
        .env("VLOG_BUFFER_FILE", &ring)
        .env("VLOG_CONTROL", &sock)
        .env(
            "VLOG_OUTPUTS",
            "1:json:".to_string() + dir.join("out.json").to_str().unwrap(),
        )
        .stdin(std::process::Stdio::null());
    let mut child = spawn(&mut cmd);
    wait_for(&dir.join("ready"), &mut child);
    let filters = format!("bt:file=backtrace.c:{program} bt:file=backtrace_lib.c:{library}");
    let said = vlog_ctl(&[sock.to_str().unwrap(), "filters", &filters]);
    assert!(said.status.success(), "vlog-ctl: {}", text(&said.stderr));
    std::fs::write(dir.join("go"), b"").unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");

    let read = vlog_dump(&[ring.to_str().unwrap()]);
    let dump = text(&read.stdout);
    for before in ["program call 2", "library call 2"] {
        assert!(
            vlog_frames(&dump, before).is_empty(),
            "{before} kept frames:\n{dump}"
        );
    }
    let seen: Vec<Vec<Named>> = ["program call 12", "library call 12", "always 10"]
        .iter()
        .map(|m| to_calls(&vlog_frames(&dump, m)))
        .collect();
    let expected: Vec<Vec<Named>> = if tool() == Tool::None {
        let out = Command::new("gdb")
            .args(["-nx", "-batch", "-ex", "set breakpoint pending on"])
            .args(["-ex", &format!("break backtrace.c:{program}")])
            .args(["-ex", &format!("break backtrace_lib.c:{library}")])
            .args(["-ex", &format!("break backtrace.c:{always}")])
            .args(["-ex", "run", "-ex", "bt", "-ex", "continue", "-ex", "bt"])
            .args(["-ex", "continue", "-ex", "bt", "--args"])
            .arg(&exe)
            .args(["gdb", dir.to_str().unwrap(), so.to_str().unwrap()])
            .env_remove("VLOG_OUTPUTS")
            .output()
            .expect("run gdb");
        let gdb = text(&out.stdout);
        let frames = gdb_frames(&gdb);
        assert_eq!(
            frames.len(),
            3,
            "gdb's backtraces:\n{gdb}{}",
            text(&out.stderr)
        );
        frames.iter().map(|f| to_calls(f)).collect()
    } else {
        say_skipped(&format!(
            "{:?}: compared with the functions alone, not gdb's run",
            tool()
        ));
        let f = |names: &[&str]| {
            names
                .iter()
                .map(|n| Named {
                    function: n.to_string(),
                    place: None,
                })
                .collect()
        };
        vec![
            f(&["level3", "level2", "level1", "calls"]),
            f(&["lib_level3", "lib_level2", "lib_level1", "calls"]),
            f(&["always", "calls"]),
        ]
    };
    for (seen, expected) in seen.iter().zip(&expected) {
        let seen_cmp: Vec<Named> = if tool() == Tool::None {
            seen.clone()
        } else {
            seen.iter()
                .map(|n| Named {
                    function: n.function.clone(),
                    place: None,
                })
                .collect()
        };
        assert_eq!(&seen_cmp, expected, "vlog-dump:\n{dump}");
    }
    // The places are the calls' own: the program's at its marked lines.
    assert_eq!(
        seen[0][0].place,
        Some(("backtrace.c".to_string(), program)),
        "vlog-dump:\n{dump}"
    );

    // The daemon's own output names no function (it reads no file), but
    // each frame's object and address within it.
    let json = std::fs::read_to_string(dir.join("out.json")).unwrap_or_default();
    let line = json
        .lines()
        .find(|l| l.contains("\"message\":\"library call 12\""))
        .unwrap_or_else(|| panic!("no library call in:\n{json}"));
    assert!(
        line.contains("\"VLOG_BACKTRACE\":\"#0 0x") && line.contains("backtrace_lib.so+0x"),
        "{line}"
    );
}
