//! The cached levels of the sources and the call sites: what the filters,
//! the default level and the outputs make of each, written into every
//! registered source and every site the catalog knows whenever one of them
//! changes, so the macros' inline check stays one load and one compare.

use std::ptr::NonNull;
use std::sync::atomic::Ordering;

use super::{safe_mode, State, SILENT};
use crate::config::filter::Wanted;
use crate::config::limit::RateLimit;
use crate::config::matcher::{Match, SiteKey};
use crate::error::ConfigError;
use crate::site::{self, vlog__site, LiveSite, Section, SITE_BACKTRACE};
use crate::source::{vlog_source, Live, OFF, UNKNOWN};

/// Marks `site`'s calls as taking a backtrace, or not. Under the logger's
/// lock, as every write of a site's state after it is published
/// (`vlog__site_prepare` never writes a marked site's: it is not new).
fn mark_backtrace(site: &vlog__site, on: bool) {
    if on {
        site.state.fetch_or(SITE_BACKTRACE, Ordering::AcqRel);
    } else if site.state.load(Ordering::Relaxed) & SITE_BACKTRACE != 0 {
        site.state.fetch_and(!SITE_BACKTRACE, Ordering::AcqRel);
    }
}

impl State {
    /// The cached level for a source with this name.
    pub(super) fn resolve(&self, name: &[u8]) -> i32 {
        self.level_for(self.filters.lookup(name))
    }

    /// The cached level for a call site; and the site marked for a
    /// backtrace on each record, or not, as the `bt:` filters say (every
    /// level written is written through here, so the mark follows the
    /// filters as the level does).
    fn resolve_site(&self, site: &vlog__site) -> i32 {
        let d = site.described();
        let key = SiteKey {
            source: d.source,
            file: d.file,
            func: d.func,
            line: d.line,
            id: site.id.load(Ordering::Relaxed),
        };
        mark_backtrace(site, self.filters.backtrace_site(&key));
        self.level_for(self.filters.lookup_site(&key))
    }

    /// What a filter's answer (None: no filter matched) makes a level.
    fn level_for(&self, wanted: Option<Wanted>) -> i32 {
        if safe_mode() == SILENT {
            return OFF;
        }
        let wanted = match wanted {
            Some(Wanted::Off) => return OFF,
            Some(Wanted::From(p)) => p as i32,
            Some(Wanted::Backtrace) | None => self.level as i32,
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
        super::watchers::set_lowest(self.lowest_kept());
        for source in self.sources.iter() {
            source.set_level(self.resolve(source.name_bytes()));
        }
        for site in self.catalog.iter() {
            site.level.store(self.resolve_site(site), Ordering::Relaxed);
        }
    }

    /// The lowest priority a record from a source of any name is kept at:
    /// the default level's or a source filter's (what `watchers` tell).
    fn lowest_kept(&self) -> i32 {
        self.filters
            .0
            .iter()
            .filter(|f| matches!(f.target, Match::Source(_)) && f.wanted != Wanted::Backtrace)
            .map(|f| self.level_for(Some(f.wanted)))
            .fold(self.level_for(None), i32::min)
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

    /// Sets `VLOG_RATELIMIT` (its syntax; `off` for none).
    pub fn set_ratelimit(&mut self, spec: &str) -> Result<(), ConfigError> {
        let limit = RateLimit::parse(spec)?;
        self.ensure_init();
        self.apply_ratelimit(limit);
        Ok(())
    }

    pub(super) fn apply_ratelimit(&mut self, limit: Option<RateLimit>) {
        self.ratelimit = limit;
        site::set_global_limit(limit.map(|l| (l.from as i32, l.burst, l.seconds)));
    }

    /// The limit in force, as `VLOG_RATELIMIT` writes it.
    pub fn ratelimit_env(&self) -> String {
        RateLimit::as_env(self.ratelimit)
    }

    /// Forgets a source whose object is being unloaded (`VLOG_INIT`'s
    /// destructor): it is turned off, so a call from a destructor that runs
    /// later never registers it again.
    pub fn unregister(&mut self, source: &vlog_source) {
        self.catalog.remove_source(source);
        self.sources.remove(source);
        source.set_level(OFF);
    }

    /// A site's level, learning of the site (and its source) first if it
    /// is new: its id is computed, and a site no section holds is kept
    /// loose (its level stays unknown, and its next call asks again, if
    /// there is no memory to keep it).
    pub fn site_level(&mut self, site: LiveSite) -> i32 {
        match site.get().level() {
            UNKNOWN => self.learn_site(site),
            level => level,
        }
    }

    #[cold]
    fn learn_site(&mut self, site: LiveSite) -> i32 {
        self.ensure_init();
        let s = site.get();
        if let Some(source) = s.source() {
            self.register(source);
        }
        s.id.store(s.compute_id(), Ordering::Relaxed);
        let level = self.resolve_site(s);
        if self.catalog.contains(s) || self.catalog.add_loose(site) {
            s.level.store(level, Ordering::Relaxed);
        }
        level
    }

    /// A site whose format the first call told (it was not a literal at
    /// compile time): its id, and so perhaps its level, changed.
    pub fn site_learned(&mut self, site: &vlog__site) {
        site.id.store(site.compute_id(), Ordering::Relaxed);
        if site.level() != UNKNOWN {
            site.level.store(self.resolve_site(site), Ordering::Relaxed);
        }
    }

    /// Takes a loaded object's sites: their ids now, their levels too
    /// once vlog is running (else on their first call, or when it starts).
    pub fn add_section(&mut self, section: Section) {
        let start = section.start();
        if !self.catalog.add_section(section) {
            return;
        }
        for site in self.catalog.section(start) {
            site.id.store(site.compute_id(), Ordering::Relaxed);
            if self.initialized {
                site.level.store(self.resolve_site(site), Ordering::Relaxed);
            }
        }
        if self.initialized {
            self.register_site_sources();
        }
    }

    /// Registers the sources the catalog's sites name: a source is known
    /// (its level kept, listed) before its first call.
    pub(super) fn register_site_sources(&mut self) {
        let sources: Vec<_> = self.catalog.iter().filter_map(vlog__site::source).collect();
        for source in sources {
            self.register(source);
        }
    }

    /// At shutdown: the loaded objects' sites stay known (their objects
    /// hand them over once), asking again on their next call; no limit;
    /// the lowest level kept unknown.
    pub(super) fn forget_site_levels(&mut self) {
        super::watchers::set_lowest(crate::source::UNKNOWN);
        for site in self.catalog.iter() {
            site.level.store(UNKNOWN, Ordering::Relaxed);
            mark_backtrace(site, false);
        }
        self.apply_ratelimit(None);
    }

    /// An object being unloaded takes its sites back.
    pub fn remove_section(&mut self, start: NonNull<*const vlog__site>) {
        self.catalog.remove_section(start);
    }

    /// Every site the catalog knows, for a listing, each with its level
    /// (what it will be for a site that has not run yet).
    pub fn sites(&self) -> impl Iterator<Item = (&vlog__site, i32)> {
        self.catalog.iter().map(|site| match site.level() {
            UNKNOWN => (site, self.resolve_site(site)),
            level => (site, level),
        })
    }

    /// Every source registered (by a call) or named by a known site, each
    /// once, with its level as a call from it without a site sees it.
    pub fn sources_known(&self) -> Vec<(Vec<u8>, i32)> {
        let mut names: Vec<Vec<u8>> = self
            .sources
            .iter()
            .map(|s| s.name_bytes().to_vec())
            .collect();
        names.extend(
            self.catalog
                .iter()
                .filter_map(|s| s.source())
                .map(|s| s.get().name_bytes().to_vec()),
        );
        names.sort();
        names.dedup();
        names
            .into_iter()
            .map(|name| {
                let level = self.resolve(&name);
                (name, level)
            })
            .collect()
    }
}

/// A call site's level, learning of the site if it is new (`OFF` when
/// dropped as nested: the message that asked is dropped).
pub fn site_level(site: LiveSite) -> i32 {
    super::enter(|state| state.site_level(site)).unwrap_or_else(|| {
        crate::stats::add(&crate::stats::NESTED_DROPPED, 1);
        OFF
    })
}

/// Registers a source and returns its level (`OFF` when dropped as
/// nested).
pub fn register(source: Live) -> i32 {
    super::enter(|state| state.register(source)).unwrap_or_else(|| {
        // The message that asked is dropped.
        crate::stats::add(&crate::stats::NESTED_DROPPED, 1);
        OFF
    })
}
