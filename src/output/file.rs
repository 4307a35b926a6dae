//! `PRIO:file:PATH` and `PRIO:json:PATH`: a log file, appended to with one
//! write(2) per line. A file that is deleted or replaced (log rotation) is
//! noticed within a second and opened again by its path; `vlog_reopen()`
//! does it at once.

use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::PathBuf;

use crate::error::ConfigError;
use crate::sys::{self, FdInfo, Private};

#[derive(Debug)]
pub struct FileOutput {
    path: PathBuf,
    file: File,
    /// The open file's identity and kind, to notice rotation and to write
    /// to a FIFO without SIGPIPE.
    info: FdInfo,
    /// The coarse second of the last rotation check, and whether reopening
    /// failed then (reported once).
    checked_at: u64,
    reopen_failed: bool,
}

/// Opens a log file for appending (see `sys::open_private`): O_APPEND, so
/// each line's write(2) is atomic with respect to other writers, and
/// O_NONBLOCK, so a FIFO needs a reader now and a full one drops lines
/// instead of blocking the daemon.
fn open_log(path: &std::path::Path) -> io::Result<(File, FdInfo)> {
    let file = sys::open_private(path, Private::Append { nonblocking: true })?;
    let info = sys::fd_info(file.as_raw_fd())?;
    Ok((file, info))
}

impl FileOutput {
    pub fn open(path: PathBuf) -> Result<FileOutput, ConfigError> {
        let (file, info) = open_log(&path).map_err(|e| {
            ConfigError::new(format!("cannot open '{}' for output: {e}", path.display()))
        })?;
        Ok(FileOutput {
            path,
            file,
            info,
            checked_at: sys::coarse_seconds(),
            reopen_failed: false,
        })
    }

    /// Writes one line with one write(2), never raising SIGPIPE.
    pub fn write(&mut self, line: &[u8]) -> io::Result<()> {
        sys::write_no_sigpipe(self.file.as_raw_fd(), line, self.info.kind)
    }

    /// At most once a second, checks that the path still names the file
    /// this output writes to; if the file was deleted or the path now names
    /// another file (log rotation), opens the path again. Returns what to
    /// report.
    pub fn follow_rotation(&mut self) -> Option<String> {
        let now = sys::coarse_seconds();
        if now == self.checked_at {
            return None;
        }
        self.checked_at = now;
        let here = std::fs::symlink_metadata(&self.path)
            .ok()
            .map(|m| (m.dev(), m.ino()));
        let deleted = sys::fd_info(self.file.as_raw_fd()).is_ok_and(|i| i.nlink == 0);
        if here == Some((self.info.dev, self.info.ino)) && !deleted {
            return None;
        }
        let what = format!(
            "{} was {} (log rotation?)",
            self.path.display(),
            if deleted { "deleted" } else { "replaced" }
        );
        match self.reopen() {
            Ok(()) => {
                self.reopen_failed = false;
                Some(format!("{what}: opened it again"))
            }
            Err(e) if !self.reopen_failed => {
                self.reopen_failed = true;
                Some(format!(
                    "{what}; cannot open it again ({e}): still writing to the old file"
                ))
            }
            Err(_) => None,
        }
    }

    /// Opens the file again by its path (after logrotate moved it). The old
    /// file stays in use if the new one cannot be opened.
    pub fn reopen(&mut self) -> io::Result<()> {
        (self.file, self.info) = open_log(&self.path)?;
        Ok(())
    }

    /// Makes the lines written durable. A file that cannot be synced (a
    /// FIFO, a terminal, /dev/null: EINVAL) has nothing to make durable.
    pub fn sync(&self) -> io::Result<()> {
        match self.file.sync_data() {
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(()),
            result => result,
        }
    }

    pub fn describe(&self) -> String {
        self.path.display().to_string()
    }
}
