//! What one output remembers of the contexts it printed (see
//! `logger::context`): where each thread's last context ended, so that no
//! record is printed twice as context, and when each error site last had
//! one, so that an error that repeats does not print the same story again.
//! Fixed tables, so that printing a context never allocates; the least
//! recently used entry makes room.

/// How many threads (or relays) an output remembers the last context of.
pub const MARKS: usize = 64;
/// How many error sites an output remembers the last context of.
pub const SITES: usize = 64;

/// Where the last context of one key ended: its error's sequence number
/// and position in the ring.
#[derive(Clone, Copy, Debug, Default)]
struct Mark {
    key: u64,
    seq: u64,
    pos: u64,
    /// When it was last used (`Memory::uses`); 0: free.
    used: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct SiteMark {
    site: u64,
    at_ms: u64,
    used: bool,
    /// A later error of the site said what it left out, within this
    /// interval: the others after it say nothing.
    noted: bool,
}

/// One output's memory of its contexts.
#[derive(Clone, Debug)]
pub struct Memory {
    marks: [Mark; MARKS],
    /// The newest end of a mark that made room for another: a key not in
    /// the table takes nothing at or before it, so nothing is printed
    /// twice even for a thread forgotten.
    floor: Option<u64>,
    sites: [SiteMark; SITES],
    uses: u64,
}

impl Default for Memory {
    fn default() -> Memory {
        Memory::new()
    }
}

/// Where a key's context starts: after `seq` (None: anything the ring
/// holds), reading from `pos`; `marked` when its own last context set it
/// (not the floor).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Since {
    pub seq: Option<u64>,
    pub pos: u64,
    pub marked: bool,
}

impl Memory {
    pub const fn new() -> Memory {
        Memory {
            marks: [Mark {
                key: 0,
                seq: 0,
                pos: 0,
                used: 0,
            }; MARKS],
            floor: None,
            sites: [SiteMark {
                site: 0,
                at_ms: 0,
                used: false,
                noted: false,
            }; SITES],
            uses: 0,
        }
    }

    /// Where the context of `key` starts.
    pub fn since(&self, key: u64) -> Since {
        match self.marks.iter().find(|m| m.used != 0 && m.key == key) {
            Some(m) => Since {
                seq: Some(m.seq),
                pos: m.pos,
                marked: true,
            },
            None => Since {
                seq: self.floor,
                pos: 0,
                marked: false,
            },
        }
    }

    /// The context of `key` ended at the error `seq`, at `pos`.
    pub fn ended(&mut self, key: u64, seq: u64, pos: u64) {
        self.uses += 1;
        let slot = match self.marks.iter().position(|m| m.used != 0 && m.key == key) {
            Some(i) => i,
            None => {
                let (i, oldest) = self
                    .marks
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, m)| m.used)
                    .map(|(i, m)| (i, *m))
                    .unwrap_or_default();
                if oldest.used != 0 {
                    self.floor = Some(self.floor.map_or(oldest.seq, |f| f.max(oldest.seq)));
                }
                i
            }
        };
        self.marks[slot] = Mark {
            key,
            seq,
            pos,
            used: self.uses,
        };
    }

    /// How long ago (ms) `site` last had a context, if it was less than
    /// `every_ms` ago.
    pub fn site_recent(&self, site: u64, now_ms: u64, every_ms: u64) -> Option<u64> {
        self.sites
            .iter()
            .find(|s| s.used && s.site == site)
            .map(|s| now_ms.saturating_sub(s.at_ms))
            .filter(|&ago| ago < every_ms)
    }

    /// `site` had a context at `now_ms`.
    pub fn site_printed(&mut self, site: u64, now_ms: u64) {
        let slot = self
            .sites
            .iter()
            .position(|s| s.used && s.site == site)
            .or_else(|| self.sites.iter().position(|s| !s.used))
            .unwrap_or_else(|| {
                let oldest = self.sites.iter().map(|s| s.at_ms).min().unwrap_or(0);
                self.sites
                    .iter()
                    .position(|s| s.at_ms == oldest)
                    .unwrap_or(0)
            });
        self.sites[slot] = SiteMark {
            site,
            at_ms: now_ms,
            used: true,
            noted: false,
        };
    }

    /// Whether a later error of `site`, within the interval of its last
    /// context, is the first to say what it left out: one note per site
    /// per interval, so a repeating error prints one line, not two.
    pub fn site_note_due(&mut self, site: u64) -> bool {
        match self.sites.iter_mut().find(|s| s.used && s.site == site) {
            Some(s) => !std::mem::replace(&mut s.noted, true),
            None => false,
        }
    }

    /// Starts again after the context setting changed (every thread's
    /// records taken, or each thread's), or, with `next_seq`, the outputs
    /// or the ring did: nothing from before the newest end a key's context
    /// took, nor made before `next_seq`, is taken again. The sites are kept.
    pub fn restart(&mut self, next_seq: Option<u64>) {
        let newest = self
            .marks
            .iter()
            .filter(|m| m.used != 0)
            .map(|m| m.seq)
            .max();
        let before = next_seq.and_then(|n| n.checked_sub(1));
        self.floor = self.floor.max(newest).max(before);
        self.marks = [Mark::default(); MARKS];
    }

    /// Forgets everything (a forked child starts with its own).
    pub fn forget(&mut self) {
        *self = Memory::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_forgotten_takes_nothing_from_before_what_was_forgotten() {
        let mut m = Memory::new();
        assert_eq!(
            m.since(7),
            Since {
                seq: None,
                pos: 0,
                marked: false
            }
        );
        m.ended(7, 100, 4096);
        assert_eq!(m.since(7).seq, Some(100));
        assert_eq!(m.since(7).pos, 4096);
        assert!(m.since(7).marked);
        for key in 0..MARKS as u64 {
            m.ended(1000 + key, 200 + key, 0);
        }
        // Key 7 was the least recently used: it made room, and the floor
        // keeps what it had printed from being printed again.
        assert_eq!(
            m.since(7),
            Since {
                seq: Some(100),
                pos: 0,
                marked: false
            }
        );
        m.ended(2000, 900, 0);
        assert_eq!(m.since(7).seq, Some(200), "key 1000 made room next");
    }

    #[test]
    fn sites_are_remembered_for_the_interval() {
        let mut m = Memory::new();
        assert_eq!(m.site_recent(1, 0, 60_000), None);
        m.site_printed(1, 1000);
        assert_eq!(m.site_recent(1, 31_000, 60_000), Some(30_000));
        assert_eq!(m.site_recent(1, 61_000, 60_000), None);
        assert_eq!(m.site_recent(2, 31_000, 60_000), None);
        for site in 2..=SITES as u64 + 1 {
            m.site_printed(site, 2000 + site);
        }
        assert_eq!(m.site_recent(1, 3000, 60_000), None, "the oldest made room");
        assert!(m.site_recent(2, 3000, 60_000).is_some());
        m.forget();
        assert_eq!(m.site_recent(2, 3000, 60_000), None);
    }

    #[test]
    fn a_site_notes_what_it_left_out_once_an_interval() {
        let mut m = Memory::new();
        m.site_printed(1, 1000);
        assert!(m.site_note_due(1), "the first later error notes");
        assert!(!m.site_note_due(1), "the next says nothing");
        assert!(
            !m.site_note_due(2),
            "a site with no context has nothing to note"
        );
        m.site_printed(1, 61_000);
        assert!(m.site_note_due(1), "a new interval, a new note");
    }
}
