//! Arbitrary bytes as a ring file or core file: parsing and walking them must
//! never panic or loop, whatever the header and records claim.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vlog::internal::{
    find_rings, read, read_ring, read_rings_in_file, render_json, render_line, Entry, Image,
};

fuzz_target!(|data: &[u8]| {
    // The file readers: only what a header describes is read, never past
    // the data.
    let read_at = |buf: &mut [u8], at: u64| {
        let at = at as usize;
        match data.get(at..at + buf.len()) {
            Some(bytes) => {
                buf.copy_from_slice(bytes);
                Ok(())
            }
            None => Err(std::io::ErrorKind::UnexpectedEof.into()),
        }
    };
    for ring in read_ring(data.len() as u64, read_at).into_iter().chain(
        read_rings_in_file(data.len() as u64, read_at)
            .unwrap_or_default()
            .into_iter(),
    ) {
        assert!(ring.len() <= data.len());
        let _ = Image::parse(&ring);
    }
    let mut starts = find_rings(data);
    starts.insert(0, 0);
    for at in starts {
        let Ok(image) = Image::parse(&data[at..]) else { continue };
        let mut out = Vec::new();
        let mut steps = 0usize;
        read(&image, |entry| {
            steps += 1;
            assert!(steps <= image.stats().size as usize / 8 + 2, "the walk does not end");
            if let Entry::Record(rec) = entry {
                render_line(&rec, &mut out);
                render_json(&rec, None, &mut out);
                out.clear();
            }
        });
    }
});
