//! A systemd-journald started by a test, and what it stored: shared by
//! vlog's tests and vlog-bridge's (which include this file alone).

use std::path::Path;
use std::process::{Command, Stdio};

/// A journald started here for the test (it runs standalone as root), and
/// stopped when dropped.
pub struct Journald(std::process::Child);

impl Journald {
    pub fn start() -> Option<Journald> {
        let binary = Path::new("/lib/systemd/systemd-journald");
        // SAFETY: geteuid has no preconditions.
        if !binary.exists() || unsafe { libc::geteuid() } != 0 {
            return None;
        }
        std::fs::create_dir_all("/run/systemd/journal").ok()?;
        let child = Command::new(binary)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let journald = Journald(child);
        for _ in 0..100 {
            if std::os::unix::net::UnixDatagram::unbound()
                .and_then(|s| s.connect("/run/systemd/journal/socket"))
                .is_ok()
            {
                return Some(journald);
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        None
    }
}

impl Drop for Journald {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Entries journalctl shows for `matches`, as JSON lines, waiting up to 5 s
/// for `count` of them.
pub fn journal_entries(matches: &[&str], count: usize) -> String {
    let mut out = String::new();
    for _ in 0..100 {
        let run = Command::new("journalctl")
            .args(["-o", "json", "--no-pager"])
            .args(matches)
            .output()
            .expect("journalctl");
        out = String::from_utf8_lossy(&run.stdout).into_owned();
        if out.lines().count() >= count {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    out
}
