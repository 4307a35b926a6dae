//! What libvlog.so.0 exports: the header's names and ABI 3's, each under
//! its version node (link/libvlog.map), and nothing else; and the versions
//! a program built against the header records.

use crate::common::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// The version nodes of link/libvlog.map.
const CURRENT: &str = "VLOG_ABI_4";
const ABI3: &str = "VLOG_ABI_3";
/// The nodes of the names added to ABI 4's header later, and their names.
const ADDED: &[(&str, &[&str])] = &[
    (
        "VLOG_ABI_4.1",
        &[
            "vlog__check_failed",
            "vlog__write_site_backtrace",
            "vlog__write_site_hexdump",
            "vlog_write_hexdump",
        ],
    ),
    ("VLOG_ABI_4.2", &["vlog_watch_levels"]),
];

/// The node a name of the header is exported under.
fn node_of(name: &str) -> &'static str {
    ADDED
        .iter()
        .find(|(_, names)| names.contains(&name))
        .map_or(CURRENT, |(node, _)| node)
}

fn readelf(args: &[&str], file: &Path) -> String {
    let out = Command::new("readelf")
        .args(args)
        .arg(file)
        .output()
        .expect("run readelf (binutils)");
    assert!(
        out.status.success(),
        "readelf {args:?} {file:?}: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// The names the library defines and exports, each with its version (None:
/// exported without one), from `readelf --dyn-syms`.
fn exported(lib: &Path) -> BTreeMap<String, Option<String>> {
    let mut names = BTreeMap::new();
    for line in readelf(&["--dyn-syms", "-W"], lib).lines() {
        // Num: Value Size Type Bind Vis Ndx Name
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.len() < 8 || !cols[0].ends_with(':') || cols[6] == "UND" {
            continue;
        }
        if !matches!(cols[4], "GLOBAL" | "WEAK") {
            continue;
        }
        let (name, version) = match cols[7].split_once('@') {
            Some((name, version)) => (name, Some(version.trim_start_matches('@').to_string())),
            None => (cols[7], None),
        };
        // A version node's own symbol (GNU ld: absolute, unversioned; lld:
        // VLOG_ABI_4@@VLOG_ABI_4).
        if version.as_deref() == Some(name) || (cols[6] == "ABS" && name.starts_with("VLOG_ABI_")) {
            continue;
        }
        names.insert(name.to_string(), version);
    }
    names
}

/// The functions and objects vlog.h declares with external linkage: the
/// compiler's own list of function declarations (GCC's `-aux-info`), and
/// the header's `extern` objects but the program's hidden section bounds.
fn declared_in_header() -> Vec<String> {
    let dir = scratch_dir("symbols");
    let src = dir.join("header.c");
    let aux = dir.join("header.aux");
    std::fs::write(&src, "#include \"vlog.h\"\n").unwrap();
    let mut cmd = Command::new(cc());
    cmd.arg("-fsyntax-only")
        .arg(format!("-I{}", root().join("include").display()))
        .arg("-aux-info")
        .arg(&aux)
        .arg(&src);
    run_compiler(cmd);
    let aux = std::fs::read_to_string(&aux).unwrap_or_default();
    let include = root().join("include");
    let mut names = Vec::new();
    for line in aux.lines() {
        // /* /path/include/vlog_gen.h:458:NC */ extern int vlog_init (void);
        let Some((origin, decl)) = line.split_once(" */ ") else {
            continue;
        };
        if !origin.contains(include.to_str().unwrap()) || !decl.starts_with("extern ") {
            continue;
        }
        let name = decl
            .split(" (")
            .next()
            .unwrap()
            .rsplit([' ', '*'])
            .next()
            .unwrap();
        names.push(name.to_string());
    }
    assert!(
        names.len() > 40,
        "{} gave {} function declarations from include/: is it GCC (-aux-info)?\n{aux}",
        cc(),
        names.len()
    );
    let header = std::fs::read_to_string(root().join("include/vlog.h")).unwrap();
    for line in header.lines() {
        let Some(decl) = line.strip_prefix("extern ") else {
            continue;
        };
        if decl.starts_with('"') || line.contains("visibility(\"hidden\")") {
            continue;
        }
        let decl = decl.split(['[', ';']).next().unwrap();
        names.push(decl.rsplit([' ', '*']).next().unwrap().to_string());
    }
    names.sort();
    names
}

/// ABI 3's names, which the library keeps for old programs (src/ffi/abi3.rs).
fn abi3_names() -> Vec<String> {
    let src = std::fs::read_to_string(root().join("src/ffi/abi3.rs")).unwrap();
    let mut names: Vec<String> = src
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub extern \"C-unwind\" fn "))
        .map(|rest| rest.split('(').next().unwrap().to_string())
        .collect();
    names.sort();
    names
}

#[test]
fn the_library_exports_the_headers_names_and_abi3s_each_under_its_version() {
    let lib = work().join("lib/libvlog.so.0");
    let exported = exported(&lib);
    let header = declared_in_header();
    let abi3 = abi3_names();
    assert_eq!(abi3.len(), 5, "src/ffi/abi3.rs: {abi3:?}");
    let mut wrong = Vec::new();
    let added = header.iter().filter(|n| node_of(n) != CURRENT).count();
    let listed: usize = ADDED.iter().map(|(_, names)| names.len()).sum();
    assert_eq!(added, listed, "vlog.h declares {header:?}");
    let nodes = header
        .iter()
        .map(|n| (n, node_of(n)))
        .chain(abi3.iter().map(|n| (n, ABI3)));
    {
        for (name, node) in nodes {
            match exported.get(name) {
                None => wrong.push(format!("{name}: declared, not exported")),
                Some(v) if v.as_deref() != Some(node) => {
                    wrong.push(format!("{name}: exported under {v:?}, not {node}"))
                }
                Some(_) => {}
            }
        }
    }
    for name in exported.keys() {
        if !header.contains(name) && !abi3.contains(name) {
            wrong.push(format!(
                "{name}: exported, neither in the header nor ABI 3's"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "libvlog.so.0 against include/vlog.h and src/ffi/abi3.rs (link/libvlog.map is the list):\n  {}\nexported: {exported:?}",
        wrong.join("\n  ")
    );
}

#[test]
fn a_program_records_the_version_it_needs() {
    // Built against the header and the shared library: it needs VLOG_ABI_4
    // of libvlog.so.0, and the dynamic linker checks it is there.
    let exe = build("macros", Link::Shared);
    let needs = readelf(&["-V", "-W"], &exe);
    let ours = needs
        .split("File: ")
        .find(|s| s.starts_with("libvlog.so.0"))
        .unwrap_or_else(|| panic!("no version needed from libvlog.so.0:\n{needs}"));
    assert!(ours.contains(&format!("Name: {CURRENT}")), "{needs}");
    assert_ok("macros (shared, versioned)", &run(&exe, &[]));
    // One built with ABI 3's header calls names kept under VLOG_ABI_3.
    let exe = build_as(
        "abi_old",
        Link::Shared,
        "",
        &root().join("c-tests/abi3"),
        &[],
    );
    let needs = readelf(&["-V", "-W"], &exe);
    assert!(needs.contains(&format!("Name: {ABI3}")), "{needs}");
}
