//! Rings read from bytes: a ring file, a ring image written at a crash, a
//! region of a core file. Nothing in the bytes is trusted: every size and
//! offset is checked here (against `ring::layout`) or by the record walk.

use super::layout::{
    self, offset, Stats, BYTE_ORDER_MARK, FOREIGN_BYTE_ORDER, LAYOUT_VERSION, MAX_SIZE, MIN_SIZE,
    POSITION_MAX,
};
use super::reader::Region;
use super::record;

/// Why bytes are not a ring this reader can read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImageError {
    NotARing,
    Truncated { have: usize, need: u64 },
    FutureVersion(u32),
    ForeignByteOrder,
    Malformed(&'static str),
}

impl std::fmt::Display for ImageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ImageError::NotARing => f.write_str("no vlog ring header (bad magic)"),
            ImageError::Truncated { have, need } => {
                write!(
                    f,
                    "truncated: the ring needs {need} bytes, only {have} are there"
                )
            }
            ImageError::FutureVersion(v) => write!(
                f,
                "ring layout version {v} is newer than this reader understands (version {})",
                LAYOUT_VERSION
            ),
            ImageError::ForeignByteOrder => {
                f.write_str("the ring was written on a machine of the other byte order")
            }
            ImageError::Malformed(what) => write!(f, "malformed ring header: {what}"),
        }
    }
}

/// A ring read from bytes (a ring file, a raw dump, a region of a core file).
/// Nothing in the bytes is trusted: every size and offset is checked here or
/// by [`read`].
#[derive(Clone, Copy, Debug)]
pub struct Image<'a> {
    data: &'a [u8],
    dict: &'a [u8],
    pub head: u64,
    pub tail: u64,
    pub next_seq: u64,
    pub lost: u64,
    /// Where the outputs of the ring's process had read to (version 3);
    /// None for an older ring, whose records were all printed when made.
    pub printed: Option<u64>,
}

/// The most header space a reader accepts (vlog writes HEADER_SPACE).
const HEADER_SPACE_MAX: u64 = 64 * 1024;

/// The largest region a ring header may describe: the most a reader of a
/// file ever reads for one ring.
pub const REGION_MAX: u64 = HEADER_SPACE_MAX + 2 * MAX_SIZE as u64;

/// Reads the ring at the start of a file of `file_len` bytes with `read_at`
/// (pread): the header first, then only the region it describes (at most
/// [`REGION_MAX`]), never the rest of a larger file.
pub fn read_ring(
    file_len: u64,
    read_at: impl Fn(&mut [u8], u64) -> std::io::Result<()>,
) -> Result<Vec<u8>, String> {
    let mut head = [0u8; offset::END];
    let head = &mut head[..(offset::END as u64).min(file_len) as usize];
    read_at(head, 0).map_err(|e| format!("cannot read: {e}"))?;
    let len = Image::region_len(head).map_err(|e| e.to_string())?;
    if len > file_len {
        return Err(ImageError::Truncated {
            have: file_len as usize,
            need: len,
        }
        .to_string());
    }
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(len as usize)
        .map_err(|e| format!("cannot read a ring of {len} bytes: {e}"))?;
    bytes.resize(len as usize, 0);
    read_at(&mut bytes, 0).map_err(|e| format!("cannot read: {e}"))?;
    Ok(bytes)
}

/// The rings in a file of `file_len` bytes of any size (a core file), found
/// by their magic in windows of the file and each read alone: what is held
/// at once is one window and the rings found, not the file.
pub fn read_rings_in_file(
    file_len: u64,
    read_at: impl Fn(&mut [u8], u64) -> std::io::Result<()>,
) -> Result<Vec<Vec<u8>>, String> {
    const WINDOW: u64 = 1 << 20;
    let mut window = vec![0u8; WINDOW as usize];
    let mut rings = Vec::new();
    let mut first_error = None;
    let mut at = 0;
    while at + 8 <= file_len {
        let n = WINDOW.min(file_len - at) as usize;
        read_at(&mut window[..n], at).map_err(|e| format!("cannot read: {e}"))?;
        for found in find_rings(&window[..n]) {
            let start = at + found as u64;
            let rest = file_len - start;
            match read_ring(rest, |buf, off| read_at(buf, start + off)) {
                Ok(ring) => rings.push(ring),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        // Windows overlap by nothing: a magic is 8 bytes at an 8-aligned
        // offset, and windows are 8-aligned.
        at += WINDOW;
    }
    if rings.is_empty() {
        return Err(match first_error {
            Some(e) => format!("a ring was found but cannot be read: {e}"),
            None => "no vlog ring in this file".into(),
        });
    }
    Ok(rings)
}

/// What a checked header says of its region.
struct Shape {
    header_space: u64,
    dict_size: u64,
    dict_used: u64,
    printed: Option<u64>,
    /// The whole region: header space, dictionary, data area.
    len: u64,
}

impl<'a> Image<'a> {
    /// How many bytes the ring whose header starts at `bytes[0]` takes,
    /// from its header alone (`bytes` may hold just the header space):
    /// what a reader of a file reads, and no more.
    pub fn region_len(bytes: &[u8]) -> Result<u64, ImageError> {
        Image::shape(bytes).map(|shape| shape.len)
    }

    /// Parses the ring whose header starts at `bytes[0]`.
    pub fn parse(bytes: &'a [u8]) -> Result<Image<'a>, ImageError> {
        let Shape {
            header_space,
            dict_size,
            dict_used,
            printed,
            len: need,
        } = Image::shape(bytes)?;
        if (bytes.len() as u64) < need {
            return Err(ImageError::Truncated {
                have: bytes.len(),
                need,
            });
        }
        let u64_at = |at| record::u64_at(bytes, at);
        let size = need - header_space - dict_size;
        let (head, tail) = (u64_at(offset::HEAD), u64_at(offset::TAIL));
        if tail < head
            || tail - head > size
            || tail > POSITION_MAX
            || head % 8 != 0
            || tail % 8 != 0
        {
            return Err(ImageError::Malformed("head and tail"));
        }
        let dict_start = header_space as usize;
        Ok(Image {
            dict: &bytes[dict_start..dict_start + dict_used as usize],
            data: &bytes[dict_start + dict_size as usize..need as usize],
            head,
            tail,
            next_seq: u64_at(offset::NEXT_SEQ),
            lost: u64_at(offset::LOST),
            printed,
        })
    }

    /// Checks the header at `bytes[0]` and says what region it describes.
    fn shape(bytes: &[u8]) -> Result<Shape, ImageError> {
        if bytes.len() < offset::DICT_SIZE || !layout::starts_with_magic(bytes) {
            return Err(ImageError::NotARing);
        }
        let u32_at = |at| record::u32_at(bytes, at);
        let u64_at = |at| record::u64_at(bytes, at);
        if u32_at(offset::BYTE_ORDER) != BYTE_ORDER_MARK {
            return Err(if u32_at(offset::BYTE_ORDER) == FOREIGN_BYTE_ORDER {
                ImageError::ForeignByteOrder
            } else {
                ImageError::Malformed("byte-order mark")
            });
        }
        let version = u32_at(offset::VERSION);
        if version > LAYOUT_VERSION {
            return Err(ImageError::FutureVersion(version));
        }
        if version == 0 {
            return Err(ImageError::Malformed("layout version 0"));
        }
        let header_end = match version {
            1 => offset::DICT_SIZE,
            2 => offset::PRINTED,
            _ => offset::END,
        };
        if bytes.len() < header_end {
            return Err(ImageError::Truncated {
                have: bytes.len(),
                need: header_end as u64,
            });
        }
        let header_space = u32_at(offset::HEADER_SPACE) as u64;
        if header_space < header_end as u64
            || header_space > HEADER_SPACE_MAX
            || header_space % 8 != 0
        {
            return Err(ImageError::Malformed("header size"));
        }
        let (dict_size, dict_used) = if version == 1 {
            (0, 0)
        } else {
            (u64_at(offset::DICT_SIZE), u64_at(offset::DICT_USED))
        };
        if dict_size > MAX_SIZE as u64 || dict_used > dict_size {
            return Err(ImageError::Malformed("call-site dictionary size"));
        }
        if u32_at(offset::RECORD_HEADER) as usize != record::HEADER_LEN {
            return Err(ImageError::Malformed("record header size"));
        }
        let size = u64_at(offset::DATA_SIZE);
        if size < MIN_SIZE as u64 || size > MAX_SIZE as u64 || size % 8 != 0 {
            return Err(ImageError::Malformed("data size"));
        }
        Ok(Shape {
            header_space,
            dict_size,
            dict_used,
            printed: (version >= 3).then(|| u64_at(offset::PRINTED)),
            len: header_space + dict_size + size,
        })
    }
}

impl Image<'_> {
    pub fn stats(&self) -> Stats {
        Stats {
            size: self.data.len() as u64,
            recorded: self.next_seq,
            lost: self.lost,
        }
    }
}

impl Region for Image<'_> {
    fn data_size(&self) -> u64 {
        self.data.len() as u64
    }

    fn head(&self) -> u64 {
        self.head
    }

    fn tail(&self) -> u64 {
        self.tail
    }

    fn dict(&self) -> &[u8] {
        self.dict
    }

    fn copy(&self, off: usize, dst: &mut [u8]) {
        dst.copy_from_slice(&self.data[off..off + dst.len()]);
    }
}

/// Offsets in `bytes` where a ring header starts (8-byte aligned positions that
/// hold the magic), for finding rings in a core file.
pub fn find_rings(bytes: &[u8]) -> Vec<usize> {
    (0..bytes.len().saturating_sub(7))
        .step_by(8)
        .filter(|&at| layout::starts_with_magic(&bytes[at..]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::priority::Priority;
    use crate::record::Record;
    use crate::ring::reader::{read, Entry};
    use crate::ring::Ring;

    fn filled_ring(n: u64) -> (Ring, Vec<String>) {
        let mut ring = Ring::new(MIN_SIZE).unwrap();
        let mut written = Vec::new();
        for i in 0..n {
            let msg = format!("message {i} {}", "y".repeat((i * 7 % 61) as usize));
            ring.append(&Record {
                seq: 0,
                time_ns: 1_000 + i,
                tid: 1,
                line: 2,
                priority: Priority::Info,
                source: b"src",
                file: b"f.c",
                func: b"fn",
                message: msg.as_bytes(),
                fields: b"",
                context: false,
                id: 0,
            })
            .unwrap();
            written.push(msg);
        }
        (ring, written)
    }

    #[test]
    fn image_reads_like_the_live_ring() {
        let (ring, written) = filled_ring(700);
        let image = Image::parse(ring.image_bytes()).unwrap();
        assert_eq!(image.next_seq, 700);
        let mut got = Vec::new();
        read(&image, |e| match e {
            Entry::Record(r) => got.push((r.seq, String::from_utf8_lossy(r.message).into_owned())),
            other => panic!("{other:?}"),
        });
        assert_eq!(image.lost + got.len() as u64, 700);
        for (seq, msg) in &got {
            assert_eq!(msg, &written[*seq as usize]);
        }
        assert_eq!(find_rings(ring.image_bytes()), [0]);
    }

    #[test]
    fn header_errors() {
        let (ring, _) = filled_ring(10);
        let bytes = ring.image_bytes().to_vec();
        assert_eq!(
            Image::parse(&bytes[..100]).unwrap_err(),
            ImageError::Truncated {
                have: 100,
                need: bytes.len() as u64
            }
        );
        let mut future = bytes.clone();
        future[8..12].copy_from_slice(&(LAYOUT_VERSION + 1).to_ne_bytes());
        assert_eq!(
            Image::parse(&future).unwrap_err(),
            ImageError::FutureVersion(LAYOUT_VERSION + 1)
        );
        // A version 2 ring reads as one whose records were all printed.
        let mut older = bytes.clone();
        older[8..12].copy_from_slice(&2u32.to_ne_bytes());
        let image = Image::parse(&older).unwrap();
        assert_eq!(image.printed, None);
        assert_eq!(Image::parse(&bytes).unwrap().printed, Some(0));
        let mut bad_dict = bytes.clone();
        bad_dict[72..80].copy_from_slice(&u64::MAX.to_ne_bytes());
        assert_eq!(
            Image::parse(&bad_dict).unwrap_err(),
            ImageError::Malformed("call-site dictionary size")
        );
        let mut swapped = bytes.clone();
        swapped[16..20].copy_from_slice(&0x0403_0201u32.to_ne_bytes());
        assert_eq!(
            Image::parse(&swapped).unwrap_err(),
            ImageError::ForeignByteOrder
        );
        assert_eq!(
            Image::parse(&[0u8; 4096]).unwrap_err(),
            ImageError::NotARing
        );
        let mut bad = bytes.clone();
        bad[40..48].copy_from_slice(&u64::MAX.to_ne_bytes());
        assert!(matches!(Image::parse(&bad), Err(ImageError::Malformed(_))));
    }

    /// A small deterministic generator, so a failing round can be replayed.
    fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    /// Corrupted images (random byte changes, truncated records) never panic,
    /// terminate, and never yield a record that was not written.
    #[test]
    fn corruption_never_yields_a_false_record() {
        let (ring, written) = filled_ring(900);
        let original = ring.image_bytes().to_vec();
        let mut next = xorshift(0x2545_F491_4F6C_DD1D);
        for round in 0..3000 {
            let mut bytes = original.clone();
            let flips = 1 + next() % 16;
            for _ in 0..flips {
                // Mostly the data area; sometimes the header.
                let at = if round % 10 == 0 {
                    next() % 64
                } else {
                    next() % bytes.len() as u64
                };
                bytes[at as usize] ^= (1 + next() % 255) as u8;
            }
            let Ok(image) = Image::parse(&bytes) else {
                continue;
            };
            let mut steps = 0;
            read(&image, |e| {
                steps += 1;
                assert!(steps < 100_000, "reader does not terminate");
                if let Entry::Record(r) = e {
                    let want = written.get(r.seq as usize).map(String::as_bytes);
                    assert_eq!(
                        Some(r.message),
                        want,
                        "round {round}: a corrupted record passed"
                    );
                }
            });
        }
    }

    /// The same with deferred records that refer to the call-site dictionary,
    /// and corruption aimed at the dictionary too: a record read back is the
    /// one written (names, line and text), or it is reported damaged.
    #[test]
    fn corrupting_site_records_or_the_dictionary_never_yields_a_false_record() {
        use crate::deferred::{self, Captured};
        use crate::ring::sites::Site;
        let mut ring = Ring::new(MIN_SIZE).unwrap();
        let sites = [
            (b"a.c".as_slice(), b"sent %zu bytes to %s".as_slice()),
            (b"b.c".as_slice(), b"level %d of %.2f".as_slice()),
            (b"c.c".as_slice(), b"plain words".as_slice()),
        ];
        let entries: Vec<u32> = sites
            .iter()
            .map(|&(file, format)| {
                let site = Site {
                    source: b"src",
                    file,
                    func: b"fn",
                    line: 7,
                    format,
                    id: 0,
                };
                ring.add_site(&site).unwrap()
            })
            .collect();
        for i in 0..900u64 {
            let text = [Captured::Unsigned(i), Captured::Str(Some(b"peer"))];
            let nums = [Captured::Signed(i as i64), Captured::Double(i as f64 / 3.0)];
            let args: &[Captured] = match i % 3 {
                0 => &text,
                1 => &nums,
                _ => &[],
            };
            let len = deferred::args_len(args).unwrap();
            let entry = entries[(i % 3) as usize];
            let stamp = crate::ring::record::Stamp {
                seq: 0,
                time_ns: i,
                tid: 1,
                priority: Priority::Debug,
                for_outputs: false,
                tag: 7,
            };
            ring.append_site(stamp, entry, args, len).unwrap();
        }
        let original = ring.image_bytes().to_vec();
        let clean = |bytes: &[u8]| {
            let mut got = std::collections::HashMap::new();
            read(&Image::parse(bytes).unwrap(), |e| {
                if let Entry::Record(r) = e {
                    let fields = (r.file.to_vec(), r.line, r.message.to_vec());
                    got.insert(r.seq, fields);
                }
            });
            got
        };
        let want = clean(&original);
        assert!(want.len() > 100, "{want:?}");
        let dict_start = layout::HEADER_SPACE as u64;
        let mut next = xorshift(0x9E37_79B9_7F4A_7C15);
        for round in 0..3000 {
            let mut bytes = original.clone();
            for _ in 0..1 + next() % 8 {
                // Half the time the dictionary's used part, else anywhere.
                let at = if round % 2 == 0 {
                    dict_start + next() % 256
                } else {
                    next() % bytes.len() as u64
                };
                bytes[at as usize] ^= (1 + next() % 255) as u8;
            }
            let Ok(image) = Image::parse(&bytes) else {
                continue;
            };
            read(&image, |e| {
                if let Entry::Record(r) = e {
                    let got = (r.file.to_vec(), r.line, r.message.to_vec());
                    assert_eq!(
                        Some(&got),
                        want.get(&r.seq),
                        "round {round}: a corrupted record passed"
                    );
                }
            });
        }
    }
}
