//! What the header, the man pages and the README say of the API cannot
//! drift apart: the header is the source of truth for which functions and
//! macros exist, and every one of them must have its name in vlog(3)'s NAME
//! section (which also makes its alias page, `man vlog_init`) and be
//! described there; the README, which leads to the man pages rather than
//! repeating them, names nothing the header lacks. Each exported function's
//! doc comment ends in the fixed line (tests/architecture.rs checks that),
//! which cbindgen copies into the header.

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
fn every_function_and_macro_is_in_the_man_page() {
    let man = man_names();
    let page = read("man/vlog.3");
    let mut missing = Vec::new();
    for name in api_names() {
        if !man.contains(&name) {
            missing.push(format!("{name}: not in vlog(3)'s NAME section"));
        }
        // Described in the page, beyond the NAME line.
        if page.matches(name.as_str()).count() < 2 {
            missing.push(format!("{name}: named but not described in vlog(3)"));
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

/// The names a text calls: `vlog_init(`, `VLOG_DEBUG(`.
fn called_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    for (at, _) in text.match_indices('(') {
        let head = &text[..at];
        let start = head
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        let name = &head[start..];
        let ours = name.starts_with("vlog") || name.starts_with("VLOG");
        if ours && !name.starts_with("vlog__") && !name.starts_with("VLOG__") {
            names.push(name.to_owned());
        }
    }
    names.sort();
    names.dedup();
    names
}

#[test]
fn the_readme_and_the_other_pages_call_nothing_the_header_lacks() {
    let api = api_names();
    // A few man pages' own words are not C: vlog(7) the section, vlog-dump(1).
    let not_c = ["vlog", "vlog-dump", "vlog-ctl", "vlog-relay", "vlog-syslog"];
    for path in ["README.md", "man/vlog.7", "man/vlog-syslog.7", "DESIGN.md"] {
        let stale: Vec<String> = called_names(&read(path))
            .into_iter()
            .filter(|n| !api.contains(n) && !not_c.contains(&n.as_str()))
            .collect();
        assert!(
            stale.is_empty(),
            "{path} calls what the header lacks: {stale:?}"
        );
    }
}

/// Every man page as its reader sees it: the source holds no control
/// character (a `\f` written as a form feed renders `\fR` as a stray `R`),
/// groff renders it without a warning (`-ww`), the rendered text holds no
/// control character either, and what was once broken renders whole.
#[test]
fn every_page_renders_as_written() {
    let groff = std::process::Command::new("groff")
        .arg("--version")
        .output();
    if !groff.is_ok_and(|o| o.status.success()) {
        support::needs_installed("no groff to render the man pages (apt-get install groff-base)");
        return;
    }
    let mut pages: Vec<_> = std::fs::read_dir(root().join("man"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    pages.sort();
    assert!(pages.len() >= 6, "{pages:?}");
    let mut rendered_all = String::new();
    for page in &pages {
        let source = std::fs::read(page).unwrap();
        let bad: Vec<usize> = source
            .split(|&b| b == b'\n')
            .enumerate()
            .filter(|(_, line)| line.iter().any(|&b| b < 0x20 && b != b'\t'))
            .map(|(i, _)| i + 1)
            .collect();
        assert!(
            bad.is_empty(),
            "{}: control characters on lines {bad:?}",
            page.display()
        );
        let out = std::process::Command::new("groff")
            .args(["-ww", "-man", "-Tutf8", "-P-cbou"])
            .arg(page)
            .env("LC_ALL", "C.UTF-8")
            .output()
            .unwrap();
        let warnings = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && warnings.is_empty(),
            "{}: groff says:\n{warnings}",
            page.display()
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let control = text
            .lines()
            .position(|l| l.chars().any(|c| c.is_control() && c != '\t'));
        assert!(
            control.is_none(),
            "{}: a control character in rendered line {control:?}",
            page.display()
        );
        rendered_all.push_str(&text);
    }
    // The lines that once rendered with a stray letter.
    for whole in ["?max=SIZE&keep=N:", "PREFIX=PREFIX,", "/NAME;", "PATH.N,"] {
        assert!(
            rendered_all.contains(whole),
            "no '{whole}' in the rendered pages"
        );
    }
}
