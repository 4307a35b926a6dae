//! Arbitrary bytes as a ring file or core file: parsing and walking them must
//! never panic or loop, whatever the header and records claim.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vlog::internal::{find_rings, read, render_json, render_line, Entry, Image};

fuzz_target!(|data: &[u8]| {
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
