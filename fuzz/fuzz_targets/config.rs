//! Arbitrary strings as every configuration value vlog parses: the filter,
//! output, level, size, dump and dump-signal parsers and the whole environment
//! reader. None may panic or hang, an accepted string must mean what it says,
//! and a rejected one must say why.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vlog::internal::{
    contains_match, from_env, parse_dump_signal, parse_outputs, parse_size, Dest, DumpTarget,
    Filters, Priority,
};

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(rest);
    match which % 8 {
        0 => match Filters::parse(&text) {
            Ok(filters) => {
                // Every name gets an answer, and the first token decides for
                // a name it matches.
                for name in [&b"qemu.monitor"[..], b"", rest] {
                    let _ = filters.lookup(name);
                }
            }
            Err(e) => assert!(!e.message.is_empty()),
        },
        1 => match parse_outputs(&text) {
            Ok(specs) => {
                for spec in &specs {
                    if let Dest::File(path) = &spec.dest {
                        assert!(path.is_absolute());
                    }
                }
                // Later duplicates replaced earlier ones.
                for (i, a) in specs.iter().enumerate() {
                    assert!(specs[i + 1..].iter().all(|b| !a.same_destination(b)));
                }
            }
            Err(e) => assert!(!e.message.is_empty()),
        },
        2 => {
            if let Some(p) = Priority::parse_level(&text) {
                assert_eq!(Priority::parse_field(&text), Some(p));
            }
        }
        3 => {
            if let Ok(n) = parse_size(&text) {
                // Digits, then at most one of K, M, G: exactly that many bytes.
                let (digits, unit) = match text.char_indices().last() {
                    Some((i, 'k' | 'K')) => (&text[..i], 1 << 10),
                    Some((i, 'm' | 'M')) => (&text[..i], 1 << 20),
                    Some((i, 'g' | 'G')) => (&text[..i], 1 << 30),
                    _ => (&text[..], 1),
                };
                assert_eq!(Some(n), digits.parse::<usize>().ok().map(|d| d * unit));
            }
        }
        4 => {
            let _ = DumpTarget::parse(&text);
            let _ = parse_dump_signal(&text);
        }
        5 => {
            let (pattern, name) = rest.split_at(rest.len() / 2);
            let _ = contains_match(pattern, name);
        }
        _ => {
            // The whole environment: each variable a piece of the input.
            // Reading it opens nothing (outputs are opened when applied).
            let parts: Vec<String> = text.split('\u{1}').map(str::to_owned).collect();
            let get = |name: &str| {
                let i = [
                    "VLOG_LEVEL",
                    "VLOG_FILTERS",
                    "VLOG_OUTPUTS",
                    "VLOG_BUFFER_SIZE",
                    "VLOG_BUFFER_FILE",
                    "VLOG_DUMP",
                    "VLOG_DUMP_SIGNAL",
                ]
                .iter()
                .position(|&n| n == name)?;
                parts.get(i).cloned()
            };
            let mut warnings = 0;
            let config = from_env(get, |_| warnings += 1);
            if let Some(specs) = &config.outputs {
                assert!(specs.iter().all(|s| !matches!(&s.dest, Dest::File(p) if !p.is_absolute())));
            }
        }
    }
});
