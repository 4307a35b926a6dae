//! A file kept by its directory and its name, not by its path: what a
//! file output opens again (log rotation, a descriptor the program
//! closed) is the file in the directory it was configured in, even after
//! the process moved its root (a daemon that chroots once configured: its
//! path would name a file in the jail, which the jail's users may have
//! made).
//!
//! While the root is the one the path was configured under, the path is
//! used, as a user who moves or recreates the directory expects; once it
//! moved, the file is opened by its name in the directory held by an
//! O_PATH descriptor made at configuration (nothing is read through it),
//! and if the program closed that descriptor, nothing is opened.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::fd::{Fd, FdInfo};
use super::private::{self, Private};

/// `(device, inode)` of a file.
pub type Id = (u64, u64);

/// The identity of the process's root directory now: a chroot since
/// configuration changes it. Async-signal-safe.
pub fn root_id() -> Option<Id> {
    private::lstat_at(libc::AT_FDCWD, c"/")
        .ok()
        .map(|st| (st.st_dev, st.st_ino))
}

#[derive(Debug)]
pub struct InDir {
    path: std::path::PathBuf,
    /// The path as lstat takes it, made once: looked at each second, with
    /// nothing allocated then.
    c_path: CString,
    /// The directory's descriptor, and the file's name in it.
    dir: Option<Fd>,
    name: CString,
    /// The root the path was configured under.
    root: Option<Id>,
}

impl InDir {
    /// The directory of `path` (absolute), kept.
    pub fn new(path: &Path) -> io::Result<InDir> {
        let bad = || io::Error::other("the path has no file name, or holds a NUL byte");
        let parent = path.parent().ok_or_else(bad)?;
        let name = path
            .file_name()
            .and_then(|n| CString::new(n.as_bytes()).ok())
            .ok_or_else(bad)?;
        Ok(InDir {
            path: path.to_owned(),
            c_path: CString::new(path.as_os_str().as_bytes()).map_err(|_| bad())?,
            dir: Some(private::open_dir(parent)?),
            name,
            root: root_id(),
        })
    }

    /// Whether the root is the one the path was configured under: then
    /// the path means what it meant, and is used.
    fn root_unmoved(&self) -> bool {
        root_id() == self.root
    }

    /// The directory's descriptor while it is still the directory kept;
    /// an error that says why nothing may be opened otherwise.
    fn kept_dir(&self) -> io::Result<&Fd> {
        self.dir.as_ref().filter(|d| d.is_ours()).ok_or_else(|| {
            io::Error::other(
                "the process's root moved since it was configured (chroot) and the \
                 descriptor of its directory was closed: its path would name a file in \
                 the new root, which vlog does not open",
            )
        })
    }

    /// Opens the file as `open_private` opens a path: by its path while
    /// the root is the one configured (and the directory kept anew), by
    /// its name in the directory kept once the root moved.
    pub fn open(&mut self, how: Private) -> io::Result<Fd> {
        if self.root_unmoved() {
            let fd = private::open_private(&self.path, how)?;
            if let Some(dir) = self.path.parent().and_then(|p| private::open_dir(p).ok()) {
                self.dir = Some(dir);
            }
            return Ok(fd);
        }
        let dir = self.kept_dir()?.raw();
        private::open_private_at(dir, &self.name, how).map_err(private::explain)
    }

    /// Whether the file's name names the file `info` describes now (never
    /// followed), by its path or in the directory kept as [`InDir::open`]
    /// would open it; true when that cannot be known (the root moved and
    /// the directory's descriptor is gone), so that nothing is opened on a
    /// guess.
    pub fn names(&self, info: &FdInfo) -> bool {
        let st = if self.root_unmoved() {
            private::lstat_at(libc::AT_FDCWD, &self.c_path)
        } else {
            match self.kept_dir() {
                Ok(dir) => private::lstat_at(dir.raw(), &self.name),
                Err(_) => return true,
            }
        };
        st.is_ok_and(|st| (st.st_dev, st.st_ino) == (info.dev, info.ino))
    }

    /// What renames by path (a rotation) need: the root the path was
    /// configured under. An error that says why not.
    pub fn path_leads_here(&self) -> io::Result<()> {
        if self.root_unmoved() {
            return Ok(());
        }
        Err(io::Error::other(
            "the process's root moved since it was configured (chroot): its path names a \
             file in the new root",
        ))
    }
}
