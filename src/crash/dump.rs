//! The ring as text on a file descriptor: what `vlog_dump` writes, and the
//! body of every crash dump. No allocation and no lock, only write(2), so the
//! crash handler can use it.

use crate::ring::layout::Stats;
use crate::ring::reader::{self, Cursor};
use crate::ring::{published, scan, Entry, Region};
use crate::sys::{self, FdKind};
use crate::text::line::render_line;
use crate::text::num::put_decimal;
use crate::text::time::{put_timestamp, Clock};
use crate::text::{Bounded, ChunkSink, Sink};

/// How many of the ring's newest records a crash or requested dump writes
/// as text. A dump to stderr most often reaches journald, whose default
/// burst (10,000 lines in 30 s per service) would otherwise drop the newest
/// lines of a large ring's dump, the ones that matter; 5,000 leaves room
/// for the daemon's own lines, and is seconds of a busy daemon's debug
/// records, written in a few milliseconds.
pub const DUMP_RECORDS: u64 = 5000;

/// Renders the entries of `region` from `from` into `sink`, a line each,
/// as far as `budget` bytes of the ring (see `reader::read_from`); returns
/// the number of records written.
pub fn entries(region: &impl Region, from: Cursor, budget: u64, sink: &mut impl Sink) -> u64 {
    let mut count = 0;
    let mut clock = Clock::new();
    reader::read_from(region, from, budget, |entry| match entry {
        Entry::Record(rec) => {
            render_line(&rec, &mut clock, sink);
            count += 1;
        }
        Entry::Damaged { seq, damage } => {
            sink.put(b"vlog: record ");
            put_decimal(seq, 1, sink);
            sink.put(b" skipped: ");
            sink.put(damage.describe().as_bytes());
            sink.put(b"\n");
        }
        Entry::Gap { expected, found } => {
            sink.put(b"vlog: records ");
            put_decimal(expected, 1, sink);
            sink.put(b" to ");
            put_decimal(found.wrapping_sub(1), 1, sink);
            sink.put(b" are missing\n");
        }
        Entry::Overwritten { bytes } => {
            sink.put(b"vlog: ");
            put_decimal(bytes, 1, sink);
            sink.put(b" bytes of records were overwritten during the dump\n");
        }
        Entry::Skipped { bytes } => {
            sink.put(b"vlog: ");
            put_decimal(bytes, 1, sink);
            sink.put(b" bytes of damaged records passed over\n");
        }
    });
    count
}

/// Where the newest `DUMP_RECORDS` records of `region` begin, and how many
/// records are before them; None when every record is to be written.
/// Two walks over the records' headers alone, the second to the sequence
/// number the first ended on less `DUMP_RECORDS`: what is left out is
/// neither rendered (a busy thread would overwrite the newest records
/// before a reader rendering the oldest reached them) nor counted from a
/// word of the header (which damage may have changed). A walk ends at
/// damage: the records after it are then written too, and the reader
/// says what it met.
fn newest(region: &impl Region, end: u64) -> Option<(u64, u64)> {
    let (mut held, mut last) = (0u64, 0u64);
    scan::scan(region, region.head(), end, |_, head, _| {
        held += 1;
        last = head.seq;
    });
    if held <= DUMP_RECORDS {
        return None;
    }
    let first = last.saturating_sub(DUMP_RECORDS - 1);
    let (mut before, mut start) = (0u64, None);
    scan::scan(region, region.head(), end, |pos, head, _| {
        if start.is_none() {
            if head.seq >= first {
                start = Some(pos);
            } else {
                before += 1;
            }
        }
    });
    Some((start?, before))
}

/// A sink that writes to a descriptor in chunks.
pub type FdSink<'a> = ChunkSink<&'a mut dyn FnMut(&[u8])>;

/// Runs `f` with a sink that writes to `fd` in chunks; false if a write
/// failed (errno is left as write(2) set it). A pipe or socket whose reader
/// is gone fails with EPIPE; it never raises SIGPIPE.
pub fn with_fd_sink(fd: i32, f: impl FnOnce(&mut FdSink)) -> bool {
    with_fd_sink_unless(fd, || false, f)
}

/// `with_fd_sink` that stops writing once `stop` says so.
pub fn with_fd_sink_unless(fd: i32, stop: impl Fn() -> bool, f: impl FnOnce(&mut FdSink)) -> bool {
    let kind = sys::fd_info(fd).map_or(FdKind::Plain, |info| info.kind);
    let mut failed = false;
    let mut write = |bytes: &[u8]| {
        if !failed && (stop() || sys::write_no_signal(fd, bytes, kind).is_err()) {
            failed = true;
        }
        if !failed {
            super::watchdog::progressed(bytes.len());
        }
    };
    let mut sink = ChunkSink::new(&mut write as &mut dyn FnMut(&[u8]));
    f(&mut sink);
    sink.finish();
    !failed
}

/// Writes this process's ring to `fd`. Returns the number of records
/// written, or None if a write failed.
pub fn ring_to_fd(fd: i32) -> Option<u64> {
    let mut count = 0;
    let ok = with_fd_sink(fd, |sink| {
        published::read(|view| {
            if let Some(view) = view {
                count = entries(&view, Cursor::default(), u64::MAX, sink);
            }
        })
    });
    ok.then_some(count)
}

/// `, pid P, tid T, time ..., R records, L lost\n`: the end of a dump's
/// first line.
pub fn process_line(tid: i32, stats: Stats, sink: &mut impl Sink) {
    sink.put(b", pid ");
    put_decimal(std::process::id() as u64, 1, sink);
    sink.put(b", tid ");
    put_decimal(tid as u64, 1, sink);
    sink.put(b", time ");
    put_timestamp(sys::realtime_ns(), sink);
    sink.put(b", ");
    put_decimal(stats.recorded, 1, sink);
    sink.put(b" records, ");
    put_decimal(stats.lost, 1, sink);
    sink.put(b" lost\n");
}

/// The ring's newest records (`DUMP_RECORDS` of those there when it
/// began; those recorded since would have the dump chase the threads that
/// log) between the dump's head and end lines, after a line that says how
/// many older ones it leaves out.
pub fn records(sink: &mut impl Sink) {
    sink.put(b"vlog: ring, oldest first:\n");
    let count = published::read(|view| {
        view.map_or(0, |v| {
            let end = v.tail();
            let from = match newest(&v, end) {
                Some((from, before)) => {
                    sink.put(b"vlog: the ");
                    put_decimal(before, 1, sink);
                    sink.put(b" oldest records of the ring are left out of this dump, ");
                    sink.put(b"which writes the newest ");
                    put_decimal(DUMP_RECORDS, 1, sink);
                    sink.put(b"\n");
                    from
                }
                None => v.head(),
            };
            entries(&v, Cursor::at(from), end.saturating_sub(from), sink)
        })
    });
    sink.put(b"vlog: end of dump, ");
    put_decimal(count, 1, sink);
    sink.put(b" records\n");
}

/// The current ring's counters (zero without a ring).
pub fn ring_stats() -> Stats {
    published::read(|view| view.map(|v| v.stats()).unwrap_or_default())
}

/// The first line in a dump file just emptied (see `target::DUMP_FILE_CAP`).
pub fn say_emptied(size: u64, sink: &mut impl Sink) {
    sink.put(b"vlog: the dump file held ");
    put_decimal(size, 1, sink);
    sink.put(b" bytes of earlier dumps, its limit: emptied for this one\n");
}

/// Writes one line of the handler's to where dumps go: made by `make` in a
/// small buffer (cut to fit, the newline kept), written at once if it can
/// be without waiting, past no file size limit.
pub fn say_line(make: impl FnOnce(&mut Bounded)) {
    let Some(handle) = super::target::dump_handle() else {
        return;
    };
    let mut buf = [0u8; 400];
    let mut line = Bounded::new(&mut buf[..399]);
    make(&mut line);
    let len = line.finish().len();
    buf[len] = b'\n';
    // Never waiting: a pipe whose reader stalled takes nothing, and the
    // line is dropped. One write, which a pipe with room takes whole.
    let mut ready = libc::pollfd {
        fd: handle.raw(),
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no wait.
    if unsafe { libc::poll(&mut ready, 1, 0) } != 1 || ready.revents & libc::POLLOUT == 0 {
        return;
    }
    sys::fd::without_signal(libc::SIGXFSZ, || {
        // SAFETY: `buf` holds `len + 1` initialised bytes.
        let _ = unsafe { libc::write(handle.raw(), buf.as_ptr().cast(), len + 1) };
    });
}
