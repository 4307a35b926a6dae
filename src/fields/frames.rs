//! A backtrace a record keeps (`VLOG_BACKTRACE`, the filter token `bt:`):
//! the raw return addresses of the call's stack and, for each loaded
//! object they fall in, what identifies it (its load bias, GNU build-id and
//! path), so that a reader in another process, or after the process is
//! gone, can name each frame's function and line from the object's symbol
//! table and debug information. Nothing here is text: a record's frames
//! are made into names only when read (`text::frames`).
//!
//! It travels as a field of its own type (tag 3), outside the budget of
//! the caller's fields, as a dump's bytes do. Encoded, native-endian:
//!
//! ```text
//! u8 frames (at most FRAMES_MAX), u8 objects (at most OBJECTS_MAX), then
//! per frame:  u64 return address, u8 its object (0xFF: none known)
//! per object: u64 load bias, u8 build-id length (at most ID_MAX), the
//!             build-id, u8 path length, the path (its first PATH_MAX bytes)
//! ```

use crate::sys::backtrace;

/// The most frames a record keeps: the innermost, the caller's first.
pub const FRAMES_MAX: usize = 32;
/// The most objects a record names; a frame in another is shown bare.
pub const OBJECTS_MAX: usize = 8;
/// The longest build-id kept (a GNU build-id is 20 bytes, SHA-1).
pub const ID_MAX: usize = 32;
/// The longest path kept (longer paths are cut, and then found by no
/// reader: the frame is shown by its address within the object).
pub const PATH_MAX: usize = 255;
/// The field that holds the frames.
pub const BACKTRACE: &[u8] = b"VLOG_BACKTRACE";
/// The longest encoding.
pub const ENCODED_MAX: usize = 2 + FRAMES_MAX * 9 + OBJECTS_MAX * (8 + 1 + ID_MAX + 1 + PATH_MAX);
/// The most a backtrace adds to a record's encoded fields.
pub const ROOM: usize = 1 + BACKTRACE.len() + 1 + 4 + ENCODED_MAX;

/// A loaded object, as a frame names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Object<'a> {
    /// What the object's addresses were moved by when it was loaded (0
    /// for a program not built as PIE): an address less this is where
    /// the object's symbol table and debug information place it.
    pub bias: u64,
    pub build_id: &'a [u8],
    pub path: &'a [u8],
}

/// One frame: a return address (the innermost frame's is where the call
/// returns to) and the object it is in, if known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    pub address: u64,
    pub object: Option<Object<'a>>,
}

/// A backtrace's encoding, checked whole (small: a value of a field).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frames<'a> {
    encoded: &'a [u8],
    count: usize,
}

/// The object at the start of `bytes` and the bytes after it, if whole.
fn object_at(bytes: &[u8]) -> Option<(Object<'_>, &[u8])> {
    let bias = u64::from_ne_bytes(bytes.get(..8)?.try_into().ok()?);
    let (&id_len, tail) = bytes[8..].split_first()?;
    let build_id = tail
        .get(..id_len as usize)
        .filter(|id| id.len() <= ID_MAX)?;
    let (&path_len, tail) = tail[build_id.len()..].split_first()?;
    let path = tail.get(..path_len as usize)?;
    let object = Object {
        bias,
        build_id,
        path,
    };
    Some((object, &tail[path.len()..]))
}

impl<'a> Frames<'a> {
    /// The frames encoded in `bytes`, if the encoding is whole (every
    /// length within its bound and the bytes, every frame's object one
    /// listed): a damaged one is refused, never read past its end.
    pub fn decode(bytes: &'a [u8]) -> Option<Frames<'a>> {
        let (&count, rest) = bytes.split_first()?;
        let (&nobjects, rest) = rest.split_first()?;
        let (count, nobjects) = (count as usize, nobjects as usize);
        if count > FRAMES_MAX || nobjects > OBJECTS_MAX {
            return None;
        }
        let frames = rest.get(..count * 9)?;
        let mut rest = &rest[count * 9..];
        for _ in 0..nobjects {
            rest = object_at(rest)?.1;
        }
        let known = frames
            .chunks_exact(9)
            .all(|f| f[8] == NO_OBJECT || (f[8] as usize) < nobjects);
        (rest.is_empty() && known).then_some(Frames {
            encoded: bytes,
            count,
        })
    }

    /// The encoding the frames were read from.
    pub fn encoded(&self) -> &'a [u8] {
        self.encoded
    }

    /// How many frames there are.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.count
    }

    /// Object `index` (checked whole by `decode`).
    fn object(&self, index: u8) -> Option<Object<'a>> {
        let mut rest = &self.encoded[2 + self.count * 9..];
        for _ in 0..index {
            rest = object_at(rest)?.1;
        }
        object_at(rest).map(|(object, _)| object)
    }

    /// The frames, the innermost first.
    pub fn iter(&self) -> impl Iterator<Item = Frame<'a>> + '_ {
        self.encoded[2..2 + self.count * 9]
            .chunks_exact(9)
            .map(|f| Frame {
                address: u64::from_ne_bytes(f[..8].try_into().unwrap_or_default()),
                object: if f[8] == NO_OBJECT {
                    None
                } else {
                    self.object(f[8])
                },
            })
    }
}

/// Takes the backtrace of the program's call of `entry` (the address of a
/// function it called, never inlined: an exported entry point, a signal
/// handler) into `buf`: the return addresses of the frames that called it
/// and the loaded objects they are in. No allocation, no system call
/// (`sys::backtrace`); never under the logger's lock.
pub fn capture(entry: usize, buf: &mut [u8; ENCODED_MAX]) -> &[u8] {
    let mut addresses = [0u64; FRAMES_MAX];
    let n = backtrace::frames_after(entry, &mut addresses);
    let mut encoder = Encoder::new(buf, &addresses[..n]);
    backtrace::objects(&mut |loaded| {
        let object = Object {
            bias: loaded.bias,
            build_id: loaded.build_id,
            path: loaded.path,
        };
        encoder.object(object, |address| loaded.holds_call(address))
    });
    encoder.finish()
}

/// A frame's object index when it is in no object listed.
pub const NO_OBJECT: u8 = 0xFF;

/// Builds a backtrace's encoding in a buffer of [`ENCODED_MAX`] bytes,
/// without allocating: the frames first, then each object once.
pub struct Encoder<'b> {
    buf: &'b mut [u8; ENCODED_MAX],
    len: usize,
    objects: usize,
    frames: usize,
}

impl<'b> Encoder<'b> {
    /// Starts an encoding of `frames` addresses (at most [`FRAMES_MAX`]
    /// are kept), each with no object until [`Encoder::object`] names
    /// one.
    pub fn new(buf: &'b mut [u8; ENCODED_MAX], addresses: &[u64]) -> Encoder<'b> {
        let frames = addresses.len().min(FRAMES_MAX);
        buf[0] = frames as u8;
        buf[1] = 0;
        for (i, address) in addresses[..frames].iter().enumerate() {
            let at = 2 + i * 9;
            buf[at..at + 8].copy_from_slice(&address.to_ne_bytes());
            buf[at + 8] = NO_OBJECT;
        }
        Encoder {
            len: 2 + frames * 9,
            buf,
            objects: 0,
            frames,
        }
    }

    /// The frames' addresses, as given.
    pub fn address(&self, frame: usize) -> u64 {
        let at = 2 + frame * 9;
        u64::from_ne_bytes(self.buf[at..at + 8].try_into().unwrap_or_default())
    }

    /// Names the object frames `which` are in (those for which it says
    /// true); false when [`OBJECTS_MAX`] are named already (the frames
    /// stay bare).
    pub fn object(&mut self, object: Object, mut which: impl FnMut(u64) -> bool) -> bool {
        if self.objects == OBJECTS_MAX {
            return false;
        }
        let index = self.objects as u8;
        let mut any = false;
        for i in 0..self.frames {
            let at = 2 + i * 9;
            if self.buf[at + 8] == NO_OBJECT && which(self.address(i)) {
                self.buf[at + 8] = index;
                any = true;
            }
        }
        if !any {
            return true;
        }
        let id = &object.build_id[..object.build_id.len().min(ID_MAX)];
        let path = &object.path[..object.path.len().min(PATH_MAX)];
        let mut put = |bytes: &[u8]| {
            self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
            self.len += bytes.len();
        };
        put(&object.bias.to_ne_bytes());
        put(&[id.len() as u8]);
        put(id);
        put(&[path.len() as u8]);
        put(path);
        self.objects += 1;
        self.buf[1] = self.objects as u8;
        true
    }

    /// The encoding so far.
    pub fn finish(self) -> &'b [u8] {
        &self.buf[..self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_read_back_with_their_objects() {
        let mut buf = [0u8; ENCODED_MAX];
        let mut enc = Encoder::new(&mut buf, &[0x1010, 0x2020, 0x9999, 0x1050]);
        let prog = Object {
            bias: 0x1000,
            build_id: &[1, 2, 3],
            path: b"/usr/sbin/d",
        };
        assert!(enc.object(prog, |a| (0x1000..0x2000).contains(&a)));
        let lib = Object {
            bias: 0x2000,
            build_id: b"",
            path: b"/lib/x.so",
        };
        assert!(enc.object(lib, |a| (0x2000..0x3000).contains(&a)));
        let bytes = enc.finish().to_vec();
        let frames = Frames::decode(&bytes).unwrap();
        let read: Vec<_> = frames.iter().collect();
        assert_eq!(read.len(), 4);
        assert_eq!(read[0].object, Some(prog));
        assert_eq!(read[1].object, Some(lib));
        assert_eq!((read[2].address, read[2].object), (0x9999, None));
        assert_eq!(read[3].object, Some(prog));
    }

    #[test]
    fn a_damaged_encoding_is_refused_at_every_length() {
        let mut buf = [0u8; ENCODED_MAX];
        let mut enc = Encoder::new(&mut buf, &[1, 2]);
        let object = Object {
            bias: 0,
            build_id: &[7; 20],
            path: b"/p",
        };
        enc.object(object, |_| true);
        let bytes = enc.finish().to_vec();
        assert!(Frames::decode(&bytes).is_some());
        for cut in 0..bytes.len() {
            assert!(Frames::decode(&bytes[..cut]).is_none(), "{cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(Frames::decode(&longer).is_none());
        let mut bad_index = bytes.clone();
        bad_index[2 + 8] = 3;
        assert!(Frames::decode(&bad_index).is_none());
        let mut too_many = bytes;
        too_many[0] = FRAMES_MAX as u8 + 1;
        assert!(Frames::decode(&too_many).is_none());
    }

    #[test]
    fn the_largest_encoding_fits() {
        let mut buf = [0u8; ENCODED_MAX];
        let addresses: Vec<u64> = (0..40).collect();
        let mut enc = Encoder::new(&mut buf, &addresses);
        for i in 0..OBJECTS_MAX as u64 + 2 {
            let object = Object {
                bias: i,
                build_id: &[0xAB; 40],
                path: &[b'p'; 300],
            };
            let named = enc.object(object, |a| a % (OBJECTS_MAX as u64 + 2) == i);
            assert_eq!(named, i < OBJECTS_MAX as u64, "{i}");
        }
        let len = enc.finish().len();
        assert_eq!(len, ENCODED_MAX);
        let frames = Frames::decode(&buf[..len]).unwrap();
        assert_eq!(frames.len(), FRAMES_MAX);
        assert_eq!(frames.iter().filter(|f| f.object.is_none()).count(), 6);
    }
}
