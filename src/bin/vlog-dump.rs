//! vlog-dump: prints the records of vlog rings found in ring files
//! (`VLOG_BUFFER_FILE`) and core files.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use vlog::internal::{
    contains_match, parse_time, put_timestamp, read, read_ring, read_rings_in_file, render_json,
    render_line, starts_with_magic, Entry, Image, Priority, Record,
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

/// The rings in the file at `path`: the file itself if it starts with one
/// (only the region its header describes is read), else every ring found
/// by its magic (a core file, read in windows). A file of any size is safe
/// to give.
fn load(path: &Path) -> Result<Vec<Vec<u8>>, String> {
    let file = File::open(path).map_err(|e| format!("cannot open: {e}"))?;
    let meta = file.metadata().map_err(|e| format!("cannot read: {e}"))?;
    let read_at = |buf: &mut [u8], at: u64| file.read_exact_at(buf, at);
    let mut head = [0u8; 8];
    if meta.len() >= 8 && file.read_exact_at(&mut head, 0).is_ok() && starts_with_magic(&head) {
        read_ring(meta.len(), read_at).map(|ring| vec![ring])
    } else {
        read_rings_in_file(meta.len(), read_at)
    }
}

fn dump_file(path: &Path, o: &Options, stdout: &mut impl Write) -> Result<(), String> {
    let loaded = load(path)?;
    let found = loaded
        .iter()
        .map(|bytes| Image::parse(bytes).map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, _>>()?;
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

/// Prints the records of a live ring file as they come. A ring replaced by
/// a new one (another file at the path, or a sequence that starts again)
/// is said so and followed from its start.
fn follow(path: &Path, o: &Options, stdout: &mut impl Write) -> Result<(), String> {
    let mut after: Option<u64> = None;
    let mut seen: Option<(u64, u64, u64)> = None;
    let pause = || std::thread::sleep(Duration::from_millis(200));
    loop {
        let identity = match std::fs::metadata(path) {
            Ok(m) => (m.dev(), m.ino()),
            // Between a ring file's removal and its successor: wait.
            Err(e) if e.kind() == io::ErrorKind::NotFound && seen.is_some() => {
                pause();
                continue;
            }
            Err(e) => return Err(format!("cannot read: {e}")),
        };
        let bytes = match load(path) {
            Ok(mut rings) => rings.swap_remove(0),
            Err(_) if seen.is_some() && !path.exists() => {
                pause();
                continue;
            }
            Err(e) => return Err(e),
        };
        let image = Image::parse(&bytes).map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        if let Some((dev, ino, recorded)) = seen {
            // A ring that replaced the file carries the records of the one
            // before (the sequence goes on) unless it is a new one.
            let restarted = image.next_seq < recorded
                || ((dev, ino) != identity && after.is_some_and(|a| !holds(&image, a)));
            if restarted {
                out.extend_from_slice(
                    b"vlog-dump: the ring was replaced by a new one; following it from its start\n",
                );
                after = None;
            }
        }
        seen = Some((identity.0, identity.1, image.next_seq));
        if let Some(seq) = show(&image, o, after, &mut out) {
            after = Some(after.map_or(seq, |a| a.max(seq)));
        }
        stdout
            .write_all(&out)
            .map_err(|e| format!("cannot write: {e}"))?;
        stdout.flush().map_err(|e| format!("cannot write: {e}"))?;
        pause();
    }
}

/// Whether `image` holds the record numbered `seq`.
fn holds(image: &Image, seq: u64) -> bool {
    let mut found = false;
    read(image, |e| {
        found |= matches!(e, Entry::Record(r) if r.seq == seq)
    });
    found
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
