//! Call sites: the `vlog__site` that every VLOG_* macro use declares, the
//! promise that keeps one valid (`LiveSite`), the catalog of every site a
//! loaded object holds, and a site's stable message id.
//!
//! A site is a static the macro initialises at compile time with what never
//! changes (its source, format, file, function, line, priority and limit)
//! and places a pointer to in the `vlog_sites` linker section; each object
//! (the program, each shared library) hands its section to the library when
//! it is loaded (`VLOG_INIT`'s constructor) and takes it back when it is
//! unloaded, as the kernel's dynamic debug does with `__dyndbg`. So every
//! site is known before its first call: the library writes each one's
//! level (`level`, the macros' one load and compare) whenever the
//! configuration changes, lists them (`vlog-ctl sites`), and matches them
//! by file, function, line and id.

use std::ffi::{c_char, c_int, CStr};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::source::{vlog_source, Live};
use crate::stats;

/// The lowest priority `VLOG_RATELIMIT` limits at every site (above 4:
/// none). Kept by the library; read inline by the header, so a call that
/// neither its site nor this limits costs one load and compare more.
#[no_mangle]
#[allow(non_upper_case_globals)]
pub static vlog__limit_level: AtomicI32 = AtomicI32::new(NO_LIMIT);
/// `vlog__limit_level` when `VLOG_RATELIMIT` is off.
/// cbindgen:ignore
pub const NO_LIMIT: i32 = 99;
/// `VLOG_RATELIMIT`'s burst and interval.
static LIMIT_BURST: AtomicU32 = AtomicU32::new(VLOG_RATELIMIT_BURST);
static LIMIT_SECONDS: AtomicU32 = AtomicU32::new(VLOG_RATELIMIT_SECONDS);

/// Sets `VLOG_RATELIMIT`: from priority `from` (1-4; None: off), at most
/// `burst` calls per `seconds` at each site that has no limit of its own.
pub fn set_global_limit(limit: Option<(i32, u32, u32)>) {
    match limit {
        Some((from, burst, seconds)) => {
            LIMIT_BURST.store(burst, Ordering::Relaxed);
            LIMIT_SECONDS.store(seconds, Ordering::Relaxed);
            vlog__limit_level.store(from, Ordering::Relaxed);
        }
        None => vlog__limit_level.store(NO_LIMIT, Ordering::Relaxed),
    }
}

/// The most calls a rate limit lets through per interval (its count is
/// kept in 24 bits).
/// cbindgen:ignore
pub const BURST_MAX: u32 = 1_000_000;

/// Internal: a site with no limit of its own (`VLOG_RATELIMIT` may still
/// limit it).
pub const VLOG__LIMIT_NONE: u32 = 0;
/// Internal: the site's first call that passes the filters is recorded, no
/// other (`VLOG_*_ONCE`).
pub const VLOG__LIMIT_ONCE: u32 = 1;
/// Internal: every `limit_count`-th call is recorded, the first included
/// (`VLOG_*_EVERY_N`).
pub const VLOG__LIMIT_EVERY_N: u32 = 2;
/// Internal: at most `limit_count` calls per `limit_seconds`
/// (`VLOG_*_RATELIMITED`).
pub const VLOG__LIMIT_RATE: u32 = 3;
/// The burst and interval of `VLOG_*_RATELIMITED`: the kernel's
/// `printk_ratelimited`, 10 messages per 5 seconds.
pub const VLOG_RATELIMIT_BURST: u32 = 10;
pub const VLOG_RATELIMIT_SECONDS: u32 = 5;

/// Internal: a call site, one per VLOG_* macro use (a static the macro
/// declares and initialises, with a pointer to it in the `vlog_sites`
/// section). The fields up to `limit_seconds` are the macro's constants;
/// the library keeps the rest. Its layout is part of the ABI
/// (VLOG_ABI_VERSION).
#[repr(C)]
pub struct vlog__site {
    /// The lowest priority recorded from this site, kept by the library:
    /// 0 until the library knows the site (its first call asks), 5 when
    /// nothing is. The macros' inline check.
    pub level: AtomicI32,
    /// VLOG__SITE_NEW, _DEFERRED, _FORMAT or _UNSAFE; written last.
    pub state: AtomicI32,
    /// The source of the file the site is in (`VLOG_INIT`).
    pub source: *const vlog_source,
    /// The format, NULL when it is not a string literal (then the first
    /// call's, if that one is).
    pub fmt: *const c_char,
    pub file: *const c_char,
    pub func: *const c_char,
    pub line: c_int,
    /// The priority the macro names, 0 when it is chosen at run time.
    pub prio: c_int,
    /// VLOG__LIMIT_*, and its count (N, or the burst) and interval.
    pub limit: u32,
    pub limit_count: u32,
    pub limit_seconds: u32,
    /// The site's message id (see `message_id`), written by the library
    /// when it learns of the site.
    pub id: AtomicU32,
    /// How many conversions the format has that take or show an argument
    /// (`%m` included), and how each is fetched.
    pub nargs: u8,
    /// How a call's arguments are recorded, decided once when the site is
    /// prepared (`ffi::words`): as the words the macro captured (with or
    /// without strings to measure and copy), or each argument apart; and
    /// whether the format has a %m (the text of errno is taken at the
    /// call). 0, the general way, until then.
    pub plan: u8,
    /// How many arguments a call passes: `nargs` without the `%m`s.
    pub nwords: u8,
    pub kinds: [u8; VLOG__SITE_MAX_ARGS],
    /// For each string argument, how much of it may be read: its literal
    /// precision, 0xFFFE for a `*` precision (the argument before it), 0xFFFF
    /// for all of it.
    pub precision: [u16; VLOG__SITE_MAX_ARGS],
    /// The lengths of `fmt`, `file` and `func`, so calls need no strlen.
    pub fmt_len: usize,
    pub file_len: usize,
    pub func_len: usize,
    /// The site's entry in the current ring's call-site dictionary (ring id
    /// and offset) and the source it names, so its records carry only the
    /// arguments. Written under the logger's lock.
    pub entry: AtomicU64,
    pub entry_source: AtomicUsize,
    /// The class (VLOG__CLASS_*) each argument must have, 2 bits per
    /// argument from the lowest: what a call's own classes are checked
    /// against, so that no argument is read as what it is not.
    pub classes: u64,
    /// The limit's state: the call count (once, every N) or the current
    /// interval's start and count (rate).
    pub window: AtomicU64,
    /// Calls the limit left out since the site's last record.
    pub suppressed: AtomicU64,
    /// Calls that passed the filters and the limit.
    pub recorded: AtomicU64,
}

/// A bit of `vlog__site.state` set on a site a `bt:` filter matches: the
/// header knows no such state, so its calls take the general way, where
/// the library takes their backtrace (`logger::levels` sets it).
/// cbindgen:ignore
pub const SITE_BACKTRACE: i32 = 0x100;

/// Internal: the most arguments a deferred call site captures.
pub const VLOG__SITE_MAX_ARGS: usize = 32;

// SAFETY: the fields the library writes after the site is published are
// atomic, or written under the logger's lock before `state` is stored with
// Release (and read only after it is loaded with Acquire); the pointers
// are to string literals and a static source.
unsafe impl Sync for vlog__site {}

/// A site's message id: FNV-1a (32 bits) over its source name, a zero byte
/// and its format. The same while the source and the format stay the same,
/// whatever else changes between builds (file, line, function, layout).
/// A site whose format is not a literal has its function in its place.
pub fn message_id(source: &[u8], format: &[u8]) -> u32 {
    id_of(source, &[format])
}

/// FNV-1a over `source`, a zero byte and `parts` one after the other.
fn id_of(source: &[u8], parts: &[&[u8]]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    let bytes = parts.iter().flat_map(|p| p.iter());
    for &b in source.iter().chain(&[0u8]).chain(bytes) {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    // 0 means "no id" in records and dictionary entries.
    h.max(1)
}

/// The bytes of a NUL-terminated string the macro stored (NULL: `none`).
fn literal(s: *const c_char, none: &[u8]) -> &[u8] {
    if s.is_null() {
        return none;
    }
    // SAFETY: the macro stores string literals (`__FILE__`, `__func__`, the
    // format) or NULL, per the site's contract; they live as long as the
    // site.
    unsafe { CStr::from_ptr(s) }.to_bytes()
}

/// What a catalog entry shows of a site.
pub struct Described<'a> {
    pub source: &'a [u8],
    pub file: &'a [u8],
    pub func: &'a [u8],
    pub line: u32,
    /// None when the format is chosen at run time and no call has run.
    pub format: Option<&'a [u8]>,
}

impl vlog__site {
    /// The site's source, if it names one.
    pub fn source(&self) -> Option<Live> {
        let source = NonNull::new(self.source.cast_mut())?;
        // SAFETY: the macro stores the address of its file's static source,
        // which lives as long as the site (the same object); the catalog
        // forgets the site when the object is unloaded.
        Some(unsafe { Live::new(source.as_ref()) })
    }

    /// The site's names and format, read from the macro's strings.
    pub fn described(&self) -> Described<'_> {
        let source = match NonNull::new(self.source.cast_mut()) {
            // SAFETY: as in `source`.
            Some(s) => unsafe { &*s.as_ptr() }.name_bytes(),
            None => b"",
        };
        Described {
            source,
            file: literal(self.file, b""),
            func: literal(self.func, b"?"),
            line: self.line.max(0) as u32,
            format: (!self.fmt.is_null()).then(|| literal(self.fmt, b"")),
        }
    }

    /// The id the site's records carry (computed from its names).
    pub fn compute_id(&self) -> u32 {
        let d = self.described();
        match d.format {
            Some(format) => message_id(d.source, format),
            None => id_of(d.source, &[b"@", d.func]),
        }
    }

    pub fn level(&self) -> i32 {
        self.level.load(Ordering::Relaxed)
    }

    /// Whether a call of priority `prio` that passed the filters is
    /// recorded, as the site's limit (or `VLOG_RATELIMIT`) says; a call
    /// left out is counted (the site's next record reports it). Lock-free
    /// and async-signal-safe; `now_ms` (a monotonic clock in milliseconds,
    /// never 0) is read only by a rate limit.
    pub fn admit(&self, prio: i32, now_ms: impl FnOnce() -> u64) -> bool {
        let (kind, count, seconds) = match self.limit {
            VLOG__LIMIT_NONE => {
                if prio < vlog__limit_level.load(Ordering::Relaxed) {
                    return true;
                }
                let burst = LIMIT_BURST.load(Ordering::Relaxed);
                (
                    VLOG__LIMIT_RATE,
                    burst,
                    LIMIT_SECONDS.load(Ordering::Relaxed),
                )
            }
            kind => (kind, self.limit_count, self.limit_seconds),
        };
        let admitted = match kind {
            VLOG__LIMIT_ONCE => self.window.fetch_add(1, Ordering::Relaxed) == 0,
            VLOG__LIMIT_EVERY_N => {
                let n = self.window.fetch_add(1, Ordering::Relaxed);
                n % u64::from(count.max(1)) == 0
            }
            VLOG__LIMIT_RATE => self.within_rate(count.min(BURST_MAX), seconds, now_ms()),
            _ => true,
        };
        if !admitted {
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            stats::add(&stats::SUPPRESSED, 1);
        }
        admitted
    }

    /// At most `burst` calls per `seconds`: `window` holds the interval's
    /// start (milliseconds, above bit 24) and its count (below), changed
    /// by one compare-and-swap, so threads that call at once count exactly.
    fn within_rate(&self, burst: u32, seconds: u32, now: u64) -> bool {
        const COUNT: u64 = (1 << 24) - 1;
        let span = u64::from(seconds) * 1000;
        let mut w = self.window.load(Ordering::Relaxed);
        loop {
            let (start, n) = (w >> 24, w & COUNT);
            let next = if start == 0 || now.wrapping_sub(start) >= span {
                if burst == 0 {
                    return false;
                }
                now << 24 | 1
            } else if n < u64::from(burst) {
                w + 1
            } else {
                return false;
            };
            match self
                .window
                .compare_exchange_weak(w, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(seen) => w = seen,
            }
        }
    }
}

/// A site the C caller vouches for (see [`vlog__site`]): valid until the
/// catalog forgets it.
#[derive(Clone, Copy, Debug)]
pub struct LiveSite(NonNull<vlog__site>);

// SAFETY: vlog__site is Sync, and a LiveSite only shares the pointer.
unsafe impl Send for LiveSite {}
// SAFETY: as above.
unsafe impl Sync for LiveSite {}

impl LiveSite {
    /// # Safety
    /// `site` stays valid until the catalog forgets it (its object's
    /// section is taken back, or its source is unregistered).
    pub unsafe fn new(site: &vlog__site) -> LiveSite {
        LiveSite(NonNull::from(site))
    }

    pub fn get(&self) -> &vlog__site {
        // SAFETY: valid until the catalog forgets it, per `new`.
        unsafe { self.0.as_ref() }
    }

    /// A site made for a test, in `f.c`, function `f`, line 1, of `source`
    /// with `format` (analysed as the boundary would have it), which lives
    /// as long as the test process (like a C static).
    #[cfg(test)]
    pub fn leaked(source: Live, format: &[u8]) -> LiveSite {
        let format = Box::leak(std::ffi::CString::new(format).unwrap().into_boxed_c_str());
        let site = Box::leak(Box::new(vlog__site {
            level: AtomicI32::new(0),
            state: AtomicI32::new(1),
            source: source.get(),
            fmt: format.as_ptr(),
            file: c"f.c".as_ptr(),
            func: c"f".as_ptr(),
            line: 1,
            prio: 0,
            limit: VLOG__LIMIT_NONE,
            limit_count: 0,
            limit_seconds: 0,
            id: AtomicU32::new(0),
            nargs: 0,
            plan: 0,
            nwords: 0,
            kinds: [0; VLOG__SITE_MAX_ARGS],
            precision: [0; VLOG__SITE_MAX_ARGS],
            fmt_len: format.to_bytes().len(),
            file_len: 3,
            func_len: 1,
            entry: AtomicU64::new(0),
            entry_source: AtomicUsize::new(0),
            classes: 0,
            window: AtomicU64::new(0),
            suppressed: AtomicU64::new(0),
            recorded: AtomicU64::new(0),
        }));
        // Kept where a leak checker finds them, as a C static would be.
        static KEPT: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());
        let mut kept = KEPT.lock().unwrap();
        kept.push(site as *const vlog__site as usize);
        kept.push(format.as_ptr() as usize);
        LiveSite(NonNull::from(&*site))
    }
}

/// One object's `vlog_sites` section: `len` pointers to sites.
pub struct Section {
    start: NonNull<*const vlog__site>,
    len: usize,
}

// SAFETY: the pointers are only read, and valid from any thread (`new`).
unsafe impl Send for Section {}

impl Section {
    /// # Safety
    /// `start` points at `len` pointers, each NULL or to a site, all valid
    /// (with the sites they point at) until the catalog forgets the
    /// section (`Catalog::remove_section(start)`).
    pub unsafe fn new(start: NonNull<*const vlog__site>, len: usize) -> Section {
        Section { start, len }
    }

    pub fn start(&self) -> NonNull<*const vlog__site> {
        self.start
    }

    fn sites(&self) -> impl Iterator<Item = &vlog__site> + '_ {
        // SAFETY: the object handed over `len` pointers, valid until it
        // takes the section back (`Catalog::add_section`'s contract).
        let slots = unsafe { std::slice::from_raw_parts(self.start.as_ptr(), self.len) };
        slots.iter().filter_map(|&p| {
            // SAFETY: each is NULL or one of the object's sites (as above).
            unsafe { p.as_ref() }
        })
    }

    fn holds(&self, site: &vlog__site) -> bool {
        self.sites().any(|s| std::ptr::eq(s, site))
    }
}

/// Every site the library knows: the loaded objects' sections, and sites
/// whose object has not handed its section over yet (a constructor that
/// logs before the object's own `VLOG_INIT` constructor ran).
#[derive(Default)]
pub struct Catalog {
    sections: Vec<Section>,
    loose: Vec<LiveSite>,
}

// SAFETY: the section pointers are only read, and only through `&self`.
unsafe impl Send for Catalog {}

impl Catalog {
    pub const fn new() -> Catalog {
        Catalog {
            sections: Vec::new(),
            loose: Vec::new(),
        }
    }

    /// Takes an object's section; false when it is known already (each of
    /// the object's files hands it over) or there is no memory for it.
    pub fn add_section(&mut self, section: Section) -> bool {
        let start = section.start;
        if self.sections.iter().any(|s| s.start == start) || self.sections.try_reserve(1).is_err() {
            return false;
        }
        self.loose.retain(|s| !section.holds(s.get()));
        self.sections.push(section);
        true
    }

    /// Forgets an object's section (and any loose site in it). Its sites
    /// are turned off: a call that comes later, from a destructor that
    /// runs after the object's own, stops at the inline check and never
    /// makes the library learn of a site that is about to be unmapped.
    pub fn remove_section(&mut self, start: NonNull<*const vlog__site>) {
        let Some(i) = self.sections.iter().position(|s| s.start == start) else {
            return;
        };
        let section = self.sections.swap_remove(i);
        for site in section.sites() {
            site.level.store(crate::source::OFF, Ordering::Relaxed);
        }
        self.loose.retain(|s| !section.holds(s.get()));
    }

    /// Whether `site` is known.
    pub fn contains(&self, site: &vlog__site) -> bool {
        self.loose.iter().any(|s| std::ptr::eq(s.get(), site))
            || self.sections.iter().any(|s| s.holds(site))
    }

    /// Adds a site no section handed over; false without memory (it is
    /// then asked about again on its next call).
    pub fn add_loose(&mut self, site: LiveSite) -> bool {
        if self.loose.try_reserve(1).is_err() {
            return false;
        }
        self.loose.push(site);
        true
    }

    /// Forgets the loose sites of a source being unregistered (their
    /// object is going away).
    pub fn remove_source(&mut self, source: &vlog_source) {
        self.loose.retain(|s| {
            let gone = std::ptr::eq(s.get().source, source as *const vlog_source);
            if gone {
                s.get().level.store(crate::source::OFF, Ordering::Relaxed);
            }
            !gone
        });
    }

    /// The sites of one section, for the levels of a newly loaded object.
    pub fn section(&self, start: NonNull<*const vlog__site>) -> impl Iterator<Item = &vlog__site> {
        self.sections
            .iter()
            .filter(move |s| s.start == start)
            .flat_map(Section::sites)
    }

    pub fn iter(&self) -> impl Iterator<Item = &vlog__site> {
        self.sections
            .iter()
            .flat_map(Section::sites)
            .chain(self.loose.iter().map(LiveSite::get))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limited(limit: u32, count: u32, seconds: u32) -> &'static vlog__site {
        let site = LiveSite::leaked(Live::leaked(c"limit.test"), b"x");
        // SAFETY: a test's own site, not shared yet.
        let s = unsafe { &mut *site.0.as_ptr() };
        (s.limit, s.limit_count, s.limit_seconds) = (limit, count, seconds);
        s
    }

    #[test]
    fn once_every_n_and_a_rate_admit_what_they_say() {
        let once = limited(VLOG__LIMIT_ONCE, 1, 0);
        let got: Vec<bool> = (0..4).map(|_| once.admit(1, || 1)).collect();
        assert_eq!(got, [true, false, false, false]);
        assert_eq!(once.suppressed.load(Ordering::Relaxed), 3);
        let every = limited(VLOG__LIMIT_EVERY_N, 3, 0);
        let got: Vec<bool> = (0..7).map(|_| every.admit(1, || 1)).collect();
        assert_eq!(got, [true, false, false, true, false, false, true]);
        // Two per second: the third call of a second is left out, the next
        // second starts again.
        let rate = limited(VLOG__LIMIT_RATE, 2, 1);
        let at = |ms: u64| rate.admit(1, || ms);
        assert_eq!(
            [at(10), at(500), at(999), at(1009)],
            [true, true, false, false]
        );
        assert_eq!([at(1010), at(1011), at(1012)], [true, true, false]);
        assert_eq!(rate.suppressed.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn ids_are_stable_and_tell_formats_apart() {
        let a = message_id(b"disk", b"submitted %d bytes");
        assert_eq!(a, message_id(b"disk", b"submitted %d bytes"));
        assert_ne!(a, message_id(b"disk", b"submitted %d bytes!"));
        assert_ne!(a, message_id(b"net", b"submitted %d bytes"));
        // The source and the format are kept apart by the zero byte.
        assert_ne!(message_id(b"ab", b"c"), message_id(b"a", b"bc"));
        // FNV-1a of the one zero byte between an empty source and format.
        assert_eq!(message_id(b"", b""), 0x050c_5d1f);
    }
}
