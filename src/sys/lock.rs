//! The logger's lock: a futex word, as std's Mutex is on Linux, without
//! poisoning. The logger takes no notice of poisoning (a panic caught at
//! the C boundary leaves its state usable), and std's check costs the
//! flight recorder's call a look at the process's panic count on either
//! side of the lock, one of them while the lock is held.
//!
//! The word is 0 (free), 1 (held) or 2 (held, and a thread may sleep on
//! it): the third mutex of Drepper's "Futexes Are Tricky". A private futex:
//! a forked child has the lock as the fork handlers left it, in memory of
//! its own.

use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU32, Ordering};

// How often this thread took a lock, and how many it holds now: what the
// tests of the ways into the ring count.
#[cfg(test)]
thread_local! {
    pub static TAKES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    pub static HELD: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The word has a cache line of its own: a neighbour read on every call
/// (the flight recorder's hints, say) that shared its line would be
/// fetched again after every take and release by another core. (When a
/// grown `State` moved the word into the hints' line, eight threads on two
/// cores recorded 1.7 times slower.)
#[repr(C, align(64))]
pub struct Lock<T> {
    word: AtomicU32,
    _alone: [u8; 60],
    value: UnsafeCell<T>,
}

// SAFETY: the value is reached only through a Guard, and one thread at a
// time holds one (the word's Acquire and Release order what they do).
unsafe impl<T: Send> Sync for Lock<T> {}

/// The lock held; let go of when dropped.
pub struct Guard<'a, T> {
    lock: &'a Lock<T>,
    // Let go of by the thread that took it, as a MutexGuard is.
    _thread: PhantomData<*const ()>,
}

impl<T> Lock<T> {
    pub const fn new(value: T) -> Lock<T> {
        Lock {
            word: AtomicU32::new(0),
            _alone: [0; 60],
            value: UnsafeCell::new(value),
        }
    }

    /// Where the value lives: which value a reference is, never to be read
    /// through without the lock.
    pub fn as_ptr(&self) -> *const T {
        self.value.get()
    }

    /// The lock, if it is free.
    #[inline(always)]
    pub fn try_lock(&self) -> Option<Guard<'_, T>> {
        self.word
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .ok()?;
        #[cfg(test)]
        {
            TAKES.with(|n| n.set(n.get() + 1));
            HELD.with(|n| n.set(n.get() + 1));
        }
        Some(Guard {
            lock: self,
            _thread: PhantomData,
        })
    }

    /// The lock, waited for. futex(2) may change errno.
    #[inline]
    pub fn lock(&self) -> Guard<'_, T> {
        self.try_lock().unwrap_or_else(|| self.lock_contended())
    }

    #[cold]
    #[inline(never)]
    fn lock_contended(&self) -> Guard<'_, T> {
        // Its holder lets go soon (nothing slow is done under it): a
        // little spinning first, as std's does.
        for _ in 0..100 {
            if self.word.load(Ordering::Relaxed) == 0 {
                if let Some(guard) = self.try_lock() {
                    return guard;
                }
            }
            std::hint::spin_loop();
        }
        // Marked 2 whenever it is taken from here on: this thread may have
        // slept, and another may be sleeping still.
        while self.word.swap(2, Ordering::Acquire) != 0 {
            futex(&self.word, libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG, 2);
        }
        #[cfg(test)]
        {
            TAKES.with(|n| n.set(n.get() + 1));
            HELD.with(|n| n.set(n.get() + 1));
        }
        Guard {
            lock: self,
            _thread: PhantomData,
        }
    }
}

impl<T> Deref for Guard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard holds the lock: no other reference to the
        // value exists while it lives.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for Guard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this the only one.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for Guard<'_, T> {
    #[inline(always)]
    fn drop(&mut self) {
        #[cfg(test)]
        HELD.with(|n| n.set(n.get().saturating_sub(1)));
        if self.lock.word.swap(0, Ordering::Release) == 2 {
            wake(&self.lock.word);
        }
    }
}

#[cold]
#[inline(never)]
fn wake(word: &AtomicU32) {
    futex(word, libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG, 1);
}

/// futex(2) on `word`: waits while it is `val` (FUTEX_WAIT; a signal or a
/// changed word ends the wait, which the caller's loop looks at again), or
/// wakes `val` waiters (FUTEX_WAKE).
fn futex(word: &AtomicU32, op: libc::c_int, val: u32) {
    // SAFETY: `word` is a live, aligned 32-bit atomic; no timeout, no
    // second word.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op,
            val,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_take_turns_and_a_waiter_is_woken() {
        static COUNT: Lock<u64> = Lock::new(0);
        let threads: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| {
                    for _ in 0..20_000 {
                        let mut n = COUNT.lock();
                        // Not an atomic add: lost updates would show.
                        let v = *n;
                        std::hint::black_box(&v);
                        *n = v + 1;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*COUNT.lock(), 80_000);
        let held = COUNT.lock();
        assert!(COUNT.try_lock().is_none(), "taken twice");
        drop(held);
        assert!(COUNT.try_lock().is_some(), "not let go of");
    }
}
