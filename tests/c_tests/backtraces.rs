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

/// The frames' lines after the record line that ends in `message`.
fn frame_lines<'a>(dump: &'a str, message: &str) -> Vec<&'a str> {
    let mut lines = dump.lines();
    lines
        .by_ref()
        .find(|l| l.ends_with(&format!(" : {message}")))
        .unwrap_or_else(|| panic!("no record \"{message}\" in:\n{dump}"));
    lines.take_while(|l| l.starts_with("  #")).collect()
}

fn ctl_ok(args: &[&str]) -> String {
    let out = vlog_ctl(args);
    assert!(
        out.status.success(),
        "vlog-ctl {args:?}: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// The whole reply to `request` on the control socket `sock`, as sent.
fn raw_reply(sock: &Path, request: &str) -> Vec<u8> {
    use std::io::{Read, Write};
    let mut c = std::os::unix::net::UnixStream::connect(sock).unwrap();
    c.write_all(format!("{request}\n").as_bytes()).unwrap();
    let mut reply = Vec::new();
    c.read_to_end(&mut reply).unwrap();
    assert!(reply.starts_with(b"ok\n"), "{}", text(&reply));
    reply
}

/// A ring, or a control server, that another user made names no frame
/// from a file that user may not read, though its reader (root) could:
/// the program made readable by root alone, the ring file given to
/// nobody, and the program's encoded reply sent by a server run as
/// nobody; the same reply from a server of root's has them named.
fn lent_to_nobody(exe: &Path, ring: &Path, encoded: &[u8], named: &str) {
    use std::os::unix::fs::PermissionsExt;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        say_skipped("lending needs root, to give a ring to another user");
        return;
    }
    // (The system's, which any user may run.)
    let python = Path::new("/usr/bin/python3");
    if !python.exists() {
        say_skipped("lending needs /usr/bin/python3 for a server of nobody's");
        return;
    }
    let message = "program call 12";
    // The program's frames as named for root, and as a reader who may not
    // read the program must show them: its object and address alone.
    let exe_name = exe.file_name().unwrap().to_str().unwrap();
    let in_exe = format!("/{exe_name}+0x");
    let unnamed = |shown: &str| -> Vec<String> {
        frame_lines(shown, message)
            .iter()
            .filter(|l| l.contains(&in_exe))
            .map(|l| l.to_string())
            .collect()
    };
    // `#N 0xADDR ?? in OBJECT+0xOFF`: not named.
    let bare = |l: &String| {
        let words: Vec<&str> = l.split_whitespace().collect();
        words.len() == 5 && words[2..4] == ["??", "in"]
    };
    let for_root = unnamed(named);
    assert!(
        !for_root.is_empty() && !for_root.iter().any(bare),
        "{named}"
    );
    let dir = ring.parent().unwrap().join("lent");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let mode = std::fs::metadata(exe).unwrap().permissions().mode();
    std::fs::set_permissions(exe, std::fs::Permissions::from_mode(0o700)).unwrap();

    let given = dir.join("ring");
    std::fs::copy(ring, &given).unwrap();
    std::os::unix::fs::chown(&given, Some(65534), Some(65534)).unwrap();
    let dump = text(&vlog_dump(&[given.to_str().unwrap()]).stdout);
    let seen = unnamed(&dump);

    let served = served_as(&dir, Some(python), encoded);
    // The same reply from a server of root's.
    let from_root = served_as(&dir, None, encoded);
    std::fs::set_permissions(exe, std::fs::Permissions::from_mode(mode)).unwrap();
    assert!(
        !seen.is_empty() && seen.iter().all(bare),
        "vlog-dump of nobody's ring:\n{dump}"
    );
    let from_nobody = unnamed(&served);
    assert!(
        !from_nobody.is_empty() && from_nobody.iter().all(bare),
        "vlog-ctl of nobody's server:\n{served}"
    );
    assert_eq!(unnamed(&from_root), for_root, "{from_root}");

    // The library's frames said to be in a copy of it that nobody may not
    // reach (its directory closed to others, the file open to all).
    let library = "library call 12";
    let closed = dir.join("closed");
    std::fs::create_dir(&closed).unwrap();
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700)).unwrap();
    let copy = closed.join("lib.so");
    let lib_frames = frame_lines(named, library);
    let original = lib_frames
        .iter()
        .find_map(|l| {
            l.split_whitespace()
                .last()?
                .split_once("+0x")
                .map(|(o, _)| o)
        })
        .filter(|o| o.ends_with("backtrace_lib.so"))
        .unwrap_or_else(|| panic!("{named}"));
    std::fs::copy(original, &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o644)).unwrap();
    let moved = moved_object(encoded, library, original, copy.to_str().unwrap());
    let in_copy = |shown: &str| -> Vec<String> {
        frame_lines(shown, library)
            .iter()
            .filter(|l| l.contains("/closed/lib.so+0x"))
            .map(|l| l.to_string())
            .collect()
    };
    let from_nobody = in_copy(&served_as(&dir, Some(python), &moved));
    let from_root = in_copy(&served_as(&dir, None, &moved));
    assert!(
        !from_nobody.is_empty() && from_nobody.iter().all(bare),
        "{from_nobody:?}"
    );
    // (Named, vlog.h's own frames are left out: fewer lines.)
    assert!(
        !from_root.is_empty() && !from_root.iter().any(bare),
        "{from_root:?}"
    );
}

/// What `vlog-ctl SOCKET dump` prints of `reply`, sent by a server run
/// by nobody with `python`, or (None) by this process, root's.
fn served_as(dir: &Path, python: Option<&Path>, reply: &[u8]) -> String {
    let sock = dir.join("served.sock");
    let _ = std::fs::remove_file(&sock);
    let Some(python) = python else {
        let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let reply = reply.to_vec();
        let server = std::thread::spawn(move || {
            use std::io::{Read, Write};
            let (mut c, _) = listener.accept().unwrap();
            let _ = c.read(&mut [0u8; 4096]);
            let _ = c.write_all(&reply);
        });
        let shown = ctl_ok(&[sock.to_str().unwrap(), "dump"]);
        server.join().unwrap();
        return shown;
    };
    let file = dir.join("reply");
    std::fs::write(&file, reply).unwrap();
    let mut server = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(python)
        .arg("-c")
        .arg(
            "import socket, sys\n\
             l = socket.socket(socket.AF_UNIX)\n\
             l.bind(sys.argv[1])\n\
             l.listen(1)\n\
             c, _ = l.accept()\n\
             c.recv(4096)\n\
             c.sendall(open(sys.argv[2], 'rb').read())\n\
             c.close()\n",
        )
        .arg(&sock)
        .arg(&file)
        .spawn()
        .expect("run setpriv python3");
    wait_for(&sock, &mut server);
    let shown = ctl_ok(&[sock.to_str().unwrap(), "dump"]);
    let _ = server.wait();
    shown
}

/// A reply to `dump --encoded-frames`: the status line, the record that
/// ends in `message` and its frames, the object at `from` said to be at
/// `to` (the encoding: a count of frames and of objects, nine bytes a
/// frame, then each object's bias, build-id and path, each after its
/// length).
fn moved_object(reply: &[u8], message: &str, from: &str, to: &str) -> Vec<u8> {
    let reply = text(reply);
    let mut lines = reply.lines();
    let record = lines
        .find(|l| l.ends_with(&format!(" : {message}")))
        .unwrap_or_else(|| panic!("{reply}"));
    let hex = lines
        .next()
        .and_then(|l| l.strip_prefix("  frames "))
        .unwrap();
    let bytes: Vec<u8> = (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let (count, objects) = (bytes[0] as usize, bytes[1] as usize);
    let mut out = bytes[..2 + 9 * count].to_vec();
    let mut at = 2 + 9 * count;
    for _ in 0..objects {
        let id_len = bytes[at + 8] as usize;
        let path_at = at + 9 + id_len;
        let path_len = bytes[path_at] as usize;
        let path = &bytes[path_at + 1..path_at + 1 + path_len];
        out.extend_from_slice(&bytes[at..path_at]);
        let path = if path == from.as_bytes() {
            to.as_bytes()
        } else {
            path
        };
        out.push(path.len() as u8);
        out.extend_from_slice(path);
        at = path_at + 1 + path_len;
    }
    assert_eq!(at, bytes.len(), "{hex}");
    let hex: String = out.iter().map(|b| format!("{b:02x}")).collect();
    format!("ok\n{record}\n  frames {hex}\n").into_bytes()
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
    // The same records dumped through the control socket while the
    // program lives: vlog-ctl names the frames the program sends encoded.
    wait_for(&dir.join("logged"), &mut child);
    let s = sock.to_str().unwrap();
    let ctl_text = ctl_ok(&[s, "dump"]);
    let ctl_json = ctl_ok(&["--json", s, "dump"]);
    let encoded = raw_reply(&sock, "dump --encoded-frames");
    std::fs::write(dir.join("end"), b"").unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");

    let read = vlog_dump(&[ring.to_str().unwrap()]);
    let dump = text(&read.stdout);
    let dump_json = text(&vlog_dump(&["--json", ring.to_str().unwrap()]).stdout);
    for message in ["program call 12", "library call 12", "always 10"] {
        let shown = frame_lines(&dump, message);
        assert!(shown.len() >= 4, "{message}:\n{dump}");
        assert_eq!(
            frame_lines(&ctl_text, message),
            shown,
            "vlog-ctl dump:\n{ctl_text}\nvlog-dump:\n{dump}"
        );
        let field = |json: &str| {
            let line = json
                .lines()
                .find(|l| l.contains(&format!("\"message\":\"{message}\"")))
                .unwrap_or_else(|| panic!("no {message} in:\n{json}"));
            json_field(line, "VLOG_BACKTRACE").to_string()
        };
        assert_eq!(field(&ctl_json), field(&dump_json), "{ctl_json}");
    }
    lent_to_nobody(&exe, &ring, &encoded, &dump);
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

/// Nine backtraces wanted at once, eight slots: the ninth call returns at
/// once (no capture is under the logger's lock), its record kept without
/// frames and counted in `vlog_stats.backtraces_lost` (see the program).
#[test]
fn a_backtrace_with_no_slot_is_counted_and_its_record_kept() {
    let exe = build("backtraces_lost", Link::Static);
    let out = run(&exe, &[("VLOG_OUTPUTS", "")]);
    assert_ok("backtraces_lost", &out);
}
