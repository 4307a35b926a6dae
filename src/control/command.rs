//! The control socket's requests: one line, `[--json] COMMAND [ARGUMENT]`,
//! and what each does. A reply starts with a status line, `ok` or
//! `error: WHY` (with `--json`, `{"ok":true,...}` or
//! `{"ok":false,"error":"WHY"}`), then its body. The configuration
//! commands take the environment's syntax, parsers and error texts, and
//! change all or nothing; each change is said once as an info record of
//! source `vlog` naming the peer, the values as its fields. Who may ask
//! for what is `authority`'s.

use super::authority;
use super::catalog;
use super::client::Stream;
use super::server::{Reply, Request};
use crate::config;
use crate::config::select::Selection;
use crate::error::ConfigError;
use crate::fields::{Field, Value};
use crate::logger::config_call::configure_writing;
use crate::logger::{enter, State};
use crate::ring::Held;
use crate::stats;
use crate::sys::listen::PeerCred;
use crate::text::frames::FramesAs;
use crate::text::json::put_json_string;

/// How much of the ring `stats` reads to find its oldest record: a few
/// records' worth, whatever the ring's size.
const OLDEST_BUDGET: u64 = 4096;

/// The commands, as `help` and `vlog-ctl --help` list them.
pub const COMMANDS: &str =
    "  filters STRING    replace the filters (VLOG_FILTERS syntax; \"\" for none)
  outputs STRING    replace the outputs (VLOG_OUTPUTS syntax; \"\" for the default)
  level PRIO        set the default level (1-4, or a name: vlog's or syslog's)
  context STRING    set what an error brings with it (VLOG_CONTEXT syntax)
  ratelimit STRING  limit every call site (VLOG_RATELIMIT syntax; off for none)
  sites             every call site: id, on, priority, level, count, limit,
                    source, file:line, function, format
  sources           every source, its level and how many sites it has
  show              the configuration in force, as environment variables
  stats             the ring's and the outputs' counters
  dump [OPTIONS]    the ring, oldest record first
  follow [OPTIONS]  new records as they are recorded, until the client leaves
  reopen            reopen the file outputs (after log rotation)
  reload            read VLOG_CONFIG's file again and apply its level, filters,
                    outputs, context and ratelimit (those the environment
                    does not set)
  help              the commands
OPTIONS of dump and follow, as vlog-dump's: --priority PRIO, --source MATCH,
  --since TIME, --until TIME, --grep TEXT (a value with spaces in \"...\"),
  --json; and --encoded-frames: a backtrace as its encoding in hex (which
  holds each object's build-id), for a reader that names its frames
";

/// What a reply is made of before it is written out.
enum Answer {
    /// A body of `name value` pairs: lines of text, or members of a JSON
    /// object.
    Pairs(Vec<(&'static str, String)>),
    Text(String),
    /// A listing: lines of text, or members of a JSON object, made
    /// already.
    Listing(Vec<u8>),
    /// (Boxed: a stream keeps its clock's text, and the other answers are
    /// a pointer or three.)
    Stream(Box<Stream>),
}

/// Runs one request (taking the logger's lock for as long as a
/// configuration call takes) and makes its reply.
pub fn run(request: Request) -> Reply {
    let (mut json, command, rest) = split(&request.line);
    // `dump --json` and `follow --json` (vlog-dump's way) too.
    if matches!(command, "dump" | "follow")
        && words(rest).is_ok_and(|w| w.iter().any(|w| w == "--json"))
    {
        json = true;
    }
    let answer = authority::allows(request.role, &request.peer, request.group, command)
        .and_then(|()| answer(command, rest, &request, json));
    Reply {
        id: request.id,
        head: head(json, &answer),
        stream: answer.ok().and_then(|a| match a {
            Answer::Stream(s) => Some(*s),
            _ => None,
        }),
    }
}

/// `--json`, the command word, and what follows it.
fn split(line: &str) -> (bool, &str, &str) {
    let line = line.trim_start_matches(' ');
    let (json, line) = match line.strip_prefix("--json") {
        Some(rest) if rest.is_empty() || rest.starts_with(' ') => (true, rest.trim_start()),
        _ => (false, line),
    };
    let (command, rest) = line.split_once(' ').unwrap_or((line, ""));
    (json, command, rest)
}

fn answer(command: &str, rest: &str, r: &Request, json: bool) -> Result<Answer, String> {
    let none = |what: &str| -> Result<(), String> {
        if rest.trim().is_empty() {
            Ok(())
        } else {
            Err(format!("{what} takes no argument"))
        }
    };
    match command {
        "filters" => change(r, "filters", rest, |s, v| {
            let old = s.filters_env();
            s.set_filters(v)?;
            Ok((old, s.filters_env()))
        }),
        "outputs" => change(r, "outputs", rest, |s, v| {
            let old = s.outputs_env();
            s.set_outputs(v)?;
            Ok((old, s.outputs_env()))
        }),
        "level" => change(r, "level", rest, |s, v| {
            let level = config::parse_level(v)?;
            let old = (s.level() as u8).to_string();
            s.set_level(level);
            Ok((old, (level as u8).to_string()))
        }),
        "context" => change(r, "context", rest, |s, v| {
            let old = s.context_env();
            s.set_context(v)?;
            Ok((old, s.context_env()))
        }),
        "ratelimit" => change(r, "ratelimit", rest, |s, v| {
            let old = s.ratelimit_env();
            s.set_ratelimit(v)?;
            Ok((old, s.ratelimit_env()))
        }),
        "sites" => none("sites").and_then(|()| {
            listing(
                json,
                || catalog::sites_text().map(String::into_bytes),
                catalog::sites_json,
            )
        }),
        "sources" => none("sources").and_then(|()| {
            listing(
                json,
                || catalog::sources_text().map(String::into_bytes),
                catalog::sources_json,
            )
        }),
        "show" => none("show").and_then(|()| {
            let mut pairs =
                enter(|s| s.as_env()).ok_or_else(|| "vlog is busy on this thread".to_owned())?;
            pairs.push(("VLOG_CONTROL", r.socket.clone()));
            Ok(Answer::Pairs(pairs))
        }),
        "stats" => none("stats").and_then(|()| {
            // How far back the ring reaches: its oldest record, read as a
            // dump reads it (without the logger's lock, one record's worth
            // of it: a peer's stats never walks the whole ring).
            let mut oldest = None;
            let mut place = crate::ring::published::Place::default();
            let _ = crate::ring::published::walk_from(&mut place, OLDEST_BUDGET, |entry| {
                if let crate::ring::Entry::Record(rec) = entry {
                    oldest.get_or_insert(rec.time_ns);
                }
            });
            let now = crate::sys::realtime_ns();
            enter(|s| s.stats())
                .map(|ring| {
                    let held = Held::live(ring.recorded.saturating_sub(ring.lost), oldest, now);
                    Answer::Pairs(vec![
                        ("buffer_size", ring.size.to_string()),
                        ("records", ring.recorded.to_string()),
                        ("lost", ring.lost.to_string()),
                        ("held", held.records.to_string()),
                        ("covers_s", held.covers()),
                        (
                            "dropped_nested",
                            stats::get(&stats::NESTED_DROPPED).to_string(),
                        ),
                        (
                            "output_lines_lost",
                            stats::get(&stats::LINES_LOST).to_string(),
                        ),
                        ("bad_fields", stats::get(&stats::BAD_FIELDS).to_string()),
                        ("caller_wrote", stats::get(&stats::CALLER_WROTE).to_string()),
                        ("contexts", stats::get(&stats::CONTEXTS).to_string()),
                        (
                            "context_records",
                            stats::get(&stats::CONTEXT_RECORDS).to_string(),
                        ),
                        (
                            "contexts_suppressed",
                            stats::get(&stats::CONTEXTS_SUPPRESSED).to_string(),
                        ),
                        ("suppressed", stats::get(&stats::SUPPRESSED).to_string()),
                        (
                            "dropped_in_flight",
                            stats::get(&stats::IN_FLIGHT_DROPPED).to_string(),
                        ),
                        (
                            "backtraces_lost",
                            stats::get(&stats::BACKTRACES_LOST).to_string(),
                        ),
                    ])
                })
                .ok_or_else(|| "vlog is busy on this thread".to_owned())
        }),
        "dump" | "follow" => {
            let (selection, json_too, frames) = options(rest)?;
            let end = enter(|s| s.stats().recorded).unwrap_or(0);
            Ok(Answer::Stream(Box::new(Stream::new(
                selection,
                json || json_too,
                frames,
                command == "follow",
                end,
            ))))
        }
        "reload" => none("reload").and_then(|()| {
            let peer = &r.peer;
            configure_writing(|s| {
                let applied = s.reload_config()?;
                // What changed is the file's owner's word: fields, escaped
                // as values by every output.
                let names: Vec<&str> = applied.iter().map(|(n, _)| *n).collect();
                let message = format!(
                    "configuration reloaded from VLOG_CONFIG through the control socket by \
                     uid {}, pid {}",
                    peer.uid, peer.pid
                );
                let set = names.join(" ");
                announce(s, &message, ("SET", &set), None, peer);
                Ok(applied)
            })
            .map(Answer::Pairs)
            .map_err(|e| e.to_string())
        }),
        "reopen" => none("reopen").and_then(|()| {
            configure_writing(|s| s.reopen())
                .map(|()| Answer::Pairs(Vec::new()))
                .map_err(|e| e.to_string())
        }),
        "help" | "" => Ok(Answer::Text(format!(
            "one command per connection; --json first for JSON replies:\n{COMMANDS}"
        ))),
        _ => Err(format!(
            "unknown command '{command}': use filters, outputs, level, context, ratelimit, \
             sites, sources, show, stats, dump, follow, reopen, reload or help"
        )),
    }
}

/// A listing, as text or JSON.
fn listing(
    json: bool,
    text: impl FnOnce() -> Option<Vec<u8>>,
    members: impl FnOnce() -> Option<Vec<u8>>,
) -> Result<Answer, String> {
    let made = if json { members() } else { text() };
    made.map(Answer::Listing)
        .ok_or_else(|| "vlog is busy on this thread".to_owned())
}

/// Records a change made through the socket: one info record of source
/// `vlog` whose values are fields (every output escapes them as values,
/// never spliced into the message), with the peer's uid and pid.
fn announce<'a>(
    s: &mut State,
    message: &str,
    first: (&'static str, &'a str),
    second: Option<(&'static str, &'a str)>,
    peer: &PeerCred,
) {
    fn value<'a>((name, v): (&'static str, &'a str)) -> Field<'a> {
        Field {
            name: name.as_bytes(),
            value: Value::Str(v.as_bytes()),
        }
    }
    let mut fields = vec![value(first)];
    fields.extend(second.map(value));
    fields.push(Field {
        name: b"PEER_UID",
        value: Value::Int(peer.uid.into()),
    });
    fields.push(Field {
        name: b"PEER_PID",
        value: Value::Int(peer.pid.into()),
    });
    s.announce(b"control", message, &fields);
}

/// A configuration change: `set` parses the argument and applies it, all
/// or nothing, returning the value before and after; the change is said as
/// a record naming the peer.
fn change(
    r: &Request,
    what: &'static str,
    rest: &str,
    set: impl FnOnce(&mut State, &str) -> Result<(String, String), ConfigError>,
) -> Result<Answer, String> {
    let value = unquoted(rest.trim_matches(' '));
    if value.is_empty() && !rest.contains("\"\"") {
        return Err(format!(
            "{what} needs its new value, in the environment's syntax (\"\" for none)"
        ));
    }
    let peer = &r.peer;
    configure_writing(|s| {
        let (old, new) = set(s, value)?;
        // The values are the peer's: fields, which every output escapes as
        // values; the message holds only what the kernel said of the peer.
        let message = format!(
            "{what} changed through the control socket by uid {}, pid {}",
            peer.uid, peer.pid
        );
        announce(s, &message, ("OLD", &old), Some(("NEW", &new)), peer);
        Ok(Answer::Pairs(vec![(env_name(what), new)]))
    })
    .map_err(|e| e.to_string())
}

fn env_name(what: &str) -> &'static str {
    match what {
        "filters" => "VLOG_FILTERS",
        "outputs" => "VLOG_OUTPUTS",
        "context" => "VLOG_CONTEXT",
        "ratelimit" => "VLOG_RATELIMIT",
        _ => "VLOG_LEVEL",
    }
}

/// A value written in double quotes loses them (as a shell would take
/// them off): `filters "1:qemu 3:util"` typed at socat.
fn unquoted(v: &str) -> &str {
    v.strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .filter(|inner| !inner.contains('"'))
        .unwrap_or(v)
}

/// A dump's or a follow's options: vlog-dump's, `--json` among them,
/// and `--encoded-frames`.
fn options(rest: &str) -> Result<(Selection, bool, FramesAs), String> {
    let words = words(rest)?;
    let mut selection = Selection::default();
    let mut json = false;
    let mut frames = FramesAs::Text;
    let mut it = words.iter();
    while let Some(w) = it.next() {
        let Some(name) = w.strip_prefix("--") else {
            return Err(format!("'{w}' is not an option (see help)"));
        };
        match name {
            "json" => json = true,
            "encoded-frames" => frames = FramesAs::Encoded,
            _ => {
                let value = it.next().ok_or_else(|| format!("--{name} needs a value"))?;
                selection.set(name, value)?;
            }
        }
    }
    Ok((selection, json, frames))
}

/// Words separated by spaces; a word in double quotes may hold spaces, and
/// `\"` and `\\` inside it.
fn words(s: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.peek() == Some(&' ') {
            chars.next();
        }
        let Some(&c) = chars.peek() else {
            return Ok(out);
        };
        let mut word = String::new();
        if c == '"' {
            chars.next();
            loop {
                match chars.next() {
                    None => return Err("a quote is not closed".to_owned()),
                    Some('"') => break,
                    Some('\\') => match chars.next() {
                        Some(e @ ('"' | '\\')) => word.push(e),
                        _ => return Err("use \\\" or \\\\ inside quotes".to_owned()),
                    },
                    Some(c) => word.push(c),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ' ' {
                    break;
                }
                word.push(c);
                chars.next();
            }
        }
        out.push(word);
    }
}

/// The status line and the body of a reply that is not a stream.
fn head(json: bool, answer: &Result<Answer, String>) -> Vec<u8> {
    let mut out = Vec::new();
    match (answer, json) {
        (Err(why), false) => {
            out.extend_from_slice(b"error: ");
            out.extend_from_slice(why.replace('\n', " ").as_bytes());
            out.push(b'\n');
        }
        (Err(why), true) => {
            out.extend_from_slice(b"{\"ok\":false,\"error\":");
            put_json_string(why.as_bytes(), &mut out);
            out.extend_from_slice(b"}\n");
        }
        (Ok(answer), false) => {
            out.extend_from_slice(b"ok\n");
            match answer {
                Answer::Pairs(pairs) => {
                    for (name, value) in pairs {
                        let line = if name.starts_with("VLOG_") {
                            format!("{name}={}\n", shell_quoted(value))
                        } else {
                            format!("{name} {value}\n")
                        };
                        out.extend_from_slice(line.as_bytes());
                    }
                }
                Answer::Text(text) => out.extend_from_slice(text.as_bytes()),
                Answer::Listing(body) => out.extend_from_slice(body),
                Answer::Stream(_) => {}
            }
        }
        (Ok(answer), true) => {
            out.extend_from_slice(b"{\"ok\":true");
            match answer {
                Answer::Pairs(pairs) => {
                    for (name, value) in pairs {
                        out.push(b',');
                        put_json_string(name.as_bytes(), &mut out);
                        out.push(b':');
                        // A count, or seconds to the millisecond: a number.
                        let digits =
                            |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
                        let number = match value.split_once('.') {
                            Some((whole, part)) => digits(whole) && digits(part),
                            None => digits(value) && value.parse::<u64>().is_ok(),
                        };
                        if number && !name.starts_with("VLOG_") {
                            out.extend_from_slice(value.as_bytes());
                        } else {
                            put_json_string(value.as_bytes(), &mut out);
                        }
                    }
                }
                Answer::Text(text) => {
                    out.extend_from_slice(b",\"help\":");
                    put_json_string(text.as_bytes(), &mut out);
                }
                Answer::Listing(members) => {
                    out.push(b',');
                    out.extend_from_slice(members);
                }
                Answer::Stream(_) => {}
            }
            out.extend_from_slice(b"}\n");
        }
    }
    out
}

/// `value` as a shell reads it back: bare when it is made of characters a
/// shell leaves alone, in single quotes otherwise.
fn shell_quoted(value: &str) -> String {
    let plain = !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_./:@%+,=-".contains(&b));
    if plain {
        value.to_owned()
    } else {
        format!("'{}'", value.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines_split() {
        assert_eq!(
            split("filters 1:qemu 3:util"),
            (false, "filters", "1:qemu 3:util")
        );
        assert_eq!(split("--json show"), (true, "show", ""));
        assert_eq!(split("--jsonx"), (false, "--jsonx", ""));
        assert_eq!(unquoted("\"1:qemu 3:x\""), "1:qemu 3:x");
        assert_eq!(unquoted("\"a\"b\""), "\"a\"b\"");
    }

    #[test]
    fn words_and_options() {
        assert_eq!(
            words(r#"--grep "disk \"full\"" --source  qemu"#).unwrap(),
            ["--grep", "disk \"full\"", "--source", "qemu"]
        );
        assert!(words("\"open").is_err());
        let (sel, json, frames) =
            options("--priority 2 --json --since \"2026-12-01 10:00:00\"").unwrap();
        assert!(json && sel.priority.is_some() && sel.since.is_some());
        assert_eq!(frames, FramesAs::Text);
        let (_, json, frames) = options("--encoded-frames").unwrap();
        assert!(!json && frames == FramesAs::Encoded);
        assert!(options("--priority").unwrap_err().contains("needs a value"));
        assert!(options("qemu").unwrap_err().contains("not an option"));
        assert!(options("--until yesterday")
            .unwrap_err()
            .contains("'yesterday'"));
    }

    #[test]
    fn values_quoted_for_a_shell() {
        assert_eq!(shell_quoted("3"), "3");
        assert_eq!(shell_quoted(""), "''");
        assert_eq!(shell_quoted("1:qemu 3:util"), "'1:qemu 3:util'");
        assert_eq!(shell_quoted("it's"), r"'it'\''s'");
    }
}
