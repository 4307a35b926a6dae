//! `?max=SIZE&keep=N` on a file output: before a write would take the file
//! past SIZE, it is renamed PATH.1 (PATH.1 to PATH.2, and so on; what was
//! PATH.N is replaced, so the oldest past N goes) and a new PATH is started.
//!
//! Several processes may write one file and each rotate it (two daemons, a
//! forked child, logrotate besides). Each batch is written holding a POSIX
//! record lock on the file (per process, so a forked child, which shares
//! the parent's open file, is kept out as any other process is): the size
//! looked at, the lines that fit written and the rotation made under one
//! lock, so no process writes past SIZE on another's count. Under it the
//! path is checked too: a process that finds it naming another file (a
//! peer rotated it away) follows it before writing, so no line goes to a
//! file on its way out, and rotates only the file the path names. The lock
//! is never waited for (a process stopped while it holds it would hold
//! every other): tried while the others run, then the batch is written
//! without it and nothing rotated. A lock another user's process holds (a
//! read lock needs no more than reading the file) is not theirs to decide:
//! said once, and ignored.
//!
//! The new file is made beside PATH first (O_EXCL) and swapped with it in
//! one step (RENAME_EXCHANGE): PATH is never free for another user to take.
//!
//! Every name rotated over is judged as any file vlog writes
//! (`sys::refusal`): a regular file of this user, writable by nobody else,
//! with one name. Another user's file, a link or a directory at PATH.K
//! stops the rotation (said once) rather than have vlog move or remove it;
//! the lines go on to PATH, past SIZE.

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::error::ConfigError;
use crate::sys::{self, Fd, Private};

/// A file output's bound: started anew before a write would take it past
/// `max` bytes, the old ones kept as PATH.1 to PATH.`keep`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rotate {
    pub max: u64,
    pub keep: u32,
}

/// The bounds of `max` and `keep`: the smallest file holds any text line
/// (`text::line::LINE_MAX`, about 50 KiB).
pub const ROTATE_MAX_MIN: u64 = 64 << 10;
pub const ROTATE_MAX_MAX: u64 = 1 << 40;
pub const ROTATE_KEEP_DEFAULT: u32 = 3;
pub const ROTATE_KEEP_MAX: u32 = 99;

/// Parses a file output's options (what follows `?`): `max=SIZE` (K, M
/// and G suffixes), `keep=N` (with max only), `sync`.
pub fn parse_file_options(query: &str, token: &str) -> Result<(Option<Rotate>, bool), ConfigError> {
    let bad = |why: String| ConfigError::new(format!("output '{token}': {why}"));
    let (mut max, mut keep, mut sync) = (None, None, false);
    for option in query.split('&') {
        match option.split_once('=') {
            None if option == "sync" => sync = true,
            Some(("max" | "keep", _))
                if (option.starts_with("max") && max.is_some())
                    || (option.starts_with("keep") && keep.is_some()) =>
            {
                return Err(bad(format!("'{option}': given twice")));
            }
            Some(("max", v)) => {
                max = Some(
                    crate::text::num::parse_size(v)
                        .map(|n| n as u64)
                        .filter(|n| (ROTATE_MAX_MIN..=ROTATE_MAX_MAX).contains(n))
                        .ok_or_else(|| {
                            bad(format!(
                                "'{option}': a size from 64K to 1024G (K, M and G suffixes)"
                            ))
                        })?,
                )
            }
            Some(("keep", v)) => {
                keep = Some(
                    v.parse::<u32>()
                        .ok()
                        .filter(|_| v.bytes().all(|b| b.is_ascii_digit()))
                        .filter(|n| (1..=ROTATE_KEEP_MAX).contains(n))
                        .ok_or_else(|| {
                            bad(format!("'{option}': a number of files from 1 to {ROTATE_KEEP_MAX}"))
                        })?,
                )
            }
            _ => {
                return Err(bad(format!(
                    "unknown option '{option}': use max=SIZE, keep=N or sync (a file's path cannot hold '?')"
                )))
            }
        }
    }
    let rotate = match (max, keep) {
        (Some(max), keep) => Some(Rotate {
            max,
            keep: keep.unwrap_or(ROTATE_KEEP_DEFAULT),
        }),
        (None, Some(_)) => return Err(bad("keep=N needs max=SIZE".to_owned())),
        (None, None) => None,
    };
    Ok((rotate, sync))
}

/// What a rotation came to.
pub enum Outcome {
    /// The file was rotated; the new one is open. What to say.
    Rotated(Fd, String),
    /// The path names another file now (another process rotated it, or
    /// logrotate moved it): follow it. None when it could not be opened.
    Follow(Option<Fd>),
    /// It could not be rotated: why (the lines go on to the file as it is).
    Failed(String),
}

/// Whether `path` names the file `info` describes now (never followed).
pub fn names(path: &Path, info: &sys::FdInfo) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| (m.dev(), m.ino()) == (info.dev, info.ino))
}

/// `PATH.K`.
pub fn numbered(path: &Path, k: u32) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{k}"));
    PathBuf::from(name)
}

/// Rotates the file `fd` writes, which `path` named when it was opened;
/// the caller holds its record lock (see `FileOutput`).
pub fn rotate(path: &Path, fd: &Fd, rotate: Rotate) -> Outcome {
    let Some(info) = fd.check() else {
        return Outcome::Failed("its descriptor is no longer the file vlog opened".into());
    };
    if !names(path, &info) {
        return Outcome::Follow(sys::open_private(path, Private::Log).ok());
    }
    // PATH.1, PATH.2, ... up to the first name that is free (or PATH.N,
    // which is replaced): each judged before anything is renamed.
    let mut taken = 0;
    while taken < rotate.keep {
        let name = numbered(path, taken + 1);
        let why = match sys::judge_at(&name, Private::Log) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => break,
            Ok((true, None)) => {
                taken += 1;
                continue;
            }
            Ok((_, Some(r))) => r.why(),
            Ok((false, None)) => "it is not a regular file".to_owned(),
            Err(e) => format!("cannot look at it: {e}"),
        };
        return Outcome::Failed(format!("'{}' is in the way: {why}", name.display()));
    }
    // The new file first, beside PATH (O_EXCL: one this process made),
    // then swapped with PATH in one step: PATH is never free for another
    // user to take (a sticky /tmp) between the old file and the new.
    let (new, beside) = match sys::create_beside(path, Private::NewLog) {
        Ok(made) => made,
        Err(e) => return Outcome::Failed(format!("cannot start a new file ({e})")),
    };
    let failed = |why: String| {
        let _ = std::fs::remove_file(&beside);
        Outcome::Failed(why)
    };
    // Names are moved up from the top; only the oldest, judged this
    // user's, is replaced; every other is taken only if still free (a file
    // planted there meanwhile is never removed).
    let replaces = |to: u32| to == rotate.keep && taken == rotate.keep;
    for k in (2..=taken.min(rotate.keep - 1) + 1).rev() {
        let from = numbered(path, k - 1);
        if let Err(e) = sys::rename_over(&from, &numbered(path, k), replaces(k)) {
            return failed(format!("cannot rename '{}': {e}", from.display()));
        }
    }
    if let Err(e) = sys::exchange(&beside, path) {
        return failed(format!("cannot swap a new file in ({e})"));
    }
    let first = numbered(path, 1);
    let kept = match sys::rename_over(&beside, &first, replaces(1)) {
        Ok(()) => first.display().to_string(),
        Err(e) => format!("{} ({e}: not {})", beside.display(), first.display()),
    };
    Outcome::Rotated(
        new,
        format!(
            "{} reached {} bytes (max={}): renamed to {kept}, a new one started ({} kept)",
            path.display(),
            info.size,
            rotate.max,
            rotate.keep
        ),
    )
}

/// The length of the longest run of whole lines at the start of `lines`
/// that is at most `room` bytes.
pub fn whole_lines_within(lines: &[u8], room: u64) -> usize {
    let limit = lines.len().min(usize::try_from(room).unwrap_or(usize::MAX));
    if limit == lines.len() {
        return limit;
    }
    lines[..limit]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |end| end + 1)
}

/// The length of the first line of `lines` (all of it if it has no end).
pub fn first_line(lines: &[u8]) -> usize {
    lines
        .iter()
        .position(|&b| b == b'\n')
        .map_or(lines.len(), |end| end + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_cut_whole() {
        let lines = b"aaaa\nbb\ncccccc\n";
        assert_eq!(whole_lines_within(lines, 100), lines.len());
        assert_eq!(whole_lines_within(lines, lines.len() as u64), lines.len());
        assert_eq!(whole_lines_within(lines, 14), 8);
        assert_eq!(whole_lines_within(lines, 8), 8);
        assert_eq!(whole_lines_within(lines, 7), 5);
        assert_eq!(whole_lines_within(lines, 4), 0);
        assert_eq!(whole_lines_within(lines, 0), 0);
        assert_eq!(first_line(lines), 5);
        assert_eq!(first_line(b"no end"), 6);
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("vlog-rotate-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn write(path: &Path, text: &str) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }

    fn read(path: &Path) -> String {
        std::fs::read_to_string(path).unwrap_or_else(|e| format!("({e})"))
    }

    #[test]
    fn names_shift_up_to_the_first_free_one_and_the_oldest_goes() {
        let dir = scratch("shift");
        let path = dir.join("d.log");
        for (name, text) in [("d.log", "now"), ("d.log.1", "one"), ("d.log.3", "three")] {
            write(&dir.join(name), text);
        }
        let fd = sys::open_private(&path, Private::Log).unwrap();
        let rotated = rotate(&path, &fd, Rotate { max: 1, keep: 3 });
        assert!(matches!(rotated, Outcome::Rotated(..)));
        // d.log.2 was free: d.log.3 is left as it was.
        let got: Vec<String> = ["d.log", "d.log.1", "d.log.2", "d.log.3"]
            .iter()
            .map(|n| read(&dir.join(n)))
            .collect();
        assert_eq!(got, ["", "now", "one", "three"]);
        // All three taken: the oldest is replaced.
        write(&path, "newest");
        let fd = sys::open_private(&path, Private::Log).unwrap();
        assert!(matches!(
            rotate(&path, &fd, Rotate { max: 1, keep: 3 }),
            Outcome::Rotated(..)
        ));
        let got: Vec<String> = ["d.log.1", "d.log.2", "d.log.3"]
            .iter()
            .map(|n| read(&dir.join(n)))
            .collect();
        assert_eq!(got, ["newest", "now", "one"]);
        // A name in the way (a link) stops it before anything moves.
        write(&path, "kept");
        let fd = sys::open_private(&path, Private::Log).unwrap();
        std::fs::remove_file(dir.join("d.log.2")).unwrap();
        std::os::unix::fs::symlink(dir.join("d.log.3"), dir.join("d.log.2")).unwrap();
        match rotate(&path, &fd, Rotate { max: 1, keep: 3 }) {
            Outcome::Failed(why) => assert!(why.contains("d.log.2' is in the way"), "{why}"),
            _ => panic!("rotated over a link"),
        }
        assert_eq!(read(&path), "kept");
        assert_eq!(read(&dir.join("d.log.1")), "newest");
        // A path that names another file now is followed, not rotated.
        std::fs::rename(&path, dir.join("moved")).unwrap();
        write(&path, "");
        assert!(matches!(
            rotate(&path, &fd, Rotate { max: 1, keep: 1 }),
            Outcome::Follow(Some(_))
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn numbered_names() {
        assert_eq!(
            numbered(Path::new("/var/log/d.log"), 3),
            PathBuf::from("/var/log/d.log.3")
        );
    }
}
