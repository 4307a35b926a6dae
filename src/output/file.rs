//! `PRIO:file:PATH` and `PRIO:json:PATH`: a log file, appended to with one
//! write(2) per batch of lines. A file that is deleted or replaced (log rotation) is
//! noticed within a second and opened again by its path; `vlog_reopen()`
//! does it at once. A descriptor the program closed (or closed and reused:
//! `close_range` after vlog started) is noticed before the next line and
//! the file opened again by its path (see `sys::fd`).

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use crate::error::ConfigError;
use crate::sys::{self, Fd, Private};

#[derive(Debug)]
pub struct FileOutput {
    path: PathBuf,
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
    pub fn open(path: PathBuf) -> Result<FileOutput, ConfigError> {
        let fd = open_log(&path).map_err(|e| {
            ConfigError::new(format!("cannot open '{}' for output: {e}", path.display()))
        })?;
        Ok(FileOutput {
            path,
            created: fd.created(),
            fd: Some(fd),
            checked_at: sys::coarse_seconds(),
            reopen_failed: false,
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
        let result = match &self.fd {
            Some(fd) => sys::write_lines_no_signal(fd.raw(), lines, fd.info().kind),
            None => Err((sys::fd::not_ours(), 0)),
        };
        (event, result)
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
            let here = std::fs::symlink_metadata(&self.path)
                .ok()
                .map(|m| (m.dev(), m.ino()));
            let deleted = info.nlink == 0;
            if here == Some((info.dev, info.ino)) && !deleted {
                self.checked_at = second;
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
        self.fd = Some(open_log(&self.path)?);
        Ok(())
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

    pub fn describe(&self) -> String {
        self.path.display().to_string()
    }
}
