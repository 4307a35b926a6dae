//! A record's source: its target under vlog's name for it, one
//! `vlog_source` per target, made on the target's first call and kept for
//! the process's life (vlog updates its level; a source cannot be taken
//! back while another thread may be reading it).

use std::ffi::c_int;
use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicUsize, Ordering};
use std::sync::OnceLock;

use crate::sys::{self, VlogSource};

/// How many targets get a source of their own. Targets are module paths
/// and names written in the code, a few hundred in a large program; past
/// this (a target made from input), and for a target longer than a source
/// name, records take the source `rust` and the field `TARGET`, so nothing
/// grows without bound.
pub const MAX_TARGETS: usize = 4096;

/// vlog's longest source name in a record.
const NAME_MAX: usize = 255;

/// The vlog source name of a `log` or `tracing` target: each `::` is `.`
/// (`rustls::client::hs` is `rustls.client.hs`), each space, `=` or lone
/// `:` is `_` (a filter cannot name those), an empty target is `rust`, and
/// a name longer than 255 bytes is cut (as vlog cuts it in a record).
///
/// ```
/// assert_eq!(vlog_bridge::source_name("rustls::client::hs"), "rustls.client.hs");
/// assert_eq!(vlog_bridge::source_name("my app=1"), "my_app_1");
/// ```
pub fn source_name(target: &str) -> String {
    if target.is_empty() {
        return "rust".to_owned();
    }
    let mut name = target.replace("::", ".").replace([' ', '=', ':'], "_");
    if name.len() > NAME_MAX {
        let mut end = NAME_MAX;
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        name.truncate(end);
    }
    name
}

/// A target's source.
#[derive(Clone, Copy)]
pub struct Named {
    pub source: &'static VlogSource,
    /// The target has no source of its own (past MAX_TARGETS, or longer
    /// than a name): its record says it in the field TARGET.
    pub shared: bool,
}

fn leak(name: &str) -> &'static VlogSource {
    let name: &'static [u8] = Box::leak(name.bytes().chain([0]).collect::<Box<[u8]>>());
    Box::leak(Box::new(VlogSource {
        level: AtomicI32::new(sys::UNKNOWN),
        name: name.as_ptr().cast(),
        name_len: name.len() - 1,
    }))
}

/// A target and its source. Leaked once published: entries are never
/// taken back (a reader may be reading one at any time). One a thread made
/// but lost to another's for the same target is freed whole, its source
/// included, which vlog never saw.
struct Entry {
    target: Box<str>,
    source: VlogSource,
    /// `source.name`'s bytes, NUL-terminated, from `Box::into_raw`: held
    /// raw, so moving the entry never retags the box `source.name` reads.
    name: *mut [u8],
}

impl Drop for Entry {
    fn drop(&mut self) {
        // SAFETY: from Box::into_raw in `entry`, freed only here; an
        // entry is dropped only if never published, so nothing reads it.
        drop(unsafe { Box::from_raw(self.name) });
    }
}

fn entry(target: &str) -> *mut Entry {
    let name = Box::into_raw(
        source_name(target)
            .bytes()
            .chain([0])
            .collect::<Box<[u8]>>(),
    );
    Box::into_raw(Box::new(Entry {
        target: target.into(),
        source: VlogSource {
            level: AtomicI32::new(sys::UNKNOWN),
            name: name.cast::<std::ffi::c_char>(),
            name_len: name.len() - 1,
        },
        name,
    }))
}

/// The table of targets: open addressing over atomic pointers, twice
/// MAX_TARGETS long, which a reader probes and a writer fills with one
/// compare-and-swap. No lock: a fork while another thread names a target
/// leaves the child nothing held (a lock would hang its first call), and a
/// checked call pays no lock's atomics.
const SLOTS: usize = 2 * MAX_TARGETS;
static TABLE: [AtomicPtr<Entry>; SLOTS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];
static TAKEN: AtomicUsize = AtomicUsize::new(0);

/// rustc's Fx hash (a rotate, an xor and a multiply per eight bytes): a
/// checked call hashes its target, and std's SipHash made that check twice
/// as dear; its resistance to chosen keys is not needed for a table that
/// holds at most MAX_TARGETS.
fn fx(bytes: &[u8]) -> u64 {
    let add = |h: u64, word: u64| (h.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    let mut h = 0;
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        h = add(
            h,
            u64::from_le_bytes(chunk.try_into().expect("eight bytes")),
        );
    }
    let mut rest = [0u8; 8];
    rest[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    add(h, u64::from_le_bytes(rest) ^ bytes.len() as u64)
}

fn shared() -> Named {
    static SHARED: OnceLock<&'static VlogSource> = OnceLock::new();
    Named {
        source: SHARED.get_or_init(|| leak("rust")),
        shared: true,
    }
}

/// The source of `target`, made on its first call.
pub fn named(target: &str) -> Named {
    if target.len() > NAME_MAX {
        return shared();
    }
    let own = |entry: *mut Entry| Named {
        // SAFETY: entries are leaked when published, never freed.
        source: unsafe { &(*entry).source },
        shared: false,
    };
    // SAFETY: as above.
    let is = |entry: *mut Entry| unsafe { &*(*entry).target } == target;
    let mut made: Option<*mut Entry> = None;
    let mut slot = fx(target.as_bytes()) as usize % SLOTS;
    for _ in 0..SLOTS {
        let found = TABLE[slot].load(Ordering::Acquire);
        if !found.is_null() {
            if is(found) {
                if let Some(extra) = made {
                    // SAFETY: never published: this thread's own.
                    drop(unsafe { Box::from_raw(extra) });
                    TAKEN.fetch_sub(1, Ordering::Relaxed);
                }
                return own(found);
            }
            slot = (slot + 1) % SLOTS;
            continue;
        }
        let entry = match made {
            Some(entry) => entry,
            None => {
                if TAKEN.fetch_add(1, Ordering::Relaxed) >= MAX_TARGETS {
                    return shared();
                }
                let entry = entry(target);
                made = Some(entry);
                entry
            }
        };
        // Paired with the Acquire loads: the entry is whole when seen.
        match TABLE[slot].compare_exchange(
            std::ptr::null_mut(),
            entry,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => return own(entry),
            // Another thread filled it first: looked at again.
            Err(_) => continue,
        }
    }
    shared()
}

/// Whether vlog keeps a record of priority `prio` from `source`: its level
/// once vlog registered it (one load), else vlog is asked, which registers
/// it (the header's inline check, in Rust).
#[inline]
pub fn enabled(source: &'static VlogSource, prio: c_int) -> bool {
    match source.level.load(Ordering::Relaxed) {
        // SAFETY: a source leaked here, valid for ever, as vlog requires
        // of a registered source.
        sys::UNKNOWN => unsafe { sys::vlog__source_enabled(source, prio) != 0 },
        level => prio >= level,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_what_a_filter_can_name() {
        assert_eq!(source_name("rustls::client::hs"), "rustls.client.hs");
        assert_eq!(source_name("a:b c=d"), "a_b_c_d");
        assert_eq!(source_name(""), "rust");
        let long = "é".repeat(200);
        let cut = source_name(&long);
        assert!(cut.len() <= NAME_MAX && long.starts_with(&cut), "{cut}");
    }

    #[test]
    fn a_long_target_shares_a_source() {
        let long = "x".repeat(NAME_MAX + 1);
        let n = named(&long);
        assert!(n.shared);
        assert!(std::ptr::eq(n.source, named(&long).source));
    }

    #[test]
    fn threads_naming_one_target_get_one_source() {
        // Started together, so threads race to publish each target: a
        // loser's entry must come back whole (the leak checker says if not).
        const THREADS: usize = 8;
        let start = std::sync::Barrier::new(THREADS);
        let seen: Vec<Vec<usize>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..THREADS)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        (0..64)
                            .map(|i| {
                                let n = named(&format!("bridge::tests::race{i}"));
                                assert!(!n.shared);
                                n.source as *const _ as usize
                            })
                            .collect()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(seen.windows(2).all(|w| w[0] == w[1]), "{seen:?}");
    }

    #[test]
    fn a_target_has_one_source() {
        let a = named("bridge::tests::one");
        let b = named("bridge::tests::one");
        assert!(std::ptr::eq(a.source, b.source) && !a.shared);
        // SAFETY: a leaked source's name, `name_len` bytes.
        let name =
            unsafe { std::slice::from_raw_parts(a.source.name.cast::<u8>(), a.source.name_len) };
        assert_eq!(name, b"bridge.tests.one");
    }
}
