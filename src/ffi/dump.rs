//! Reading the ring from C: `vlog_dump` (text lines to a descriptor, without
//! a lock) and the counters.

use std::ffi::c_int;

use super::{cancellation_point, guarded, no_cancel, set_last_error};
use crate::crash::dump;
use crate::logger;
use crate::stats;

/// Counters of the ring and the outputs, filled by `vlog_get_stats`.
#[repr(C)]
pub struct vlog_stats {
    /// Size of the ring's data area in bytes; 0 when there is no ring.
    pub buffer_size: u64,
    /// Records ever written to the ring (the next sequence number).
    pub records: u64,
    /// Records overwritten by newer ones (or left out when the ring was
    /// resized).
    pub lost: u64,
    /// Messages dropped because they were logged while the same thread was
    /// already inside vlog (for example from a signal handler).
    pub dropped_nested: u64,
    /// Lines that an output could not write (a full disk, a reader gone, a
    /// full pipe, fd 2 closed); the messages are still in the ring.
    pub output_lines_lost: u64,
    /// Structured fields not kept as given: a name not valid or reserved
    /// (the first kept as VLOG_BAD_FIELD_NAME), or given twice.
    pub bad_fields: u64,
    /// Errors' contexts printed (VLOG_CONTEXT), one per output that printed
    /// at least one record of one.
    pub contexts: u64,
    /// Records printed as an error's context.
    pub context_records: u64,
    /// Contexts left out because their error site had one within the
    /// interval (one per output).
    pub contexts_suppressed: u64,
    /// Calls left out by a call site's limit (`VLOG_*_ONCE`, `_EVERY_N`,
    /// `_RATELIMITED`, `VLOG_LIMITED`) or by `VLOG_RATELIMIT`.
    pub suppressed: u64,
    /// Messages dropped because the oldest record, whose room they needed,
    /// was still being copied by its thread after a wait of 100 ms (a
    /// thread stopped in the middle of logging, in a signal handler or a
    /// debugger).
    pub dropped_in_flight: u64,
    /// Records that were to keep a backtrace (`VLOG_BACKTRACE`, a `bt:`
    /// filter) and were kept without one: eight were being taken at once.
    pub backtraces_lost: u64,
}

/// The counters as a program built against the first header knew them
/// (`vlog_get_stats`, the exported function).
const FIRST_STATS_SIZE: usize = 6 * 8;

/// Writes the whole ring to `fd` (a crash dump has its newest records only)
/// as text lines, oldest first, in the output line
/// format. Reads without taking any lock and validates every record (commit
/// word, checksum, sequence); a damaged record is reported by a line
/// starting `vlog:` instead of being printed, as are records overwritten
/// while the dump ran. No allocation, no lock, only write(2). Returns the
/// number of records written (0 without a ring), or -1 if a write failed
/// (errno tells why).
/// NULL: takes no pointer; ownership: `fd` stays the caller's; errors: -1
/// and errno; async-signal-safe: yes.
#[no_mangle]
pub extern "C-unwind" fn vlog_dump(fd: c_int) -> c_int {
    cancellation_point!(|| {
        guarded(-1, || match dump::ring_to_fd(fd) {
            Some(count) => c_int::try_from(count).unwrap_or(c_int::MAX),
            None => -1,
        })
    })
}

/// Fills the first six counters of `*stats` (those of the first header's
/// struct: buffer_size to bad_fields), for programs built against it. The
/// header's `vlog_get_stats()` macro calls `vlog_get_stats_sized()`, which
/// fills every counter. Returns 0, or -1 if `stats` is NULL or the thread
/// is already inside vlog (a signal handler that interrupted it). Takes
/// the lock.
/// NULL: an error (-1, vlog_last_error says so); ownership: `*stats` stays
/// the caller's; errors: -1 and vlog_last_error(); async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_get_stats(stats: *mut vlog_stats) -> c_int {
    vlog_get_stats_sized(stats, FIRST_STATS_SIZE)
}

/// Fills `*stats`, a struct of `size` bytes (`sizeof(vlog_stats)` as the
/// caller's header has it; `vlog_get_stats(stats)` passes it), with the
/// ring's and the outputs' counters: every counter this library and the
/// caller's struct both have; bytes of a larger struct (a newer header's)
/// beyond this library's counters are set to 0. Returns 0, or -1 if
/// `stats` is NULL, `size` is 0, or the thread is already inside vlog (a
/// signal handler that interrupted it). Takes the lock.
/// NULL: an error (-1, vlog_last_error says so); ownership: `*stats` stays
/// the caller's; errors: -1 and vlog_last_error(); async-signal-safe: no.
#[no_mangle]
pub extern "C-unwind" fn vlog_get_stats_sized(stats: *mut vlog_stats, size: usize) -> c_int {
    no_cancel!(|| {
        if stats.is_null() || size == 0 {
            set_last_error(if size == 0 {
                "size is 0"
            } else {
                "stats is NULL"
            });
            return -1;
        }
        guarded(-1, || {
            let Some(ring) = logger::enter(|s| s.stats()) else {
                set_last_error(
                    "called while this thread was already inside vlog (from a signal handler?)",
                );
                return -1;
            };
            let out = vlog_stats {
                buffer_size: ring.size,
                records: ring.recorded,
                lost: ring.lost,
                dropped_nested: stats::get(&stats::NESTED_DROPPED),
                output_lines_lost: stats::get(&stats::LINES_LOST),
                bad_fields: stats::get(&stats::BAD_FIELDS),
                contexts: stats::get(&stats::CONTEXTS),
                context_records: stats::get(&stats::CONTEXT_RECORDS),
                contexts_suppressed: stats::get(&stats::CONTEXTS_SUPPRESSED),
                suppressed: stats::get(&stats::SUPPRESSED),
                dropped_in_flight: stats::get(&stats::IN_FLIGHT_DROPPED),
                backtraces_lost: stats::get(&stats::BACKTRACES_LOST),
            };
            let ours = std::mem::size_of::<vlog_stats>();
            let dst = stats.cast::<u8>();
            // SAFETY: non-NULL, and the caller passes `size` writable bytes
            // (a vlog_stats as its header has it); at most `size` are
            // written, from `out`, a local of `ours` bytes.
            unsafe {
                std::ptr::copy_nonoverlapping((&raw const out).cast::<u8>(), dst, size.min(ours));
                if size > ours {
                    std::ptr::write_bytes(dst.add(ours), 0, size - ours);
                }
            }
            0
        })
    })
}
