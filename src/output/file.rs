//! `PRIO:file:PATH` and `PRIO:json:PATH`: a log file, appended to with one
//! write(2) per batch of lines. A file that is deleted or replaced (log rotation) is
//! noticed within a second and opened again by its path; `vlog_reopen()`
//! does it at once. A descriptor the program closed (or closed and reused:
//! `close_range` after vlog started) is noticed before the next line and
//! the file opened again by its path (see `sys::fd`). With `?max=SIZE`,
//! the file is rotated before it would pass SIZE (see `rotate`). Once the
//! process has moved its root (chroot), "its path" is its name in the
//! directory kept from configuration (see `sys::dir`), and rotation, which
//! renames by path, stops with one warning.

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use super::rotate::{self, Outcome, Rotate};
use super::said::either;
use crate::error::ConfigError;
use crate::sys::dir::InDir;
use crate::sys::record_lock::Holder;
use crate::sys::{self, Fd, Private};

#[derive(Debug)]
pub struct FileOutput {
    path: PathBuf,
    /// The file by its directory's descriptor and its name, what it is
    /// opened again through once the process's root moved (see
    /// `sys::dir`); None when the directory could not be opened, and then
    /// the path is used.
    place: Option<InDir>,
    /// None after the descriptor was lost and the file could not be opened
    /// again.
    fd: Option<Fd>,
    /// The coarse second of the last rotation check, and whether reopening
    /// failed then (reported once).
    checked_at: u64,
    reopen_failed: bool,
    /// Whether opening the output created the file: a configuration that is
    /// refused removes it again.
    created: bool,
    /// `?max=SIZE&keep=N`.
    rotate: Option<Rotate>,
    /// The rotations made, to be said (see `Output::take_notices`).
    notices: Vec<String>,
    /// Whether the descriptor changed since the crash handler was told
    /// (see `Output::take_notices`).
    moved: bool,
    /// Whether another user's lock on the file was said.
    stranger_said: bool,
    /// The coarse second a rotation last failed: said once, tried again at
    /// most once a second.
    rotate_failed: Option<u64>,
}

/// How many times one batch may find the file rotated by another process
/// and follow it before it is written where it is.
const FOLLOW_ROUNDS: usize = 4;

/// How many times a batch tries the file's record lock, letting the others
/// run between tries, while a peer holds it (for one batch, or one
/// rotation: a rename per file kept). Never a sleep: this may run under
/// the logger's lock.
const LOCK_TRIES: usize = 64;

/// What a batch has of the file's record lock (see `rotate`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Locked {
    Held,
    /// A peer (a process of this user) held it all along: the batch is
    /// written without it, and the file not rotated now.
    ByPeer,
    /// Another user's process holds it (anyone who may read the file can
    /// take a read lock): not theirs to decide, the batch goes on as if
    /// this process held it. The uid, said once.
    ByStranger(u32),
}

fn lock_briefly(fd: &Fd) -> Locked {
    for _ in 0..LOCK_TRIES {
        match fd.try_record_lock() {
            Ok(None) => return Locked::Held,
            Ok(Some(Holder::Stranger(uid))) => return Locked::ByStranger(uid),
            Ok(Some(Holder::Peer(_))) => std::thread::yield_now(),
            Err(_) => return Locked::ByPeer,
        }
    }
    Locked::ByPeer
}

fn unlock(fd: Option<&Fd>, locked: Locked) {
    if let Some(fd) = fd.filter(|_| locked == Locked::Held) {
        fd.record_unlock();
    }
}

/// Opens a log file for appending (see `sys::open_private`): O_APPEND, so
/// each line's write(2) is atomic with respect to other writers, and
/// O_NONBLOCK, so a FIFO needs a reader now and a full one drops lines
/// instead of blocking the daemon.
fn open_log(path: &std::path::Path) -> io::Result<Fd> {
    sys::open_private(path, Private::Log)
}

/// Makes the lines written to `fd`'s file durable (fdatasync; as long as
/// the disk takes, so never under the logger's lock). A file that cannot be
/// synced (a FIFO, a terminal, /dev/null: EINVAL) has nothing to make
/// durable.
pub fn sync(fd: &Fd) -> io::Result<()> {
    match fd.sync_data() {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(()),
        result => result,
    }
}

impl FileOutput {
    pub fn open(path: PathBuf, rotate: Option<Rotate>) -> Result<FileOutput, ConfigError> {
        let fd = open_log(&path).map_err(|e| {
            ConfigError::new(format!("cannot open '{}' for output: {e}", path.display()))
        })?;
        Ok(FileOutput {
            place: InDir::new(&path).ok(),
            path,
            created: fd.created(),
            fd: Some(fd),
            checked_at: sys::coarse_seconds(),
            reopen_failed: false,
            rotate,
            notices: Vec::new(),
            moved: false,
            stranger_said: false,
            rotate_failed: None,
        })
    }

    /// Writes a batch of whole lines with one write(2) (to a FIFO, in
    /// pieces of whole lines, see `sys::write_lines_no_signal`), never
    /// raising SIGPIPE or SIGXFSZ, after checking that the descriptor is
    /// still this output's and that the path still names its file (log
    /// rotation, once a second). Returns what to report, if anything, and
    /// the write's result (on an error, with the bytes written before it).
    pub fn write(&mut self, lines: &[u8]) -> (Option<String>, Result<(), (io::Error, usize)>) {
        let event = self.follow();
        match self.rotate {
            Some(rotate) => self.write_rotating(lines, rotate, event),
            None => (event, self.write_here(lines)),
        }
    }

    fn write_here(&self, lines: &[u8]) -> Result<(), (io::Error, usize)> {
        match &self.fd {
            Some(fd) => sys::write_lines_no_signal(fd.raw(), lines, fd.info().kind),
            None => Err((sys::fd::not_ours(), 0)),
        }
    }

    /// Writes whole lines while they fit under `max`, rotating the file
    /// between them, each step under the file's record lock (see
    /// `rotate`); a line longer than `max` is written alone, into a new
    /// file. What cannot be rotated (a name in the way, a full disk, the
    /// lock not to be had) goes on to the file as it is: nothing is lost
    /// to a rotation.
    fn write_rotating(
        &mut self,
        lines: &[u8],
        rotate: Rotate,
        mut event: Option<String>,
    ) -> (Option<String>, Result<(), (io::Error, usize)>) {
        let mut done = 0;
        let mut follows = 0;
        while done < lines.len() {
            let Some(fd) = self.fd.as_ref() else {
                return (event, Err((sys::fd::not_ours(), done)));
            };
            let locked = lock_briefly(fd);
            let Some(info) = fd.check() else {
                unlock(Some(fd), locked);
                return (event, Err((sys::fd::not_ours(), done)));
            };
            if !info.regular {
                // A FIFO, /dev/null: nothing to bound.
                unlock(Some(fd), locked);
                break;
            }
            // Another process rotated it away: its lines go to the file
            // PATH names now, never to one on its way out.
            if !self.names_now(&info) && follows < FOLLOW_ROUNDS {
                unlock(self.fd.as_ref(), locked);
                follows += 1;
                if let Ok(new) = self.open_again() {
                    self.fd = Some(new);
                    self.moved = true;
                    continue;
                }
                break;
            }
            if let Locked::ByStranger(uid) = locked {
                if !std::mem::replace(&mut self.stranger_said, true) {
                    event = either(
                        event,
                        Some(format!(
                            "a process of uid {uid} holds a lock on {}: rotated without it",
                            self.path.display()
                        )),
                    );
                }
            }
            let rest = &lines[done..];
            let mut fit = rotate::whole_lines_within(rest, rotate.max.saturating_sub(info.size));
            if fit == 0 && info.size == 0 {
                fit = rotate::first_line(rest);
            }
            if fit > 0 {
                let written = self.write_here(&rest[..fit]);
                if let Err((e, n)) = written {
                    unlock(self.fd.as_ref(), locked);
                    return (event, Err((e, done + n)));
                }
                done += fit;
                if done == lines.len() {
                    unlock(self.fd.as_ref(), locked);
                    break;
                }
            }
            let second = sys::coarse_seconds();
            if locked == Locked::ByPeer || self.rotate_failed == Some(second) {
                unlock(self.fd.as_ref(), locked);
                break;
            }
            // Rotation renames by path: only while the path means what it
            // meant (never after a chroot).
            let here = self.place.as_ref().map_or(Ok(()), InDir::path_leads_here);
            let fd = self.fd.as_ref().expect("checked above");
            let outcome = match here {
                Ok(()) => rotate::rotate(&self.path, fd, rotate),
                Err(e) => Outcome::Failed(format!("{e}; rotation stopped")),
            };
            unlock(Some(fd), locked);
            match outcome {
                Outcome::Rotated(new, said) => {
                    self.fd = Some(new);
                    self.moved = true;
                    self.rotate_failed = None;
                    self.notices.push(said);
                }
                Outcome::Follow(Some(new)) if follows < FOLLOW_ROUNDS => {
                    self.fd = Some(new);
                    self.moved = true;
                    follows += 1;
                }
                Outcome::Follow(_) => break,
                Outcome::Failed(why) => {
                    if self.rotate_failed.is_none() {
                        event = either(
                            event,
                            Some(format!(
                                "cannot rotate {}: {why}; lines go on to it past max={} \
                                 (tried again each second, said again once it works)",
                                self.path.display(),
                                rotate.max
                            )),
                        );
                    }
                    self.rotate_failed = Some(second);
                    break;
                }
            }
        }
        if done < lines.len() {
            if let Err((e, n)) = self.write_here(&lines[done..]) {
                return (event, Err((e, done + n)));
            }
        }
        (event, Ok(()))
    }

    /// Keeps the output on its file: a descriptor that is no longer the file
    /// opened is let go of (never closed) and the path opened again; once a
    /// second, a path that names another file now, or a file deleted, is
    /// opened again too.
    fn follow(&mut self) -> Option<String> {
        let now = self.fd.as_ref().and_then(Fd::check);
        let lost = now.is_none();
        let second = sys::coarse_seconds();
        if !lost && second == self.checked_at {
            return None;
        }
        let what = if lost {
            if let Some(fd) = self.fd.take() {
                fd.abandon();
            } else if second == self.checked_at {
                return None;
            }
            format!(
                "the descriptor of {} is no longer that file (the program closed it)",
                self.path.display()
            )
        } else {
            let info = now.expect("checked above");
            let deleted = info.nlink == 0;
            if self.names_now(&info) && !deleted {
                self.checked_at = second;
                return None;
            }
            if self.rotate.is_some() {
                // Rotated (or rotated away past `keep`) by another process
                // writing it too: followed quietly, as this one's are.
                self.checked_at = second;
                if self.reopen().is_ok() {
                    self.moved = true;
                }
                return None;
            }
            format!(
                "{} was {} (log rotation?)",
                self.path.display(),
                if deleted { "deleted" } else { "replaced" }
            )
        };
        self.checked_at = second;
        match self.reopen() {
            Ok(()) => {
                self.reopen_failed = false;
                Some(format!("{what}: opened it again"))
            }
            Err(e) if !self.reopen_failed => {
                self.reopen_failed = true;
                let still = if self.fd.is_some() {
                    "still writing to the old file"
                } else {
                    "lines for it are lost until it can be"
                };
                Some(format!("{what}; cannot open it again ({e}): {still}"))
            }
            Err(_) => None,
        }
    }

    /// Opens the file again by its path (after logrotate moved it). The old
    /// file stays in use if the new one cannot be opened.
    pub fn reopen(&mut self) -> io::Result<()> {
        self.fd = Some(self.open_again()?);
        Ok(())
    }

    /// The file as its path names it now, or, once the process's root
    /// moved, as its directory kept from configuration does (see
    /// `sys::dir`).
    fn open_again(&mut self) -> io::Result<Fd> {
        match &mut self.place {
            Some(place) => place.open(Private::Log),
            None => open_log(&self.path),
        }
    }

    /// Whether the file's name names `info`'s file now.
    fn names_now(&self, info: &sys::FdInfo) -> bool {
        match &self.place {
            Some(place) => place.names(info),
            None => rotate::names(&self.path, info),
        }
    }

    /// A descriptor of the file to make the lines written durable with
    /// ([`sync`]), waited on without the logger's lock; None for a file
    /// that has nothing to make durable (a FIFO, a terminal, /dev/null).
    pub fn for_sync(&self) -> Option<io::Result<Fd>> {
        match &self.fd {
            Some(fd) if !fd.info().regular => None,
            Some(fd) => Some(fd.duplicate()),
            None => Some(Err(sys::fd::not_ours())),
        }
    }

    /// The descriptor and its identity, while it is the file's.
    pub fn descriptor(&self) -> Option<(i32, sys::FdInfo)> {
        self.fd.as_ref().map(|fd| (fd.raw(), fd.info()))
    }

    /// For a configuration that was refused after this output was opened:
    /// removes the file if opening it made it and it is still the empty file
    /// at the path.
    pub fn undo(self) {
        let Some(fd) = self.fd.as_ref().filter(|_| self.created) else {
            return;
        };
        let here = std::fs::symlink_metadata(&self.path).ok();
        let same = here
            .is_some_and(|m| (m.dev(), m.ino()) == (fd.info().dev, fd.info().ino) && m.len() == 0);
        if same {
            let _ = std::fs::remove_file(&self.path);
        }
    }

    /// Hands each rotation made since the last call to `tell`: whether
    /// there was any, or the descriptor changed otherwise (the crash
    /// handler is to be told).
    pub fn take_notices(&mut self, mut tell: impl FnMut(String)) -> bool {
        // Every line asks; hardly ever is there one.
        if self.notices.is_empty() {
            return std::mem::take(&mut self.moved);
        }
        self.notices.drain(..).for_each(&mut tell);
        true
    }

    pub fn describe(&self) -> String {
        self.path.display().to_string()
    }
}
