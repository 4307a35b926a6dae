//! The one way vlog opens a file it writes (log files, the dump file and
//! its ring image, ring files), and the one rule for a file that is there
//! already: see [`open_private`] and [`refusal`] (DESIGN.md, "Authority").

use std::ffi::{c_int, CStr, CString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::fd::{fd_info, is_null, Fd};

/// What a file vlog writes is for. The rule for a file that exists
/// already depends on it (see [`refusal`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Private {
    /// A log file (`file:`, `json:`): created if missing, appended to, and
    /// never waited for (non-blocking: a FIFO needs a reader now, and a
    /// full one drops lines).
    Log,
    /// The crash dump's text (`VLOG_DUMP=file:`): created if missing,
    /// appended to, every write waited for (a dump is written whole).
    Dump,
    /// A ring image (`PATH.ring` beside a dump file): created if missing,
    /// read and written.
    Image,
    /// A new ring file: created, read and written; it must not exist yet.
    NewRing,
    /// A new log file, to be swapped in for a full one (`output::rotate`):
    /// created, appended to; it must not exist yet.
    NewLog,
    /// A ring file an earlier run left, or another process uses: read and
    /// written; it must exist.
    Ring,
}

impl Private {
    /// Text the daemon only appends to.
    fn appends(self) -> bool {
        matches!(self, Private::Log | Private::Dump | Private::NewLog)
    }
}

/// Why an existing file is not one vlog writes into. Plain data, so that
/// the crash handler can refuse a file without allocating; [`Refused::why`]
/// says it for people.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// A block device, a socket, a directory, a character device that is
    /// neither /dev/null nor a terminal, or (for a ring or an image) a FIFO
    /// or a device.
    Kind(u32),
    /// Owned by another user (the uid), who may have put it there to
    /// receive what vlog writes.
    Owner(u32),
    /// Writable by others (the mode); or, for a file read back as records
    /// (a ring, an image), by its group.
    Writable(u32),
    /// A regular file with other names (hard links): any file of this user
    /// could be behind it.
    Links(u64),
    /// The file at the path changed between the look at it and the open.
    Changed,
}

impl Refused {
    /// What a person needs to know, ending with what vlog does about it.
    pub fn why(self) -> String {
        match self {
            Refused::Kind(mode) => {
                let what = match mode & libc::S_IFMT {
                    libc::S_IFBLK => "a block device",
                    libc::S_IFCHR => "a character device other than /dev/null, /dev/zero, /dev/full or a terminal",
                    libc::S_IFDIR => "a directory",
                    libc::S_IFSOCK => "a socket",
                    libc::S_IFLNK => "a symbolic link",
                    libc::S_IFIFO => "a FIFO",
                    _ => "not a regular file",
                };
                format!("it is {what}, which vlog does not write to")
            }
            Refused::Owner(uid) => format!(
                "it is owned by uid {uid}, not by this process's user (uid {})",
                effective_uid()
            ),
            Refused::Writable(mode) => format!(
                "it is writable by {} (mode {:04o})",
                if mode & 0o002 != 0 {
                    "others"
                } else {
                    "its group"
                },
                mode & 0o7777
            ),
            Refused::Links(n) => {
                format!("it has {n} names (hard links), so it may be any file of this user's")
            }
            Refused::Changed => "it was replaced while it was opened".to_owned(),
        }
    }
}

/// Why vlog does not write into the existing file `st` describes for `how`,
/// if it does not: the one rule for every file vlog writes. A regular file
/// (or, for text vlog appends, a FIFO, /dev/null or a terminal) owned by
/// the effective user, writable by nobody else, with no other name (a log
/// file may also be a FIFO or a terminal, written without waiting; a dump,
/// whose writes wait, never: a reader that stalls would hold it). Text
/// the daemon appends to may be group-writable: its owner shared it with a
/// group that can edit it already, and vlog appending to it lends that
/// group nothing; a file read back as records (a ring, an image) may not
/// be, or the group could forge them. Async-signal-safe.
pub fn refusal(st: &libc::stat, how: Private) -> Option<Refused> {
    let kind = st.st_mode & libc::S_IFMT;
    if kind == libc::S_IFCHR && is_null(st.st_rdev) && how.appends() {
        // Root's, and harmless: nothing written there goes anywhere.
        return None;
    }
    // A FIFO or a terminal can stop taking bytes (a reader that stalls,
    // ^S): fine for log lines, written without waiting, never for a dump,
    // whose writes wait.
    let allowed = match kind {
        libc::S_IFREG => true,
        libc::S_IFIFO => how == Private::Log,
        libc::S_IFCHR => how == Private::Log && terminal_device(st.st_rdev),
        _ => false,
    };
    if !allowed {
        return Some(Refused::Kind(st.st_mode));
    }
    if st.st_uid != effective_uid() {
        return Some(Refused::Owner(st.st_uid));
    }
    // A terminal's group is tty, for write(1): its mode is not the file's
    // owner's business.
    let others = if kind == libc::S_IFCHR {
        0
    } else if how.appends() {
        0o002
    } else {
        0o022
    };
    if st.st_mode & others != 0 {
        return Some(Refused::Writable(st.st_mode));
    }
    if kind == libc::S_IFREG && st.st_nlink > 1 {
        return Some(Refused::Links(st.st_nlink));
    }
    None
}

/// Whether a character device is a terminal's (tty, console, serial
/// lines, pseudo-terminals), by its numbers: a device is never opened to
/// find out, since opening some (a watchdog) does something.
fn terminal_device(rdev: libc::dev_t) -> bool {
    let (major, minor) = (libc::major(rdev), libc::minor(rdev));
    // 4: virtual consoles and serial lines; 5: /dev/tty and /dev/console
    // (not /dev/ptmx, 5:2); 136-143: pseudo-terminals.
    major == 4 || (major == 5 && minor <= 1) || (136..=143).contains(&major)
}

/// Why opening a file vlog writes failed: the system's error, or the rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenFailure {
    Errno(c_int),
    Refused(Refused),
}

/// Opens a file that vlog writes. Every such file is opened here, so one
/// rule holds for all of them (DESIGN.md, "Authority"): never through a
/// symbolic link (O_NOFOLLOW); a missing file is created O_CREAT|O_EXCL,
/// 0600; an existing one is used only if [`refusal`] accepts it, judged
/// before it is opened (a device is never opened) and again on the
/// descriptor; close-on-exec, at descriptor 3 or above, never a controlling
/// terminal, its identity kept (see [`Fd`]). The errors say what a person
/// needs to know (a link, a FIFO with no reader, a file of another user).
pub fn open_private(path: &Path, how: Private) -> io::Result<Fd> {
    let path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::other("the path contains a NUL byte"))?;
    open_private_c(&path, how).map_err(explain)
}

/// What a person needs to know of an open that failed.
pub fn explain(failure: OpenFailure) -> io::Error {
    match failure {
        OpenFailure::Refused(r) => io::Error::other(r.why()),
        OpenFailure::Errno(n) => {
            let e = io::Error::from_raw_os_error(n);
            match n {
                libc::ELOOP => io::Error::other(format!(
                    "{e} (it is a symbolic link, which vlog does not follow)"
                )),
                libc::ENXIO => io::Error::other(format!("{e} (a FIFO with no reader)")),
                _ => e,
            }
        }
    }
}

/// Whether the file at `path` is a regular file, and why vlog would not
/// write into it for `how` (see [`refusal`]), judged by what the path
/// names (never followed); an error (NotFound among them) when it cannot
/// be looked at.
pub fn judge_at(path: &Path, how: Private) -> io::Result<(bool, Option<Refused>)> {
    let path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::other("the path contains a NUL byte"))?;
    let st = lstat_c(&path).map_err(io::Error::from_raw_os_error)?;
    Ok((
        st.st_mode & libc::S_IFMT == libc::S_IFREG,
        refusal(&st, how),
    ))
}

/// lstat(2) of `path`. Async-signal-safe.
fn lstat_c(path: &CStr) -> Result<libc::stat, c_int> {
    lstat_at(libc::AT_FDCWD, path)
}

/// lstat(2) of `path` from the directory `dir` (AT_FDCWD: as a path is).
/// Async-signal-safe.
pub(super) fn lstat_at(dir: c_int, path: &CStr) -> Result<libc::stat, c_int> {
    // SAFETY: an all-zero stat is a valid out-buffer.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a valid out-pointer.
    if unsafe { libc::fstatat(dir, path.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) } != 0 {
        return Err(errno());
    }
    Ok(st)
}

fn errno() -> c_int {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// The most a configuration file (`VLOG_CONFIG`) may hold.
pub const CONFIG_MAX: u64 = 64 * 1024;

/// Reads a configuration file vlog obeys (`VLOG_CONFIG`): what it says is
/// the daemon's own power, so it must be the daemon's own file. Judged by
/// lstat before it is opened (a device is never opened, a symbolic link
/// never followed) and by fstat after: a regular file with one name,
/// owned by the effective uid or root, writable by neither group nor
/// others, at most [`CONFIG_MAX`] bytes.
pub fn read_config(path: &Path) -> io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    fn refuse<T>(why: &str) -> io::Result<T> {
        Err(io::Error::other(why.to_owned()))
    }
    let judge = |m: &std::fs::Metadata| -> io::Result<()> {
        if m.file_type().is_symlink() {
            return refuse("it is a symbolic link, which vlog does not follow");
        }
        if !m.file_type().is_file() {
            return refuse("it is not a regular file");
        }
        if m.uid() != effective_uid() && m.uid() != 0 {
            return refuse(&format!(
                "it belongs to uid {}, not to this process's user (uid {}) or root",
                m.uid(),
                effective_uid()
            ));
        }
        if m.mode() & 0o022 != 0 {
            return refuse("others may write to it (group- or world-writable)");
        }
        if m.nlink() != 1 {
            return refuse(&format!("it has {} names (hard links)", m.nlink()));
        }
        if m.len() > CONFIG_MAX {
            return refuse(&format!(
                "it holds {} bytes, more than {CONFIG_MAX}",
                m.len()
            ));
        }
        Ok(())
    };
    let before = std::fs::symlink_metadata(path)?;
    judge(&before)?;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let after = file.metadata()?;
    if (after.dev(), after.ino()) != (before.dev(), before.ino()) {
        return refuse("it was replaced while it was being opened");
    }
    judge(&after)?;
    let mut text = Vec::new();
    file.by_ref().take(CONFIG_MAX + 1).read_to_end(&mut text)?;
    if text.len() as u64 > CONFIG_MAX {
        return refuse(&format!("it holds more than {CONFIG_MAX} bytes"));
    }
    Ok(text)
}

/// A descriptor of the directory `path` (O_PATH: nothing is read through
/// it), kept so that a file in it can be made later by its name wherever
/// the process's root has moved since (a daemon that chroots after it
/// configured vlog).
pub fn open_dir(path: &Path) -> io::Result<Fd> {
    let path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::other("the path contains a NUL byte"))?;
    let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC;
    // SAFETY: a NUL-terminated path; the result is checked.
    let raw = unsafe { libc::open(path.as_ptr(), flags) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    Fd::own(raw)
}

/// [`open_private`] for the crash handler too: async-signal-safe, nothing
/// allocated.
pub fn open_private_c(path: &CStr, how: Private) -> Result<Fd, OpenFailure> {
    open_private_at(libc::AT_FDCWD, path, how)
}

/// [`open_private_c`] of `path` in the directory `dir` (a descriptor kept
/// from when the file was configured: a chroot since does not move it).
/// A file replaced while it was opened (another process sharing a
/// rotating file rotated it) is opened again, a few times. Async-signal-
/// safe, nothing allocated.
pub fn open_private_at(dir: c_int, path: &CStr, how: Private) -> Result<Fd, OpenFailure> {
    let mut tries = 0;
    loop {
        match open_once(dir, path, how) {
            Err(OpenFailure::Refused(Refused::Changed)) if tries < 8 => tries += 1,
            result => return result,
        }
    }
}

fn open_once(dir: c_int, path: &CStr, how: Private) -> Result<Fd, OpenFailure> {
    // Every open is non-blocking (a FIFO planted at the path would
    // otherwise hold the open until someone reads it) and takes no
    // controlling terminal; a dump's writes wait (set below).
    let base = libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY;
    let flags = base
        | match how {
            Private::Log | Private::NewLog => libc::O_WRONLY | libc::O_APPEND,
            // Read too: before emptying a full dump file, the crash
            // handler reads that it starts as a dump does.
            Private::Dump => libc::O_RDWR | libc::O_APPEND,
            Private::Image | Private::NewRing | Private::Ring => libc::O_RDWR,
        };
    let open = |flags: c_int| {
        // SAFETY: a NUL-terminated path; the result is checked.
        let raw = unsafe { libc::openat(dir, path.as_ptr(), flags, 0o600 as libc::c_uint) };
        if raw < 0 {
            return Err(OpenFailure::Errno(errno()));
        }
        // What the path names now is what the moved descriptor must be.
        let named = lstat_at(dir, path).ok().map(|st| (st.st_dev, st.st_ino));
        Fd::own_file(raw, named)
            .map_err(|e| OpenFailure::Errno(e.raw_os_error().unwrap_or(libc::EBADF)))
    };
    // An existing file is judged by what the path names (a device is never
    // opened), opened, and judged again by what was opened: the same file.
    let existing = |st: libc::stat| {
        if let Some(r) = refusal(&st, how) {
            return Err(OpenFailure::Refused(r));
        }
        let fd = open(flags)?;
        let now = fd_info(fd.raw()).map_err(|_| OpenFailure::Errno(libc::EBADF))?;
        if (now.dev, now.ino) != (st.st_dev, st.st_ino) {
            return Err(OpenFailure::Refused(Refused::Changed));
        }
        Ok(fd)
    };
    // A missing file is made (O_EXCL), so that vlog knows which files it
    // created: a configuration refused removes them.
    let fd = match (how, lstat_at(dir, path)) {
        (Private::NewRing | Private::NewLog, Ok(_)) => {
            return Err(OpenFailure::Errno(libc::EEXIST))
        }
        (Private::Ring, Ok(st)) => existing(st)?,
        (_, Ok(st)) => existing(st)?,
        (Private::Ring, Err(e)) => return Err(OpenFailure::Errno(e)),
        (_, Err(libc::ENOENT)) => match open(flags | libc::O_CREAT | libc::O_EXCL) {
            Ok(mut fd) => {
                fd.mark_created();
                fd
            }
            // Made by someone else meanwhile: judged as any existing file.
            Err(OpenFailure::Errno(libc::EEXIST))
                if !matches!(how, Private::NewRing | Private::NewLog) =>
            {
                existing(lstat_at(dir, path).map_err(OpenFailure::Errno)?)?
            }
            Err(e) => return Err(e),
        },
        (_, Err(e)) => return Err(OpenFailure::Errno(e)),
    };
    if how == Private::Dump {
        // SAFETY: fcntl on the descriptor just opened.
        unsafe {
            let fl = libc::fcntl(fd.raw(), libc::F_GETFL);
            if fl >= 0 {
                libc::fcntl(fd.raw(), libc::F_SETFL, fl & !libc::O_NONBLOCK);
            }
        }
    }
    // A terminal is a terminal by its numbers; one that is not (a device
    // that took a terminal's numbers) is let go of.
    if fd.info().device {
        // SAFETY: isatty on the descriptor just opened.
        if unsafe { libc::isatty(fd.raw()) } != 1 {
            return Err(OpenFailure::Refused(Refused::Kind(libc::S_IFCHR)));
        }
    }
    Ok(fd)
}

/// A new file beside `path` (`how`: [`Private::NewRing`] or
/// [`Private::NewLog`]) for a ring file to be built in before it is
/// renamed over `path` (see [`rename_over`]), or a log file to be swapped
/// in for a full one (see [`exchange`]): `PATH.<pid>.<n>.new`, made
/// with O_EXCL, so that it is always one this
/// process made, and never another's taken or removed. A name that is
/// taken (another user may have put anything there) is passed over for the
/// next; the error names the last one tried.
pub fn create_beside(path: &Path, how: Private) -> io::Result<(Fd, std::path::PathBuf)> {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let mut last = None;
    for _ in 0..8 {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut name = path.as_os_str().to_owned();
        name.push(format!(".{}.{n}.new", std::process::id()));
        let tmp = std::path::PathBuf::from(name);
        match open_private(&tmp, how) {
            Ok(fd) => return Ok((fd, tmp)),
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => last = Some(tmp),
            Err(e) => return Err(e),
        }
    }
    let last = last.map_or_else(String::new, |p| p.display().to_string());
    Err(io::Error::other(format!(
        "the names beside it are taken by files vlog did not make (the last tried: '{last}')"
    )))
}

/// Renames `tmp` (a file [`create_beside`] made) to `path`: over the file
/// there if `replace` (one of this user's that vlog judged), otherwise
/// only if nothing is there (RENAME_NOREPLACE: a file another user put
/// there meanwhile is never removed, even by root, whom the sticky bit does
/// not stop).
pub fn rename_over(tmp: &Path, path: &Path, replace: bool) -> io::Result<()> {
    if replace {
        return std::fs::rename(tmp, path);
    }
    match renameat2(tmp, path, libc::RENAME_NOREPLACE) {
        0 => Ok(()),
        _ => match io::Error::last_os_error() {
            e if e.raw_os_error() == Some(libc::EEXIST) => Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "a file was put at its path meanwhile; it is left as it is",
            )),
            e => Err(e),
        },
    }
}

/// Swaps the files at `a` and `b` in one step (RENAME_EXCHANGE): neither
/// name is free for a moment, for another user to take.
pub fn exchange(a: &Path, b: &Path) -> io::Result<()> {
    if renameat2(a, b, libc::RENAME_EXCHANGE) != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn renameat2(from: &Path, to: &Path, flags: libc::c_uint) -> c_int {
    let (Ok(from), Ok(to)) = (
        CString::new(from.as_os_str().as_bytes()),
        CString::new(to.as_os_str().as_bytes()),
    ) else {
        // SAFETY: errno is this thread's.
        unsafe { *libc::__errno_location() = libc::EINVAL };
        return -1;
    };
    // SAFETY: two NUL-terminated paths, relative to the working directory.
    unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            flags,
        )
    }
}

/// The effective user (geteuid: cannot fail). Async-signal-safe.
pub(super) fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("vlog-private-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn the_one_rule_for_existing_files() {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch("rule");
        let mode = |name: &str, m: u32| {
            std::fs::write(dir.join(name), b"").unwrap();
            std::fs::set_permissions(dir.join(name), std::fs::Permissions::from_mode(m)).unwrap();
        };
        let why = |name: &str, how| {
            open_private(&dir.join(name), how)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        mode("others", 0o666);
        assert!(why("others", Private::Log).contains("writable by others (mode 0666)"));
        // A log file shared with a group: appended to. A ring image that
        // its group may write: refused (its records could be forged).
        mode("group", 0o660);
        assert_eq!(why("group", Private::Log), "");
        assert!(why("group", Private::Image).contains("writable by its group"));
        // Another name for a file: could be any of this user's.
        mode("one", 0o600);
        std::fs::hard_link(dir.join("one"), dir.join("two")).unwrap();
        assert!(why("two", Private::Dump).contains("2 names (hard links)"));
        std::os::unix::fs::symlink(dir.join("one"), dir.join("link")).unwrap();
        assert!(why("link", Private::Log).contains("symbolic link"));
        std::fs::create_dir(dir.join("d")).unwrap();
        assert!(why("d", Private::Log).contains("a directory"));
        // /dev/null takes log lines; a ring never goes there.
        assert_eq!(why("/dev/null", Private::Log), "");
        assert!(why("/dev/null", Private::Image).contains("character device"));
        assert_eq!(why("/dev/full", Private::Log), "");
        assert!(why("/dev/urandom", Private::Log).contains("character device"));
        // A FIFO of ours with no reader: refused at once, never waited on.
        let fifo = std::ffi::CString::new(dir.join("fifo").to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        assert!(why("fifo", Private::Log).contains("a FIFO with no reader"));
        // A dump's writes wait: never into a FIFO (a reader that stalls).
        assert!(why("fifo", Private::Dump).contains("a FIFO, which"));
        assert!(why("fifo", Private::Image).contains("a FIFO"));
    }
}
