//! `VLOG_CONFIG` in force (see `config::file`): the file is read at start,
//! and again by `vlog-ctl SOCKET reload`, which applies what it says now to
//! the settings a running daemon can change.

use std::path::PathBuf;
use std::sync::Mutex;

use super::State;
use crate::config::{self, file::Settings};
use crate::error::ConfigError;
use crate::{diag, sys};

/// The file `VLOG_CONFIG` named at start, for `reload`, and the process's
/// root then: after a chroot the path would name a file in the jail,
/// which `reload` never reads.
static PATH: Mutex<Option<(PathBuf, Option<sys::dir::Id>)>> = Mutex::new(None);

/// What `reload` applies; the others are read at start only.
const RELOADED: [&str; 5] = [
    "VLOG_LEVEL",
    "VLOG_FILTERS",
    "VLOG_OUTPUTS",
    "VLOG_CONTEXT",
    "VLOG_RATELIMIT",
];

/// The environment's value of `name`, when set and not empty: it wins
/// over the file's.
fn from_environment(name: &str) -> Option<String> {
    std::env::var_os(name)
        .map(|v| v.to_string_lossy().into_owned())
        .filter(|v| !v.is_empty())
}

/// At start: what the environment asks for, and the file `VLOG_CONFIG`
/// names where the environment is silent; each variable vlog does not
/// read, each line of the file it refuses (or the file, whole) and each
/// bad value said once (`diag::warn`).
pub fn at_start() -> config::EnvConfig {
    config::unknown_variables(
        std::env::vars_os().map(|(name, _)| name.to_string_lossy().into_owned()),
        diag::warn,
    );
    let file = file_at_start(diag::warn);
    config::from_env(
        |name| from_environment(name).or_else(|| file.get(name).map(str::to_owned)),
        diag::warn,
    )
}

/// The settings of the file `VLOG_CONFIG` names, each line it refuses (and
/// a file it refuses whole) said through `warn`; nothing when it is not set.
fn file_at_start(warn: impl Fn(&str)) -> Settings {
    let Some(path) = from_environment("VLOG_CONFIG") else {
        return Settings::default();
    };
    let path = std::path::absolute(&path).unwrap_or_else(|_| PathBuf::from(&path));
    *PATH.lock().unwrap_or_else(|p| p.into_inner()) = Some((path.clone(), sys::dir::root_id()));
    match read(&path) {
        Ok(settings) => {
            for why in &settings.refused {
                warn(&format!(
                    "ignoring {why} of VLOG_CONFIG '{}'",
                    path.display()
                ));
            }
            settings
        }
        Err(e) => {
            warn(&format!("ignoring VLOG_CONFIG: {e}"));
            Settings::default()
        }
    }
}

fn read(path: &std::path::Path) -> Result<Settings, ConfigError> {
    sys::private::read_config(path)
        .map(|text| config::file::parse(&text))
        .map_err(|e| ConfigError::new(format!("cannot read '{}': {e}", path.display())))
}

impl State {
    /// `vlog-ctl SOCKET reload`: reads the file again and applies its
    /// level, filters, outputs, context and ratelimit, each one the
    /// environment does not set; a setting the file no longer names keeps
    /// its value. All or nothing: a file with a line or a value it cannot
    /// take changes nothing, and the error says every reason. Returns the
    /// settings applied, by name.
    pub fn reload_config(&mut self) -> Result<Vec<(&'static str, String)>, ConfigError> {
        let path = PATH.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let Some((path, root)) = path else {
            return Err(ConfigError::new(
                "this program was started without VLOG_CONFIG: there is no file to reload",
            ));
        };
        if sys::dir::root_id() != root {
            return Err(ConfigError::new(format!(
                "the process's root moved since it started (chroot): '{}' would name a file \
                 in the new root, which vlog does not read; nothing changed",
                path.display()
            )));
        }
        let settings = read(&path)?;
        let take = |name: &str| {
            (RELOADED.contains(&name) && from_environment(name).is_none())
                .then(|| settings.get(name).map(str::to_owned))
                .flatten()
        };
        // Every value checked before anything changes.
        let mut refused = settings.refused.clone();
        let parsed = config::from_env(take, |w| refused.push(w.to_owned()));
        if !refused.is_empty() {
            return Err(ConfigError::new(format!(
                "'{}' not reloaded, nothing changed: {}",
                path.display(),
                refused.join("; ")
            )));
        }
        let mut applied = Vec::new();
        // The outputs first: opening a file may still fail, and then
        // nothing else has changed either.
        if let Some(v) = take("VLOG_OUTPUTS") {
            self.set_outputs(&v)?;
            applied.push(("VLOG_OUTPUTS", v));
        }
        if let Some(level) = parsed.level {
            self.set_level(level);
            applied.push(("VLOG_LEVEL", (level as u8).to_string()));
        }
        for (name, set) in [
            (
                "VLOG_FILTERS",
                State::set_filters as fn(&mut State, &str) -> _,
            ),
            ("VLOG_CONTEXT", State::set_context),
            ("VLOG_RATELIMIT", State::set_ratelimit),
        ] {
            if let Some(v) = take(name) {
                set(self, &v)?;
                applied.push((name, v));
            }
        }
        Ok(applied)
    }
}
