//! An error's context: when an output prints an error, it first prints the
//! records that came before it in the ring and that it did not print
//! itself (debug records kept for a crash dump, say), oldest first, each
//! marked as context. The records are in the ring already, captured and
//! not formatted: a context costs nothing until an error asks for it, and
//! then it is rendered where the error line is, with the outputs' buffers.
//!
//! Which records (`VLOG_CONTEXT`, `config::context`), for each output that
//! prints the error:
//! - By default the erring thread's, made since its last context on this
//!   output; for an error that is a line with no file (a relayed line),
//!   the lines of its own relay (no file, the same source, the same
//!   thread), which a thread's own error leaves out; with `all-threads`,
//!   every record since the output's last context.
//! - Never one at or above the output's priority (the output printed it,
//!   or, in a ring file another process shares, the process that made it
//!   did), nor one made before the outputs were set or the ring replaced,
//!   and never one twice (`output::context`).
//! - At most N of them, the newest, and at most `BYTES_MAX` of what they
//!   print, looked for in at most the last `SCAN_MAX` bytes of the ring;
//!   one context per error site (source, file, function, line) per
//!   interval: the next error of the site in it notes in one line how many
//!   records were left out, the others nothing (one line each, not two).
//!   Records since the key's last context that were overwritten, or lie
//!   beyond `SCAN_MAX`, are counted in a note, too.
//!
//! How: the walk that prints for the outputs stops before an error that
//! has a context due ([`due`], `reader::read_with`), [`print`] reads the
//! record headers from where the key's last context ended, or from the
//! boundary the walk passed (`checkpoints`) at most `SCAN_MAX` before, to
//! the error (`ring::scan`: no record copied whole, validated or
//! rendered), keeps where the last N that qualify are, reads those
//! (validated as every reader does) and prints them, and the walk goes on
//! with the error itself.
//!
//! Never from the crash handler (its pending lines are printed without a
//! context), nor from a signal handler's nested call (dropped before it
//! records anything); a forked child starts with its own memory of
//! contexts (`Output::after_fork`).

mod checkpoints;
mod notes;
use crate::config::context::Context;
use crate::error::ConfigError;
use crate::output::context::Since;
use crate::output::{Outputs, Said};
use crate::priority::Priority;
use crate::record::Record;
use crate::ring::reader::{self, Cursor, Entry, Region};
use crate::ring::record::Head;
use crate::ring::scan;
use crate::stats;
use crate::sys;
use crate::text::num::put_decimal;
use crate::text::Sink;
use checkpoints::{Checkpoints, SCAN_MAX};
use notes::{note, plural};

// The notes say how far a context reads in words.
const _: () = assert!(SCAN_MAX == 4 << 20);

/// The most one error's context prints on one output: the records'
/// messages, fields and names, and a line's head for each (see
/// `printed_size`).
pub const BYTES_MAX: usize = 64 * 1024;

/// A record chosen for a context: where it is.
#[derive(Clone, Copy, Debug)]
pub struct Pick {
    pos: u64,
    seq: u64,
}

/// An error whose outputs print its context, as the walk that found it saw
/// it (the record itself is gone with the walk's buffer).
#[derive(Clone, Copy, Debug)]
pub struct Due {
    seq: u64,
    time_ns: u64,
    tid: u32,
    priority: Priority,
    /// Whose records: the thread's, and for a relayed line its source's
    /// (a hash of its name); 0 for every thread's.
    key: u64,
    relayed: Option<u64>,
    site: u64,
}

impl Due {
    /// The error's sequence number.
    pub fn seq(&self) -> u64 {
        self.seq
    }
}

/// Whether `rec`, marked for the outputs, is an error that brings a
/// context: what [`print`] needs of it, if so. (Asked of every line the
/// outputs print: the test that it is an error is made inline.)
#[inline(always)]
pub fn due(contexts: &Contexts, outputs: &Outputs, rec: &Record) -> Option<Due> {
    let context = &contexts.setting;
    if rec.priority != Priority::Error || context.records == 0 {
        return None;
    }
    due_error(context, outputs, rec)
}

#[inline(never)]
fn due_error(context: &Context, outputs: &Outputs, rec: &Record) -> Option<Due> {
    if outputs.lowest().is_none_or(|lowest| lowest > rec.priority) || context.is_quiet(rec) {
        return None;
    }
    let relayed = rec.file.is_empty().then(|| hash(&[rec.source]));
    let key = match (context.all_threads, relayed) {
        (true, _) => 0,
        (false, None) => hash(&[&rec.tid.to_ne_bytes()]),
        (false, Some(source)) => hash(&[&rec.tid.to_ne_bytes(), &source.to_ne_bytes()]),
    };
    Some(Due {
        seq: rec.seq,
        time_ns: rec.time_ns,
        tid: rec.tid,
        priority: rec.priority,
        key,
        relayed,
        site: hash(&[rec.source, rec.file, rec.func, &rec.line.to_ne_bytes()]),
    })
}

/// What contexts need beside the outputs: the setting, room for the picks
/// (reserved for `setting.records`, so nothing is allocated when one is
/// printed) and the boundaries scans start from.
pub struct Contexts {
    setting: Context,
    picks: Vec<Pick>,
    checkpoints: Checkpoints,
    /// Where the records are read into: 21 KiB kept on the heap, off a
    /// caller's stack (the outputs' walk borrows them too, see `printer`).
    pub(super) buffers: Option<Box<reader::Buffers>>,
}

impl Contexts {
    pub const fn new() -> Contexts {
        Contexts {
            setting: Context::new(),
            picks: Vec::new(),
            checkpoints: Checkpoints::new(),
            buffers: None,
        }
    }

    pub fn setting(&self) -> &Context {
        &self.setting
    }

    /// Sets what an error's context is, with the room its records need
    /// (refused, and the setting in force kept, without the memory). The
    /// outputs start their memories again from what they took so far: a
    /// change of whose records are taken takes none twice.
    pub fn set(&mut self, setting: Context, outputs: &mut Outputs) -> Result<(), ConfigError> {
        let more = setting.records.saturating_sub(self.picks.len());
        self.picks.try_reserve_exact(more).map_err(|e| {
            ConfigError::new(format!("not enough memory for the error context: {e}"))
        })?;
        if setting.records > 0 && self.buffers.is_none() {
            self.buffers = Some(reader::Buffers::on_heap().ok_or_else(|| {
                ConfigError::new("not enough memory for the error context's buffers")
            })?);
        }
        if setting != self.setting {
            outputs.restart_contexts(None);
        }
        self.setting = setting;
        Ok(())
    }

    /// The outputs or the ring were replaced, and `next_seq` is the ring's
    /// next sequence number: no context takes a record made before (an
    /// output set anew printed some of them under other settings, and
    /// records carried into a new ring lose the mark that said which).
    pub fn restart(&mut self, outputs: &mut Outputs, next_seq: u64) {
        outputs.restart_contexts(Some(next_seq));
        self.checkpoints.clear();
    }

    /// A record starts at `pos` (see [`Checkpoints`]).
    #[inline]
    pub fn passed(&mut self, pos: u64) {
        self.checkpoints.passed(pos);
    }
}

impl Default for Contexts {
    fn default() -> Contexts {
        Contexts::new()
    }
}

/// What a scan found for one output.
struct Found {
    /// Records that qualified; the newest `picks` of them are kept.
    count: u64,
    /// Records of all threads made since the key's last context that were
    /// not read, and why.
    unread: u64,
    overwritten: bool,
    /// No record boundary within reach was known: nothing was read.
    beyond: bool,
}

/// Has every output that prints the error `due`, at position `at` of
/// `region`'s ring, print its context first (into its batch, before the
/// error's line); what the outputs have to report goes to `report`. (Not
/// inlined: its frame is not on the stack while the walk's buffers are.)
#[inline(never)]
pub fn print(
    contexts: &mut Contexts,
    outputs: &mut Outputs,
    region: &(impl Region + ?Sized),
    at: u64,
    due: &Due,
    report: &mut impl FnMut(Said),
) {
    let Contexts {
        setting: context,
        picks,
        checkpoints,
        buffers,
    } = contexts;
    // (Without the room, which `Printer::set_context` reserves: none.)
    let wanted = context.records.min(picks.capacity());
    let Some(buffers) = buffers.as_deref_mut().filter(|_| wanted > 0) else {
        return;
    };
    let now_ms = sys::monotonic_ns() / 1_000_000;
    let window = checkpoints.window(at);
    for i in 0..outputs.count() {
        let Some((priority, memory)) = outputs.context_of(i) else {
            continue;
        };
        if due.priority < priority {
            continue;
        }
        let since = memory.since(due.key);
        let recent = memory.site_recent(due.site, now_ms, context.every_s * 1000);
        memory.ended(due.key, due.seq, at);
        if recent.is_none() {
            memory.site_printed(due.site, now_ms);
        }
        let keep = if recent.is_some() { 0 } else { wanted };
        let found = gather(
            context,
            picks,
            keep,
            region,
            (since, window, at),
            due,
            priority,
        );
        if let Some(ago_ms) = recent {
            // The same error again: its story was told. What it left out
            // is counted, not read.
            stats::add(&stats::CONTEXTS_SUPPRESSED, 1);
            if found.count > 0 && memory.site_note_due(due.site) {
                note(outputs, i, (due.time_ns, due.tid), report, |text| {
                    put_decimal(found.count, 1, text);
                    text.put(plural(found.count, b" record was", b" records were"));
                    text.put(b" left out of this error's context: its site had one ");
                    put_decimal(ago_ms / 1000, 1, text);
                    text.put(b" s ago (one every ");
                    put_decimal(context.every_s, 1, text);
                    text.put(b" s; its other errors until then come without this note)");
                });
            }
            continue;
        }
        // The newest first, as many as the byte bound takes of what they
        // print (a deferred record's text may be far longer than its
        // arguments in the ring): each is read to be measured.
        let mut bytes = 0;
        let mut keep = 0;
        for pick in picks.iter().rev() {
            let mut size = 0;
            read_pick(region, pick, buffers, |rec| size = printed_size(&rec));
            bytes += size;
            if bytes > BYTES_MAX {
                break;
            }
            keep += 1;
        }
        let skipped = picks.len() - keep;
        let omitted = found.count - keep as u64;
        if found.beyond {
            note(outputs, i, (due.time_ns, due.tid), report, |text| {
                text.put(
                    b"this error's context was not read: no record boundary is known within \
                      the last 4 MiB of the ring, which is as far as a context reads",
                )
            });
        }
        if omitted > 0 || found.unread > 0 {
            note(outputs, i, (due.time_ns, due.tid), report, |text| {
                if omitted > 0 {
                    text.put(b"the last ");
                    put_decimal(keep as u64, 1, text);
                    text.put(b" of ");
                    put_decimal(found.count, 1, text);
                    text.put(b" records before this error");
                }
                if found.unread > 0 {
                    if omitted > 0 {
                        text.put(b"; ");
                    }
                    put_decimal(found.unread, 1, text);
                    text.put(plural(found.unread, b" record", b" records"));
                    text.put(if context.all_threads {
                        b" made since the last context"
                    } else {
                        b" (of all threads) made since this thread's last context"
                    });
                    text.put(if found.overwritten {
                        b" were overwritten in the ring first"
                    } else {
                        b" were not read: a context reads the last 4 MiB of the ring"
                    });
                }
            });
        }
        let mut shown = 0u64;
        for pick in &picks[skipped..] {
            read_pick(region, pick, buffers, |rec| {
                outputs.add_to(i, &rec.as_context(), &mut *report);
                shown += 1;
            });
        }
        let gone = keep as u64 - shown;
        if gone > 0 {
            note(outputs, i, (due.time_ns, due.tid), report, |text| {
                put_decimal(gone, 1, text);
                text.put(plural(gone, b" record was", b" records were"));
                text.put(b" overwritten in the ring while this context was printed");
            });
        }
        if shown > 0 {
            stats::add(&stats::CONTEXTS, 1);
            stats::add(&stats::CONTEXT_RECORDS, shown);
        }
    }
    checkpoints.passed(at);
}

/// Scans the record headers from where the key's last context ended (or
/// the window's start, or the oldest record) to the error at `at`, keeping
/// in `picks`, in ring order, the last `wanted` (none: only counted)
/// records that qualify: the key's, made since its last context, of a
/// priority the output (at `priority`) does not print (a record it prints
/// was printed, by it or, in a ring file another process shares, by the
/// process that made it). (Not inlined: its buffer is gone before records
/// are read.)
#[inline(never)]
fn gather(
    context: &Context,
    picks: &mut Vec<Pick>,
    wanted: usize,
    region: &(impl Region + ?Sized),
    (since, window, at): (Since, Option<u64>, u64),
    due: &Due,
    priority: Priority,
) -> Found {
    // Where to start: a boundary within `SCAN_MAX` of the error (the
    // key's last context's end, one the walk passed, or the oldest record),
    // never further back. A process whose outputs do not read the ring (it
    // shares another's ring file) knows only its own lines' boundaries:
    // past a longer stretch of others' records, it reads nothing.
    let reach = at.saturating_sub(SCAN_MAX);
    let oldest = region.head();
    picks.clear();
    let from = match (since.marked, window) {
        (true, Some(w)) if since.pos < w => Some(w),
        (true, _) if since.pos >= reach => Some(since.pos),
        (_, Some(w)) => Some(w),
        _ if oldest >= reach => Some(oldest),
        _ => None,
    };
    let Some(from) = from else {
        return Found {
            count: 0,
            unread: 0,
            overwritten: false,
            beyond: true,
        };
    };
    let mut next = 0;
    let mut count = 0u64;
    let mut first = None;
    scan::scan(region, from, at, |pos, head, source| {
        first.get_or_insert((pos, head.seq));
        let fresh = since.seq.is_none_or(|s| head.seq > s) && head.seq < due.seq;
        if !fresh
            || !whose(due, context.all_threads, head, source)
            || head.priority >= priority as u8
        {
            return;
        }
        count += 1;
        if wanted == 0 {
            return;
        }
        let pick = Pick { pos, seq: head.seq };
        if picks.len() < wanted {
            picks.push(pick);
        } else {
            picks[next] = pick;
            next = (next + 1) % wanted;
        }
    });
    picks.rotate_left(next);
    // What was not read of what was made since the key's last context:
    // overwritten (the scan began past where it was asked to), or before
    // the window.
    let (unread, overwritten) = match (since.marked, since.seq, first) {
        (true, Some(last), Some((pos, seq))) => (seq.saturating_sub(last + 1), pos != from),
        _ => (0, false),
    };
    Found {
        count,
        unread,
        overwritten,
        beyond: false,
    }
}

/// Reads the record `pick` chose into `buffers` and hands it to `f`, unless
/// the ring overwrote it since the scan (not inlined: not on the stack
/// while `gather` scans).
#[inline(never)]
fn read_pick(
    region: &(impl Region + ?Sized),
    pick: &Pick,
    buffers: &mut reader::Buffers,
    f: impl FnOnce(Record),
) {
    let mut f = Some(f);
    reader::read_with(
        region,
        Cursor::at(pick.pos),
        1,
        buffers,
        false,
        |entry, _| {
            if let Entry::Record(rec) = entry {
                if rec.seq == pick.seq {
                    if let Some(f) = f.take() {
                        f(rec);
                    }
                }
            }
            true
        },
    );
}

/// About what a record takes printed: its message, fields and names.
fn printed_size(rec: &Record) -> usize {
    64 + rec.message.len() + rec.fields.len() + rec.source.len() + rec.file.len() + rec.func.len()
}

/// Whether the record whose header is `head` is one of the erring
/// thread's (or relay's), or any of this process's when every thread's are
/// wanted: never another process's, whose thread ids say nothing here (its
/// tag decides; a process prints only its own errors).
fn whose(due: &Due, all_threads: bool, head: &Head, source: &[u8]) -> bool {
    if head.tag != sys::process_tag() {
        return false;
    }
    if all_threads {
        return true;
    }
    if head.tid != due.tid {
        return false;
    }
    // Each record is one key's: a relayed line its relay's, any other its
    // thread's. So none is printed twice, whichever errors come.
    match due.relayed {
        None => !head.no_file,
        Some(relay) => head.no_file && hash(&[source]) == relay,
    }
}

/// FNV-1a over `parts`, each followed by its length (so that the parts'
/// bounds count).
fn hash(parts: &[&[u8]]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for part in parts {
        for &b in part.iter().chain(&(part.len() as u32).to_ne_bytes()) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}
