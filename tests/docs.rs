//! What the header, the man pages and the README say of the API cannot
//! drift apart: the header is the source of truth for which functions and
//! macros exist, and every one of them must have its name in vlog(3)'s NAME
//! section (which also makes its alias page, `man vlog_init`) and a mention
//! in the README. Each exported function's doc comment ends in the fixed
//! line (tests/architecture.rs checks that), which cbindgen copies into the
//! header.

mod support;

use support::root;

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap()
}

/// The API's names: the functions the generated header declares, the
/// inline functions and the macros of vlog.h (not the vlog__/VLOG__
/// machinery, nor the include guard).
fn api_names() -> Vec<String> {
    let mut names = Vec::new();
    let words = |line: &str| {
        line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    for line in read("include/vlog_gen.h").lines() {
        // A declaration: `int vlog_init(void);`, `const char *vlog_version(void);`
        if line.starts_with(' ') || line.starts_with('#') || !line.contains('(') {
            continue;
        }
        let head = &line[..line.find('(').unwrap()];
        if let Some(name) = words(head)
            .last()
            .filter(|w| w.starts_with("vlog") && !w.starts_with("vlog__"))
        {
            names.push(name.clone());
        }
    }
    for line in read("include/vlog.h").lines() {
        let decl = line
            .strip_prefix("#define ")
            .map(|rest| rest.split(['(', ' ']).next().unwrap_or("").to_owned())
            .or_else(|| {
                line.strip_prefix("static inline int ")
                    .map(|rest| rest.split('(').next().unwrap_or("").to_owned())
            });
        if let Some(name) = decl {
            let public = (name.starts_with("VLOG_") || name.starts_with("vlog") || name == "VLOG")
                && !name.starts_with("VLOG__")
                && !name.starts_with("vlog__")
                && name != "VLOG_H";
            if public && !names.contains(&name) {
                names.push(name);
            }
        }
    }
    assert!(names.len() > 30, "the header parse found {names:?}");
    names
}

/// vlog(3)'s NAME section: the names it documents.
fn man_names() -> Vec<String> {
    let page = read("man/vlog.3");
    let start = page.find(".SH NAME\n").unwrap() + ".SH NAME\n".len();
    let end = page[start..].find("\\-").unwrap();
    page[start..start + end]
        .split([',', ' ', '\n'])
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_function_and_macro_is_in_the_man_page_and_the_readme() {
    let man = man_names();
    let page = read("man/vlog.3");
    let readme = read("README.md");
    let mut missing = Vec::new();
    for name in api_names() {
        if !man.contains(&name) {
            missing.push(format!("{name}: not in vlog(3)'s NAME section"));
        }
        // Described in the page, beyond the NAME line.
        if page.matches(name.as_str()).count() < 2 {
            missing.push(format!("{name}: named but not described in vlog(3)"));
        }
        if !readme.contains(&format!("`{name}")) {
            missing.push(format!("{name}: not in README.md"));
        }
    }
    assert!(
        missing.is_empty(),
        "the docs drifted:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_man_page_names_nothing_the_header_lacks() {
    let api = api_names();
    let stale: Vec<String> = man_names()
        .into_iter()
        .filter(|n| n != "vlog" && !api.contains(n))
        .collect();
    assert!(
        stale.is_empty(),
        "vlog(3) names what the header lacks: {stale:?}"
    );
}
