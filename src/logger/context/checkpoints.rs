//! Where a context's scan may start: record boundaries the outputs' walk
//! passed (a record's start cannot be found from its end), so that an
//! error's caller reads at most the last `SCAN_MAX` bytes of the ring.

/// How far back in the ring a context looks, at most: a scan reads about
/// 48 bytes of each record, so an error's caller spends about a millisecond
/// on it, whatever the ring's size.
pub const SCAN_MAX: u64 = 4 << 20;

/// Record boundaries the outputs' walk passed, at least `SPACING` apart:
/// where a context's scan may start within the last `SCAN_MAX` bytes of
/// the ring (a record's start cannot be found from its end).
#[derive(Debug)]
pub struct Checkpoints {
    pos: [u64; CHECKPOINTS],
    len: usize,
    next: usize,
}

const CHECKPOINTS: usize = 64;
const SPACING: u64 = SCAN_MAX / CHECKPOINTS as u64;

impl Checkpoints {
    pub const fn new() -> Checkpoints {
        Checkpoints {
            pos: [0; CHECKPOINTS],
            len: 0,
            next: 0,
        }
    }

    /// A record starts at `pos` (of the ring the outputs read now).
    #[inline]
    pub fn passed(&mut self, pos: u64) {
        let last = self.pos[(self.next + CHECKPOINTS - 1) % CHECKPOINTS];
        if self.len > 0 && pos < last {
            // Positions only grow in one ring: another ring.
            self.clear();
        } else if self.len > 0 && pos - last < SPACING {
            return;
        }
        self.pos[self.next] = pos;
        self.next = (self.next + 1) % CHECKPOINTS;
        self.len = (self.len + 1).min(CHECKPOINTS);
    }

    /// The oldest boundary at most `SCAN_MAX` before `at`, if one is known.
    pub fn window(&self, at: u64) -> Option<u64> {
        let from = at.saturating_sub(SCAN_MAX);
        (0..self.len)
            .map(|k| self.pos[(self.next + CHECKPOINTS - self.len + k) % CHECKPOINTS])
            .find(|&p| p >= from && p <= at)
    }

    /// Forgets them (the ring was replaced).
    pub fn clear(&mut self) {
        self.len = 0;
        self.next = 0;
    }
}

impl Default for Checkpoints {
    fn default() -> Checkpoints {
        Checkpoints::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_starts_at_the_oldest_boundary_within_reach() {
        let mut c = Checkpoints::new();
        assert_eq!(c.window(1 << 30), None);
        for k in 0..200u64 {
            c.passed(k * SPACING);
            // Closer than SPACING: not kept.
            c.passed(k * SPACING + 8);
        }
        let at = 199 * SPACING + 100;
        let w = c.window(at).unwrap();
        assert!(w >= at - SCAN_MAX && w <= at, "{w}");
        assert_eq!(w, 136 * SPACING, "the oldest of the 64 kept within reach");
        assert_eq!(c.window(10 * SPACING), None, "forgotten");
        // A smaller position is another ring's: the old ones go.
        c.passed(5);
        assert_eq!(c.window(5), Some(5));
        assert_eq!(c.window(at), None);
        c.clear();
        assert_eq!(c.window(5), None);
    }
}
