//! Debugging powers: bytes kept as bytes (`VLOG_HEXDUMP`), shown as
//! `hexdump -C` shows them and as hex that decodes back to them.

use crate::common::*;
use std::path::Path;
use std::process::Command;

/// What `hexdump -C` makes of the bytes in `file`.
fn hexdump_c(file: &Path) -> String {
    let out = Command::new("hexdump")
        .arg("-C")
        .arg(file)
        .output()
        .expect("run hexdump (bsdextrautils or util-linux)");
    assert!(
        out.status.success(),
        "hexdump -C {file:?}: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// The lines after the record line that ends in `message` (and its fields),
/// up to the next record line: the record's hex dump.
fn dump_after(log: &str, message: &str) -> String {
    let mut lines = log.split_inclusive('\n');
    let head = lines
        .by_ref()
        .find(|l| l.contains(&format!(" : {message}")))
        .unwrap_or_else(|| panic!("no record \"{message}\" in:\n{log}"));
    assert!(head.starts_with("20"), "{head}");
    lines.take_while(|l| !l.starts_with("20")).collect()
}

#[test]
fn a_hexdump_is_hexdump_c_in_text_and_hex_in_json() {
    let dir = scratch_dir("hexdump-files");
    let exe = build("hexdump", Link::Static);
    let out = run_with(&exe, &[dir.to_str().unwrap()], &[]);
    assert_ok("hexdump", &out);
    for file in ["text.log", "dump.txt"] {
        let log = std::fs::read_to_string(dir.join(file)).unwrap();
        for (message, bytes) in [
            ("dump 0", "bytes.0"),
            ("dump 1", "bytes.1"),
            ("dump 15", "bytes.15"),
            ("dump 16", "bytes.16"),
            ("dump 17", "bytes.17"),
            ("dump 4096", "bytes.4096"),
            ("dump 5000 [VLOG_HEXDUMP_OMITTED=904]", "bytes.5000"),
            ("dump zeros", "bytes.zeros"),
            ("fn", "bytes.fn"),
        ] {
            let got = dump_after(&log, message);
            let want = hexdump_c(&dir.join(bytes));
            assert!(
                got == want,
                "{file}, \"{message}\": the record's dump\n{got}\nis not hexdump -C's\n{want}"
            );
        }
        let guarded = dump_after(&log, "guarded [VLOG_HEXDUMP_OMITTED=1073737728]");
        assert!(guarded.ends_with("*\n00001000\n"), "{guarded}");
    }
    let check = r#"
import json, sys, os
d = sys.argv[1]
objs = [json.loads(l) for l in open(os.path.join(d, "out.json"), encoding="utf-8")]
seen = 0
for o in objs:
    m = o["message"]
    if not (m.startswith("dump ") or m == "fn"):
        continue
    f = o["fields"]
    name = "bytes." + (m[5:] if m != "fn" else "fn")
    want = open(os.path.join(d, name), "rb").read()
    assert bytes.fromhex(f["VLOG_HEXDUMP"]) == want, (m, f["VLOG_HEXDUMP"][:80])
    assert f["VLOG_HEXDUMP"] == f["VLOG_HEXDUMP"].lower(), m
    omitted = f.get("VLOG_HEXDUMP_OMITTED")
    assert omitted == (904 if m == "dump 5000" else None), (m, f)
    seen += 1
assert seen == 9, seen
print("ok")
"#;
    python_script("hexdump JSON (python3)", check, &[dir.as_os_str()]);
}
