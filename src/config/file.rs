//! `VLOG_CONFIG`: a file of the same settings as the variables, as
//! libvirt's daemons read `log_filters` and `log_outputs` from theirs.
//! One `NAME=VALUE` a line, NAME one of [`VARIABLES`] (VLOG_CONFIG itself
//! aside); VALUE as it would be in the environment, or in double quotes
//! (`\"` and `\\` inside), so that a systemd `EnvironmentFile=` and a shell
//! read the same file alike; blank lines and lines starting with `#` are
//! skipped. A variable set in the environment wins over the file. What
//! cannot be read is said, a line each, and the rest applies: a logger
//! never stops its daemon from starting. Reading the file, under the file
//! rules, is `sys::private::read_config`'s.

use super::{distance, VARIABLES};

/// The settings a file holds, in its order, and what was wrong with it
/// (each said with its line number).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Settings {
    pub values: Vec<(&'static str, String)>,
    pub refused: Vec<String>,
}

impl Settings {
    /// The file's value for `name`: its last line that sets it.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Reads the text of a configuration file.
pub fn parse(text: &[u8]) -> Settings {
    let mut settings = Settings::default();
    for (n, line) in text.split(|&b| b == b'\n').enumerate() {
        let number = n + 1;
        let Ok(line) = std::str::from_utf8(line) else {
            settings.refused.push(format!("line {number}: not UTF-8"));
            continue;
        };
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match setting(line) {
            Ok(pair) => settings.values.push(pair),
            Err(why) => settings.refused.push(format!("line {number}: {why}")),
        }
    }
    settings
}

fn setting(line: &str) -> Result<(&'static str, String), String> {
    let Some((name, value)) = line.split_once('=') else {
        return Err("not NAME=VALUE".to_owned());
    };
    let name = name.trim();
    let known = VARIABLES
        .iter()
        .copied()
        .find(|&v| v == name && v != "VLOG_CONFIG");
    let Some(name) = known else {
        let nearest = VARIABLES
            .iter()
            .filter(|&&v| v != "VLOG_CONFIG")
            .min_by_key(|v| distance(v.as_bytes(), name.as_bytes()))
            .filter(|v| distance(v.as_bytes(), name.as_bytes()) <= 3);
        return Err(match nearest {
            Some(v) => format!("vlog reads no setting '{name}' (did you mean {v}?)"),
            None if name == "VLOG_CONFIG" => "VLOG_CONFIG cannot name another file".to_owned(),
            None => format!("vlog reads no setting '{name}'"),
        });
    };
    Ok((name, unquoted(value.trim())?))
}

/// A value as written: bare, or in double quotes with `\"` and `\\`.
fn unquoted(value: &str) -> Result<String, String> {
    let Some(inner) = value.strip_prefix('"') else {
        if value.contains('"') {
            return Err("a quote inside a value that does not start with one".to_owned());
        }
        return Ok(value.to_owned());
    };
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e @ ('"' | '\\')) => out.push(e),
                _ => return Err("in quotes, a backslash escapes only \" and \\".to_owned()),
            },
            '"' if chars.as_str().trim().is_empty() => return Ok(out),
            '"' => return Err("text after the closing quote".to_owned()),
            c => out.push(c),
        }
    }
    Err("no closing quote".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_as_the_environment_has_them() {
        let text = b"# myd's logging\n\
                     VLOG_FILTERS=\"1:qemu 3:util\"\n\
                     \n\
                     VLOG_OUTPUTS=3:stderr\n  VLOG_LEVEL = 2  \n\
                     VLOG_CONTEXT=\"say \\\"x\\\" \\\\\"\n";
        let s = parse(text);
        assert_eq!(s.refused, Vec::<String>::new());
        assert_eq!(s.get("VLOG_FILTERS"), Some("1:qemu 3:util"));
        assert_eq!(s.get("VLOG_OUTPUTS"), Some("3:stderr"));
        assert_eq!(s.get("VLOG_LEVEL"), Some("2"));
        assert_eq!(s.get("VLOG_CONTEXT"), Some("say \"x\" \\"));
        assert_eq!(s.get("VLOG_DUMP"), None);
    }

    #[test]
    fn what_cannot_be_read_is_said_with_its_line() {
        let s = parse(
            b"VLOG_FILTER=1:x\nnonsense\nVLOG_CONFIG=/etc/other\nVLOG_LEVEL=\"2\nVLOG_LEVEL=a\"b\n\
              VLOG_LEVEL=\"2\" 3\n\xff=1\nVLOG_LEVEL=3\n",
        );
        assert_eq!(
            s.refused,
            [
                "line 1: vlog reads no setting 'VLOG_FILTER' (did you mean VLOG_FILTERS?)",
                "line 2: not NAME=VALUE",
                "line 3: VLOG_CONFIG cannot name another file",
                "line 4: no closing quote",
                "line 5: a quote inside a value that does not start with one",
                "line 6: text after the closing quote",
                "line 7: not UTF-8",
            ]
        );
        assert_eq!(s.get("VLOG_LEVEL"), Some("3"), "the rest applies");
    }
}
