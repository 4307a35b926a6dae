//! The one error type of configuration: a refused string or value, with a
//! message that names what was wrong and what to write instead. Every parser
//! and every configuration call returns it; `vlog_last_error()` shows it.

use std::borrow::Cow;
use std::fmt;

/// A configuration string that was refused; `message` names the bad token.
/// A fixed message costs no allocation (a refusal from a signal handler must
/// not allocate).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub message: Cow<'static, str>,
}

impl ConfigError {
    pub fn new(message: impl Into<Cow<'static, str>>) -> ConfigError {
        ConfigError {
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}
