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
            message: for_people(message.into()),
        }
    }
}

/// A message as people read it: an OS error quoted in it keeps its words
/// ("No such file or directory") without Rust's " (os error 2)". Every
/// message vlog gives (`vlog_last_error`, its warnings, vlog-dump's) goes
/// through here.
pub fn for_people(message: Cow<'static, str>) -> Cow<'static, str> {
    const MARK: &str = " (os error ";
    if !message.contains(MARK) {
        return message;
    }
    let mut text = String::with_capacity(message.len());
    let mut rest = &*message;
    while let Some(at) = rest.find(MARK) {
        text.push_str(&rest[..at]);
        let after = &rest[at + MARK.len()..];
        match after.find(')') {
            Some(end) if after[..end].bytes().all(|b| b.is_ascii_digit()) => {
                rest = &after[end + 1..]
            }
            _ => {
                text.push_str(MARK);
                rest = after;
            }
        }
    }
    text.push_str(rest);
    Cow::Owned(text)
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    #[test]
    fn os_error_numbers_are_left_out() {
        let e = std::io::Error::from_raw_os_error(2);
        let said = super::ConfigError::new(format!("cannot open 'x': {e}; and 'y': {e}"));
        assert_eq!(
            said.message,
            "cannot open 'x': No such file or directory; and 'y': No such file or directory"
        );
        assert_eq!(
            super::ConfigError::new("kept (os error x)").message,
            "kept (os error x)"
        );
    }
}
