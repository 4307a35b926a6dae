//! vlog-dump: prints the records of vlog rings found in ring files
//! (`VLOG_BUFFER_FILE`) and core files.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use vlog::internal::{
    contains_match, find_rings, parse_time, put_timestamp, read, render_json, render_line, Entry,
    Image, ImageError, Priority, Record,
};

const USAGE: &str = "\
usage: vlog-dump [OPTIONS] FILE...

Prints the records of the vlog rings in each FILE: a ring file (VLOG_BUFFER_FILE)
or a core file (rings are found by their magic; a core may hold several).

options:
  --priority PRIO   only records of at least PRIO (1-4, debug, info, warning, error)
  --source MATCH    only sources MATCH selects (as in VLOG_FILTERS: a substring
                    with * and ? wildcards)
  --since TIME      only records at or after TIME
  --until TIME      only records at or before TIME
                    (TIME: 'YYYY-MM-DD HH:MM:SS[.fff]' in UTC, or @SECONDS)
  --grep TEXT       only records whose message contains TEXT
  --json            one JSON object per record instead of text lines
  --stats           counts instead of records: records, lost, torn, time span
  --follow          keep printing new records of a live ring file (one FILE)
  --help            this text
";

#[derive(Default)]
struct Options {
    priority: Option<Priority>,
    source: Option<String>,
    since: Option<u64>,
    until: Option<u64>,
    grep: Option<String>,
    json: bool,
    stats: bool,
    follow: bool,
    files: Vec<PathBuf>,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut o = Options::default();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--priority" => {
                let v = value("--priority")?;
                o.priority =
                    Some(Priority::parse_field(&v).ok_or(format!("invalid priority '{v}'"))?);
            }
            "--source" => o.source = Some(value("--source")?),
            "--since" | "--until" => {
                let v = value(&arg)?;
                let t = parse_time(&v).ok_or(format!(
                    "invalid time '{v}': use 'YYYY-MM-DD HH:MM:SS[.fff]' (UTC) or @SECONDS"
                ))?;
                if arg == "--since" {
                    o.since = Some(t);
                } else {
                    o.until = Some(t);
                }
            }
            "--grep" => o.grep = Some(value("--grep")?),
            "--json" => o.json = true,
            "--stats" => o.stats = true,
            "--follow" => o.follow = true,
            "--help" | "-h" => return Err(String::new()),
            s if s.starts_with('-') && s != "-" => return Err(format!("unknown option '{s}'")),
            _ => o.files.push(arg.into()),
        }
    }
    if o.files.is_empty() {
        return Err("no file given".into());
    }
    if o.follow && (o.files.len() != 1 || o.stats) {
        return Err("--follow takes exactly one ring file and no --stats".into());
    }
    Ok(o)
}

impl Options {
    fn selects(&self, rec: &Record) -> bool {
        self.priority.is_none_or(|p| rec.priority >= p)
            && self
                .source
                .as_ref()
                .is_none_or(|m| contains_match(m.as_bytes(), rec.source))
            && self.since.is_none_or(|t| rec.time_ns >= t)
            && self.until.is_none_or(|t| rec.time_ns <= t)
            && self.grep.as_ref().is_none_or(|g| {
                g.is_empty() || rec.message.windows(g.len()).any(|w| w == g.as_bytes())
            })
    }

    fn print(&self, rec: &Record, out: &mut Vec<u8>) {
        if self.json {
            render_json(rec, None, out);
        } else {
            render_line(rec, out);
        }
    }
}

#[derive(Default)]
struct Stats {
    records: u64,
    torn: u64,
    missing: u64,
    first: Option<u64>,
    last: Option<u64>,
}

/// Prints (or counts) the selected records of one ring; returns the highest
/// sequence number seen.
fn show(image: &Image, o: &Options, after: Option<u64>, out: &mut Vec<u8>) -> Option<u64> {
    let mut stats = Stats::default();
    let mut last_seq = None;
    read(image, |entry| match entry {
        Entry::Record(rec) => {
            last_seq = Some(rec.seq);
            if after.is_some_and(|a| rec.seq <= a) || !o.selects(&rec) {
                return;
            }
            stats.records += 1;
            stats.first = Some(stats.first.map_or(rec.time_ns, |t: u64| t.min(rec.time_ns)));
            stats.last = Some(stats.last.map_or(rec.time_ns, |t: u64| t.max(rec.time_ns)));
            if !o.stats {
                o.print(&rec, out);
            }
        }
        Entry::Damaged { seq, damage } => {
            stats.torn += 1;
            if !o.stats && !o.json {
                out.extend_from_slice(
                    format!("vlog-dump: skipped a damaged record (sequence {seq}): {damage:?}\n")
                        .as_bytes(),
                );
            }
        }
        Entry::Gap { expected, found } => {
            stats.missing += found.saturating_sub(expected);
            if !o.stats && !o.json {
                out.extend_from_slice(
                    format!(
                        "vlog-dump: records {expected} to {} are missing\n",
                        found.wrapping_sub(1)
                    )
                    .as_bytes(),
                );
            }
        }
        // A ring read from a file does not change while it is read.
        Entry::Overwritten { .. } => {}
    });
    if o.stats {
        let ring = image.stats();
        out.extend_from_slice(
            format!(
                "records: {}\nrecorded: {}\nlost: {}\ntorn: {}\nmissing: {}\nsize: {}\n",
                stats.records, ring.recorded, ring.lost, stats.torn, stats.missing, ring.size
            )
            .as_bytes(),
        );
        if let (Some(first), Some(last)) = (stats.first, stats.last) {
            out.extend_from_slice(b"first: ");
            put_timestamp(first, out);
            out.extend_from_slice(b"\nlast: ");
            put_timestamp(last, out);
            out.extend_from_slice(
                format!("\nspan: {:.3} s\n", (last - first) as f64 / 1e9).as_bytes(),
            );
        }
    }
    last_seq
}

/// The rings in `bytes`: the file itself if it is one, else every ring found by
/// its magic. Errors say why nothing was found.
fn rings(bytes: &[u8]) -> Result<Vec<Image<'_>>, String> {
    match Image::parse(bytes) {
        Ok(image) => return Ok(vec![image]),
        Err(ImageError::NotARing) => {}
        Err(e) => return Err(e.to_string()),
    }
    let mut found = Vec::new();
    let mut first_error = None;
    for at in find_rings(bytes) {
        match Image::parse(&bytes[at..]) {
            Ok(image) => found.push(image),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    if found.is_empty() {
        return Err(match first_error {
            Some(e) => format!("a ring was found but cannot be read: {e}"),
            None => "no vlog ring in this file".into(),
        });
    }
    Ok(found)
}

fn dump_file(path: &PathBuf, o: &Options, stdout: &mut impl Write) -> Result<(), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read: {e}"))?;
    let found = rings(&bytes)?;
    let mut out = Vec::new();
    for (i, image) in found.iter().enumerate() {
        if found.len() > 1 && !o.json {
            out.extend_from_slice(
                format!(
                    "== ring {} of {} ({} bytes) ==\n",
                    i + 1,
                    found.len(),
                    image.stats().size
                )
                .as_bytes(),
            );
        }
        show(image, o, None, &mut out);
    }
    stdout
        .write_all(&out)
        .map_err(|e| format!("cannot write: {e}"))
}

fn follow(path: &PathBuf, o: &Options, stdout: &mut impl Write) -> Result<(), String> {
    let mut after: Option<u64> = None;
    loop {
        let bytes = std::fs::read(path).map_err(|e| format!("cannot read: {e}"))?;
        let image = Image::parse(&bytes).map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        if let Some(seq) = show(&image, o, after, &mut out) {
            after = Some(after.map_or(seq, |a| a.max(seq)));
        }
        stdout
            .write_all(&out)
            .map_err(|e| format!("cannot write: {e}"))?;
        stdout.flush().map_err(|e| format!("cannot write: {e}"))?;
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn main() -> ExitCode {
    let options = match parse_args(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(e) if e.is_empty() => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("vlog-dump: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let mut stdout = io::stdout().lock();
    let mut status = ExitCode::SUCCESS;
    for path in &options.files {
        let result = if options.follow {
            follow(path, &options, &mut stdout)
        } else {
            dump_file(path, &options, &mut stdout)
        };
        if let Err(e) = result {
            eprintln!("vlog-dump: {}: {e}", path.display());
            status = ExitCode::FAILURE;
        }
    }
    status
}
