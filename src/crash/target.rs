//! Where crash dumps go (`VLOG_DUMP`) and which signal asks for one
//! (`VLOG_DUMP_SIGNAL`): parsed here, and the dump files opened here, at
//! configuration, and published to the handler. The handler writes to a
//! published descriptor only while it is still the file opened (device and
//! inode); one the program closed is opened again by its path.

use std::ffi::{c_char, c_int, CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

use super::signals::FATAL_SIGNALS;
use crate::error::ConfigError;
use crate::ring::layout::starts_with_magic;
use crate::sys::{self, Fd, Private};

/// Refuses signals that cannot serve as a dump request.
pub fn check_dump_signal(sig: c_int) -> Result<c_int, ConfigError> {
    if !(1..=64).contains(&sig)
        || FATAL_SIGNALS.contains(&sig)
        || sig == libc::SIGKILL
        || sig == libc::SIGSTOP
    {
        return Err(ConfigError::new(format!(
            "signal {sig} cannot request a dump: use a non-fatal signal such as SIGUSR2 ({})",
            libc::SIGUSR2
        )));
    }
    Ok(sig)
}

/// Parses `VLOG_DUMP_SIGNAL`: `USR1`, `USR2` (with or without `SIG`) or a
/// signal number.
pub fn parse_dump_signal(s: &str) -> Result<c_int, ConfigError> {
    let name = s.strip_prefix("SIG").unwrap_or(s);
    let sig = match name {
        "USR1" => libc::SIGUSR1,
        "USR2" => libc::SIGUSR2,
        n if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => n.parse().unwrap_or(0),
        _ => {
            return Err(ConfigError::new(format!(
                "invalid signal '{s}': use USR1, USR2 or a signal number"
            )))
        }
    };
    check_dump_signal(sig)
}

/// Where crash dumps go (`VLOG_DUMP`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum DumpTarget {
    #[default]
    Stderr,
    File(std::path::PathBuf),
    Off,
}

impl DumpTarget {
    /// The value as `VLOG_DUMP` writes it.
    pub fn as_env(&self) -> String {
        match self {
            DumpTarget::Stderr => "stderr".into(),
            DumpTarget::Off => "off".into(),
            DumpTarget::File(path) => format!("file:{}", path.display()),
        }
    }

    pub fn parse(s: &str) -> Result<DumpTarget, ConfigError> {
        match s {
            "stderr" => Ok(DumpTarget::Stderr),
            "off" => Ok(DumpTarget::Off),
            _ => match s.strip_prefix("file:") {
                Some(path) => std::path::absolute(path)
                    .map(DumpTarget::File)
                    .map_err(|e| ConfigError::new(format!("invalid path in '{s}': {e}"))),
                None => Err(ConfigError::new(format!(
                    "invalid dump destination '{s}': use stderr, file:PATH or off"
                ))),
            },
        }
    }

    /// Opens where dumps go (0600, close-on-exec, no symbolic link; see
    /// `sys::fd`): for `file:PATH` the dump file, appended to, now, so that
    /// a path that cannot be written is known before a crash. A dump file
    /// that does not exist yet is made to prove that, then removed again,
    /// and made by the handler at the first crash: an empty crash file
    /// beside a program that never crashed reads as a crash to its admin.
    /// `PATH.ring`,
    /// where the handler writes the ring as a ring file, is made only at a
    /// crash (open(2) is async-signal-safe), so no empty image is left
    /// beside a program that never crashed; an existing file there that is
    /// not a vlog ring is left alone. Stderr and `off` open nothing.
    pub fn open(&self) -> Result<DumpFiles, ConfigError> {
        let DumpTarget::File(path) = self else {
            return Ok(DumpFiles::default());
        };
        let existed = std::fs::symlink_metadata(path).is_ok();
        let dump = sys::open_private(path, Private::Dump).map_err(|e| {
            ConfigError::new(format!("cannot open dump file '{}': {e}", path.display()))
        })?;
        let dump = if existed {
            Some(dump)
        } else {
            // Removed only while it is still the empty file just made.
            let made = dump.info();
            let same = std::fs::symlink_metadata(path).is_ok_and(|m| {
                use std::os::unix::fs::MetadataExt;
                (m.dev(), m.ino(), m.len()) == (made.dev, made.ino, 0)
            });
            match same && std::fs::remove_file(path).is_ok() {
                true => None,
                false => Some(dump),
            }
        };
        let mut image_path = path.as_os_str().to_owned();
        image_path.push(".ring");
        let image_path = PathBuf::from(image_path);
        // The directory both are made in at a crash, kept from now: a
        // chroot since does not move them into the jail.
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let dir = sys::private::open_dir(parent).ok();
        let name = |p: &Path| p.file_name().and_then(|n| intern(Path::new(n)));
        Ok(DumpFiles {
            dump,
            dump_path: intern(path),
            dump_name: name(path),
            image: intern(&image_path),
            image_name: name(&image_path),
            dir,
            token: 0,
        })
    }
}

/// Whether `fd`'s file is empty or a vlog ring: the only files the handler
/// replaces with a ring image. Async-signal-safe.
fn is_ring_or_empty(fd: &Fd) -> bool {
    let mut head = [0u8; 8];
    // SAFETY: `head` is valid for 8 bytes; pread does not move the offset.
    let n = unsafe { libc::pread(fd.raw(), head.as_mut_ptr().cast(), head.len(), 0) };
    n == 0 || (n == 8 && starts_with_magic(&head))
}

/// Paths the handler may open again, kept for the life of the process
/// (one allocation per distinct path: the handler may be reading one while
/// the configuration changes).
fn intern(path: &Path) -> Option<&'static CStr> {
    static PATHS: Mutex<Vec<&'static CStr>> = Mutex::new(Vec::new());
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut paths = PATHS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(&known) = paths.iter().find(|p| ***p == *c) {
        return Some(known);
    }
    let leaked: &'static CStr = Box::leak(c.into_boxed_c_str());
    paths.push(leaked);
    Some(leaked)
}

/// The dump files a configuration opened, owned by the logger and
/// published to the handler while they are in force. Dropping them takes
/// them from the handler first (back to stderr), then closes them.
#[derive(Debug, Default)]
pub struct DumpFiles {
    /// The dump file, when it existed already (it is made at the first
    /// crash otherwise, by its name in `dir`).
    dump: Option<Fd>,
    dump_path: Option<&'static CStr>,
    /// The names of the dump file and the ring image in `dir`.
    dump_name: Option<&'static CStr>,
    image_name: Option<&'static CStr>,
    /// The directory they are in, as it was at configuration.
    dir: Option<Fd>,
    /// The ring image's path, opened by the handler.
    image: Option<&'static CStr>,
    /// Which publication is this one's (0: never published).
    token: u64,
}

/// What the handler reads: one descriptor, the file it names, and the path
/// to open again if it is not that file any more. Written under a sequence
/// count (odd while it changes), which the handler checks around its reads.
struct Slot {
    seq: AtomicU32,
    fd: AtomicI32,
    dev: AtomicU64,
    ino: AtomicU64,
    path: AtomicPtr<c_char>,
    /// The directory kept from configuration (-1: none), its identity, and
    /// the file's name in it: where the file is made or opened again.
    dir: AtomicI32,
    dir_dev: AtomicU64,
    dir_ino: AtomicU64,
    name: AtomicPtr<c_char>,
    /// The process's root when the slot was set: the path is used only
    /// while it is still the root (a chroot since would put it in the
    /// jail).
    root_dev: AtomicU64,
    root_ino: AtomicU64,
}

/// Where a slot's file is: its descriptor (if open), its path, and the
/// directory kept from configuration with its name there.
struct Place<'a> {
    fd: Option<&'a Fd>,
    path: Option<&'static CStr>,
    dir: Option<&'a Fd>,
    name: Option<&'static CStr>,
}

impl Place<'_> {
    const NONE: Place<'static> = Place {
        fd: None,
        path: None,
        dir: None,
        name: None,
    };
}

/// One consistent reading of a slot.
#[derive(Clone, Copy)]
struct Seen {
    fd: c_int,
    dev: u64,
    ino: u64,
    path: *const c_char,
    dir: c_int,
    dir_dev: u64,
    dir_ino: u64,
    name: *const c_char,
    root: (u64, u64),
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            seq: AtomicU32::new(0),
            fd: AtomicI32::new(-1),
            dev: AtomicU64::new(0),
            ino: AtomicU64::new(0),
            path: AtomicPtr::new(std::ptr::null_mut()),
            dir: AtomicI32::new(-1),
            dir_dev: AtomicU64::new(0),
            dir_ino: AtomicU64::new(0),
            name: AtomicPtr::new(std::ptr::null_mut()),
            root_dev: AtomicU64::new(0),
            root_ino: AtomicU64::new(0),
        }
    }

    fn set(&self, place: Place) {
        self.seq.fetch_add(1, Ordering::SeqCst);
        let raw =
            |fd: Option<&Fd>| fd.map_or((-1, sys::FdInfo::default()), |fd| (fd.raw(), fd.info()));
        let ptr = |p: Option<&'static CStr>| p.map_or(std::ptr::null(), CStr::as_ptr).cast_mut();
        let (fd, info) = raw(place.fd);
        let (dir, dir_info) = raw(place.dir);
        self.fd.store(fd, Ordering::SeqCst);
        self.dev.store(info.dev, Ordering::SeqCst);
        self.ino.store(info.ino, Ordering::SeqCst);
        self.path.store(ptr(place.path), Ordering::SeqCst);
        self.dir.store(dir, Ordering::SeqCst);
        self.dir_dev.store(dir_info.dev, Ordering::SeqCst);
        self.dir_ino.store(dir_info.ino, Ordering::SeqCst);
        self.name.store(ptr(place.name), Ordering::SeqCst);
        let root = sys::dir::root_id().unwrap_or((0, 0));
        self.root_dev.store(root.0, Ordering::SeqCst);
        self.root_ino.store(root.1, Ordering::SeqCst);
        self.seq.fetch_add(1, Ordering::SeqCst);
    }

    /// A consistent reading. Async-signal-safe.
    fn get(&self) -> Option<Seen> {
        // Bounded: a configuration change interrupted by this very handler
        // never finishes, and then there is nothing consistent to read.
        for _ in 0..1000 {
            let before = self.seq.load(Ordering::SeqCst);
            if before % 2 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let read = Seen {
                fd: self.fd.load(Ordering::SeqCst),
                dev: self.dev.load(Ordering::SeqCst),
                ino: self.ino.load(Ordering::SeqCst),
                path: self.path.load(Ordering::SeqCst).cast_const(),
                dir: self.dir.load(Ordering::SeqCst),
                dir_dev: self.dir_dev.load(Ordering::SeqCst),
                dir_ino: self.dir_ino.load(Ordering::SeqCst),
                name: self.name.load(Ordering::SeqCst).cast_const(),
                root: (
                    self.root_dev.load(Ordering::SeqCst),
                    self.root_ino.load(Ordering::SeqCst),
                ),
            };
            if self.seq.load(Ordering::SeqCst) == before {
                return Some(read);
            }
        }
        None
    }

    /// In the handler: a descriptor for this slot's file. The published one
    /// while it is still that file; otherwise (made at this crash, or the
    /// program closed it) the file's name opened in the directory kept from
    /// configuration while that is still the directory, or else its path
    /// while the root is the one it was configured under (never a path in
    /// a jail the program chrooted into since), closed when the handle is
    /// dropped. Async-signal-safe.
    fn open(&self, how: Private, usable: fn(&Fd) -> bool) -> Option<Handle> {
        let seen = self.get()?;
        let Seen {
            fd, dev, ino, path, ..
        } = seen;
        if fd >= 0 && sys::fd_info(fd).is_ok_and(|i| (i.dev, i.ino) == (dev, ino)) {
            return Some(Handle {
                raw: fd,
                _reopened: None,
                lost: false,
                file: true,
            });
        }
        let dir_kept = seen.dir >= 0
            && !seen.name.is_null()
            && sys::fd_info(seen.dir).is_ok_and(|i| (i.dev, i.ino) == (seen.dir_dev, seen.dir_ino));
        let reopened = if dir_kept {
            // SAFETY: published names are interned for the life of the process.
            let name = unsafe { CStr::from_ptr(seen.name) };
            sys::private::open_private_at(seen.dir, name, how)
        } else if !path.is_null() && sys::dir::root_id() == Some(seen.root) {
            // SAFETY: published paths are interned for the life of the process.
            let path = unsafe { CStr::from_ptr(path) };
            sys::private::open_private_c(path, how)
        } else {
            return None;
        };
        let reopened = reopened.ok().filter(usable)?;
        Some(Handle {
            raw: reopened.raw(),
            _reopened: Some(reopened),
            // (A descriptor of -1 was never opened: a file made now.)
            lost: fd >= 0,
            file: true,
        })
    }
}

static DUMP: Slot = Slot::new();
static IMAGE: Slot = Slot::new();
/// Which `DumpFiles` is published (its token), and the last token given.
static PUBLISHED: AtomicU64 = AtomicU64::new(0);
static TOKENS: AtomicU64 = AtomicU64::new(0);

impl DumpFiles {
    /// Makes these the files the handler writes to (none: stderr).
    pub fn publish(&mut self) {
        self.token = TOKENS.fetch_add(1, Ordering::SeqCst) + 1;
        DUMP.set(Place {
            fd: self.dump.as_ref(),
            path: self.dump_path,
            dir: self.dir.as_ref(),
            name: self.dump_name,
        });
        IMAGE.set(Place {
            fd: None,
            path: self.image,
            dir: self.dir.as_ref(),
            name: self.image_name,
        });
        PUBLISHED.store(self.token, Ordering::SeqCst);
    }
}

impl Drop for DumpFiles {
    fn drop(&mut self) {
        if self.token != 0 && PUBLISHED.load(Ordering::SeqCst) == self.token {
            PUBLISHED.store(0, Ordering::SeqCst);
            DUMP.set(Place::NONE);
            IMAGE.set(Place::NONE);
        }
        // The descriptors close now, each only if it is still vlog's.
    }
}

/// A dump file is emptied before the next dump once it holds this much (4
/// times the ring, at least 16 MiB): a program that crashes over and over
/// (restarted each time by its supervisor, or dumping on request) never
/// fills the disk with dumps, and the newest dump is kept whole.
pub fn dump_file_cap(ring_size: u64) -> u64 {
    ring_size.saturating_mul(4).max(16 << 20)
}

/// A descriptor the handler writes a dump to.
pub struct Handle {
    raw: c_int,
    /// The path opened again by the handler, closed with the handle.
    _reopened: Option<Fd>,
    /// The published descriptor was no longer the file (the program
    /// closed it), not a file made at this first crash.
    lost: bool,
    /// The dump file (not stderr, which is the program's).
    file: bool,
}

impl Handle {
    pub fn raw(&self) -> c_int {
        self.raw
    }

    /// Whether the published descriptor had been lost and the path was
    /// opened again.
    pub fn reopened(&self) -> bool {
        self.lost
    }

    /// Before a dump: empties the dump file once it holds `cap` bytes (see
    /// [`dump_file_cap`]); the size it had, if it did. Only a file that
    /// holds dumps alone: never one the program's stdout or stderr also
    /// writes to, nor one that does not start as a dump does (a log file
    /// named as the dump file too). Async-signal-safe.
    pub fn make_room(&self, cap: u64) -> Option<u64> {
        let info = sys::fd_info(self.raw).ok()?;
        if !self.file || !info.regular || info.size < cap {
            return None;
        }
        if [1, 2]
            .into_iter()
            .any(|fd| sys::fd_info(fd).is_ok_and(|i| i.same_file(&info)))
        {
            return None;
        }
        let mut head = [0u8; 6];
        // SAFETY: `head` is writable for its length.
        let got = unsafe { libc::pread(self.raw, head.as_mut_ptr().cast(), head.len(), 0) };
        if got != head.len() as isize || &head != b"vlog: " {
            return None;
        }
        // SAFETY: ftruncate on a descriptor proved to be the dump file
        // (see `Slot::open`); appends go to the new end.
        (unsafe { libc::ftruncate(self.raw, 0) } == 0).then_some(info.size)
    }
}

/// In the handler: where the dump text goes. The dump file (or the path
/// opened again, if the program closed it), or else fd 2 while it is still
/// the stderr vlog adopted (a daemon that closed it may have reused fd 2 for
/// a socket or a file that must not receive the ring). Async-signal-safe.
pub fn dump_handle() -> Option<Handle> {
    if PUBLISHED.load(Ordering::SeqCst) != 0 {
        if let Some(h) = DUMP.open(Private::Dump, |_| true) {
            return Some(h);
        }
        if DUMP.get().is_some_and(|seen| seen.fd >= 0) {
            // A dump file that cannot be written: not stderr instead.
            return None;
        }
    }
    crate::diag::stderr().map(|_| Handle {
        raw: 2,
        _reopened: None,
        lost: false,
        file: false,
    })
}

/// In the handler: where the ring image goes (`PATH.ring`), if anywhere.
/// Async-signal-safe.
pub fn image_handle() -> Option<Handle> {
    if PUBLISHED.load(Ordering::SeqCst) == 0 {
        return None;
    }
    IMAGE.open(Private::Image, is_ring_or_empty)
}
