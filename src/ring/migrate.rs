//! Carrying records over into a new ring: when the ring is resized, and when
//! a ring file left by an earlier run is taken up. The new ring gets text:
//! records that referred to the old ring's dictionary carry their names
//! again.

use super::layout::Stats;
use super::reader::{self, Entry, Region};
use super::record::Stored;
use super::writer::Ring;

impl Ring {
    /// Copies the valid records of `old` into this (empty) ring, newest kept
    /// when they do not all fit, keeping their sequence numbers and counting
    /// the ones left out as lost.
    pub fn migrate_from(&mut self, old: &Ring) {
        self.migrate(&old.view(), old.stats());
    }

    /// As [`Ring::migrate_from`], from any region (a ring image read from a
    /// file, say) whose counters are `old_stats`.
    pub fn migrate(&mut self, old: &dyn Region, old_stats: Stats) {
        let mut carried = 0;
        reader::read(&old, |entry| {
            if let Entry::Record(rec) = entry {
                // A fresh ring has no record in flight to block it.
                if self.append_as(&Stored::text(rec), rec.seq).is_ok() {
                    carried += 1;
                }
            }
        });
        // Records evicted while migrating were counted by the writer; the
        // ones the old ring held but could not hand over (damaged, or torn by
        // a killed writer) are counted here.
        let held = old_stats.recorded.saturating_sub(old_stats.lost);
        self.carry_counters(
            old_stats.recorded,
            old_stats.lost + held.saturating_sub(carried),
        );
    }
}
