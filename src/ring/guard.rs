//! Ring files that another process truncates while they are mapped.
//!
//! `: > ring`, logrotate's copytruncate or a cleanup job can shrink a ring
//! file under the mapping; the next access to a page past the new end raises
//! SIGBUS, in a logging call, in `vlog_dump` or in the crash handler. The
//! mappings of ring files are registered here, and the SIGBUS handler (see
//! `crash`) asks [`repair`] first: a fault inside a registered mapping is
//! repaired by moving the mapping to private memory, with what the file
//! still holds copied in (and a fresh header if the header was lost), so the
//! faulting access is retried and succeeds. The logger's next call then
//! finds the ring [repaired](is_repaired) (the handler makes it look), carries the ring's readable records into a ring
//! in memory, and says so once.

use std::ffi::c_int;
use std::sync::atomic::{AtomicI32, AtomicU8, AtomicUsize, Ordering};

use super::layout::{Header, HEADER_SPACE};

/// At most this many ring files are mapped at once: the one in use, and
/// one being replaced while readers finish with it.
const SLOTS: usize = 4;

const FREE: u8 = 0;
const GUARDED: u8 = 1;
const REPAIRING: u8 = 2;
const REPAIRED: u8 = 3;

struct Slot {
    state: AtomicU8,
    base: AtomicUsize,
    len: AtomicUsize,
    data_size: AtomicUsize,
    /// The ring file, for its size now.
    fd: AtomicI32,
}

static GUARD: [Slot; SLOTS] = [const {
    Slot {
        state: AtomicU8::new(FREE),
        base: AtomicUsize::new(0),
        len: AtomicUsize::new(0),
        data_size: AtomicUsize::new(0),
        fd: AtomicI32::new(-1),
    }
}; SLOTS];

/// Registers the mapping of a ring file (`len` bytes at `base`, a data
/// area of `data_size`, the file open as `fd`). False when every slot is
/// taken (the mapping then goes unguarded).
pub fn guard(base: *mut u8, len: usize, data_size: usize, fd: c_int) -> bool {
    for slot in &GUARD {
        if slot.state.load(Ordering::SeqCst) != FREE || slot.base.load(Ordering::SeqCst) != 0 {
            continue;
        }
        slot.len.store(len, Ordering::SeqCst);
        slot.data_size.store(data_size, Ordering::SeqCst);
        slot.fd.store(fd, Ordering::SeqCst);
        // The base last: a handler looks only at slots with a base.
        slot.base.store(base as usize, Ordering::SeqCst);
        slot.state.store(GUARDED, Ordering::SeqCst);
        return true;
    }
    false
}

/// Forgets the mapping at `base`, before it is unmapped.
pub fn unguard(base: *mut u8) {
    for slot in &GUARD {
        if slot.base.load(Ordering::SeqCst) == base as usize {
            slot.base.store(0, Ordering::SeqCst);
            slot.state.store(FREE, Ordering::SeqCst);
        }
    }
}

/// Whether the mapping at `base` was repaired.
pub fn is_repaired(base: *mut u8) -> bool {
    GUARD.iter().any(|s| {
        s.base.load(Ordering::SeqCst) == base as usize && s.state.load(Ordering::SeqCst) == REPAIRED
    })
}

/// In a SIGBUS handler: if `addr` lies in a registered ring file mapping,
/// makes the mapping private memory holding what the file still has, and
/// returns true (the faulting access may be retried). Async-signal-safe:
/// fstat, mmap, mremap and plain memory.
pub fn repair(addr: usize) -> bool {
    let Some(slot) = GUARD.iter().find(|s| {
        let base = s.base.load(Ordering::SeqCst);
        base != 0 && (base..base + s.len.load(Ordering::SeqCst)).contains(&addr)
    }) else {
        return false;
    };
    match slot
        .state
        .compare_exchange(GUARDED, REPAIRING, Ordering::SeqCst, Ordering::SeqCst)
    {
        Ok(_) => {}
        Err(REPAIRED) => return true,
        // Another thread is repairing it: wait (bounded) for it to finish.
        Err(_) => return wait_for_repair(slot),
    }
    let base = slot.base.load(Ordering::SeqCst) as *mut u8;
    let len = slot.len.load(Ordering::SeqCst);
    let data_size = slot.data_size.load(Ordering::SeqCst);
    let file_size = crate::sys::fd_info(slot.fd.load(Ordering::SeqCst)).map_or(0, |i| i.size);
    // SAFETY: `base..base+len` is the registered mapping (the Ring that owns
    // it unregisters it before unmapping); the copy stops at the file's
    // end, rounded up to the page (the rest of that page reads as zeros
    // without a fault); the new mapping is ours alone until mremap moves it
    // over the old one in one step.
    let ok = unsafe {
        let page = libc::sysconf(libc::_SC_PAGESIZE).max(4096) as usize;
        let keep = (file_size as usize)
            .div_ceil(page)
            .saturating_mul(page)
            .min(len);
        let new = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if new == libc::MAP_FAILED {
            false
        } else {
            std::ptr::copy_nonoverlapping(base, new.cast::<u8>(), keep);
            if keep < HEADER_SPACE {
                // The header is gone: an empty ring of the same shape, so
                // the writer and the readers in this process find the
                // sizes they rely on. Its lock is an unlocked plain mutex.
                new.cast::<Header>().write(Header::fresh(data_size));
            }
            let moved = libc::mremap(
                new,
                len,
                len,
                libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                base.cast::<libc::c_void>(),
            );
            if moved == libc::MAP_FAILED {
                libc::munmap(new, len);
                false
            } else {
                true
            }
        }
    };
    slot.state
        .store(if ok { REPAIRED } else { GUARDED }, Ordering::SeqCst);
    ok
}

/// Sleeps until another thread's repair of `slot` is over (at most about a
/// second); true if it succeeded.
fn wait_for_repair(slot: &Slot) -> bool {
    let pause = libc::timespec {
        tv_sec: 0,
        tv_nsec: 1_000_000,
    };
    for _ in 0..1000 {
        match slot.state.load(Ordering::SeqCst) {
            REPAIRED => return true,
            REPAIRING => {}
            _ => return false,
        }
        // SAFETY: nanosleep is async-signal-safe; `pause` is valid.
        unsafe { libc::nanosleep(&pause, std::ptr::null_mut()) };
    }
    false
}
