//! vlog-dump: prints the records of vlog rings found in ring files
//! (`VLOG_BUFFER_FILE`) and core files.
//!
//! Records go to stdout; what could not be printed (a damaged record,
//! records missing from the sequence, a file with no ring) goes to stderr,
//! and the exit status says which happened (see `--help`).

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use vlog::internal::{
    for_people, name_frames_for, parse_priority, parse_when, put_json_string, put_timestamp, read,
    read_marked, read_ring, read_rings_in_file, render_json, render_line, starts_with_magic, Clock,
    Cursor, Entry, FramesOwner, Held, Image, Priority, Record, Selection, Tool,
};

const TOOL: Tool = Tool {
    name: "vlog-dump",
    usage: "vlog-dump [OPTIONS] FILE...",
    usage_status: 2,
};

/// Every record read intact.
const OK: u8 = 0;
/// A file could not be read, or holds no ring.
const UNREADABLE: u8 = 1;
/// Records were skipped: damaged, or missing from the sequence.
const SKIPPED: u8 = 3;

const AFTER_HELP: &str = "\
--stats prints, for each ring:
  records   records printed (those the options select)
  recorded  records the program ever wrote into this ring
  lost      records overwritten to make room for newer ones
  torn      records skipped as damaged (a write cut short, or corrupted)
  missing   records absent from the sequence (never committed, or within
            damaged bytes)
  damaged   bytes of damaged records passed over to the next intact one
  size      the ring's data area in bytes
  held      intact records in the ring now, whatever the options select
  covers    the seconds from the oldest record held to the newest: the time
            a ring of this size keeps at this rate (vlog(7), RING SIZE)
  first, last, span   the times of the oldest and newest printed record

Exit status: 0 when every record was read intact; 1 when a file could not
be read or holds no ring; 2 for a usage error; 3 when records were skipped
(damaged or missing; each is said on stderr).";

/// Prints the records of the vlog rings in each FILE: a ring file
/// (VLOG_BUFFER_FILE), the PATH.ring a crash dump leaves, or a core file
/// (rings are found by their magic; a core may hold several).
#[derive(Parser)]
#[command(name = "vlog-dump", version, override_usage = TOOL.usage, after_help = AFTER_HELP)]
struct Options {
    /// Only records of at least PRIO: 1-4, or a name (vlog's or syslog's)
    #[arg(short, long, value_name = "PRIO", value_parser = parse_priority)]
    priority: Option<Priority>,
    /// Only sources MATCH selects, as in VLOG_FILTERS: a substring with *
    /// and ? wildcards
    #[arg(short, long, value_name = "MATCH")]
    source: Option<String>,
    /// Only records at or after TIME: 'YYYY-MM-DD HH:MM:SS[.fff]' in UTC, or
    /// @SECONDS since the epoch
    #[arg(long, value_name = "TIME", value_parser = parse_when)]
    since: Option<u64>,
    /// Only records at or before TIME
    #[arg(long, value_name = "TIME", value_parser = parse_when)]
    until: Option<u64>,
    /// Only records whose message or structured fields contain TEXT
    #[arg(short, long, value_name = "TEXT")]
    grep: Option<String>,
    /// One JSON object per record (with --stats, per ring) instead of text
    #[arg(long)]
    json: bool,
    /// Counts instead of records (explained below)
    #[arg(long)]
    stats: bool,
    /// Only the records an output of the ring's process was to print and
    /// had not printed yet when the ring was last written (the process was
    /// killed, or ended with _exit, before its writer thread wrote them)
    #[arg(long)]
    unprinted: bool,
    /// Keep printing new records of a live ring file (one FILE)
    #[arg(short, long, conflicts_with = "stats")]
    follow: bool,
    /// Ring files, ring images (PATH.ring) or core files
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// What the options above select, made once.
    #[arg(skip)]
    selection: Selection,
}

impl Options {
    /// The records the options select, the rule the control socket's dump
    /// follows too.
    fn selection(&self) -> Selection {
        Selection {
            priority: self.priority,
            source: self.source.clone(),
            since: self.since,
            until: self.until,
            grep: self.grep.clone(),
        }
    }
}

/// What one ring held, for --stats and the exit status.
#[derive(Default)]
struct Counts {
    /// The records the options select.
    selected: Held,
    torn: u64,
    missing: u64,
    /// Bytes of damaged records passed over to the next intact one.
    damaged: u64,
    /// Every intact record, whatever the options select.
    held: Held,
}

/// Where a ring came from, for what is said about it: the file, and which
/// ring of several.
struct Origin<'a> {
    file: &'a Path,
    ring: Option<(usize, usize)>,
    /// Name the file in every record (several files).
    named: bool,
}

impl Origin<'_> {
    fn describe(&self) -> String {
        match self.ring {
            Some((i, n)) => format!("{} (ring {i} of {n})", self.file.display()),
            None => self.file.display().to_string(),
        }
    }
}

/// Prints (or counts) the selected records of one ring after `after`; what
/// was skipped goes to stderr. Returns the counts and the highest sequence
/// number seen.
fn show(
    image: &Image,
    o: &Options,
    origin: &Origin,
    after: Option<u64>,
    out: &mut Vec<u8>,
) -> (Counts, Option<u64>) {
    let mut counts = Counts::default();
    let mut last_seq = None;
    let mut said = Vec::new();
    let mut clock = Clock::new();
    if o.unprinted {
        // What the ring holds is every record, printed or not.
        read(image, |entry| counts.held.see(&entry));
    }
    walk(image, o.unprinted, |entry| {
        if !o.unprinted {
            counts.held.see(&entry);
        }
        match entry {
            Entry::Record(rec) => {
                last_seq = Some(rec.seq);
                if after.is_some_and(|a| rec.seq <= a) || !o.selection.selects(&rec) {
                    return;
                }
                counts.selected.see_at(rec.time_ns);
                if !o.stats {
                    print_record(&rec, o, origin, &mut clock, out);
                }
            }
            Entry::Damaged { seq, damage } => {
                counts.torn += 1;
                said.push(format!("record {seq} skipped: {}", damage.describe()));
            }
            Entry::Gap { expected, found } => {
                counts.missing += found.saturating_sub(expected);
                said.push(format!(
                    "records {expected} to {} are missing (never committed, or overwritten while \
                 the ring was copied)",
                    found.wrapping_sub(1)
                ));
            }
            Entry::Skipped { bytes } => {
                counts.damaged += bytes;
                said.push(format!(
                    "{bytes} bytes of damaged records passed over; reading went on at the next \
                     intact record"
                ));
            }
            // A ring read from a file does not change while it is read.
            Entry::Overwritten { .. } => {}
        }
    });
    for line in said {
        TOOL.say(&format!("{}: {line}", origin.describe()));
    }
    if o.stats {
        print_stats(image, &counts, o, origin, out);
    }
    (counts, last_seq)
}

/// Visits `image`'s records, oldest first: all of them, or only those
/// marked for the outputs after the position they had printed up to (none
/// in a ring older than the mark).
fn walk(image: &Image, unprinted: bool, mut visit: impl FnMut(Entry)) {
    if !unprinted {
        return read(image, visit);
    }
    let Some(printed) = image.printed else {
        return;
    };
    read_marked(image, Cursor::at(printed), u64::MAX, |entry, marked| {
        if marked || !matches!(entry, Entry::Record(_)) {
            visit(entry)
        }
    });
}

fn print_record(rec: &Record, o: &Options, origin: &Origin, clock: &mut Clock, out: &mut Vec<u8>) {
    if o.json {
        let start = out.len();
        render_json(rec, None, clock, out);
        if origin.named {
            // {"file":"...", then the record's own members.
            let mut file = b"{\"file\":".to_vec();
            put_json_string(origin.file.as_os_str().as_encoded_bytes(), &mut file);
            file.push(b',');
            out.splice(start..start + 1, file);
        }
    } else {
        if origin.named {
            out.extend_from_slice(origin.file.as_os_str().as_encoded_bytes());
            out.extend_from_slice(b": ");
        }
        render_line(rec, clock, out);
    }
}

fn print_stats(image: &Image, c: &Counts, o: &Options, origin: &Origin, out: &mut Vec<u8>) {
    let ring = image.stats();
    let counts = [
        ("records", c.selected.records),
        ("recorded", ring.recorded),
        ("lost", ring.lost),
        ("torn", c.torn),
        ("missing", c.missing),
        ("damaged", c.damaged),
        ("size", ring.size),
        ("held", c.held.records),
    ];
    // One list of names and values, in either form: `name: value` lines, or
    // one JSON object.
    let (json, named) = (o.json, origin.named || origin.ring.is_some());
    let sep = |out: &mut Vec<u8>, name: &str| {
        if json {
            out.extend_from_slice(format!(",\"{name}\":").as_bytes());
        } else {
            out.extend_from_slice(format!("{name}: ").as_bytes());
        }
    };
    let end = |out: &mut Vec<u8>| {
        if !json {
            out.push(b'\n');
        }
    };
    if json {
        out.extend_from_slice(b"{\"file\":");
        put_json_string(origin.file.as_os_str().as_encoded_bytes(), out);
        if let Some((i, _)) = origin.ring {
            out.extend_from_slice(format!(",\"ring\":{i}").as_bytes());
        }
    } else if named {
        out.extend_from_slice(format!("file: {}\n", origin.describe()).as_bytes());
    }
    for (name, value) in counts {
        sep(out, name);
        out.extend_from_slice(value.to_string().as_bytes());
        end(out);
    }
    // How much time the ring holds, whatever was selected: its size's worth.
    if json {
        out.extend_from_slice(format!(",\"covers_s\":{}", c.held.covers()).as_bytes());
    } else {
        out.extend_from_slice(format!("covers: {} s\n", c.held.covers()).as_bytes());
    }
    if let Some((first, last)) = c.selected.bounds() {
        let seconds = c.selected.covers();
        let quote = if json { &b"\""[..] } else { b"" };
        for (name, t) in [("first", first), ("last", last)] {
            sep(out, name);
            out.extend_from_slice(quote);
            put_timestamp(t, out);
            out.extend_from_slice(quote);
            end(out);
        }
        if json {
            out.extend_from_slice(format!(",\"span_s\":{seconds}").as_bytes());
        } else {
            out.extend_from_slice(format!("span: {seconds} s\n").as_bytes());
        }
    }
    if json {
        out.extend_from_slice(b"}\n");
    }
}

/// The rings in the file at `path`: the file itself if it starts with one
/// (only the region its header describes is read), else every ring found
/// by its magic (a core file, read in windows). A file of any size is safe
/// to give.
fn load(path: &Path) -> Result<Vec<Vec<u8>>, String> {
    let file = File::open(path).map_err(|e| format!("cannot open it: {}", io_text(&e)))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot read it: {}", io_text(&e)))?;
    if meta.len() == 0 {
        return Err("the file is empty: no ring was ever written to it".into());
    }
    // Its frames name files its owner may read, never more: root's
    // vlog-dump is not lent to a ring another user wrote.
    name_frames_for(FramesOwner {
        uid: meta.uid(),
        gid: meta.gid(),
        groups: None,
    });
    let read_at = |buf: &mut [u8], at: u64| file.read_exact_at(buf, at);
    let mut head = [0u8; 8];
    if meta.len() >= 8 && file.read_exact_at(&mut head, 0).is_ok() && starts_with_magic(&head) {
        read_ring(meta.len(), read_at).map(|ring| vec![ring])
    } else {
        read_rings_in_file(meta.len(), read_at)
    }
}

/// An I/O error as a person reads it, without Rust's "(os error N)".
fn io_text(e: &io::Error) -> String {
    for_people(e.to_string().into()).into_owned()
}

/// Prints every ring of one file; returns the exit status it earns.
fn dump_file(path: &Path, o: &Options, named: bool, stdout: &mut impl Write) -> Result<u8, String> {
    let loaded = load(path)?;
    let found = loaded
        .iter()
        .map(|bytes| Image::parse(bytes).map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, _>>()?;
    let mut status = OK;
    for (i, image) in found.iter().enumerate() {
        let mut out = Vec::new();
        let origin = Origin {
            file: path,
            ring: (found.len() > 1).then_some((i + 1, found.len())),
            named,
        };
        if found.len() > 1 && !o.json && !o.stats {
            out.extend_from_slice(
                format!(
                    "== {} ({} bytes) ==\n",
                    origin.describe(),
                    image.stats().size
                )
                .as_bytes(),
            );
        }
        let (counts, _) = show(image, o, &origin, None, &mut out);
        if counts.torn + counts.missing + counts.damaged > 0 {
            status = SKIPPED;
        }
        stdout
            .write_all(&out)
            .map_err(|e| format!("cannot write: {}", io_text(&e)))?;
    }
    Ok(status)
}

/// Prints the records of a live ring file as they come. A ring replaced by
/// a new one (another file at the path, or a sequence that starts again)
/// is said so and followed from its start.
fn follow(path: &Path, o: &Options, stdout: &mut impl Write) -> Result<u8, String> {
    let mut after: Option<u64> = None;
    let mut seen: Option<(u64, u64, u64)> = None;
    let pause = || std::thread::sleep(Duration::from_millis(200));
    let origin = Origin {
        file: path,
        ring: None,
        named: false,
    };
    loop {
        let identity = match std::fs::metadata(path) {
            Ok(m) => (m.dev(), m.ino()),
            // Between a ring file's removal and its successor: wait.
            Err(e) if e.kind() == io::ErrorKind::NotFound && seen.is_some() => {
                pause();
                continue;
            }
            Err(e) => return Err(format!("cannot read it: {}", io_text(&e))),
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
                TOOL.say(&format!(
                    "{}: the ring was replaced by a new one; following it from its start",
                    path.display()
                ));
                after = None;
            }
        }
        seen = Some((identity.0, identity.1, image.next_seq));
        if let (_, Some(seq)) = show(&image, o, &origin, after, &mut out) {
            after = Some(after.map_or(seq, |a| a.max(seq)));
        }
        stdout
            .write_all(&out)
            .and_then(|()| stdout.flush())
            .map_err(|e| format!("cannot write: {}", io_text(&e)))?;
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
    let mut options: Options = match TOOL.parse() {
        Ok(options) => options,
        Err(code) => return code,
    };
    vlog::internal::name_frames();
    options.selection = options.selection();
    if options.follow && options.files.len() != 1 {
        return TOOL.usage_error("--follow takes one FILE");
    }
    let mut stdout = io::stdout().lock();
    let named = options.files.len() > 1;
    let (mut unreadable, mut skipped) = (false, false);
    for path in &options.files {
        let result = if options.follow {
            follow(path, &options, &mut stdout)
        } else {
            dump_file(path, &options, named, &mut stdout)
        };
        match result {
            Ok(status) => skipped |= status == SKIPPED,
            Err(e) => {
                TOOL.say(&format!("{}: {e}", path.display()));
                unreadable = true;
            }
        }
    }
    // A file not read at all says more than records skipped in another.
    ExitCode::from(match (unreadable, skipped) {
        (true, _) => UNREADABLE,
        (false, true) => SKIPPED,
        _ => OK,
    })
}
