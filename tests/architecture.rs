//! The shape of the crate, checked: `cargo test --test architecture`.
//!
//! - No module of `src/` imports one that imports it back, directly or
//!   through others, and no stage (a top-level module) depends on a stage
//!   that depends on it: imports point down (DESIGN.md, "Layout").
//! - `unsafe` appears only in `ffi/`, `ring/`, `crash/`, `sys/`,
//!   `source.rs` and `site.rs` (the two C structs the macros compile in).
//! - No module has more than 500 lines before its tests, except
//!   `text/printf.rs`, whose one job needs them.
//!
//! The import graph is read from the source text: every `use` tree and every
//! `crate::`, `super::` and `self::` path outside comments, strings and
//! `#[cfg(test)]` modules, resolved to the module file it names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const SIZE_LIMIT: usize = 500;
const SIZE_EXEMPT: &[&str] = &["text::printf"];
const UNSAFE_ALLOWED: &[&str] = &["ffi", "ring", "crash", "sys", "source", "site"];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every module file of the library (not `src/bin`), by module path
/// (`ring::writer`; the root is "").
fn modules() -> BTreeMap<String, PathBuf> {
    fn walk(dir: &Path, prefix: &[String], out: &mut BTreeMap<String, PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            if path.is_dir() {
                if prefix.is_empty() && name == "bin" {
                    continue;
                }
                let mut inner = prefix.to_vec();
                inner.push(name);
                walk(&path, &inner, out);
            } else if let Some(stem) = name.strip_suffix(".rs") {
                let mut segments = prefix.to_vec();
                if stem != "mod" && stem != "lib" {
                    segments.push(stem.to_owned());
                }
                out.insert(segments.join("::"), path);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(&src(), &[], &mut out);
    out
}

/// The code of a file with comments and string contents blanked and the
/// `#[cfg(test)]` module cut off (it is last in every file here).
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    let b = text.as_bytes();
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match (b[i], b.get(i + 1).copied()) {
            (b'/', Some(b'/')) => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            (b'/', Some(b'*')) => {
                let mut depth = 0;
                while i < b.len() {
                    if b[i..].starts_with(b"/*") {
                        depth += 1;
                        i += 2;
                    } else if b[i..].starts_with(b"*/") {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            (b'b', Some(b'"')) | (b'c', Some(b'"')) if !ident_byte(b, i.wrapping_sub(1)) => {
                i += 1;
            }
            (b'r', Some(b'"' | b'#')) if !ident_byte(b, i.wrapping_sub(1)) => {
                // A raw string: r"..." or r#"..."#.
                let mut j = i + 1;
                let mut hashes = 0;
                while b.get(j) == Some(&b'#') {
                    hashes += 1;
                    j += 1;
                }
                if b.get(j) != Some(&b'"') {
                    out.push('r');
                    i += 1;
                    continue;
                }
                let close: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                j += 1;
                while j < b.len() && !b[j..].starts_with(&close) {
                    j += 1;
                }
                out.push_str("\"\"");
                i = j + close.len();
            }
            (b'"', _) => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                out.push_str("\"\"");
                i += 1;
            }
            (b'\'', _) => {
                // A char literal ('x', '\n', '\''), or a lifetime ('a).
                let end = if b.get(i + 1) == Some(&b'\\') {
                    b[i + 2..]
                        .iter()
                        .position(|&c| c == b'\'')
                        .map(|p| i + 3 + p)
                } else if b.get(i + 2) == Some(&b'\'') {
                    Some(i + 3)
                } else {
                    None
                };
                match end {
                    Some(end) => {
                        out.push_str("' '");
                        i = end;
                    }
                    None => {
                        out.push('\'');
                        i += 1;
                    }
                }
            }
            (c, _) => {
                out.push(c as char);
                i += 1;
            }
        }
    }
    out
}

fn ident_byte(b: &[u8], i: usize) -> bool {
    b.get(i)
        .is_some_and(|&c| c.is_ascii_alphanumeric() || c == b'_')
}

/// The paths a file's code names: each a list of segments, the first one
/// `crate`, `super`, `self` or the first segment of a `use` path. A path
/// inside an inline `mod name { ... }` has its leading `super`s that only
/// leave those inline modules taken off (they name the file itself).
fn paths(code: &str) -> Vec<Vec<String>> {
    let tokens = tokenize(code);
    let mut out = Vec::new();
    // The brace depths at which inline modules opened.
    let mut inline: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    let within = |mut path: Vec<String>, inline: usize| -> Vec<String> {
        let mut n = 0;
        while n < inline && path.first().map(String::as_str) == Some("super") {
            path.remove(0);
            n += 1;
        }
        if n > 0 || (inline > 0 && path.first().map(String::as_str) == Some("self")) {
            // Left inside the file: it names the file's own module.
            if path.first().map(String::as_str) != Some("super") {
                path.insert(0, "self".into());
            }
        }
        path
    };
    while i < tokens.len() {
        match tokens[i].as_str() {
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                if inline.last() == Some(&depth) {
                    inline.pop();
                }
            }
            "mod" if tokens.get(i + 2).map(String::as_str) == Some("{") => {
                inline.push(depth);
                depth += 1;
                i += 3;
                continue;
            }
            _ => {}
        }
        if tokens[i] == "use" {
            let mut j = i + 1;
            let mut tree = Vec::new();
            while j < tokens.len() && tokens[j] != ";" {
                tree.push(tokens[j].clone());
                j += 1;
            }
            let mut found = Vec::new();
            expand_use(&tree, &[], &mut found);
            out.extend(found.into_iter().map(|p| within(p, inline.len())));
            i = j;
            continue;
        }
        if matches!(tokens[i].as_str(), "crate" | "super" | "self")
            && tokens.get(i + 1).map(String::as_str) == Some("::")
            && (i == 0 || tokens[i - 1] != "::")
        {
            let mut path = vec![tokens[i].clone()];
            let mut j = i + 1;
            while tokens.get(j).map(String::as_str) == Some("::")
                && tokens.get(j + 1).is_some_and(|t| is_ident(t))
            {
                path.push(tokens[j + 1].clone());
                j += 2;
            }
            out.push(within(path, inline.len()));
            i = j;
            continue;
        }
        i += 1;
    }
    out
}

fn is_ident(t: &str) -> bool {
    t.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

fn tokenize(code: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let b = code.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_alphanumeric() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            tokens.push(code[start..i].to_owned());
        } else if b[i..].starts_with(b"::") {
            tokens.push("::".into());
            i += 2;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else {
            tokens.push((c as char).to_string());
            i += 1;
        }
    }
    tokens
}

/// Expands a `use` tree (`crate::a::{b, c::{d, e}}`) into its paths.
fn expand_use(tree: &[String], prefix: &[String], out: &mut Vec<Vec<String>>) {
    // Split the top level at commas outside braces.
    let mut depth = 0;
    let mut start = 0;
    let mut parts = Vec::new();
    for (k, t) in tree.iter().enumerate() {
        match t.as_str() {
            "{" => depth += 1,
            "}" => depth -= 1,
            "," if depth == 0 => {
                parts.push(&tree[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    parts.push(&tree[start..]);
    for part in parts {
        let mut path = prefix.to_vec();
        let mut k = 0;
        while k < part.len() {
            match part[k].as_str() {
                "::" | "pub" | "(" | ")" => k += 1,
                "{" => {
                    let inner = &part[k + 1..part.len() - 1];
                    expand_use(inner, &path, out);
                    path.clear();
                    break;
                }
                "as" => break,
                t if is_ident(t) => {
                    path.push(t.to_owned());
                    k += 1;
                }
                _ => k += 1,
            }
        }
        if !path.is_empty() {
            out.push(path);
        }
    }
}

/// The module a path names from inside module `from`, if it is one of
/// ours: the longest prefix that is a module file.
fn resolve(
    from: &str,
    path: &[String],
    known: &BTreeMap<String, PathBuf>,
    is_dir: bool,
) -> Option<String> {
    let mut base: Vec<String> = if from.is_empty() {
        Vec::new()
    } else {
        from.split("::").map(str::to_owned).collect()
    };
    let mut rest = path;
    match path.first()?.as_str() {
        "crate" => {
            base.clear();
            rest = &path[1..];
        }
        "super" => {
            // In a/b.rs (module a::b) super is a; in a/mod.rs (module a),
            // super is the root.
            let _ = is_dir;
            base.pop();
            rest = &path[1..];
            while rest.first().map(String::as_str) == Some("super") {
                base.pop();
                rest = &rest[1..];
            }
        }
        "self" => rest = &path[1..],
        first => {
            // A path relative to this module: a child module of it.
            let mut child = base.clone();
            child.push(first.to_owned());
            if !known.contains_key(&child.join("::")) {
                return None;
            }
        }
    }
    let mut best = None;
    let mut segments = base;
    if known.contains_key(&segments.join("::")) {
        best = Some(segments.join("::"));
    }
    for s in rest {
        segments.push(s.clone());
        let name = segments.join("::");
        if known.contains_key(&name) {
            best = Some(name);
        } else {
            break;
        }
    }
    best
}

fn graph() -> (BTreeMap<String, BTreeSet<String>>, BTreeMap<String, String>) {
    let known = modules();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut texts = BTreeMap::new();
    for (module, path) in &known {
        let text = std::fs::read_to_string(path).unwrap();
        let is_dir = path.file_name().unwrap() == "mod.rs";
        let code = code(&text);
        let entry = edges.entry(module.clone()).or_default();
        for p in paths(&code) {
            if let Some(to) = resolve(module, &p, &known, is_dir) {
                if &to != module && !to.is_empty() {
                    entry.insert(to);
                }
            }
        }
        texts.insert(module.clone(), text);
    }
    edges.remove("");
    (edges, texts)
}

/// A cycle in `edges`, if there is one, as the list of nodes on it.
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(node.to_owned(), 1);
        stack.push(node.to_owned());
        for next in edges.get(node).into_iter().flatten() {
            match state.get(next.as_str()).copied().unwrap_or(0) {
                1 => {
                    let at = stack.iter().position(|n| n == next).unwrap();
                    let mut cycle = stack[at..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(next, edges, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(node.to_owned(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in edges.keys() {
        if state.get(node.as_str()).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(node, edges, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

fn stage(module: &str) -> String {
    module.split("::").next().unwrap().to_owned()
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let (edges, _) = graph();
    if let Some(cycle) = find_cycle(&edges) {
        panic!("import cycle: {}", cycle.join(" -> "));
    }
}

#[test]
fn stages_depend_only_downwards() {
    let (edges, _) = graph();
    let mut stages: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, tos) in &edges {
        let entry = stages.entry(stage(from)).or_default();
        for to in tos {
            if stage(to) != stage(from) {
                entry.insert(stage(to));
            }
        }
    }
    if let Some(cycle) = find_cycle(&stages) {
        panic!("stages import each other: {}", cycle.join(" -> "));
    }
    // The order, bottom first, for whoever reads the test's output.
    let mut order = Vec::new();
    let mut left = stages.clone();
    while !left.is_empty() {
        let ready: Vec<String> = left
            .iter()
            .filter(|(_, deps)| deps.iter().all(|d| !left.contains_key(d)))
            .map(|(s, _)| s.clone())
            .collect();
        for s in &ready {
            left.remove(s);
        }
        order.push(ready.join(" "));
    }
    eprintln!("stages, bottom first: {}", order.join(" | "));
}

#[test]
fn unsafe_only_where_it_must_be() {
    let (_, texts) = graph();
    let mut offenders = Vec::new();
    for (module, text) in &texts {
        if UNSAFE_ALLOWED.contains(&stage(module).as_str()) {
            continue;
        }
        // Test modules included: the rule is about the whole file.
        let whole = code(&text.replace("#[cfg(test)]\nmod tests", "mod tests"));
        if tokenize(&whole).iter().any(|t| t == "unsafe") {
            offenders.push(module.clone());
        }
    }
    assert!(
        offenders.is_empty(),
        "unsafe outside {UNSAFE_ALLOWED:?}: {offenders:?}"
    );
}

#[test]
fn no_module_is_too_long() {
    let (_, texts) = graph();
    let mut long = Vec::new();
    for (module, text) in &texts {
        let before_tests = text.split("#[cfg(test)]\nmod tests").next().unwrap();
        let lines = before_tests.lines().count();
        if lines > SIZE_LIMIT && !SIZE_EXEMPT.contains(&module.as_str()) {
            long.push(format!("{module}: {lines}"));
        }
    }
    assert!(long.is_empty(), "modules over {SIZE_LIMIT} lines: {long:?}");
}

/// The checker itself, on made-up sources: a use tree, relative paths and
/// a cycle are all seen.
#[test]
fn the_checker_sees_what_it_must() {
    let code_of = code;
    let code = code(
        "use crate::{a::{b, c as d}, e};\n// use crate::hidden;\nlet s = \"crate::nope\";\nsuper::f::g();\n",
    );
    let found = paths(&code);
    assert!(
        found.contains(&vec!["crate".into(), "a".into(), "b".into()]),
        "{found:?}"
    );
    assert!(
        found.contains(&vec!["crate".into(), "a".into(), "c".into()]),
        "{found:?}"
    );
    assert!(
        found.contains(&vec!["crate".into(), "e".into()]),
        "{found:?}"
    );
    assert!(
        found.contains(&vec!["super".into(), "f".into(), "g".into()]),
        "{found:?}"
    );
    assert!(
        !found.iter().any(|p| p.contains(&"hidden".to_string())),
        "{found:?}"
    );
    assert!(
        !found.iter().any(|p| p.contains(&"nope".to_string())),
        "{found:?}"
    );
    // Inside an inline module, `super` is the file itself.
    let inner = paths(&code_of(
        "mod offset {\n    use super::Header;\n}\nuse super::x;\n",
    ));
    assert_eq!(
        inner,
        vec![
            vec!["self".to_string(), "Header".into()],
            vec!["super".into(), "x".into()]
        ]
    );
    let mut edges = BTreeMap::new();
    edges.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    edges.insert("b".to_string(), BTreeSet::from(["a".to_string()]));
    assert!(find_cycle(&edges).is_some(), "no cycle found in {edges:?}");
    let known: BTreeMap<String, PathBuf> = ["", "ring", "ring::writer", "ring::layout", "text"]
        .iter()
        .map(|m| (m.to_string(), PathBuf::new()))
        .collect();
    let p = |s: &str| s.split("::").map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(
        resolve("ring::writer", &p("super::layout::Header"), &known, false).as_deref(),
        Some("ring::layout")
    );
    assert_eq!(
        resolve("ring", &p("writer::Ring"), &known, true).as_deref(),
        Some("ring::writer")
    );
    assert_eq!(
        resolve("ring::writer", &p("crate::text::put"), &known, false).as_deref(),
        Some("text")
    );
    assert_eq!(resolve("ring", &p("std::ptr"), &known, true), None);
}

/// Every exported function's doc comment (which cbindgen copies into
/// vlog_gen.h) ends in the one fixed form: what it does with NULL, who owns
/// what, how it reports errors, and whether it is async-signal-safe.
#[test]
fn every_exported_function_ends_its_doc_in_the_fixed_form() {
    let mut bad = Vec::new();
    let mut seen = 0;
    for (module, path) in modules() {
        if stage(&module) != "ffi" {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let Some(rest) = line
                .strip_prefix("pub extern \"C\" fn ")
                .or_else(|| line.strip_prefix("pub extern \"C-unwind\" fn "))
            else {
                continue;
            };
            let name = rest.split('(').next().unwrap();
            seen += 1;
            let mut doc = Vec::new();
            for l in lines[..i].iter().rev() {
                match l.trim_start().strip_prefix("///") {
                    Some(d) => doc.push(d.trim()),
                    None if l.trim_start().starts_with("#[") => {}
                    None => break,
                }
            }
            doc.reverse();
            let doc = doc.join(" ");
            let Some(at) = doc.rfind("NULL: ") else {
                bad.push(format!("{name}: no closing 'NULL: ...' line"));
                continue;
            };
            let closing = &doc[at..];
            let keys = [
                "NULL: ",
                "; ownership: ",
                "; errors: ",
                "; async-signal-safe: ",
            ];
            let mut from = 0;
            for key in keys {
                match closing[from..].find(key) {
                    Some(k) => from += k + key.len(),
                    None => {
                        bad.push(format!("{name}: the closing line lacks '{key}'"));
                        break;
                    }
                }
            }
            if !(closing.ends_with("async-signal-safe: yes.")
                || closing.ends_with("async-signal-safe: no."))
            {
                bad.push(format!(
                    "{name}: the closing line must end 'async-signal-safe: yes.' or 'no.'"
                ));
            }
        }
    }
    assert!(seen >= 20, "found only {seen} exported functions");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
