//! What a ring holds now, for sizing it: how many intact records, and the
//! time from the oldest to the newest. `vlog-ctl stats` and `vlog-dump
//! --stats` say it, so a ring's size can be chosen from what it kept.

use super::reader::Entry;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Held {
    pub records: u64,
    oldest_ns: Option<u64>,
    newest_ns: Option<u64>,
}

impl Held {
    /// Counts `entry` if it is an intact record.
    pub fn see(&mut self, entry: &Entry) {
        if let Entry::Record(rec) = entry {
            self.see_at(rec.time_ns);
        }
    }

    /// Counts a record made at `t`.
    pub fn see_at(&mut self, t: u64) {
        self.records += 1;
        self.oldest_ns = Some(self.oldest_ns.map_or(t, |o| o.min(t)));
        self.newest_ns = Some(self.newest_ns.map_or(t, |n| n.max(t)));
    }

    /// The times of the oldest and the newest record, if any.
    pub fn bounds(&self) -> Option<(u64, u64)> {
        self.oldest_ns.zip(self.newest_ns)
    }

    /// What a live ring holds, known without walking it: `records` (its
    /// counters' recorded less lost), the oldest record's time (the one
    /// record read), and now as the newest.
    pub fn live(records: u64, oldest_ns: Option<u64>, now_ns: u64) -> Held {
        Held {
            records,
            oldest_ns,
            newest_ns: oldest_ns.map(|o| now_ns.max(o)),
        }
    }

    /// The seconds from the oldest record held to the newest, to the
    /// millisecond ("12.345"); "0.000" for fewer than two.
    pub fn covers(&self) -> String {
        let ns = match (self.oldest_ns, self.newest_ns) {
            (Some(o), Some(n)) => n - o,
            _ => 0,
        };
        format!(
            "{}.{:03}",
            ns / 1_000_000_000,
            ns % 1_000_000_000 / 1_000_000
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::priority::Priority;
    use crate::record::Record;

    fn at(time_ns: u64) -> Record<'static> {
        Record {
            seq: 0,
            time_ns,
            tid: 1,
            line: 1,
            priority: Priority::Info,
            source: b"s",
            file: b"f",
            func: b"f",
            message: b"m",
            fields: b"",
            context: false,
            id: 0,
        }
    }

    #[test]
    fn it_counts_records_and_the_time_between_the_oldest_and_the_newest() {
        let mut held = Held::default();
        assert_eq!((held.records, held.covers()), (0, "0.000".to_owned()));
        held.see(&Entry::Record(at(5_000_000_000)));
        assert_eq!(held.covers(), "0.000");
        held.see(&Entry::Gap {
            expected: 1,
            found: 3,
        });
        held.see(&Entry::Record(at(17_345_999_999)));
        held.see(&Entry::Record(at(9_000_000_000)));
        assert_eq!((held.records, held.covers()), (3, "12.345".to_owned()));
        assert_eq!(held.bounds(), Some((5_000_000_000, 17_345_999_999)));
        assert_eq!(Held::default().bounds(), None);
        let live = Held::live(7, Some(5_000_000_000), 6_500_000_000);
        assert_eq!((live.records, live.covers()), (7, "1.500".to_owned()));
        assert_eq!(Held::live(0, None, 9).covers(), "0.000");
    }
}
