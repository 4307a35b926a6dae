//! Log sources: the per-file `vlog_source` objects that C code declares with
//! `VLOG_INIT`, the promise that keeps them valid (`Live`), and the registry
//! that keeps their cached levels current.
//!
//! The macros read `level` inline; the library rewrites it for every registered
//! source whenever the configuration changes, so the disabled check stays one
//! load and one compare with no generation to test.

use std::ffi::c_char;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicI32, Ordering};

/// A log source. Declare one per C file with `VLOG_INIT("name")` (or initialise
/// one with `VLOG_SOURCE_INITIALIZER("name")`); treat the fields as private.
#[repr(C)]
pub struct vlog_source {
    /// The lowest priority that is recorded for this source, kept by the library;
    /// 0 until the source is registered by its first call (so that call is always
    /// made), 5 when nothing is.
    pub level: AtomicI32,
    /// The source name: a string that lives as long as the source.
    pub name: *const c_char,
    /// Length of `name` in bytes (without the NUL).
    pub name_len: usize,
}

/// The level meaning "not registered yet: take the call".
/// cbindgen:ignore
pub const UNKNOWN: i32 = 0;
/// The level meaning "nothing from this source is recorded".
/// cbindgen:ignore
pub const OFF: i32 = 5;

// SAFETY: the only mutable field is atomic; `name` is a read-only string.
unsafe impl Sync for vlog_source {}

/// The source named "default", used by calls that pass a NULL source.
#[no_mangle]
#[allow(non_upper_case_globals)]
pub static vlog_default_source: vlog_source = vlog_source {
    level: AtomicI32::new(UNKNOWN),
    name: c"default".as_ptr(),
    name_len: 7,
};

impl vlog_source {
    pub fn level(&self) -> i32 {
        self.level.load(Ordering::Relaxed)
    }

    pub fn set_level(&self, level: i32) {
        self.level.store(level, Ordering::Relaxed);
    }

    /// The name's bytes. A NULL name reads as empty.
    pub fn name_bytes(&self) -> &[u8] {
        if self.name.is_null() {
            return &[];
        }
        // SAFETY: VLOG_SOURCE_INITIALIZER stores a string literal and its length;
        // the API contract requires any other initialiser to do the same, and the
        // string outlives the source.
        unsafe { std::slice::from_raw_parts(self.name.cast::<u8>(), self.name_len) }
    }
}

/// A source the C caller vouches for: it stays valid until it is
/// unregistered (`vlog__source_unregister`, which VLOG_INIT's destructor calls
/// when the object that holds it is unloaded). The boundary makes one from
/// each pointer it is given, once; the core then uses it as safe Rust, and
/// the registry forgets it before its memory can go away.
#[derive(Clone, Copy, Debug)]
pub struct Live(NonNull<vlog_source>);

// SAFETY: vlog_source is Sync, and a Live only shares the pointer.
unsafe impl Send for Live {}
// SAFETY: as above.
unsafe impl Sync for Live {}

impl Live {
    /// # Safety
    /// `source` stays valid until it is removed from the registry
    /// (`Registry::remove` or `Registry::clear`), or for ever.
    pub unsafe fn new(source: &vlog_source) -> Live {
        Live(NonNull::from(source))
    }

    /// The source named "default", used by calls that pass a NULL source.
    pub fn default_source() -> Live {
        Live(NonNull::from(&vlog_default_source))
    }

    pub fn get(&self) -> &vlog_source {
        // SAFETY: valid until unregistered, per `Live::new`; the registry
        // drops it first.
        unsafe { self.0.as_ref() }
    }

    pub fn is(&self, source: &vlog_source) -> bool {
        std::ptr::eq(self.0.as_ptr(), source)
    }

    /// A source made for a test, which lives as long as the test process
    /// (like a C static; kept reachable, so a leak checker does not count
    /// it).
    #[cfg(test)]
    pub fn leaked(name: &'static std::ffi::CStr) -> Live {
        static KEEP: std::sync::Mutex<Vec<&'static vlog_source>> =
            std::sync::Mutex::new(Vec::new());
        let source = Box::leak(Box::new(vlog_source {
            level: AtomicI32::new(UNKNOWN),
            name: name.as_ptr(),
            name_len: name.to_bytes().len(),
        }));
        KEEP.lock().unwrap().push(source);
        Live(NonNull::from(&*source))
    }

    /// The source's address, which names it while it is registered.
    pub fn addr(&self) -> usize {
        self.0.as_ptr() as usize
    }
}

/// A source vlog makes itself, named at run time (a relay's): the name and
/// the `vlog_source` that points at it live together on the heap, at a
/// fixed address for as long as this lives. Whoever registers it (by
/// logging through [`OwnedSource::live`]) unregisters it before dropping
/// it, or keeps it for ever ([`OwnedSource::keep_for_ever`]).
pub struct OwnedSource {
    source: Box<vlog_source>,
    _name: Box<[u8]>,
}

impl OwnedSource {
    pub fn new(name: &[u8]) -> OwnedSource {
        let name: Box<[u8]> = name.iter().copied().chain([0]).collect();
        let source = Box::new(vlog_source {
            level: AtomicI32::new(UNKNOWN),
            name: name.as_ptr().cast(),
            name_len: name.len() - 1,
        });
        OwnedSource {
            source,
            _name: name,
        }
    }

    pub fn live(&self) -> Live {
        // SAFETY: the boxed source and its name stay where they are until
        // this is dropped, and its owner unregisters it first (or keeps it
        // for ever), as the type's contract says.
        unsafe { Live::new(&self.source) }
    }

    /// For a source that could not be unregistered: its memory is never
    /// freed (and stays reachable, so a leak checker does not count it).
    pub fn keep_for_ever(&mut self) {
        static KEPT: std::sync::Mutex<Vec<OwnedSource>> = std::sync::Mutex::new(Vec::new());
        let kept = std::mem::replace(self, OwnedSource::new(b"kept"));
        let mut list = KEPT.lock().unwrap_or_else(|p| p.into_inner());
        if list.try_reserve(1).is_ok() {
            list.push(kept);
        } else {
            std::mem::forget(kept);
        }
    }
}

// SAFETY: the name is read-only after construction and the level atomic.
unsafe impl Send for OwnedSource {}

/// Every source that has logged (or registered) and not been unregistered.
#[derive(Default)]
pub struct Registry {
    sources: Vec<Live>,
}

impl Registry {
    pub const fn new() -> Registry {
        Registry {
            sources: Vec::new(),
        }
    }

    /// Adds `source` unless it is already there; returns whether it was
    /// added. A failed allocation leaves it out (it is then asked about again
    /// on its next call).
    pub fn add(&mut self, source: Live) -> bool {
        if self.sources.iter().any(|s| s.is(source.get())) || self.sources.try_reserve(1).is_err() {
            return false;
        }
        self.sources.push(source);
        true
    }

    /// Removes `source` and marks it unknown, so a later call registers it anew.
    pub fn remove(&mut self, source: &vlog_source) {
        self.sources.retain(|s| !s.is(source));
        source.set_level(UNKNOWN);
    }

    /// Forgets every source, marking each unknown.
    pub fn clear(&mut self) {
        for s in self.sources.drain(..) {
            s.get().set_level(UNKNOWN);
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &vlog_source> {
        self.sources.iter().map(Live::get)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(name: &'static std::ffi::CStr) -> vlog_source {
        vlog_source {
            level: AtomicI32::new(UNKNOWN),
            name: name.as_ptr(),
            name_len: name.to_bytes().len(),
        }
    }

    #[test]
    fn register_once_and_unregister() {
        let a = source(c"a");
        let b = source(c"b");
        let mut r = Registry::new();
        // SAFETY: a and b outlive the registry.
        let (la, lb) = unsafe { (Live::new(&a), Live::new(&b)) };
        assert!(r.add(la));
        assert!(!r.add(la));
        assert!(r.add(lb));
        a.set_level(3);
        r.remove(&a);
        assert_eq!(a.level(), UNKNOWN);
        assert_eq!(r.iter().count(), 1);
        assert_eq!(r.iter().next().unwrap().name_bytes(), b"b");
        r.clear();
        assert_eq!(r.iter().count(), 0);
    }

    #[test]
    fn null_name_is_empty() {
        let s = vlog_source {
            level: AtomicI32::new(0),
            name: std::ptr::null(),
            name_len: 4,
        };
        assert_eq!(s.name_bytes(), b"");
    }
}
