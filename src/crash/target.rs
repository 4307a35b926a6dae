//! Where crash dumps go (`VLOG_DUMP`) and which signal asks for one
//! (`VLOG_DUMP_SIGNAL`): parsed here, and the dump files opened here, at
//! configuration, because the handler cannot open files.

use std::ffi::c_int;
use std::os::unix::io::IntoRawFd;
use std::path::Path;

use super::signals::FATAL_SIGNALS;
use crate::error::ConfigError;
use crate::ring::layout::starts_with_magic;
use crate::sys::{self, Private};

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

    /// For `file:PATH`, `PATH.ring`: where the crash handler also writes the
    /// ring as a ring file. Opened now (0600, close-on-exec, no symbolic link);
    /// an existing file that is not a vlog ring is left alone (None).
    pub fn open_image(&self) -> Option<c_int> {
        let DumpTarget::File(path) = self else {
            return None;
        };
        let mut image = path.as_os_str().to_owned();
        image.push(".ring");
        let file = sys::open_private(Path::new(&image), Private::ReadWrite).ok()?;
        let mut head = [0u8; 8];
        let n = std::io::Read::read(&mut &file, &mut head).ok()?;
        (n == 0 || starts_with_magic(&head)).then(|| file.into_raw_fd())
    }

    /// The descriptor dumps are written to: the file is opened now (appended
    /// to, 0600, close-on-exec, never through a symbolic link), because the
    /// handler cannot open files.
    pub fn open(&self) -> Result<c_int, ConfigError> {
        match self {
            DumpTarget::Stderr | DumpTarget::Off => Ok(2),
            DumpTarget::File(path) => {
                sys::open_private(path, Private::Append { nonblocking: false })
                    .map(IntoRawFd::into_raw_fd)
                    .map_err(|e| {
                        ConfigError::new(format!("cannot open dump file '{}': {e}", path.display()))
                    })
            }
        }
    }
}
