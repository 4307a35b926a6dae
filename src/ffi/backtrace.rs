//! The backtrace of a call that keeps one (`VLOG_BACKTRACE`, a site a
//! `bt:` filter names): taken by the entry the program called, before the
//! logger's lock (the unwinder and the loader take the loader's lock,
//! which a thread inside dlopen holds while a constructor registers its
//! sites under the logger's), and built in one of a few static slots, not
//! on the caller's stack, which has 8 KiB for a whole call.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::fields::frames::{self, ENCODED_MAX};
use crate::logger::emit::{self, Call, Outcome, SiteCall};
use crate::stats;

/// One static slot a backtrace is built in.
struct Slot {
    busy: AtomicBool,
    buf: UnsafeCell<[u8; ENCODED_MAX]>,
}

// SAFETY: a slot's buffer is used only by the thread that set `busy`,
// until it clears it.
unsafe impl Sync for Slot {}

/// Backtraces being taken at once; a call that finds every slot taken
/// (more threads, or signal handlers nested in them) keeps none, counted.
const SLOTS: usize = 8;
static SLOT: [Slot; SLOTS] = [const {
    Slot {
        busy: AtomicBool::new(false),
        buf: UnsafeCell::new([0; ENCODED_MAX]),
    }
}; SLOTS];

/// A backtrace taken into a slot, which it gives back when dropped.
pub(super) struct Taken {
    slot: &'static Slot,
    len: usize,
}

impl Taken {
    pub(super) fn bytes(&self) -> &[u8] {
        // SAFETY: this thread set the slot's `busy`; the buffer is not
        // written again until `drop` clears it.
        let buf = unsafe { &*self.slot.buf.get() };
        &buf[..self.len]
    }
}

impl Drop for Taken {
    fn drop(&mut self) {
        self.slot.busy.store(false, Ordering::Release);
    }
}

/// Takes the backtrace of the program's call of `entry` (the address of
/// the exported function it called) when `wanted`; None when not, or
/// when every slot is taken (counted in `backtraces_lost`). No allocation,
/// no system call. Apart, so that a call that wants none has nothing of
/// it on its stack (a call has 8 KiB of the caller's).
#[inline(never)]
pub(super) fn backtrace(wanted: bool, entry: usize) -> Option<Taken> {
    if !wanted {
        return None;
    }
    let Some(slot) = SLOT.iter().find(|s| {
        s.busy
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }) else {
        stats::add(&stats::BACKTRACES_LOST, 1);
        return None;
    };
    // SAFETY: this thread set `busy`: the buffer is its own until the
    // `Taken` made of it is dropped.
    let buf = unsafe { &mut *slot.buf.get() };
    let len = frames::capture(entry, buf).len();
    Some(Taken { slot, len })
}

/// A call of a site a `bt:` filter marked, that came to `vlog__record`
/// (`entry`): its backtrace, then the general way, which makes its text (a
/// record with frames is not kept as arguments).
#[cold]
#[inline(never)]
pub(super) fn record_site_call(call: SiteCall, entry: usize) -> Outcome {
    // None for a call nested in a signal handler: it is dropped.
    let taken = backtrace(!crate::logger::inside(), entry);
    let call = Call {
        frames: taken.as_ref().map(Taken::bytes),
        ..call.call()
    };
    emit::emit(&call)
}
