//! Dumps on request (`VLOG_DUMP_SIGNAL`): the ring written while the
//! process goes on, then the program's own handler for the signal, if it
//! had one.

use std::ffi::{c_int, c_void};
use std::sync::atomic::Ordering;

use super::{
    dump, fatal_action, handback, target, thread_id, DUMPER, DUMP_SIGNALS, PREVIOUS, REQUESTED,
};
use crate::error::ConfigError;
use crate::panic;
use crate::sys;
use crate::text::Sink;

/// The `VLOG_DUMP_SIGNAL` handler: dump, hand the signal to the program's
/// own handler if it had one, and carry on, leaving errno as it was.
extern "C-unwind" fn on_dump_signal(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    sys::cancel::callback!(|| sys::keeping_errno(|| panic::swallow(write_requested_dump)));
    // The program's own handler, outside vlog's mark: it may siglongjmp
    // away, and must find the thread out of vlog.
    if (1..=64).contains(&sig) {
        // SAFETY: the slot was filled when vlog took `sig`; this is `sig`'s
        // handler, with the kernel's arguments.
        unsafe { handback::call(&PREVIOUS[sig as usize].get(), sig, info, ctx) };
    }
}

/// The dump that `VLOG_DUMP_SIGNAL` asks for: header, ring, no backtrace, and
/// the process goes on.
fn write_requested_dump() {
    if REQUESTED
        .compare_exchange(0, thread_id(), Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        return;
    }
    let stats = dump::ring_stats();
    if let Some(handle) = target::dump_handle() {
        let fd = handle.raw();
        // Never under a crash dump that has begun.
        let emptied = (DUMPER.load(Ordering::SeqCst) == 0)
            .then(|| handle.make_room(target::dump_file_cap(stats.size)))
            .flatten();
        // A crash dump that starts meanwhile has the descriptor to itself.
        let crashing = || DUMPER.load(Ordering::SeqCst) > 0;
        dump::with_fd_sink_unless(fd, crashing, |sink| {
            if let Some(size) = emptied {
                dump::say_emptied(size, sink);
            }
            sink.put(b"vlog: dump requested by signal");
            dump::process_line(thread_id(), stats, sink);
            dump::records(sink);
        });
    }
    REQUESTED.store(0, Ordering::SeqCst);
}

/// Installs a handler that writes a dump on `sig` and lets the process go
/// on; a handler the program had for `sig` is called after the dump.
pub fn install_dump_signal(sig: c_int) -> Result<(), ConfigError> {
    let slot = usize::try_from(sig)
        .ok()
        .filter(|s| (1..=64).contains(s))
        .ok_or_else(|| ConfigError::new(format!("signal {sig} does not exist")))?;
    if DUMP_SIGNALS[slot].swap(true, Ordering::SeqCst) {
        return Ok(());
    }
    let mut action = fatal_action(on_dump_signal);
    // A dump signal is no crash: the thread's own stack holds the dump,
    // where an alternate stack the program set up may not (Rust's std
    // gives each thread one of a few KiB).
    action.sa_flags &= !libc::SA_ONSTACK;
    action.sa_flags |= libc::SA_RESTART;
    // SAFETY: valid action; the slot is this signal's and no handler of
    // vlog's for it runs before this call returns.
    if unsafe { libc::sigaction(sig, &action, PREVIOUS[slot].as_mut_ptr()) } != 0 {
        DUMP_SIGNALS[slot].store(false, Ordering::SeqCst);
        let e = std::io::Error::last_os_error();
        return Err(ConfigError::new(format!("cannot handle signal {sig}: {e}")));
    }
    Ok(())
}
