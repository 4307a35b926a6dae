//! Nobody outside the daemon's own user can make vlog open, write, wait or
//! say more than they should (DESIGN.md, "Authority"). Each test plays the
//! attacker: another user (setpriv) planting files or talking to the
//! control socket as a member of its log group, a resolver that never
//! answers (a network namespace of the test's own), a hostile server for
//! vlog-ctl, a child writing C1 controls, fields named as journald's own.
//! The daemon is `c-tests/authority.c` (or `control.c serve`).

use crate::common::*;
use crate::control::{can_change_user, open_dir, vlog_ctl, vlog_ctl_as, Daemon};
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// The uid and gid the other user has (nobody), and the log group the
/// daemon admits to its control socket.
const OTHER: u32 = 65534;
const LOG_GROUP: u32 = 65530;

/// A directory every user may write to, sticky, as /tmp is.
fn sticky_dir(name: &str) -> PathBuf {
    let dir = open_dir(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    dir
}

/// Runs `script` with sh as the other user, in `dir`.
fn as_other_user(dir: &Path, script: &str) {
    let out = Command::new("setpriv")
        .arg(format!("--reuid={OTHER}"))
        .arg(format!("--regid={OTHER}"))
        .arg("--clear-groups")
        .args(["sh", "-c", script])
        .current_dir(dir)
        .output()
        .unwrap();
    assert_ok(&format!("as uid {OTHER}: {script}"), &out);
}

fn mknod(path: &Path, kind: u32, major: u32, minor: u32) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path; makes a device node (as root).
    let rc = unsafe { libc::mknod(c.as_ptr(), kind | 0o600, libc::makedev(major, minor)) };
    assert_eq!(
        rc,
        0,
        "mknod {}: {}",
        path.display(),
        std::io::Error::last_os_error()
    );
}

/// Case 2, and devices: files another user planted in a sticky directory
/// (a dump file, a log file, a ring image, a FIFO) receive nothing, each is
/// refused with one warning, and the rest of the configuration works; a
/// block device, a character device other than /dev/null or a terminal, a
/// hard link and a file others may write are refused too.
#[test]
fn files_another_user_planted_get_nothing() {
    if !can_change_user() {
        return;
    }
    let dir = sticky_dir("planted");
    let d = dir.to_str().unwrap();
    as_other_user(
        &dir,
        "umask 0; : > planted.log; printf 'theirs\\n' > planted.json; : > planted.crash; \
         : > own.crash.ring; mkfifo planted.fifo",
    );
    std::fs::write(dir.join("secret"), "SECRET FILE\n").unwrap();
    std::fs::set_permissions(dir.join("secret"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::hard_link(dir.join("secret"), dir.join("linked.log")).unwrap();
    std::fs::write(dir.join("shared.log"), "").unwrap();
    std::fs::set_permissions(
        dir.join("shared.log"),
        std::fs::Permissions::from_mode(0o666),
    )
    .unwrap();
    std::fs::write(dir.join("group.log"), "").unwrap();
    std::fs::set_permissions(
        dir.join("group.log"),
        std::fs::Permissions::from_mode(0o660),
    )
    .unwrap();
    // A loop device's numbers (one that is not set up: opening it would
    // fail anyway) and /dev/kmsg's (log lines into the kernel's log).
    mknod(&dir.join("disk"), libc::S_IFBLK, 7, 250);
    mknod(&dir.join("kmsg"), libc::S_IFCHR, 1, 11);
    let exe = build("authority", Link::Static);

    let outputs =
        format!("1:file:{d}/planted.log 1:json:{d}/planted.json 1:file:{d}/own.log 3:stderr");
    let dump = format!("file:{d}/planted.crash");
    let out = run_within(
        30,
        &exe,
        &["files", d],
        &[
            ("VLOG_OUTPUTS", &outputs),
            ("VLOG_DUMP", &dump),
            ("VLOG_LEVEL", "info"),
        ],
    );
    assert_ok("authority files", &out);
    let err = text(&out.stderr);
    for planted in ["planted.log", "planted.json", "planted.crash"] {
        assert_eq!(
            err.lines()
                .filter(|l| l.contains(planted) && l.contains("owned by uid 65534"))
                .count(),
            1,
            "one warning for {planted}:\n{err}"
        );
    }

    if !signal_test_skipped() {
        planted_dump_files_get_nothing(&exe, &dir);
    }

    // A link planted where the ring file is built (its name has the pid,
    // which the planter knows once the program starts): passed over, never
    // removed nor followed; the ring file is made beside it.
    let passwd = std::fs::read("/etc/passwd").unwrap();
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "setpriv --reuid={OTHER} --regid={OTHER} --clear-groups \
             ln -s /etc/passwd \"$0/ring.$$.0.new\" && echo $$ && exec \"$1\" ring"
        ))
        .arg(&dir)
        .arg(&exe)
        .env("VLOG_BUFFER_FILE", dir.join("ring"))
        .output()
        .unwrap();
    assert_ok("authority ring", &out);
    let pid = text(&out.stdout).trim().to_owned();
    let planted = dir.join(format!("ring.{pid}.0.new"));
    assert_eq!(
        std::fs::read_link(&planted).ok(),
        Some(PathBuf::from("/etc/passwd"))
    );
    assert_eq!(std::fs::read("/etc/passwd").unwrap(), passwd);
    let dumped = vlog_dump(&[dir.join("ring").to_str().unwrap()]);
    assert!(
        text(&dumped.stdout).contains("RING RECORD"),
        "{}",
        text(&dumped.stdout)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The crash parts of [`files_another_user_planted_get_nothing`] (the
/// sanitizer and valgrind passes handle fatal signals themselves).
fn planted_dump_files_get_nothing(exe: &Path, dir: &Path) {
    let d = dir.to_str().unwrap();
    let dump = format!("file:{d}/planted.crash");
    // A crash with the planted dump file: the dump goes to stderr, nothing
    // into their file.
    let out = run_within(
        30,
        exe,
        &["crash"],
        &[("VLOG_DUMP", &dump), ("VLOG_OUTPUTS", "4:stderr")],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.signal_number(), Some(libc::SIGSEGV), "{err}");
    assert!(err.contains("vlog: fatal signal SIGSEGV"), "{err}");
    assert_eq!(
        std::fs::read(dir.join("planted.crash")).unwrap(),
        b"",
        "{err}"
    );
    // Our own dump file, with a ring image planted beside it: the dump is
    // written, the image is not.
    let own = format!("file:{d}/own.crash");
    let out = run_within(30, exe, &["crash"], &[("VLOG_DUMP", &own)]);
    let err = text(&out.stderr);
    let dumped = std::fs::read_to_string(dir.join("own.crash")).unwrap_or_default();
    assert!(
        dumped.contains("SECRET before the crash"),
        "{dumped}\n{err}"
    );
    assert_eq!(
        std::fs::read(dir.join("own.crash.ring")).unwrap(),
        b"",
        "{err}"
    );
    // A FIFO another user planted as the dump file: refused at once, not
    // waited on for a reader.
    let fifo = format!("file:{d}/planted.fifo");
    let out = run_within(30, exe, &["crash"], &[("VLOG_DUMP", &fifo)]);
    let err = text(&out.stderr);
    assert!(
        err.contains("planted.fifo") && err.contains("a FIFO, which"),
        "{err}"
    );
}

trait SignalNumber {
    fn signal_number(&self) -> Option<i32>;
}

impl SignalNumber for std::process::ExitStatus {
    fn signal_number(&self) -> Option<i32> {
        std::os::unix::process::ExitStatusExt::signal(self)
    }
}

/// Case 1: a member of the log group the socket admits may observe and
/// tune, never open a file or a connection; what it sends is recorded as
/// a field's value, never spliced into a message.
#[test]
fn a_log_group_member_may_observe_and_tune_but_never_open() {
    if !can_change_user() {
        return;
    }
    let exe = build("control", Link::Static);
    let dir = open_dir("authority-group");
    let sock = dir.join("ctl.sock");
    let spec = format!("{}?group={LOG_GROUP}", sock.display());
    let daemon = Daemon::start(&exe, &dir, &spec, None);
    let s = sock.to_str().unwrap();
    let member = |args: &[&str]| vlog_ctl_as(Some((OTHER, Some(LOG_GROUP))), args);

    let target = dir.join("zz.sh");
    for request in [
        vec![s, "outputs", &*format!("1:json:{}", target.display())],
        vec![s, "outputs", "1:file:/dev/null"],
        vec![s, "reopen"],
        // reload may change the outputs: the file's owner's word only.
        vec![s, "reload"],
    ] {
        let out = member(&request);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{request:?}: {err}");
        assert!(
            err.contains("refused") && err.contains("only the daemon's user (uid 0) and root may"),
            "{request:?}: {err}"
        );
    }
    assert!(
        !target.exists(),
        "the group's request made {}",
        target.display()
    );

    // Observe and tune.
    for request in [
        vec![s, "show"],
        vec![s, "stats"],
        vec![s, "dump"],
        vec![s, "level", "info"],
        vec![s, "filters", "1:x$(id>/tmp/p)"],
    ] {
        let out = member(&request);
        assert_ok(&format!("member: {request:?}"), &out);
    }
    // The value is a field of the record that says so, never its message.
    let out = vlog_ctl(&[s, "dump", "--json", "--source", "vlog"]);
    assert_ok("dump", &out);
    let dumped = text(&out.stdout);
    let change = dumped
        .lines()
        .find(|l| l.contains("\"func\":\"control\"") && l.contains("x$(id"))
        .unwrap_or_else(|| panic!("no record of the change:\n{dumped}"));
    let message = json_field(change, "message");
    assert!(
        !message.contains('$') && !message.contains("x$("),
        "{change}"
    );
    assert!(change.contains("\"NEW\":\"1:x$(id>/tmp/p)\""), "{change}");
    // Members cannot take up every connection: with 16 of theirs open
    // (following, never reading), the daemon's user still gets in.
    let mut hog = Command::new("setpriv")
        .arg(format!("--reuid={OTHER}"))
        .arg(format!("--regid={OTHER}"))
        .arg(format!("--groups={LOG_GROUP}"))
        .args(["/usr/bin/python3", "-c"])
        .arg(
            "import socket, sys, time\n\
             kept = []\n\
             for _ in range(16):\n\
             \x20   c = socket.socket(socket.AF_UNIX)\n\
             \x20   c.connect(sys.argv[1])\n\
             \x20   c.sendall(b'follow\\n')\n\
             \x20   kept.append(c)\n\
             print('ready', flush=True)\n\
             time.sleep(60)\n",
        )
        .arg(s)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(hog.stdout.as_mut().unwrap()),
        &mut ready,
    )
    .unwrap();
    assert_eq!(ready, "ready\n");
    let shown = vlog_ctl(&[s, "show"]);
    let _ = hog.kill();
    let _ = hog.wait();
    assert_ok("root, with 16 of the members' connections open", &shown);
    // The daemon's own user may.
    let own = vlog_ctl(&[s, "outputs", &format!("1:json:{}", target.display())]);
    assert_ok("root: outputs", &own);
    assert!(target.exists(), "{target:?}");
    drop(daemon);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Case 5: `auto?group=G` makes a directory the group can enter.
#[test]
fn auto_with_a_group_makes_a_directory_the_group_can_enter() {
    if !can_change_user() {
        return;
    }
    let exe = build("control", Link::Static);
    // The program's name names the directory (/run/IDENT): one of its own.
    let dir = open_dir("authority-auto");
    let ident = format!("vlog-auto-{}", std::process::id());
    let copy = dir.join(&ident);
    std::fs::copy(&exe, &copy).unwrap();
    let run_dir = Path::new("/run").join(&ident);
    let _ = std::fs::remove_dir_all(&run_dir);
    let daemon = Daemon::start(&copy, &dir, &format!("auto?group={LOG_GROUP}"), None);
    let meta = std::fs::metadata(&run_dir).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!((meta.mode() & 0o7777, meta.gid()), (0o750, LOG_GROUP));
    let sock = run_dir.join("vlog.sock");
    let out = vlog_ctl_as(
        Some((OTHER, Some(LOG_GROUP))),
        &[sock.to_str().unwrap(), "show"],
    );
    assert_ok("a member of the group, through auto's directory", &out);
    drop(daemon);
    let _ = std::fs::remove_dir_all(&run_dir);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs the authority program in a network and mount namespace of its
/// own: only loopback, `resolv` as /etc/resolv.conf and `hosts` (a file in
/// `dir`) as /etc/hosts; `before` runs first, in the namespace.
fn in_private_network(
    dir: &Path,
    resolv: &str,
    hosts: &str,
    before: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Option<Output> {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let tools = Command::new("unshare").arg("--version").output().is_ok()
        && Command::new("ip").arg("-V").output().is_ok();
    if !root || !tools {
        needs_installed("a private network namespace needs root, unshare and ip (iproute2)");
        return None;
    }
    std::fs::write(dir.join("resolv.conf"), resolv).unwrap();
    std::fs::write(dir.join("hosts"), hosts).unwrap();
    let exe = build("authority", Link::Static);
    let cmd = command(&exe);
    let program: Vec<String> = cmd
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let program = std::iter::once(cmd.get_program().to_string_lossy().into_owned())
        .chain(program)
        .chain(args.iter().map(|a| a.to_string()))
        .map(|a| format!("'{a}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let script = format!(
        "set -e; ip link set lo up; mount --bind {d}/resolv.conf /etc/resolv.conf; \
         mount --bind {d}/hosts /etc/hosts; {before} exec {program}",
        d = dir.display()
    );
    let mut sh = Command::new("unshare");
    sh.args(["--net", "--mount", "sh", "-c", &script]);
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            sh.env(k, v);
        }
    }
    without_vlog_env(&mut sh);
    sh.envs(env.iter().copied())
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = sh.spawn().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "authority {args:?} still running after 90 s:\n{}\n{}",
                text(&out.stdout),
                text(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(child.wait_with_output().unwrap())
}

/// A name server on loopback, started in the namespace by the script this
/// returns, that reads every query, answers none, and records that it was
/// asked (`DIR/dns-asked`).
fn silent_name_server(dir: &Path) -> String {
    let d = dir.to_str().unwrap();
    std::fs::write(
        dir.join("dns.py"),
        format!(
            "import os, socket\n\
             parent = os.getppid()\n\
             s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
             s.bind(('127.0.0.1', 53))\n\
             s.settimeout(0.2)\n\
             open('{d}/dns-up', 'w').close()\n\
             while os.getppid() == parent:\n\
             \x20   try:\n\
             \x20       s.recvfrom(512)\n\
             \x20       open('{d}/dns-asked', 'a').write('q\\n')\n\
             \x20   except socket.timeout:\n\
             \x20       pass\n"
        ),
    )
    .unwrap();
    format!("python3 {d}/dns.py & while [ ! -e {d}/dns-up ]; do sleep 0.05; done;")
}

/// Case 3: a collector's name that cannot be resolved (a resolver that
/// never answers) in VLOG_OUTPUTS, in vlog_set_outputs and through the
/// control socket: no logging thread waits for it, nor does the call that
/// names it, and every other output works meanwhile.
#[test]
fn a_resolver_that_never_answers_holds_up_nothing() {
    let dir = scratch_dir("authority-resolve");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let d = dir.to_str().unwrap();
    let dns = silent_name_server(&dir);
    let outputs = format!("1:file:{d}/own.log 2:syslog:d@udp://startup.example.net:514");
    let control = format!("{d}/ctl.sock");
    let asked = format!("{d}/dns-asked");
    let Some(out) = in_private_network(
        &dir,
        "nameserver 127.0.0.1\noptions timeout:30 attempts:1\n",
        "127.0.0.1 localhost\n",
        &dns,
        &["resolve", d],
        &[
            ("VLOG_OUTPUTS", &outputs),
            ("VLOG_LEVEL", "info"),
            ("VLOG_CONTROL", &control),
            ("DNS_ASKED", &asked),
        ],
    ) else {
        return;
    };
    assert_ok("authority resolve", &out);
    assert!(Path::new(&asked).exists(), "the resolver was never asked");
    let err = text(&out.stderr);
    assert!(!err.contains("ignoring VLOG_OUTPUTS"), "{err}");
}

/// Case 3, recovery: a collector whose name does not resolve at first is
/// said once, its lines wait, and they are sent once it resolves (said
/// once); the other outputs work meanwhile.
#[test]
fn a_collector_that_resolves_later_gets_its_lines() {
    let dir = scratch_dir("authority-recover");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let d = dir.to_str().unwrap();
    let hosts = format!("{d}/hosts");
    let Some(out) = in_private_network(
        &dir,
        // Nothing listens there: every query fails at once.
        "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n",
        "127.0.0.1 localhost\n",
        "",
        &["recover", d],
        &[("HOSTS_FILE", &hosts), ("VLOG_LEVEL", "info")],
    ) else {
        return;
    };
    assert_ok("authority recover", &out);
    let err = text(&out.stderr);
    assert_eq!(
        err.matches("cannot resolve syslog collector 'late.collector.test:")
            .count(),
        1,
        "{err}"
    );
    assert_eq!(err.matches("resolved to 127.0.0.1:").count(), 1, "{err}");
}

/// A name look-up opens its socket at the lowest free number: with
/// descriptor 0 closed, none is made (what the program reads there would
/// come from the name server), and that is said once; with it open again,
/// the name is looked up.
#[test]
fn no_name_is_looked_up_while_a_standard_descriptor_is_closed() {
    let dir = scratch_dir("authority-stdio");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let d = dir.to_str().unwrap();
    let asked = format!("{d}/dns-asked");
    let Some(out) = in_private_network(
        &dir,
        "nameserver 127.0.0.1\noptions timeout:30 attempts:1\n",
        "127.0.0.1 localhost\n",
        &silent_name_server(&dir),
        &["stdio", d],
        &[("DNS_ASKED", &asked), ("VLOG_LEVEL", "info")],
    ) else {
        return;
    };
    assert_ok("authority stdio", &out);
}

/// `VLOG_CONTROL=PATH?group=NAME` whose look-up never returns (the name
/// service's file is a FIFO nobody writes): the socket's thread waits for
/// it, and nothing else does: vlog_control_stop, a new socket and exit
/// return at once, and the stopped one is never put in force.
#[test]
fn a_group_look_up_that_never_returns_holds_up_nothing() {
    let dir = scratch_dir("authority-group-hangs");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let d = dir.to_str().unwrap();
    let before = format!(
        "rm -f {d}/group.fifo; mkfifo {d}/group.fifo; mount --bind {d}/group.fifo /etc/group;"
    );
    let control = format!("{d}/a.sock?group=vlog-no-such-group");
    let Some(out) = in_private_network(
        &dir,
        "nameserver 127.0.0.1\n",
        "127.0.0.1 localhost\n",
        &before,
        &["group", d],
        &[("VLOG_CONTROL", &control)],
    ) else {
        return;
    };
    assert_ok("authority group", &out);
    assert!(
        text(&out.stdout).contains("group ok"),
        "{}",
        text(&out.stdout)
    );
    assert!(!dir.join("a.sock").exists(), "{dir:?}");
}

/// A Unix socket server of the test's that answers one connection with
/// `reply` (written whole or until the client goes), as a hostile program
/// would.
fn hostile_server(path: &Path, reply: Vec<u8>, endless: bool) -> std::thread::JoinHandle<()> {
    let _ = std::fs::remove_file(path);
    let listener = std::os::unix::net::UnixListener::bind(path).unwrap();
    std::thread::spawn(move || {
        let (mut c, _) = listener.accept().unwrap();
        let mut request = [0u8; 4096];
        let _ = c.read(&mut request);
        let _ = c.write_all(&reply);
        if endless {
            while c.write_all(&[b'A'; 65536]).is_ok() {}
        }
    })
}

/// Case 4: vlog-ctl treats whatever answers as untrusted: what it prints
/// has control bytes escaped (C0, DEL, C1), and the status line and the
/// reply are bounded.
#[test]
fn vlog_ctl_escapes_and_bounds_what_a_server_sends() {
    let dir = private_dir_for("authority-ctl");
    let sock = dir.join("evil.sock");
    let s = sock.to_str().unwrap();
    let mut reply = b"ok\n".to_vec();
    reply.extend_from_slice(b"VLOG_LEVEL=3\x1b]0;owned\x07\x1b]52;c;ZXZpbA==\x07\x1b[2J\n");
    reply.extend_from_slice(b"VLOG_FILTERS=\x9b31m\xc2\x9d0;title\xc2\x9c\x7f\r1:*\n");
    let server = hostile_server(&sock, reply, false);
    let out = vlog_ctl(&[s, "show"]);
    server.join().unwrap();
    assert_ok("vlog-ctl show", &out);
    let shown = &out.stdout;
    let raw = |b: &[u8]| shown.windows(b.len()).any(|w| w == b);
    for bad in [
        &b"\x1b"[..],
        b"\x07",
        b"\x9b",
        b"\xc2\x9d",
        b"\xc2\x9c",
        b"\x7f",
        b"\r",
    ] {
        assert!(
            !raw(bad),
            "{bad:?} reached the terminal raw: {:?}",
            text(shown)
        );
    }
    assert!(
        text(shown).contains("VLOG_LEVEL=3\\x1b]0;owned\\x07"),
        "{}",
        text(shown)
    );

    // A dump's backtrace lines that are not whole encodings: shown as
    // they came, escaped; a whole one naming a FIFO: named, the FIFO never
    // opened (vlog-ctl would hang on it).
    let fifo = dir.join("fifo");
    let _ = std::fs::remove_file(&fifo);
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let mut whole = vec![1u8, 1];
    whole.extend_from_slice(&0x5000u64.to_ne_bytes());
    whole.push(0);
    whole.extend_from_slice(&0x1000u64.to_ne_bytes());
    whole.push(2);
    whole.extend_from_slice(b"\x01\x02");
    let path = fifo.to_str().unwrap().as_bytes();
    whole.push(path.len() as u8);
    whole.extend_from_slice(path);
    let hex: String = whole.iter().map(|b| format!("{b:02x}")).collect();
    let reply = format!(
        "ok\nrecord line\n  frames zz\x1b[2J\n  frames 0102\n  frames {hex}\n  frames {hex}00\n"
    );
    let server = hostile_server(&sock, reply.into_bytes(), false);
    let out = vlog_ctl(&[s, "dump"]);
    server.join().unwrap();
    assert_ok("vlog-ctl dump", &out);
    assert_eq!(
        text(&out.stdout),
        format!(
            "record line\n  frames zz\\x1b[2J\n  frames 0102\n  \
             #0 0x0000000000005000 ?? in {}+0x4000\n  frames {hex}00\n",
            fifo.display()
        )
    );
    // A JSON record whose frames are named: what it kept of the server's
    // line reaches the terminal escaped as any other line.
    let mut reply = b"{\"ok\":true}\n{\"message\":\"A\x7f B\xc2\x9b C\x9b\",".to_vec();
    reply.extend_from_slice(format!("\"fields\":{{\"VLOG_BACKTRACE\":\"{hex}\"}}}}\n").as_bytes());
    let server = hostile_server(&sock, reply, false);
    let out = vlog_ctl(&["--json", s, "dump"]);
    server.join().unwrap();
    assert_ok("vlog-ctl --json dump", &out);
    assert_eq!(
        text(&out.stdout),
        format!(
            "{{\"message\":\"A\\x7f B\\xc2\\x9b C\\x9b\",\"fields\":{{\"VLOG_BACKTRACE\":\
             \"#0 0x0000000000005000 ?? in {}+0x4000\"}}}}\n",
            fifo.display()
        )
    );

    // A program whose library predates --encoded-frames refuses it: asked
    // again without, its dump is shown; the request it refused had the
    // option right after the command.
    let _ = std::fs::remove_file(&sock);
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let old = std::thread::spawn(move || {
        let mut requests = Vec::new();
        for reply in [
            &b"error: unknown option '--encoded-frames'\n"[..],
            b"ok\nthe old library's record\n",
        ] {
            let (mut c, _) = listener.accept().unwrap();
            let mut request = [0u8; 4096];
            let n = c.read(&mut request).unwrap_or(0);
            requests.push(String::from_utf8_lossy(&request[..n]).into_owned());
            let _ = c.write_all(reply);
        }
        requests
    });
    let out = vlog_ctl(&[s, "dump", "--source", "x"]);
    let requests = old.join().unwrap();
    assert_ok("vlog-ctl dump of an old library", &out);
    assert_eq!(text(&out.stdout), "the old library's record\n");
    assert_eq!(
        requests,
        ["dump --encoded-frames --source x\n", "dump --source x\n"]
    );

    // A status line that never ends: vlog-ctl stops at its bound.
    let server = hostile_server(&sock, b"ok".to_vec(), true);
    let out = vlog_ctl(&[s, "stats"]);
    drop(server);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("status line"),
        "{}",
        text(&out.stderr)
    );
    // A reply that never ends.
    let server = hostile_server(&sock, b"ok\n".to_vec(), true);
    let out = vlog_ctl(&[s, "show"]);
    drop(server);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("longer than"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        out.stdout.len() <= 1 << 20,
        "{} bytes printed",
        out.stdout.len()
    );

    // A server that never accepts (its queue of connections full), and one
    // that drips its reply a byte a second: each holds vlog-ctl 10 s, not
    // for ever (both at once).
    let full = dir.join("full.sock");
    let _ = std::fs::remove_file(&full);
    let mut never = Command::new("python3")
        .arg("-c")
        .arg(
            "import socket, sys, time\n\
             l = socket.socket(socket.AF_UNIX)\n\
             l.bind(sys.argv[1])\n\
             l.listen(0)\n\
             kept = []\n\
             while True:\n\
             \x20   c = socket.socket(socket.AF_UNIX)\n\
             \x20   c.setblocking(False)\n\
             \x20   try:\n\
             \x20       c.connect(sys.argv[1])\n\
             \x20   except BlockingIOError:\n\
             \x20       break\n\
             \x20   kept.append(c)\n\
             open(sys.argv[1] + '.ready', 'w').close()\n\
             time.sleep(60)\n",
        )
        .arg(&full)
        .spawn()
        .unwrap();
    let ready = dir.join("full.sock.ready");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !ready.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the full server did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let drip_path = dir.join("drip.sock");
    let _ = std::fs::remove_file(&drip_path);
    let drip = std::os::unix::net::UnixListener::bind(&drip_path).unwrap();
    let dripping = std::thread::spawn(move || {
        let (mut c, _) = drip.accept().unwrap();
        let _ = c.write_all(b"ok\n");
        for _ in 0..30 {
            std::thread::sleep(Duration::from_secs(1));
            if c.write_all(b"x").is_err() {
                break;
            }
        }
    });
    let started = std::time::Instant::now();
    let waits: Vec<_> = [full, drip_path]
        .into_iter()
        .map(|p| std::thread::spawn(move || vlog_ctl(&[p.to_str().unwrap(), "show"])))
        .collect();
    for wait in waits {
        let out = wait.join().unwrap();
        assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    }
    let took = started.elapsed();
    let _ = never.kill();
    let _ = never.wait();
    let _ = dripping.join();
    assert!(took < Duration::from_secs(30), "vlog-ctl waited {took:?}");
}

fn private_dir_for(name: &str) -> PathBuf {
    let dir = scratch_dir(name);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

/// Case 6: vlog-relay's tail (a killed command's last stderr bytes, with
/// no ring) is escaped as every text vlog prints: C1 controls included.
#[test]
fn vlog_relay_escapes_a_killed_commands_tail() {
    let out = Command::new(env!("CARGO_BIN_EXE_vlog-relay"))
        .args([
            "--",
            "sh",
            "-c",
            "printf 'a\\233 31m b\\302\\2350;t\\302\\234 c\\033[2J d\\n' >&2; kill -TERM $$",
        ])
        .env("VLOG_BUFFER_SIZE", "0")
        .env_remove("VLOG_OUTPUTS")
        .env_remove("VLOG_FILTERS")
        .output()
        .unwrap();
    let err = &out.stderr;
    assert_eq!(
        out.status.code(),
        Some(128 + libc::SIGTERM),
        "{}",
        text(err)
    );
    assert!(text(err).contains("there is no ring"), "{}", text(err));
    for bad in [&b"\x9b"[..], b"\xc2\x9d", b"\xc2\x9c", b"\x1b"] {
        assert!(
            !err.windows(bad.len()).any(|w| w == bad),
            "{bad:?} raw in: {:?}",
            text(err)
        );
    }
    assert!(
        text(err).contains("a\\x9b 31m b\\xc2\\x9d0;t\\xc2\\x9c c\\x1b[2J d"),
        "{}",
        text(err)
    );
}

/// Case 7: fields named as journald's own or vlog's cannot speak for the
/// entry; a name given twice, two invalid names, two long names that share
/// their first 32 characters: every output carries each key once, and
/// syslog's SD-PARAM names never merge two fields.
#[test]
fn fields_never_speak_for_someone_else() {
    let dir = private_dir_for("authority-fields");
    let d = dir.to_str().unwrap();
    let journald = super::real_daemons::Journald::start();
    if journald.is_none() {
        say_skipped("journald part: cannot start systemd-journald (not root, or not installed)");
    }
    let exe = build("authority", Link::Static);
    let mut env = vec![];
    if journald.is_some() {
        env.push(("WITH_JOURNALD", "1"));
    }
    let out = run_within(30, &exe, &["fields", d], &env);
    assert_ok("authority fields", &out);
    let stdout = text(&out.stdout);
    let json = stdout
        .lines()
        .find_map(|l| l.strip_prefix("JSON "))
        .unwrap_or_else(|| panic!("{stdout}"));
    let syslog = stdout
        .lines()
        .find_map(|l| l.strip_prefix("SYSLOG "))
        .unwrap_or_else(|| panic!("{stdout}"));
    // JSON: the record's own members, then each field once.
    let fields = &json[json
        .find("\"fields\":{")
        .unwrap_or_else(|| panic!("{json}"))..];
    for reserved in [
        "\"PRIORITY\"",
        "\"SYSLOG_IDENTIFIER\"",
        "\"MESSAGE\"",
        "\"CODE_LINE\"",
        "\"MESSAGE_ID\"",
        "\"OBJECT_PID\"",
        "\"OBJECT_SYSTEMD_UNIT\"",
        "\"UNIT\"",
        "\"VLOG_SOURCE\"",
    ] {
        assert!(
            !fields.contains(&format!("{reserved}:")),
            "{reserved} in {json}"
        );
    }
    // The keys: each string followed by a colon.
    let keys: Vec<&str> = fields
        .match_indices("\":")
        .map(|(at, _)| &fields[fields[..at].rfind('"').unwrap() + 1..at])
        .collect();
    let mut unique = keys.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(keys.len(), unique.len(), "a key twice in {json}");
    assert!(fields.contains("\"REQUEST\":\"first\""), "{json}");
    assert!(!fields.contains("second"), "{json}");
    // Syslog: every SD-PARAM name at most 32 characters, none twice, and
    // both long fields there.
    let sd = &syslog[syslog
        .find("[vlog@32473")
        .unwrap_or_else(|| panic!("{syslog}"))..];
    let sd = &sd[..sd.find(']').unwrap()];
    let names: Vec<&str> = sd
        .split(' ')
        .skip(1)
        .filter_map(|p| p.split_once('=').map(|(n, _)| n))
        .collect();
    assert!(names.iter().all(|n| n.len() <= 32), "{syslog}");
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(names.len(), unique.len(), "a name twice in {syslog}");
    assert!(sd.contains("=\"1\"") && sd.contains("=\"2\""), "{syslog}");
    assert!(
        !sd.contains("PRIORITY=") && !sd.contains("SYSLOG_IDENTIFIER="),
        "{syslog}"
    );

    if journald.is_some() {
        let pid = stdout
            .lines()
            .find_map(|l| l.strip_prefix("PID "))
            .unwrap_or_default()
            .to_owned();
        let entries = super::real_daemons::journal_entries(
            &[&format!("_PID={pid}"), "VLOG_SOURCE=test.authority"],
            1,
        );
        assert!(entries.contains("FIELDS RECORD"), "{entries}");
        assert!(!entries.contains("spoofed"), "{entries}");
        assert!(!entries.contains("someone.else"), "{entries}");
        assert!(!entries.contains("sshd.service"), "{entries}");
        let spoofed = Command::new("journalctl")
            .args(["-o", "json", "--no-pager", "-t", "spoofed"])
            .arg(format!("_PID={pid}"))
            .output()
            .unwrap();
        assert!(
            !text(&spoofed.stdout).contains("FIELDS RECORD"),
            "{}",
            text(&spoofed.stdout)
        );
    }
}
