//! `VLOG_OUTPUTS`: where recorded messages are printed, each destination with
//! its own minimum priority.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::config::ConfigError;
use crate::priority::Priority;

#[derive(Debug)]
pub enum Target {
    Stderr,
    File { path: PathBuf, file: File },
}

#[derive(Debug)]
pub struct Output {
    pub priority: Priority,
    pub target: Target,
    /// Set after the first failed write, so a full disk is reported once and
    /// not once per message; cleared by a successful write or a reopen.
    failing: bool,
}

/// A parsed output list, files already open, in the order they will be written.
#[derive(Debug, Default)]
pub struct OutputSpecs(pub Vec<Output>);

fn open_log_file(path: &Path) -> io::Result<File> {
    // std opens with O_CLOEXEC; O_APPEND keeps each line's write(2) atomic with
    // respect to other writers of the same file.
    OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)
}

impl OutputSpecs {
    /// Parses a whole output string, opening every file it names. One bad token
    /// rejects the string; a later duplicate destination replaces an earlier one
    /// and takes its place at the end, as in libvirt.
    pub fn parse(s: &str) -> Result<OutputSpecs, ConfigError> {
        let mut outputs: Vec<Output> = Vec::new();
        for token in s.split(' ').filter(|t| !t.is_empty()) {
            let output = Output::parse(token)?;
            outputs.retain(|o| !o.same_destination(&output));
            outputs.push(output);
        }
        Ok(OutputSpecs(outputs))
    }
}

impl Output {
    pub fn stderr(priority: Priority) -> Output {
        Output {
            priority,
            target: Target::Stderr,
            failing: false,
        }
    }

    fn parse(token: &str) -> Result<Output, ConfigError> {
        let fields: Vec<&str> = token.split(':').collect();
        let prio = fields[0];
        let priority = Priority::parse_field(prio).ok_or_else(|| {
            ConfigError::new(format!(
                "invalid priority '{prio}' in output '{token}': use 1-4 or debug, info, warning, error"
            ))
        })?;
        let Some(&dest) = fields.get(1) else {
            return Err(ConfigError::new(format!(
                "malformed output '{token}': expected PRIORITY:DESTINATION"
            )));
        };
        let wanted = match dest {
            "stderr" | "journald" => 2,
            "file" | "syslog" => 3,
            _ => {
                return Err(ConfigError::new(format!(
                    "invalid destination '{dest}' in output '{token}': use stderr, file, syslog or journald"
                )))
            }
        };
        if fields.len() != wanted {
            let form = if wanted == 2 {
                format!("PRIORITY:{dest}")
            } else {
                format!(
                    "PRIORITY:{dest}:{}",
                    if dest == "file" { "PATH" } else { "IDENT" }
                )
            };
            return Err(ConfigError::new(format!(
                "output '{token}' does not match the form {form}"
            )));
        }
        let target = match dest {
            "stderr" => Target::Stderr,
            "file" => {
                let path = std::path::absolute(fields[2]).map_err(|e| {
                    ConfigError::new(format!("invalid path in output '{token}': {e}"))
                })?;
                let file = open_log_file(&path).map_err(|e| {
                    ConfigError::new(format!(
                        "cannot open '{}' for output '{token}': {e}",
                        path.display()
                    ))
                })?;
                Target::File { path, file }
            }
            _ => {
                return Err(ConfigError::new(format!(
                "output '{token}': destination '{dest}' is not supported by this version of vlog"
            )))
            }
        };
        Ok(Output {
            priority,
            target,
            failing: false,
        })
    }

    fn same_destination(&self, other: &Output) -> bool {
        match (&self.target, &other.target) {
            (Target::Stderr, Target::Stderr) => true,
            (Target::File { path: a, .. }, Target::File { path: b, .. }) => a == b,
            _ => false,
        }
    }

    /// Writes one finished line. A failure is returned only the first time in a
    /// row, so the caller reports it once.
    pub fn write_line(&mut self, line: &[u8]) -> Option<io::Error> {
        let result = match &self.target {
            Target::Stderr => io::stderr().write_all(line),
            Target::File { file, .. } => (&*file).write_all(line),
        };
        match result {
            Ok(()) => {
                self.failing = false;
                None
            }
            Err(e) if !self.failing => {
                self.failing = true;
                Some(e)
            }
            Err(_) => None,
        }
    }

    /// Reopens a file output by its path (after logrotate moved it). The old file
    /// stays in use if the new one cannot be opened.
    pub fn reopen(&mut self) -> io::Result<()> {
        if let Target::File { path, file } = &mut self.target {
            *file = open_log_file(path)?;
            self.failing = false;
        }
        Ok(())
    }

    pub fn sync(&self) -> io::Result<()> {
        match &self.target {
            Target::Stderr => Ok(()),
            Target::File { file, .. } => file.sync_data(),
        }
    }

    pub fn describe(&self) -> String {
        match &self.target {
            Target::Stderr => "stderr".to_owned(),
            Target::File { path, .. } => path.display().to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("vlog-output-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    #[test]
    fn valid_forms() {
        let path = tmp("a.log");
        let spec = format!("3:stderr  1:file:{}  debug:stderr", path.display());
        let o = OutputSpecs::parse(&spec).unwrap().0;
        assert_eq!(o.len(), 2);
        assert!(matches!(o[0].target, Target::File { .. }));
        assert!(matches!(o[1].target, Target::Stderr));
        assert_eq!(o[1].priority, Priority::Debug);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(OutputSpecs::parse("").unwrap().0.is_empty());
    }

    #[test]
    fn invalid_forms() {
        let cases = [
            ("stderr", "priority"),
            ("0:stderr", "priority"),
            ("1", "malformed"),
            ("1:Stderr", "destination"),
            ("1:stderr:x", "form"),
            ("1:file", "form"),
            ("1:file:/a:b", "form"),
            ("1:syslog", "form"),
            ("1:journald:x", "form"),
            ("1:file:/nonexistent-dir/x.log", "cannot open"),
            ("1:file:", "path"),
            ("1:syslog:ident", "not supported"),
        ];
        for (spec, want) in cases {
            let err = OutputSpecs::parse(spec).unwrap_err();
            assert!(err.message.contains(want), "{spec}: {}", err.message);
        }
    }

    #[test]
    fn relative_path_made_absolute_and_duplicates_replaced() {
        let dir = tmp("rel");
        std::fs::create_dir_all(&dir).unwrap();
        let abs = dir.join("x.log");
        let spec = format!("1:file:{} 4:stderr 3:file:{}", abs.display(), abs.display());
        let o = OutputSpecs::parse(&spec).unwrap().0;
        assert_eq!(o.len(), 2);
        assert!(matches!(o[0].target, Target::Stderr));
        assert_eq!(o[1].priority, Priority::Warning);
        let rel = OutputSpecs::parse("1:file:vlog-test-relative.log")
            .unwrap()
            .0;
        let Target::File { path, .. } = &rel[0].target else {
            panic!()
        };
        assert!(path.is_absolute());
        std::fs::remove_file(path).unwrap();
    }
}
