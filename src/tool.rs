//! What vlog's three programs (vlog-dump, vlog-ctl, vlog-relay) share in
//! how they speak to people: DESIGN.md, "The tools' convention".
//!
//! - An error is one line `PROG: message` on stderr, in the words a person
//!   reads (an OS error's text without Rust's `(os error N)`, what a
//!   terminal would obey escaped), never a parser's own layout.
//! - A bad command line is that line, then the program's short usage and a
//!   pointer to `--help`, and the program's usage status.
//! - `--help` and `--version` print on stdout and exit 0.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::io::Write;
use std::process::ExitCode;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::Parser;

use crate::error::for_people;
use crate::text::line::put_for_terminal;

/// A program's name and the way it is called.
pub struct Tool {
    /// `vlog-dump`: the first word of every line the program says.
    pub name: &'static str,
    /// The synopsis after `Usage: `, as the man page's SYNOPSIS has it; a
    /// second form on a line of its own.
    pub usage: &'static str,
    /// The exit status of a bad command line: 2, or 125 for vlog-relay
    /// (env(1)'s, whose statuses after that are the command's own).
    pub usage_status: u8,
}

impl Tool {
    /// The options of the command line `args` (the program's own without
    /// it), or the exit code after `--help`, `--version` or a bad command
    /// line has been answered.
    pub fn parse_from<P: Parser>(
        &self,
        args: impl IntoIterator<Item = OsString>,
    ) -> Result<P, ExitCode> {
        let args = std::iter::once(OsString::from(self.name)).chain(args);
        P::try_parse_from(args).map_err(|e| match e.kind() {
            ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                let _ = e.print();
                ExitCode::SUCCESS
            }
            _ => self.usage_error(&parser_message(&e)),
        })
    }

    /// [`Tool::parse_from`] of the process's own arguments.
    pub fn parse<P: Parser>(&self) -> Result<P, ExitCode> {
        self.parse_from(std::env::args_os().skip(1))
    }

    /// Says `message` as the program's, one line on stderr.
    pub fn say(&self, message: &str) {
        let mut line = format!("{}: ", self.name).into_bytes();
        let message = for_people(message.to_owned().into());
        put_for_terminal(message.replace('\n', " ").as_bytes(), &mut line);
        line.push(b'\n');
        let _ = std::io::stderr().write_all(&line);
    }

    /// Says `message` and returns `status`.
    pub fn fail(&self, status: u8, message: &str) -> ExitCode {
        self.say(message);
        ExitCode::from(status)
    }

    /// A bad command line: `message`, the short usage, where to read more.
    pub fn usage_error(&self, message: &str) -> ExitCode {
        self.say(message);
        let mut text = String::new();
        for (i, form) in self.usage.lines().enumerate() {
            let lead = if i == 0 { "Usage: " } else { "       " };
            let _ = writeln!(text, "{lead}{}", form.trim());
        }
        let _ = writeln!(text, "Try '{} --help' for more information.", self.name);
        let _ = std::io::stderr().write_all(text.as_bytes());
        ExitCode::from(self.usage_status)
    }
}

/// What was wrong with the command line, in one sentence of the same shape
/// for every program: the parser's words for it, without its layout.
fn parser_message(e: &clap::Error) -> String {
    let context = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        Some(ContextValue::Strings(v)) => Some(v.join(", ")),
        _ => None,
    };
    let bare = |s: String| s.replace(['<', '>'], "");
    match e.kind() {
        ErrorKind::UnknownArgument => match context(ContextKind::InvalidArg) {
            Some(arg) => format!("unknown option '{arg}'"),
            None => first_paragraph(e),
        },
        ErrorKind::MissingRequiredArgument => match context(ContextKind::InvalidArg) {
            Some(args) => format!("missing {}", bare(args).replace("...", "")),
            None => first_paragraph(e),
        },
        ErrorKind::ValueValidation | ErrorKind::InvalidValue => {
            let arg = context(ContextKind::InvalidArg).map(bare);
            let why = std::error::Error::source(e).map(|s| s.to_string());
            let value = context(ContextKind::InvalidValue);
            match (arg, why) {
                (Some(arg), Some(why)) => {
                    let option = arg.split(' ').next().unwrap_or(&arg).to_owned();
                    // A parser of the standard library says why without
                    // the value ("invalid digit found in string"): the
                    // value is named, as vlog's own parsers name it.
                    match value {
                        Some(v) if !why.contains(&format!("'{v}'")) => {
                            format!("{option}: invalid value '{v}': {why}")
                        }
                        _ => format!("{option}: {why}"),
                    }
                }
                _ => first_paragraph(e),
            }
        }
        _ => first_paragraph(e),
    }
}

/// The parser's own sentence: its first paragraph, on one line, without
/// its `error: ` and its argument placeholders' brackets.
fn first_paragraph(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let paragraph = text.split("\n\n").next().unwrap_or("");
    let words: Vec<&str> = paragraph.split_whitespace().collect();
    let line = words.join(" ");
    let line = line.strip_prefix("error: ").unwrap_or(&line);
    line.replace(['<', '>'], "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Parser, Debug)]
    #[command(name = "t")]
    struct Options {
        #[arg(short, long, value_parser = crate::config::select::parse_priority)]
        priority: Option<crate::priority::Priority>,
        #[arg(long, conflicts_with = "priority")]
        all: bool,
        #[arg(short, long)]
        number: Option<u32>,
        #[arg(required = true, value_name = "FILE")]
        files: Vec<String>,
    }

    fn message(args: &[&str]) -> String {
        let args = std::iter::once("t").chain(args.iter().copied());
        parser_message(&Options::try_parse_from(args).unwrap_err())
    }

    #[test]
    fn a_parsers_errors_read_as_one_sentence() {
        assert_eq!(message(&["--bogus", "f"]), "unknown option '--bogus'");
        assert_eq!(message(&[]), "missing FILE");
        let bad = message(&["-p", "9", "f"]);
        assert!(bad.starts_with("--priority: invalid priority '9'"), "{bad}");
        assert_eq!(
            message(&["-n", "abc", "f"]),
            "--number: invalid value 'abc': invalid digit found in string"
        );
        let both = message(&["--all", "-p", "1", "f"]);
        assert!(!both.contains('\n') && !both.starts_with("error"), "{both}");
        assert!(both.contains("--all"), "{both}");
    }
}
