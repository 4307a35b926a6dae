//! The ring as text on a file descriptor: what `vlog_dump` writes, and the
//! body of every crash dump. No allocation and no lock, only write(2), so the
//! crash handler can use it.

use crate::ring::layout::Stats;
use crate::ring::{published, Entry, Region};
use crate::sys::{self, FdKind};
use crate::text::line::render_line;
use crate::text::num::put_decimal;
use crate::text::time::{put_timestamp, Clock};
use crate::text::{Bounded, ChunkSink, Sink};

/// Renders every entry of `region` into `sink`, a line each; returns the
/// number of records written.
pub fn entries(region: &impl Region, sink: &mut impl Sink) -> u64 {
    let mut count = 0;
    let mut clock = Clock::new();
    crate::ring::read(region, |entry| match entry {
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

/// The ring's records between the dump's head and end lines.
pub fn records(sink: &mut impl Sink) {
    sink.put(b"vlog: ring, oldest first:\n");
    let count = published::read(|view| view.map_or(0, |v| entries(&v, sink)));
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
    sys::fd::without_signal(libc::SIGXFSZ, || {
        // SAFETY: `buf` holds `len + 1` initialised bytes.
        let _ = unsafe { libc::write(handle.raw(), buf.as_ptr().cast(), len + 1) };
    });
}
