//! Reading an object file that a ring or a control server names: data
//! from outside, and from whoever wrote it (the ring file's owner, the
//! server's user), whose rights, never the reader's, say what may be read.
//!
//! - Only a regular file is opened (looked at first through O_PATH, which
//!   opens nothing: never a FIFO's or a device's open), then opened
//!   through that very file, of at most [`FILE_MAX`] bytes.
//! - Its build-id is read first from its first [`HEAD_MAX`] bytes (the
//!   program headers' notes) and must be the record's: a few bytes of a
//!   hostile reply never have a gigabyte read for an object that is not
//!   the one named.
//! - Read for another user: by root, on a thread with that user's
//!   filesystem credentials (`sys::creds`: the kernel judges the whole
//!   path); by anyone else, only a file that user may read by its mode and
//!   that sits in directories that user may enter by theirs (an
//!   approximation: ACLs are not read). Data of the reader's own user is
//!   read as the reader.

use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::Path;

use object::read::elf::{FileHeader, ProgramHeader};

use crate::sys::creds;

/// The largest object file read.
pub const FILE_MAX: u64 = 1 << 30;
/// How much of a file is read to find its build-id.
const HEAD_MAX: usize = 64 << 10;

/// Who wrote the data that names objects.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Owner {
    pub uid: u32,
    pub gid: u32,
    /// The supplementary groups, where known (a control server's).
    pub groups: Option<Vec<u32>>,
}

/// The object file at `path` if its build-id is `id` (never for none)
/// and `owner` may read it, as the module says.
pub fn read_object(path: &Path, id: &[u8], owner: &Owner) -> Option<Vec<u8>> {
    if id.is_empty() {
        return None;
    }
    let me = crate::sys::effective_uid();
    if me == owner.uid {
        read_checked(path, id, None)
    } else if me == 0 {
        let groups = owner.groups.as_deref().unwrap_or(&[]);
        creds::as_user(owner.uid, owner.gid, groups, || {
            read_checked(path, id, None)
        })
        .flatten()
    } else {
        read_checked(path, id, Some(owner))
    }
}

/// The file, checked as the module says: by the kernel alone, or also by
/// `mode_of` the file and its directories for that user.
fn read_checked(path: &Path, id: &[u8], mode_of: Option<&Owner>) -> Option<Vec<u8>> {
    let seen = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH)
        .open(path)
        .ok()?;
    let meta = seen.metadata().ok()?;
    let refused = mode_of.is_some_and(|o| !(allowed(&meta, o, 0o4) && reachable(path, &seen, o)));
    if !meta.file_type().is_file() || meta.len() > FILE_MAX || refused {
        return None;
    }
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(format!("/proc/self/fd/{}", seen.as_raw_fd()))
        .ok()?;
    let again = file.metadata().ok()?;
    if (again.dev(), again.ino()) != (meta.dev(), meta.ino()) || !again.file_type().is_file() {
        return None;
    }
    let mut head = Vec::new();
    (&mut file)
        .take(HEAD_MAX as u64)
        .read_to_end(&mut head)
        .ok()?;
    if build_id(&head) != Some(id) {
        return None;
    }
    let mut data = head;
    file.take(FILE_MAX - data.len() as u64)
        .read_to_end(&mut data)
        .ok()?;
    Some(data)
}

/// Whether `owner` has the access `want` (4 read, 1 search) to what
/// `meta` describes, by its mode as the kernel checks it: the owner's
/// bits, else the group's, else the others'. Where the owner's groups are
/// not known, one of them could be the file's: the group's bits must
/// allow it too.
fn allowed(meta: &std::fs::Metadata, owner: &Owner, want: u32) -> bool {
    let mode = meta.mode();
    let bits = |shift: u32| (mode >> shift) & want == want;
    if meta.uid() == owner.uid {
        bits(6)
    } else if meta.gid() == owner.gid
        || owner
            .groups
            .as_ref()
            .is_some_and(|g| g.contains(&meta.gid()))
    {
        bits(3)
    } else if owner.groups.is_none() {
        bits(3) && bits(0)
    } else {
        bits(0)
    }
}

/// Whether `owner` may enter every directory on the way to the file, as
/// `path` names it and as it resolved (through symbolic links) to `seen`.
fn reachable(path: &Path, seen: &std::fs::File, owner: &Owner) -> bool {
    let resolved = std::fs::read_link(format!("/proc/self/fd/{}", seen.as_raw_fd()));
    let Ok(resolved) = resolved else {
        return false;
    };
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    [absolute.as_path(), resolved.as_path()].iter().all(|p| {
        p.ancestors()
            .skip(1)
            .all(|dir| std::fs::metadata(dir).is_ok_and(|m| m.is_dir() && allowed(&m, owner, 0o1)))
    })
}

/// The GNU build-id in the notes of the ELF file whose first bytes are
/// `head` (None where the notes are past them, or there is none).
pub fn build_id(head: &[u8]) -> Option<&[u8]> {
    match object::FileKind::parse(head).ok()? {
        object::FileKind::Elf64 => note::<object::elf::FileHeader64<object::Endianness>>(head),
        object::FileKind::Elf32 => note::<object::elf::FileHeader32<object::Endianness>>(head),
        _ => None,
    }
}

fn note<Elf: FileHeader<Endian = object::Endianness>>(head: &[u8]) -> Option<&[u8]> {
    let header = Elf::parse(head).ok()?;
    let endian = header.endian().ok()?;
    for segment in header.program_headers(endian, head).ok()? {
        let Ok(Some(mut notes)) = segment.notes(endian, head) else {
            continue;
        };
        while let Ok(Some(note)) = notes.next() {
            if note.name() == b"GNU" && note.n_type(endian) == object::elf::NT_GNU_BUILD_ID {
                return Some(note.desc());
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::Object as _;
    use std::os::unix::fs::PermissionsExt;

    fn me() -> Owner {
        let probe = std::env::temp_dir().join(format!("vlog-me-{}", std::process::id()));
        std::fs::write(&probe, b"").unwrap();
        let made = std::fs::metadata(&probe).unwrap();
        std::fs::remove_file(&probe).unwrap();
        Owner {
            uid: made.uid(),
            gid: made.gid(),
            groups: None,
        }
    }

    #[test]
    fn the_build_id_is_read_from_the_head_of_the_file() {
        let exe = std::fs::read("/proc/self/exe").unwrap();
        let whole = object::File::parse(&*exe).unwrap().build_id().unwrap();
        assert!(whole.is_some());
        assert_eq!(build_id(&exe[..HEAD_MAX.min(exe.len())]), whole);
        assert_eq!(build_id(&exe[..64]), None);
        assert_eq!(build_id(b"not an object"), None);
    }

    #[test]
    fn only_a_regular_file_with_the_build_id_is_read() {
        let exe = std::fs::read("/proc/self/exe").unwrap();
        let id = object::File::parse(&*exe)
            .unwrap()
            .build_id()
            .unwrap()
            .unwrap()
            .to_vec();
        let me = me();
        let got = read_object(Path::new("/proc/self/exe"), &id, &me);
        assert_eq!(got.as_deref(), Some(&exe[..]));
        assert_eq!(read_object(Path::new("/proc/self/exe"), b"\x01", &me), None);
        assert_eq!(read_object(Path::new("/proc/self/exe"), b"", &me), None);
        let dir = std::env::temp_dir().join(format!("vlog-symbols-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        // A FIFO nobody writes is never opened at all (an open for reading
        // would block).
        for path in [&fifo, Path::new("/dev/zero"), &dir] {
            assert_eq!(read_checked(path, &id, None), None, "{path:?}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_mode_says_what_another_user_may_read() {
        let dir = std::env::temp_dir().join(format!("vlog-symbols-mode-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("file");
        std::fs::write(&file, b"bytes").unwrap();
        let meta = std::fs::metadata(&file).unwrap();
        let (uid, gid) = (meta.uid(), meta.gid());
        let user = |uid, gid, groups: Option<Vec<u32>>| Owner { uid, gid, groups };
        let owner = user(uid, gid + 1, Some(vec![]));
        let member = user(uid + 1, gid + 1, Some(vec![gid]));
        let stranger = user(uid + 1, gid + 1, Some(vec![]));
        let unknown = user(uid + 1, gid + 1, None);
        for (mode, seen) in [
            (0o600, [true, false, false, false]),
            (0o640, [true, true, false, false]),
            (0o644, [true, true, true, true]),
            // The group left out on purpose: one who may be in it is not
            // let read.
            (0o604, [true, false, true, false]),
            (0o004, [false, false, true, false]),
        ] {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
            let meta = std::fs::metadata(&file).unwrap();
            let got = [&owner, &member, &stranger, &unknown].map(|o| allowed(&meta, o, 0o4));
            assert_eq!(got, seen, "mode {mode:o}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
