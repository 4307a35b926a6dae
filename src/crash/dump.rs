//! The ring as text on a file descriptor: what `vlog_dump` writes, and the
//! body of every crash dump. No allocation and no lock, only write(2), so the
//! crash handler can use it.

use crate::output::at_crash;
use crate::ring::layout::Stats;
use crate::ring::reader::{read_from, read_with, Buffers, Cursor};
use crate::ring::record::RECORD_MAX;
use crate::ring::{published, Entry, Region};
use crate::sys::{self, FdKind};
use crate::text::line::render_line;
use crate::text::num::put_decimal;
use crate::text::time::{put_timestamp, Clock};
use crate::text::{Bounded, ChunkSink, Sink};

/// How much of the ring a dump holds: its newest 384 KiB of records. A
/// record takes 48 bytes at least, so a dump has at most 8,192 lines of
/// records (about 4,400 of three arguments): under journald's default
/// burst, 10,000 lines in 30 s, past which it drops the newest lines, the
/// ones that matter. A ring of 8 MiB holds 94,000 records. (While an
/// output may hold lines, a dump has every record: see [`records`].) The
/// whole ring is read from a ring file (`vlog-dump`), or a running process
/// (`vlog_dump`, `vlog-ctl dump`).
pub const DUMP_BYTES: u64 = 384 * 1024;

/// Renders every entry of `region` into `sink`, a line each; returns the
/// number of records written.
pub fn entries(region: &impl Region, sink: &mut impl Sink) -> u64 {
    entries_from(region, Cursor::default(), None, sink)
}

/// [`entries`] of the newest [`DUMP_BYTES`] of the ring, and of every
/// record from `unwritten` on (where the outputs stopped, while lines wait
/// for them: a journald, syslog or fluent output's lines pending at a crash
/// are in the dump only), after a line that says how many older records
/// are left out. The cut is a position, not a count of records: a damaged
/// count cannot hide the newest records (a damaged `unwritten` can only
/// keep more). The first record dumped is found by its place in a walk of
/// headers from a place that is a record's start for certain (the oldest
/// record, or the start of the data area in the lap of the cut: a record
/// never wraps), never by what a place holds: a record's arguments may
/// look like a record whole (a packet logged as integers), and would be
/// printed as one. The older records are not rendered (a thread that logs
/// meanwhile could lap a reader that rendered them). Damage that stops the
/// walk is passed over as a reader passes it, on at the next record that
/// validates whole; only past eight damaged spans does the dump start at
/// the first record that validates past the cut.
pub fn newest(region: &impl Region, unwritten: u64, sink: &mut impl Sink) -> u64 {
    let (head, tail, size) = (region.head(), region.tail(), region.data_size());
    let cut = tail.saturating_sub(DUMP_BYTES).min(unwritten);
    if cut <= head || size == 0 {
        return entries(region, sink);
    }
    let mut oldest = None;
    crate::ring::scan::scan(region, head, head + 1, |_, h, _| oldest = Some(h.seq));
    let mut first = None;
    let mut walk_from = (cut - cut % size).max(head);
    let until = cut.saturating_add(RECORD_MAX as u64 + 8);
    // A few damaged spans are passed over as a reader passes them (on at
    // the next record that validates whole, then by headers again); more
    // than that, and the dump starts at the first record that validates
    // past the cut.
    for _ in 0..8 {
        let mut end = walk_from;
        crate::ring::scan::scan(region, walk_from, until, |pos, h, _| {
            if pos >= cut && first.is_none() {
                first = Some(pos);
            }
            end = pos + h.len as u64;
        });
        if first.is_some() || end >= cut {
            break;
        }
        match record_after(region, end) {
            Some(next) if next > end && next < cut => walk_from = next,
            Some(next) if next >= cut => {
                first = Some(next);
                break;
            }
            _ => break,
        }
    }
    let from = first.map_or(Cursor::near(cut), Cursor::at);
    entries_from(region, from, Some(oldest), sink)
}

/// Where the first record that validates whole after the damage at `pos`
/// begins, as a reader finds it (one record rendered). Not inlined: its
/// buffers and the dump's walk's are never on the stack at once (the crash
/// handler's alternate stack may be 40 KiB).
#[inline(never)]
fn record_after(region: &impl Region, pos: u64) -> Option<u64> {
    let mut buffers = Buffers::new();
    let cursor = read_with(
        region,
        Cursor::at(pos),
        u64::MAX,
        &mut buffers,
        false,
        |entry, _| !matches!(entry, Entry::Record(_)),
    );
    cursor.pos()
}

/// Renders the entries of `region` from `from`; `left_out`: a line to say
/// first that older records are left out, with the number of the oldest
/// held if it is known.
fn entries_from(
    region: &impl Region,
    from: Cursor,
    mut left_out: Option<Option<u64>>,
    sink: &mut impl Sink,
) -> u64 {
    let mut count = 0;
    let mut clock = Clock::new();
    read_from(region, from, u64::MAX, |entry| {
        if let Some(oldest) = left_out.take() {
            sink.put(b"vlog: ");
            match (oldest, &entry) {
                (Some(oldest), Entry::Record(rec)) if rec.seq >= oldest => {
                    put_decimal(rec.seq - oldest, 1, sink);
                    sink.put(b" older records are");
                }
                _ => sink.put(b"older records are"),
            }
            sink.put(b" left out: a dump has the newest ");
            put_decimal(DUMP_BYTES / 1024, 1, sink);
            sink.put(b" KiB of the ring\n");
        }
        say_entry(entry, &mut clock, &mut count, sink);
    });
    count
}

/// One entry of a walk as a line.
fn say_entry(entry: Entry, clock: &mut Clock, count: &mut u64, sink: &mut impl Sink) {
    match entry {
        Entry::Record(rec) => {
            render_line(&rec, clock, sink);
            *count += 1;
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
    }
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

/// Writes this process's ring to `fd`, all of it (`vlog_dump`: the caller
/// chose the descriptor; the dumps to where crash dumps go have the newest
/// records, see [`records`]). Returns the number of records written, or
/// None if a write failed.
pub fn ring_to_fd(fd: i32) -> Option<u64> {
    let mut count = 0;
    let ok = with_fd_sink(fd, |sink| {
        published::read(|view| {
            if let Some(view) = view {
                count = entries(&view, sink);
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

/// The ring's records between the dump's head and end lines: its newest
/// (see [`DUMP_BYTES`]).
pub fn records(sink: &mut impl Sink) {
    sink.put(b"vlog: ring, oldest first:\n");
    let count = published::read(|view| {
        view.map_or(0, |v| {
            // Lines an output still holds lie before `printed`: the dump
            // is their only other copy, so then it has every record.
            let unwritten = match v.printed() {
                _ if !at_crash::all_lines_seen() => 0,
                printed if printed < v.marked_end() => printed,
                _ => u64::MAX,
            };
            newest(&v, unwritten, sink)
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

/// The first line in a dump file just emptied (see `target::dump_file_cap`).
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
    sys::signal::without_signal(libc::SIGXFSZ, || {
        // SAFETY: `buf` holds `len + 1` initialised bytes.
        let _ = unsafe { libc::write(handle.raw(), buf.as_ptr().cast(), len + 1) };
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::priority::Priority;
    use crate::record::Record;
    use crate::ring::Ring;

    /// A message that ends with the bytes of a whole error record, as a
    /// ring stores it (a packet logged as it came).
    fn carrier_message() -> Vec<u8> {
        let forged = Record {
            priority: Priority::Error,
            seq: 1_000_000,
            ..Record::sample(b"FORGED: root login accepted")
        };
        let mut small = Ring::new(64 * 1024).unwrap();
        small.append_call(&forged, false, false).unwrap();
        let mut bytes = vec![0u8; Ring::call_len(&forged, false)];
        small.view().copy(0, &mut bytes);
        let mut message = vec![b'A'; 200];
        message.extend_from_slice(&bytes);
        message
    }

    /// A record's message may hold the bytes of another whole record (a
    /// packet logged as it came): a dump of the newest records starts at
    /// a record a walk of headers reached, never at a place that merely
    /// validates, so the record inside is never printed as one.
    #[test]
    fn a_record_inside_a_message_is_never_dumped_as_one() {
        // Carriers in a ring of 1 MiB, full.
        let message = carrier_message();
        let mut ring = Ring::new(1 << 20).unwrap();
        for _ in 0..6000 {
            ring.append_call(&Record::sample(&message), false, false)
                .unwrap();
        }
        // Where a walk from a place that merely validates finds it: the
        // forged record is whole in the ring (the test can fail).
        let view = ring.view();
        let tail = Region::tail(&view);
        let mut found = 0;
        for back in (DUMP_BYTES..DUMP_BYTES + 2048).step_by(8) {
            let mut text = Vec::new();
            entries_from(&view, Cursor::near(tail - back), None, &mut text);
            found += usize::from(String::from_utf8_lossy(&text).contains(": error : src : "));
        }
        assert!(found > 0, "the forged record never validated");
        // The dump, whatever the cut: never.
        for shift in 0..40 {
            let mut text = Vec::new();
            let n = newest(&ring.view(), u64::MAX, &mut text);
            let text = String::from_utf8_lossy(&text);
            assert!(
                !text.contains(": error : src : "),
                "shift {shift}: {}",
                &text[..300]
            );
            assert!(
                n > 1000 && text.contains(" older records are left out"),
                "{n}"
            );
            ring.append_call(&Record::sample(b"shift"), false, false)
                .unwrap();
        }
    }

    /// Damage that stops the walk of headers before the cut is passed over
    /// as a reader passes it, and the walk goes on by headers: the dump
    /// still starts at a record, never at a record inside a message.
    #[test]
    fn damage_before_the_cut_brings_no_record_inside_a_message() {
        let message = carrier_message();
        let dir = std::env::temp_dir().join(format!("vlog-dump-damage-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ring");
        let mut ring = Ring::create_file(&path, 1 << 20, None, false).unwrap();
        for _ in 0..3000 {
            ring.append_call(&Record::sample(&message), false, false)
                .unwrap();
        }
        // Zeros 200 KiB before the cut, through the file the ring maps.
        let tail = Region::tail(&ring.view());
        let at = ((tail - DUMP_BYTES - 200 * 1024) % (1 << 20)) as usize;
        let data = std::fs::metadata(&path).unwrap().len() as usize - (1 << 20);
        let mut file = std::fs::read(&path).unwrap();
        file[data + at..data + at + 300].fill(0);
        std::fs::write(&path, &file).unwrap();
        for shift in 0..40 {
            let mut text = Vec::new();
            let n = newest(&ring.view(), u64::MAX, &mut text);
            let text = String::from_utf8_lossy(&text);
            assert!(
                !text.contains(": error : src : "),
                "shift {shift}: {}",
                &text[..300]
            );
            assert!(n > 1000, "{n}");
            ring.append_call(&Record::sample(b"shift"), false, false)
                .unwrap();
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
