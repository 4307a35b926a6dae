//! The ring as text on a file descriptor: what `vlog_dump` and the crash
//! handler write. No allocation and no lock, only write(2).

use crate::format::{self, ChunkSink, Sink};
use crate::logger;
use crate::reader::{self, Entry, Region};
use crate::record::Damage;
use crate::sys::{self, FdKind};

/// Renders every entry of `region` into `sink`, a line each; returns the
/// number of records written.
pub fn entries(region: &impl Region, sink: &mut impl Sink) -> u64 {
    let mut count = 0;
    reader::read(region, |entry| match entry {
        Entry::Record(rec) => {
            format::render_line(&rec, sink);
            count += 1;
        }
        Entry::Damaged { seq, damage } => {
            sink.put(b"vlog: skipped a damaged record (sequence ");
            format::put_decimal(seq, 1, sink);
            let why: &[u8] = match damage {
                Damage::Uncommitted => b"): not committed\n",
                Damage::Malformed => b"): malformed\n",
                Damage::Checksum => b"): bad checksum\n",
            };
            sink.put(why);
        }
        Entry::Gap { expected, found } => {
            sink.put(b"vlog: records ");
            format::put_decimal(expected, 1, sink);
            sink.put(b" to ");
            format::put_decimal(found.wrapping_sub(1), 1, sink);
            sink.put(b" are missing\n");
        }
        Entry::Overwritten { bytes } => {
            sink.put(b"vlog: ");
            format::put_decimal(bytes, 1, sink);
            sink.put(b" bytes of records were overwritten during the dump\n");
        }
    });
    count
}

/// Runs `f` with a sink that writes to `fd` in chunks; false if a write failed
/// (errno is left as write(2) set it). A pipe or socket whose reader is gone
/// fails with EPIPE; it never raises SIGPIPE.
pub fn with_fd_sink(fd: i32, f: impl FnOnce(&mut ChunkSink<&mut dyn FnMut(&[u8])>)) -> bool {
    let kind = sys::fd_info(fd).map_or(FdKind::Plain, |info| info.kind);
    let mut failed = false;
    let mut write = |bytes: &[u8]| {
        if !failed && sys::write_no_sigpipe(fd, bytes, kind).is_err() {
            failed = true;
        }
    };
    let mut sink = ChunkSink::new(&mut write as &mut dyn FnMut(&[u8]));
    f(&mut sink);
    sink.finish();
    !failed
}

/// Writes this process's ring to `fd`. Returns the number of records written,
/// or None if a write failed.
pub fn ring_to_fd(fd: i32) -> Option<u64> {
    let mut count = 0;
    let ok = with_fd_sink(fd, |sink| {
        logger::read_ring(|view| {
            if let Some(view) = view {
                count = entries(&view, sink);
            }
        })
    });
    ok.then_some(count)
}
