//! Ring files (`VLOG_BUFFER_FILE`): the ring kept in a file that is mapped
//! shared, so its records survive the process, even SIGKILL. A new ring file
//! is built beside the path and renamed over it, carrying over the records
//! of the ring it replaces or of the ring an earlier run left there; a file
//! that is not a vlog ring is never overwritten.

use std::path::Path;

use super::image::{read_ring, Image, REGION_MAX};
use super::layout::{self, offset, Stats, HEADER_SPACE, LAYOUT_VERSION};
use super::reader::Region;
use super::record::{u32_at, u64_at};
use super::writer::Ring;
use crate::diag;
use crate::error::ConfigError;
use crate::sys::{self, Fd, Private};

/// Why making a ring file did not work.
enum Made {
    Refused(ConfigError),
    /// Another process made the file at the path meanwhile.
    Meanwhile,
}

impl Ring {
    /// A ring kept in the file at `path`, built in a new file beside it
    /// (`sys::private::create_beside`: made by this process, never one
    /// that was there) and renamed over `path` (`replace`: the ring file of
    /// this process's user that is there; otherwise only if nothing is
    /// there), carrying over the records of `previous` (the ring being
    /// replaced, or the ring an earlier run left in the file).
    pub fn create_file(
        path: &Path,
        size: usize,
        previous: Option<(&dyn Region, Stats)>,
        replace: bool,
    ) -> std::io::Result<Ring> {
        let (file, tmp) = sys::private::create_beside(path, sys::Private::NewRing)?;
        let made = Ring::build_file(file, size, previous)
            .and_then(|ring| sys::private::rename_over(&tmp, path, replace).map(|()| ring));
        if made.is_err() {
            // Made by this process, and still there: nobody else may
            // replace a file of this user's in a sticky directory.
            let _ = std::fs::remove_file(&tmp);
        }
        made
    }

    /// The new ring file `file`: its blocks allocated (a file system
    /// without room for it refuses it now, instead of SIGBUS later), mapped,
    /// and the records of `previous` carried in.
    fn build_file(
        file: Fd,
        size: usize,
        previous: Option<(&dyn Region, Stats)>,
    ) -> std::io::Result<Ring> {
        let len = layout::region_len(size);
        file.allocate(len as u64)?;
        // Held while the file is in use, so that another process given the
        // same path joins it instead of replacing it. The lock belongs to
        // the open file, which the mapping keeps open: a program that
        // closes every descriptor (sshd at its start) keeps it held.
        file.try_lock(false)?;
        // SAFETY: a shared mapping of a file we just created and sized;
        // other processes reading it never trust its contents.
        let map = unsafe { sys::map_rw(len, libc::MAP_SHARED, file.raw()) }?;
        // SAFETY: the mapping is ours alone so far and of the right length.
        let mut ring = unsafe { Ring::new_shared(map, size) }?;
        ring.keep_file(file);
        if let Some((region, stats)) = previous {
            ring.migrate(region, stats);
        }
        Ok(ring)
    }

    /// The first ring of a process whose ring lives in `path`. A ring file
    /// another running process uses (a second instance, a worker it
    /// fork+exec'd) is joined in place: both append under its lock, and
    /// nothing either writes is lost. Otherwise records an earlier run left
    /// there are carried over (the sequence goes on). Refused, before a byte
    /// of it is read: a file that is not a regular file, not this process's
    /// user's, writable by its group or others (a forged ring carried into a
    /// daemon's), or larger than any ring; a file that is not a vlog ring is
    /// never overwritten.
    pub fn open_file(path: &Path, size: usize) -> Result<Ring, ConfigError> {
        // Another process that starts at the same moment may make the file
        // between the look and the rename: that one is then joined.
        match Ring::open_file_once(path, size) {
            Err(Made::Meanwhile) => Ring::open_file_once(path, size),
            other => other,
        }
        .map_err(|e| match e {
            Made::Refused(e) => e,
            Made::Meanwhile => ConfigError::new(format!(
                "ring file '{}' was made and replaced by others while it was opened; not using it",
                path.display()
            )),
        })
    }

    fn open_file_once(path: &Path, size: usize) -> Result<Ring, Made> {
        let refuse = |why: String| {
            Made::Refused(ConfigError::new(format!(
                "ring file '{}' {why}",
                path.display()
            )))
        };
        let create = |previous: Option<(&dyn Region, Stats)>, replace: bool| {
            Ring::create_file(path, size, previous, replace).map_err(|e| {
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    Made::Meanwhile
                } else {
                    refuse(format!("cannot be created: {e}"))
                }
            })
        };
        // The one rule for files vlog writes refuses, before a byte is
        // read, a file that is not a regular file, not this process's
        // user's, writable by its group or others, or another file's name.
        let file = match sys::open_private(path, Private::Ring) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return create(None, false),
            Err(e) => return Err(refuse(format!("cannot be used: {e}"))),
            Ok(file) => file,
        };
        let info = file.info();
        if info.size > REGION_MAX {
            return Err(refuse(format!(
                "is {} bytes, larger than any vlog ring; not using it",
                info.size
            )));
        }
        let mut magic = [0u8; 8];
        if info.size > 0 {
            let is_ring = info.size >= 8
                && file.read_exact_at(&mut magic, 0).is_ok()
                && layout::starts_with_magic(&magic);
            if !is_ring {
                return Err(refuse(
                    "exists and is not a vlog ring; not overwriting it".into(),
                ));
            }
        }
        if !file
            .try_lock(true)
            .map_err(|e| refuse(format!("cannot be locked: {e}")))?
        {
            return Ring::join_file(file).map_err(refuse);
        }
        // An earlier run's ring, read only as far as its header says. A
        // damaged or truncated one is replaced; what parses is kept.
        let old = read_ring(info.size, |buf, at| file.read_exact_at(buf, at));
        drop(file);
        let old = old.and_then(|bytes| match Image::parse(&bytes) {
            Ok(_) => Ok(bytes),
            Err(e) => Err(e.to_string()),
        });
        if let Err(e) = &old {
            diag::say(&format!(
                "ring file '{}' holds a ring that cannot be read ({e}): replacing it",
                path.display()
            ));
        }
        let old = old.unwrap_or_default();
        let image = Image::parse(&old).ok();
        create(image.as_ref().map(|i| (i as &dyn Region, i.stats())), true)
    }

    /// Joins the ring another running process keeps in `file` (it holds the
    /// file's shared lock): the same layout is required, the size is the
    /// file's.
    fn join_file(file: Fd) -> Result<Ring, String> {
        let mut head = [0u8; offset::END];
        file.read_exact_at(&mut head, 0)
            .map_err(|e| format!("is in use by another process and cannot be read: {e}"))?;
        let len = Image::region_len(&head).map_err(|e| {
            format!("is in use by another process, and is not a ring this process can join: {e}")
        })?;
        let data_size = u64_at(&head, offset::DATA_SIZE) as usize;
        let ours = u32_at(&head, offset::VERSION) == LAYOUT_VERSION
            && u32_at(&head, offset::HEADER_SPACE) as usize == HEADER_SPACE
            && u64_at(&head, offset::DICT_SIZE) as usize == layout::dict_size_for(data_size)
            && layout::region_len(data_size) as u64 == len
            && file.info().size == len;
        if !ours {
            return Err(
                "is in use by another process with another ring layout (another vlog \
                 version?); not joining it"
                    .into(),
            );
        }
        // The shared lock every process using the file holds; an exclusive
        // one is only ever held for a moment (see `shared_with_others`).
        let mut locked = false;
        for _ in 0..1000 {
            locked = file
                .try_lock(false)
                .map_err(|e| format!("cannot be locked: {e}"))?;
            if locked {
                break;
            }
            std::thread::yield_now();
        }
        if !locked {
            return Err("is being replaced by another process; not joining it".into());
        }
        // SAFETY: a shared mapping of a ring file of exactly this length;
        // its contents are read by the writer only where the header's
        // checked sizes say, and by readers never trusted.
        let map = unsafe { sys::map_rw(len as usize, libc::MAP_SHARED, file.raw()) }
            .map_err(|e| format!("cannot be mapped: {e}"))?;
        // SAFETY: the header was checked above to describe this layout and
        // size; the process that made the file made its lock.
        let mut ring = unsafe { Ring::join_shared(map, data_size) };
        ring.keep_file(file);
        Ok(ring)
    }
}
