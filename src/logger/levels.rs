//! The sources' cached levels: what the filters, the default level and the
//! outputs make of each source, written into every registered source
//! whenever one of them changes, so the macros' inline check stays one load
//! and one compare.

use std::sync::atomic::Ordering;

use super::{safe_mode, State, SILENT};
use crate::config::filter::Wanted;
use crate::source::{vlog_print_level, vlog_source, OFF};

impl State {
    /// The cached level for a source with this name.
    pub(super) fn resolve(&self, name: &[u8]) -> i32 {
        if safe_mode() == SILENT {
            return OFF;
        }
        let wanted = match self.filters.lookup(name) {
            Some(Wanted::Off) => return OFF,
            Some(Wanted::From(p)) => p as i32,
            None => self.level as i32,
        };
        if self.ring.is_some() {
            return wanted;
        }
        // Without a ring, a message no output prints is read by no one.
        wanted.max(self.printed_level())
    }

    /// Writes every registered source's level, and the lowest priority any
    /// output prints (the header reads it to tell whether a message can be
    /// deferred).
    pub(super) fn refresh_sources(&self) {
        for source in self.sources.iter() {
            source.set_level(self.resolve(source.name_bytes()));
        }
        vlog_print_level.store(self.printed_level(), Ordering::Relaxed);
    }

    /// The lowest priority any output prints, as a source's level (OFF for
    /// none).
    fn printed_level(&self) -> i32 {
        if self.lowest == super::NONE_PRINTED {
            OFF
        } else {
            self.lowest as i32
        }
    }

    pub fn unregister(&mut self, source: &vlog_source) {
        self.sources.remove(source);
    }
}
