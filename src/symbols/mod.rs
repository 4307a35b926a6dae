//! Naming a backtrace's frames (`text::frames`' symbolizer), for the
//! readers of the ring: vlog-dump and vlog-ctl, never the library inside a
//! daemon. Each object a frame names is read once: its symbol table gives
//! the function and the offset into it (what `nm` shows, static functions
//! included), and DWARF line tables (`addr2line`, `gimli`) give the file
//! and line, and functions inlined into others: from the object itself or
//! from the file a `-dbgsym`/`-dbg` package installs under
//! `/usr/lib/debug/.build-id/`.
//!
//! A ring is data from outside, and so are the paths it names: an object
//! with no build-id in the record is not looked for; a path is opened only
//! once it is known to be a regular file (looked at with O_PATH, which
//! opens nothing: never a FIFO or a device), read only up to
//! [`FILE_MAX`] bytes, and trusted only if its build-id is the one the
//! record holds (an object rebuilt since, or another machine's, names
//! nothing rather than the wrong function). What compressed debug
//! sections inflate to is bounded per object and in all
//! ([`INFLATED_MAX`]), and an object is read once whatever path names it
//! (they are kept by build-id).
//!
//! Nor does a ring or a control server lend its reader the reader's
//! power: a file is read only as the one whose data names it could read
//! it (the ring file's owner, the control server's user, as [`read_for`]
//! says; `file`).

mod file;
pub mod reply;

pub use file::Owner;

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;
use std::rc::Rc;

use object::{Object as _, ObjectSection as _, ObjectSymbol as _};

use crate::fields::frames::Object;
use crate::text::frames::{self, Named};

/// The most compressed debug sections inflate to, for one object and for
/// all this process reads (a small file may claim gigabytes).
pub const INFLATED_MAX: usize = 1 << 30;
/// The most objects read by one process (each kept for its later frames).
const OBJECTS_MAX: usize = 256;
/// Where debug packages put an object's debug information, by build-id.
const BUILD_ID_DIR: &str = "/usr/lib/debug/.build-id";

type Reader = gimli::EndianRcSlice<gimli::RunTimeEndian>;

/// What one object file gives.
struct Loaded {
    /// Function symbols: start, size, name; sorted by start.
    symbols: Vec<(u64, u64, String)>,
    lines: Option<addr2line::Context<Reader>>,
}

/// The objects read, by whose data named them and build-id (None: not to
/// be had).
type Cache = HashMap<(Owner, Vec<u8>), Option<Rc<Loaded>>>;

thread_local! {
    static LOADED: RefCell<Cache> = RefCell::new(HashMap::new());
    /// What compressed sections inflated to so far.
    static INFLATED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// Whose data the frames named now come from (None: nobody's yet,
    /// and no file is read).
    static OWNER: RefCell<Option<Owner>> = const { RefCell::new(None) };
}

/// Makes this process's text renderers name frames.
pub fn install() {
    frames::set_symbolizer(symbolize);
}

/// Makes the frames named from now on (on this thread) those of data
/// `owner` wrote: a ring file's owner, a control server's user.
pub fn read_for(owner: Owner) {
    OWNER.set(Some(owner));
}

fn symbolize(object: &Object, address: u64, name: &mut dyn FnMut(&Named)) {
    let Some(loaded) = loaded(object).filter(|_| address > 0) else {
        return;
    };
    // A return address is just past its call: the call is the byte before.
    let probe = address - 1;
    let symbol = loaded
        .symbols
        .partition_point(|s| s.0 <= probe)
        .checked_sub(1)
        .map(|i| &loaded.symbols[i])
        .filter(|s| probe - s.0 < s.1.max(1));
    let mut named: Vec<(Cow<str>, Option<&str>, u32)> = Vec::new();
    if let Some(lines) = &loaded.lines {
        if let Ok(mut iter) = lines.find_frames(probe).skip_all_loads() {
            while let Ok(Some(frame)) = iter.next() {
                let function = frame
                    .function
                    .as_ref()
                    .and_then(|f| f.raw_name().ok())
                    .map(|n| Cow::Owned(n.into_owned()))
                    .unwrap_or(Cow::Borrowed(""));
                let (file, line) = frame
                    .location
                    .map_or((None, 0), |l| (l.file, l.line.unwrap_or(0)));
                named.push((function, file, line));
            }
        }
    }
    if named.is_empty() {
        match symbol {
            Some(s) => named.push((Cow::Borrowed(s.2.as_str()), None, 0)),
            None => return,
        }
    }
    let last = named.len() - 1;
    for (i, (function, file, line)) in named.iter().enumerate() {
        // The outermost is the symbol's function: its offset is the
        // return address's within it, as backtrace(3) shows it.
        let (function, offset) = match symbol {
            Some(s) if i == last => (
                if function.is_empty() {
                    s.2.as_str()
                } else {
                    function
                },
                Some(probe - s.0 + 1),
            ),
            _ => (&**function, None),
        };
        let function = if function.is_empty() { "??" } else { function };
        name(&Named {
            function: function.as_bytes(),
            offset,
            file: file.unwrap_or("").as_bytes(),
            line: *line,
        });
    }
}

/// The object's symbols and lines, read on first use (None: not to be
/// had, remembered too); nothing for an object with no build-id.
fn loaded(object: &Object) -> Option<Rc<Loaded>> {
    if object.build_id.is_empty() {
        return None;
    }
    let key = (OWNER.with_borrow(Clone::clone)?, object.build_id.to_vec());
    LOADED.with(|cache| {
        if let Some(known) = cache.borrow().get(&key) {
            return known.clone();
        }
        let loaded = if cache.borrow().len() < OBJECTS_MAX {
            load(object).map(Rc::new)
        } else {
            None
        };
        cache.borrow_mut().insert(key, loaded.clone());
        loaded
    })
}

fn load(object: &Object) -> Option<Loaded> {
    use std::os::unix::ffi::OsStrExt;
    let path = Path::new(std::ffi::OsStr::from_bytes(object.path));
    let owner = OWNER.with_borrow(Clone::clone)?;
    let main = file::read_object(path, object.build_id, &owner);
    let debug = debug_file(object.build_id, &owner);
    let main_file = main.as_deref().and_then(|d| object::File::parse(d).ok());
    let debug_file = debug.as_deref().and_then(|d| object::File::parse(d).ok());
    let mut symbols = Vec::new();
    for file in main_file.iter().chain(debug_file.iter()) {
        let all = file.symbols().chain(file.dynamic_symbols());
        for s in all.filter(|s| s.kind() == object::SymbolKind::Text && s.address() != 0) {
            if let Ok(name) = s.name() {
                symbols.push((s.address(), s.size(), name.to_string()));
            }
        }
    }
    // At one address, the symbol that covers most first (kept by dedup).
    symbols.sort_by_key(|s| (s.0, std::cmp::Reverse(s.1)));
    symbols.dedup_by_key(|s| s.0);
    // Line tables: the object's own, else the debug file's.
    let with_lines = [&main_file, &debug_file]
        .into_iter()
        .flatten()
        .find(|f| f.section_by_name(".debug_info").is_some());
    let lines = with_lines.and_then(dwarf);
    if symbols.is_empty() && lines.is_none() {
        return None;
    }
    Some(Loaded { symbols, lines })
}

/// The debug file a debug package installs for build-id `id`, checked.
fn debug_file(id: &[u8], owner: &Owner) -> Option<Vec<u8>> {
    let (first, rest) = id.split_first()?;
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let path = format!("{BUILD_ID_DIR}/{:02x}/{}.debug", first, hex(rest));
    file::read_object(Path::new(&path), id, owner)
}

/// The object's DWARF, its compressed sections (zlib) inflated within
/// [`INFLATED_MAX`] for it and for all.
fn dwarf(file: &object::File) -> Option<addr2line::Context<Reader>> {
    let mut budget = INFLATED_MAX.saturating_sub(INFLATED.get());
    let endian = if file.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    };
    let section = |id: gimli::SectionId| -> Result<Reader, gimli::Error> {
        let data = match file.section_by_name(id.name()) {
            Some(s) => section_data(&s, &mut budget).ok_or(gimli::Error::Io)?,
            None => Vec::new(),
        };
        Ok(gimli::EndianRcSlice::new(Rc::from(data), endian))
    };
    let dwarf = gimli::Dwarf::load(section);
    INFLATED.set(INFLATED_MAX - budget);
    addr2line::Context::from_dwarf(dwarf.ok()?).ok()
}

/// A section's bytes, inflated if compressed (SHF_COMPRESSED, zlib: what
/// `objcopy --compress-debug-sections` and Debian's debug packages make).
/// `budget` is what may still be inflated: less what this one was.
fn section_data(section: &object::Section, budget: &mut usize) -> Option<Vec<u8>> {
    let compressed = section.compressed_data().ok()?;
    match compressed.format {
        object::CompressionFormat::None => Some(compressed.data.to_vec()),
        object::CompressionFormat::Zlib => {
            let limit = usize::try_from(compressed.uncompressed_size)
                .ok()
                .filter(|&n| n <= *budget)?;
            let data =
                miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(compressed.data, limit)
                    .ok()?;
            *budget -= data.len();
            Some(data)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_without_a_build_id_or_an_owner_names_nothing() {
        let object = Object {
            bias: 0,
            build_id: b"",
            path: b"/proc/self/exe",
        };
        let mut named = 0;
        symbolize(&object, 0x1000, &mut |_| named += 1);
        // A reader who has not said whose data it reads reads nothing.
        let exe = std::fs::read("/proc/self/exe").unwrap();
        let id = object::File::parse(&*exe)
            .unwrap()
            .build_id()
            .unwrap()
            .unwrap();
        let with_id = Object {
            build_id: id,
            ..object
        };
        symbolize(&with_id, 0x1000, &mut |_| named += 1);
        assert_eq!(named, 0);
    }
}
