//! Ring files (`VLOG_BUFFER_FILE`): the ring kept in a file that is mapped
//! shared, so its records survive the process, even SIGKILL. A new ring file
//! is built beside the path and renamed over it, carrying over the records
//! of the ring it replaces or of the ring an earlier run left there; a file
//! that is not a vlog ring is never overwritten.

use std::path::Path;

use super::image::Image;
use super::layout::{self, Stats};
use super::reader::Region;
use super::writer::Ring;
use crate::error::ConfigError;
use crate::sys::{self, Private};

impl Ring {
    /// A ring kept in the file at `path`, built in `PATH.<pid>.new` and
    /// renamed over `path`, carrying over the records of `previous` (the
    /// ring being replaced, or the ring an earlier run left in the file).
    pub fn create_file(
        path: &Path,
        size: usize,
        previous: Option<(&dyn Region, Stats)>,
    ) -> std::io::Result<Ring> {
        // A name of this process's own, so two processes given the same path
        // never truncate each other's mapping.
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(format!(".{}.new", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        let made = Ring::build_file(Path::new(&tmp), size, previous)
            .and_then(|ring| std::fs::rename(&tmp, path).map(|()| ring));
        if made.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        made
    }

    /// The new ring file at `tmp`: its blocks allocated (a file system
    /// without room for it refuses it now, instead of SIGBUS later), mapped,
    /// and the records of `previous` carried in.
    fn build_file(
        tmp: &Path,
        size: usize,
        previous: Option<(&dyn Region, Stats)>,
    ) -> std::io::Result<Ring> {
        let file = sys::open_private(tmp, Private::CreateNew)?;
        let len = layout::region_len(size);
        file.allocate(len as u64)?;
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

    /// The first ring of a process whose ring lives in `path`: records an
    /// earlier run left there are carried over (the sequence goes on), and
    /// a file that is not a vlog ring is never overwritten.
    pub fn open_file(path: &Path, size: usize) -> Result<Ring, ConfigError> {
        let refuse =
            |why: String| ConfigError::new(format!("ring file '{}' {why}", path.display()));
        let old = match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(refuse(format!("cannot be read: {e}"))),
            Ok(m) if !m.file_type().is_file() => {
                return Err(refuse("is not a regular file; not using it".into()))
            }
            Ok(_) => std::fs::read(path).map_err(|e| refuse(format!("cannot be read: {e}")))?,
        };
        if !old.is_empty() && !layout::starts_with_magic(&old) {
            return Err(refuse(
                "exists and is not a vlog ring; not overwriting it".into(),
            ));
        }
        // A damaged or truncated earlier ring is replaced; what parses is
        // kept.
        let image = Image::parse(&old).ok();
        let previous = image.as_ref().map(|i| (i as &dyn Region, i.stats()));
        Ring::create_file(path, size, previous)
            .map_err(|e| refuse(format!("cannot be created: {e}")))
    }
}
