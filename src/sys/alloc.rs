//! vlog's global allocator: the system's malloc, and when malloc fails, an
//! emergency reserve.
//!
//! A Rust allocation that fails aborts the process, and a logger must never
//! be why its daemon dies. So the large allocations of vlog's setup are made
//! fallible where they are made (`try_reserve`; a ring is an mmap that may
//! fail) and degrade with a warning: no ring, fewer outputs. What is left are
//! small ones spread over every path (an error's text, a source registered, a
//! configuration parsed), which, when malloc fails, are served from a static
//! reserve of [`RESERVE`] bytes, freed back to it as usual. The logger says
//! once that the reserve was needed ([`take_reserve_used`]).
//!
//! The reserve is a bitmap of 64-byte blocks under a spin lock, taken only
//! while malloc fails; it is not async-signal-safe, and nothing of vlog's
//! allocates in a signal handler.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};

/// The emergency reserve's size.
pub const RESERVE: usize = 256 * 1024;
const BLOCK: usize = 64;
const BLOCKS: usize = RESERVE / BLOCK;
const WORDS: usize = BLOCKS / 64;

#[repr(C, align(64))]
struct Reserve {
    bytes: UnsafeCell<[u8; RESERVE]>,
    /// One bit per block, set while it is allocated.
    used: UnsafeCell<[u64; WORDS]>,
    locked: AtomicBool,
    /// Whether the reserve served an allocation since the last look.
    served: AtomicBool,
}

// SAFETY: `used` is touched only under `locked`; the bytes of a block
// belong to whoever allocated it.
unsafe impl Sync for Reserve {}

static RESERVE_POOL: Reserve = Reserve {
    bytes: UnsafeCell::new([0; RESERVE]),
    used: UnsafeCell::new([0; WORDS]),
    locked: AtomicBool::new(false),
    served: AtomicBool::new(false),
};

/// In a forked child, which has only the forking thread: no other thread
/// holds the reserve's lock.
pub fn after_fork() {
    RESERVE_POOL.locked.store(false, Ordering::Release);
}

/// Whether malloc failed and the reserve served an allocation since the
/// last call.
pub fn take_reserve_used() -> bool {
    RESERVE_POOL.served.load(Ordering::Relaxed) && RESERVE_POOL.served.swap(false, Ordering::SeqCst)
}

impl Reserve {
    fn start(&self) -> usize {
        self.bytes.get() as usize
    }

    fn contains(&self, ptr: *mut u8) -> bool {
        (self.start()..self.start() + RESERVE).contains(&(ptr as usize))
    }

    fn with_bitmap<R>(&self, f: impl FnOnce(&mut [u64; WORDS]) -> R) -> R {
        while self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
        // SAFETY: the lock is held, so this is the only reference.
        let result = f(unsafe { &mut *self.used.get() });
        self.locked.store(false, Ordering::Release);
        result
    }

    /// `layout`'s bytes from the reserve, or null.
    fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() > BLOCK || layout.size() == 0 {
            return std::ptr::null_mut();
        }
        let want = layout.size().div_ceil(BLOCK);
        let found = self.with_bitmap(|used| {
            let free = |b: usize| used[b / 64] & (1 << (b % 64)) == 0;
            let mut run = 0;
            for b in 0..BLOCKS {
                run = if free(b) { run + 1 } else { 0 };
                if run == want {
                    let first = b + 1 - want;
                    for taken in first..=b {
                        used[taken / 64] |= 1 << (taken % 64);
                    }
                    return Some(first);
                }
            }
            None
        });
        match found {
            Some(first) => {
                self.served.store(true, Ordering::Relaxed);
                (self.start() + first * BLOCK) as *mut u8
            }
            None => std::ptr::null_mut(),
        }
    }

    fn free(&self, ptr: *mut u8, layout: Layout) {
        let first = (ptr as usize - self.start()) / BLOCK;
        let count = layout.size().div_ceil(BLOCK);
        self.with_bitmap(|used| {
            for b in first..(first + count).min(BLOCKS) {
                used[b / 64] &= !(1 << (b % 64));
            }
        });
    }
}

/// The allocator of every Rust allocation in a program that links vlog.
pub struct Allocator;

// SAFETY: every pointer returned is either the system allocator's (and
// given back to it) or a run of reserve blocks large and aligned enough for
// its layout (and given back to the reserve): `dealloc` and `realloc` tell
// the two apart by address.
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded under the caller's contract.
        let ptr = unsafe { System.alloc(layout) };
        if ptr.is_null() {
            RESERVE_POOL.alloc(layout)
        } else {
            ptr
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded under the caller's contract.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            return ptr;
        }
        let ptr = RESERVE_POOL.alloc(layout);
        if !ptr.is_null() {
            // SAFETY: a fresh run of at least `layout.size()` bytes.
            unsafe { ptr.write_bytes(0, layout.size()) };
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if RESERVE_POOL.contains(ptr) {
            RESERVE_POOL.free(ptr, layout);
        } else {
            // SAFETY: a pointer the system allocator gave for `layout`.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !RESERVE_POOL.contains(ptr) {
            // SAFETY: forwarded under the caller's contract.
            let moved = unsafe { System.realloc(ptr, layout, new_size) };
            if !moved.is_null() {
                return moved;
            }
        }
        // A reserve block, or malloc failed: a new allocation, the bytes
        // copied, the old one given back.
        // SAFETY: the caller guarantees a valid layout for `new_size`.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: as for `alloc`.
        let new = unsafe { self.alloc(new_layout) };
        if !new.is_null() {
            // SAFETY: both are live allocations at least this long.
            unsafe {
                std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserve_allocates_frees_and_runs_out() {
        let layout = Layout::from_size_align(1000, 8).unwrap();
        let a = RESERVE_POOL.alloc(layout);
        let b = RESERVE_POOL.alloc(layout);
        assert!(!a.is_null() && !b.is_null() && a != b, "{a:?}");
        assert!(RESERVE_POOL.contains(a) && (a as usize) % BLOCK == 0);
        RESERVE_POOL.free(a, layout);
        assert_eq!(RESERVE_POOL.alloc(layout), a, "a freed run is used again");
        let huge = Layout::from_size_align(RESERVE + 1, 8).unwrap();
        assert!(RESERVE_POOL.alloc(huge).is_null());
        let overaligned = Layout::from_size_align(64, 128).unwrap();
        assert!(RESERVE_POOL.alloc(overaligned).is_null());
        RESERVE_POOL.free(a, layout);
        RESERVE_POOL.free(b, layout);
        assert!(take_reserve_used());
    }
}
