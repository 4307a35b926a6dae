//! Every call site under control: per-site limits (a storm, once and every
//! N across threads, `VLOG_RATELIMIT`), sites switched on by function, file
//! and line through the control socket, the catalog listing a site that
//! never ran, and message ids that survive a rebuild
//! (`c-tests/site_control.c`, which checks its files itself).

use crate::common::*;

fn run_mode(mode: &str, env: &[(&str, &str)]) -> std::process::Output {
    let exe = build("site_control", Link::Static);
    let dir = scratch_dir(&format!("site-control-{mode}"));
    run_with(&exe, &[mode, dir.to_str().unwrap()], env)
}

#[test]
fn a_storm_prints_the_burst_keeps_the_ring_and_costs_a_fraction() {
    let out = run_mode("storm", &[]);
    assert_ok("site_control storm", &out);
    eprintln!("{}", text(&out.stderr));
}

#[test]
fn once_and_every_n_count_every_thread_exactly() {
    assert_ok("site_control once", &run_mode("once", &[]));
}

#[test]
fn a_global_rate_limit_covers_sites_without_their_own() {
    assert_ok("site_control global", &run_mode("global", &[]));
}

#[test]
fn one_statement_switched_on_by_function_file_or_line_and_the_catalog() {
    assert_ok("site_control switch", &run_mode("switch", &[]));
}

#[test]
fn the_environment_sets_the_rate_limit_and_a_bad_one_is_said() {
    // The storm mode's site limits itself; VLOG_RATELIMIT on the others.
    let out = run_mode("global", &[("VLOG_RATELIMIT", "3:0/5")]);
    assert_ok("site_control global, bad VLOG_RATELIMIT", &out);
    let stderr = text(&out.stderr);
    assert_eq!(
        stderr
            .matches("ignoring VLOG_RATELIMIT: invalid rate limit '3:0/5'")
            .count(),
        1,
        "{stderr}"
    );
}

/// The ids of two statements in a build: `id statement` lines.
fn ids(variant: &str, defines: &[&str]) -> Vec<String> {
    let exe = build_as(
        "site_control",
        Link::Static,
        variant,
        &root().join("include"),
        defines,
    );
    let dir = scratch_dir(&format!("site-control-ids{variant}"));
    let out = run_with(&exe, &["ids", dir.to_str().unwrap()], &[]);
    assert!(out.status.success(), "ids{variant}: {}", text(&out.stderr));
    text(&out.stdout).lines().map(str::to_owned).collect()
}

#[test]
fn a_message_id_survives_a_rebuild_and_changes_with_its_format() {
    let plain = ids("", &[]);
    // Lines moved, another file name, optimised: the same ids.
    let moved = ids("-moved", &["-DSITES_MOVED", "-O2"]);
    // One format reworded: its id alone changes.
    let reworded = ids("-reworded", &["-DSITES_REWORDED"]);
    assert_eq!(plain.len(), 2, "{plain:?}");
    assert_eq!(plain, moved);
    assert_eq!(plain[1], reworded[1], "{plain:?} {reworded:?}");
    assert_ne!(plain[0][..8], reworded[0][..8], "{plain:?} {reworded:?}");
    assert!(
        plain[0][..8].bytes().all(|b| b.is_ascii_hexdigit()),
        "{plain:?}"
    );
}

/// Every record of a call site has the site's id, whatever way it took
/// into the ring (`c-tests/message_ids.c`), in the JSON output and in the
/// ring read back: each checked against FNV-1a of the source and the
/// format, computed here.
#[test]
fn every_record_of_a_site_has_the_sites_id() {
    let dir = scratch_dir("message-ids");
    let (json, ring) = (dir.join("out.json"), dir.join("ids.ring"));
    let exe = build("message_ids", Link::Static);
    let outputs = format!("1:json:{}", json.display());
    let out = run(
        &exe,
        &[
            ("VLOG_OUTPUTS", &outputs),
            ("VLOG_FILTERS", "1:test.ids"),
            ("VLOG_BUFFER_FILE", ring.to_str().unwrap()),
            ("VLOG_BUFFER_SIZE", "1M"),
        ],
    );
    assert_ok("message_ids", &out);
    let dumped = dir.join("dump.json");
    std::fs::write(
        &dumped,
        vlog_dump(&["--json", "--source", "test.ids", ring.to_str().unwrap()]).stdout,
    )
    .unwrap();
    let check = r#"
import json, sys
formats = {"plain site ": "plain site %s", "printed site ": "printed site %d",
           "fields site ": "fields site %d", "every second ": "every second %d",
           "long site ": "long site %s", "long double ": "long double %.1Lf",
           "wide ": "wide %*d", "run time priority ": "run time priority %m"}
def fnv(source, fmt):
    h = 0x811c9dc5
    for b in source.encode() + b"\0" + fmt.encode():
        h = ((h ^ b) * 0x01000193) & 0xffffffff
    return "%08x" % max(h, 1)
for path in sys.argv[1:]:
    seen = []
    for line in open(path, encoding="utf-8"):
        o = json.loads(line)
        if o["source"] != "test.ids":
            continue
        fmt = next(f for p, f in formats.items() if o["message"].startswith(p))
        assert o.get("id") == fnv("test.ids", fmt), (path, o.get("id"), fnv("test.ids", fmt), o["message"][:60], o.get("fields"))
        seen.append(o["message"][:24])
    assert len(seen) == 11, (path, seen)
print("ok")
"#;
    python_script("message ids check (python3)", check, &[&json, &dumped]);
}
