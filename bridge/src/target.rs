//! A record's source: its target under vlog's name for it, one
//! `vlog_source` per target, made on the target's first call and kept for
//! the process's life (vlog updates its level; a source cannot be taken
//! back while another thread may be reading it).

use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{OnceLock, RwLock};

use crate::sys::{self, VlogSource};

/// How many targets get a source of their own. Targets are module paths
/// and names written in the code, a few hundred in a large program; past
/// this (a target made from input), records take the source `rust` and
/// the field `TARGET`, so nothing grows without bound.
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
    /// The target has no source of its own (past MAX_TARGETS): its record
    /// says it in the field TARGET.
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

/// The hash of the table of targets (rustc's Fx: a rotate, an xor and a
/// multiply per eight bytes). A call whose level the bridge checks hashes
/// its target, and std's SipHash made that check twice as dear; its
/// resistance to chosen keys is not needed, the table holding at most
/// MAX_TARGETS.
#[derive(Default)]
pub struct Fx(u64);

impl Fx {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl std::hash::Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().expect("eight bytes")));
        }
        let mut rest = [0u8; 8];
        rest[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
        self.add(u64::from_le_bytes(rest) ^ bytes.len() as u64);
    }

    fn write_u8(&mut self, b: u8) {
        self.add(u64::from(b));
    }
}

type Table = RwLock<HashMap<Box<str>, &'static VlogSource, std::hash::BuildHasherDefault<Fx>>>;

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(Default::default)
}

/// The source of `target`, made on its first call.
pub fn named(target: &str) -> Named {
    let table = table();
    let found = table
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .get(target)
        .copied();
    if let Some(source) = found {
        return Named {
            source,
            shared: false,
        };
    }
    let mut table = table.write().unwrap_or_else(|p| p.into_inner());
    if let Some(&source) = table.get(target) {
        return Named {
            source,
            shared: false,
        };
    }
    if table.len() >= MAX_TARGETS {
        static SHARED: OnceLock<&'static VlogSource> = OnceLock::new();
        return Named {
            source: SHARED.get_or_init(|| leak("rust")),
            shared: true,
        };
    }
    let source = leak(&source_name(target));
    table.insert(target.into(), source);
    Named {
        source,
        shared: false,
    }
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
