//! The writer thread's sleep mark (see the [W6]/[R6] pair in `printer`).

use std::sync::atomic::{AtomicU32, Ordering};

/// The writer thread's sleep: the number of the writer thread that owns
/// it, shifted left one bit, with the low bit set while that thread sleeps
/// (waiting on `BELL` until a caller wakes it). A writer thread changes the
/// word only from a value with its own number in it (compare-and-swap):
/// one that was replaced and has not ended yet can neither clear the bit
/// of the thread that replaced it, which would then sleep through every
/// line, nor set it. A caller clears the bit whoever owns it.
pub struct Sleep {
    word: AtomicU32,
    writers: AtomicU32,
}

const SLEEPING: u32 = 1;

impl Sleep {
    pub const fn new() -> Sleep {
        Sleep {
            word: AtomicU32::new(0),
            writers: AtomicU32::new(0),
        }
    }

    /// A new writer thread's number; the sleep is its own from now on,
    /// awake.
    pub fn own(&self) -> u32 {
        let me = self.writers.fetch_add(1, Ordering::SeqCst).wrapping_add(1) & (u32::MAX >> 1);
        self.word.store(me << 1, Ordering::SeqCst);
        me
    }

    /// Writer thread `me` marks itself asleep: false when the sleep is
    /// another thread's now (`me` was replaced).
    pub fn fall_asleep(&self, me: u32) -> bool {
        self.word
            .compare_exchange(
                me << 1,
                me << 1 | SLEEPING,
                Ordering::SeqCst,
                Ordering::SeqCst,
            )
            .is_ok()
    }

    /// Writer thread `me` takes back its mark (it found lines pending), if
    /// the sleep is still its own.
    pub fn stay_awake(&self, me: u32) {
        let _ = self.word.compare_exchange(
            me << 1 | SLEEPING,
            me << 1,
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
    }

    /// Whether writer thread `me` is still marked asleep (no caller woke
    /// it).
    pub fn sleeps(&self, me: u32) -> bool {
        self.word.load(Ordering::SeqCst) == me << 1 | SLEEPING
    }

    /// A caller's part: clears the mark, whoever owns it; true when it was
    /// set (the bell is to be rung).
    #[inline(always)]
    pub fn wake(&self) -> bool {
        self.word.load(Ordering::Relaxed) & SLEEPING != 0
            && self.word.fetch_and(!SLEEPING, Ordering::SeqCst) & SLEEPING != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer thread replaced while it had found lines pending on its way
    /// to sleep (its `stay_awake` comes late, as a preempted thread's
    /// does) leaves the sleep of the one that replaced it alone: that one
    /// is still marked asleep, so the next line's caller wakes it. (A
    /// plain flag cleared by the old thread left the new one asleep with
    /// no mark, and every line after unwritten until the ring was half
    /// full or the program flushed.)
    #[test]
    fn a_replaced_writer_thread_cannot_hide_its_successors_sleep() {
        let sleep = Sleep::new();
        let old = sleep.own();
        assert!(sleep.fall_asleep(old));
        // Replaced meanwhile (`start`), and the new one sleeps.
        let new = sleep.own();
        assert!(sleep.fall_asleep(new));
        // The old one, late, found lines pending and takes its mark back.
        sleep.stay_awake(old);
        assert!(sleep.sleeps(new), "the new writer thread's mark is gone");
        // And cannot mark itself asleep again either.
        assert!(!sleep.fall_asleep(old));
        assert!(sleep.sleeps(new));
        // The next line's caller wakes the new one, once.
        assert!(sleep.wake());
        assert!(!sleep.sleeps(new));
        assert!(!sleep.wake());
        // Awake, it marks itself asleep again as usual.
        assert!(sleep.fall_asleep(new));
        sleep.stay_awake(new);
        assert!(!sleep.sleeps(new));
    }
}
