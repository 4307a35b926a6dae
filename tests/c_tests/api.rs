//! The C API's promises: the macros and their inline check, formats and
//! `%n`, deferred arguments, messages long, hostile and NULL, structured
//! fields, errno, no allocation, the header in C and C++, sources in
//! libraries that are unloaded.

use std::path::Path;
use std::process::Command;

use crate::common::*;
use crate::support::run_vlog_dump;

#[test]
fn macros_check_inline_and_skip_arguments() {
    check("macros");
}

#[test]
fn macros_work_through_the_shared_library() {
    let exe = build("macros", Link::Shared);
    assert_ok("macros (shared)", &run(&exe, &[]));
    let out = Command::new("readelf")
        .arg("-d")
        .arg(work().join("lib/libvlog.so.0"))
        .output();
    if let Ok(out) = out {
        assert!(text(&out.stdout).contains("[libvlog.so.0]"), "soname");
    }
}

#[test]
fn filtered_call_never_formats() {
    check("filtered_no_format");
}

#[test]
fn null_arguments_are_safe() {
    check("null_args");
}

/// A file that includes Open vSwitch's <openvswitch/vlog.h> (a stand-in with
/// the names it shares with vlog.h) before or after vlog.h, with
/// VLOG_NO_SHORT_NAMES, builds without a warning in C and C++; Open
/// vSwitch's names stay its own, and vlog logs through VLOG_AT and its kin.
/// Without the switch the same file does not build.
#[test]
fn a_file_that_includes_open_vswitchs_vlog_h_too_uses_the_long_names() {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let builds: [(&str, &str, &[&str]); 3] = [
        ("", "cc", &[]),
        ("-vlog-first", "cc", &["-DVLOG_FIRST", "-Wpedantic"]),
        ("-cxx", "c++", &["-x", "c++", "-std=c++11"]),
    ];
    for (variant, compiler, extra) in builds {
        let compiler = if compiler == "c++" { cxx.clone() } else { cc() };
        // Linked with libvlog.a too: its vlog_init is weak, and the
        // program's own (Open vSwitch's) is the one called.
        for link in [Link::Shared, Link::Static] {
            let exe = build_with("namesakes", link, variant, &compiler, extra);
            assert_ok(&format!("namesakes{variant} ({link:?})"), &run(&exe, &[]));
        }
    }
    // What the switch is for: without it, Open vSwitch's vlog_init and
    // VLOG_WARN meet vlog's.
    let out = Command::new(cc())
        .args(["-fsyntax-only", "-Wall", "-Werror"])
        .arg("-I")
        .arg(root().join("include"))
        .arg("-include")
        .arg(root().join("c-tests/namesakes/openvswitch/vlog.h"))
        .arg("-x")
        .arg("c")
        .arg("-")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(b"#include <vlog.h>\n")?;
            child.wait_with_output()
        })
        .expect("cc");
    let said = text(&out.stderr);
    assert!(
        !out.status.success() && said.contains("vlog_init") && said.contains("VLOG_WARN"),
        "vlog.h and Open vSwitch's header without VLOG_NO_SHORT_NAMES:\n{said}"
    );
}

/// The same beside glog's <glog/logging.h> in C++, whose VLOG(n) is a
/// stream (as Abseil's is).
#[test]
fn a_cxx_file_that_includes_glog_too_uses_the_long_names() {
    if !Path::new("/usr/include/glog/logging.h").exists() {
        needs_installed("glog's header is not installed (libgoogle-glog-dev)");
        return;
    }
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let exe = build_with(
        "namesakes_glog",
        Link::Shared,
        "",
        &cxx,
        &["-x", "c++", "-std=c++11", "-Wl,--no-as-needed", "-lglog"],
    );
    let out = run(&exe, &[]);
    assert_ok("namesakes_glog", &out);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("] glog says 1\n"), "{stderr}");
    assert!(stderr.contains(" : vlog says 2\n"), "{stderr}");
}

/// Every C type an argument can have is captured as printf reads it and
/// evaluated once: in C11 (the type known at compile time), in C99 and C++
/// (fetched from a va_list as the format says), recorded for later or
/// printed at once.
#[test]
fn every_argument_type_is_captured_once_as_printf_reads_it() {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let builds: [(&str, &[&str]); 3] = [
        ("-c11", &[]),
        ("-c99", &["-std=c99"]),
        ("-cxx", &["-x", "c++", "-std=c++17"]),
    ];
    for (variant, extra) in builds {
        let compiler = if variant == "-cxx" { cxx.clone() } else { cc() };
        let exe = build_with("capture", Link::Static, variant, &compiler, extra);
        for mode in ["ring", "printed"] {
            assert_ok(
                &format!("capture{variant} {mode}"),
                &run_with(&exe, &[mode], &[]),
            );
        }
    }
}

#[test]
fn long_messages_kept_then_truncated_with_marker() {
    check("long_messages");
}

#[test]
fn cached_levels_follow_configuration() {
    check("levels");
}

#[test]
fn level_watchers_are_told_each_change_outside_the_lock() {
    // Under a tool that owns malloc, the signal raised from it is left out.
    check_saying_skips("watch_levels");
}

#[test]
fn dump_to_any_fd() {
    check("dump_fd");
}

#[test]
fn dump_holds_the_newest_records() {
    let exe = build("dump_newest", Link::Static);
    let (dump, file) = (
        work().join("dump_newest.txt"),
        work().join("dump_newest.ring"),
    );
    let _ = std::fs::remove_file(&file);
    let (dump, path) = (dump.to_str().unwrap(), file.to_str().unwrap());
    let target = format!("file:{dump}");
    let env = [("VLOG_DUMP", target.as_str()), ("VLOG_DUMP_SIGNAL", "USR2")];
    assert_ok("dump_newest", &run_with(&exe, &[dump], &env));
    let out = run_with(
        &exe,
        &[dump, path],
        &[
            env[0],
            env[1],
            ("VLOG_BUFFER_FILE", path),
            ("VLOG_BUFFER_SIZE", "8M"),
        ],
    );
    assert_ok("dump_newest with a damaged ring file", &out);
    // vlog-dump reads the file whole: every record the damage left, and
    // it says what the damage cost (failing for it).
    let out = run_vlog_dump(&[path]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    let wide = stdout.matches(" : wide ").count();
    assert!(
        !out.status.success()
            && stderr.contains("bytes of damaged records passed over")
            && wide > 15_000
            && stdout.contains(" : wide 29999 ")
            && stdout.matches(" : small ").count() == 30_000,
        "{wide} wide records; {stderr}"
    );
    let _ = std::fs::remove_file(&file);
}

#[test]
fn shutdown_and_restart() {
    check("shutdown");
}

#[test]
fn dlclosed_source_leaves_nothing_behind() {
    let work = work();
    let lib = work.join("lib");
    let mut cmd = Command::new(cc());
    cmd.args([
        "-std=c11", "-Wall", "-Wextra", "-Werror", "-g", "-shared", "-fPIC",
    ])
    .arg("-I")
    .arg(root().join("include"))
    .arg(root().join("c-tests/dlclose_plugin.c"))
    .arg("-o")
    .arg(work.join("dlclose_plugin.so"))
    .arg(format!("-L{}", lib.display()))
    .arg("-lvlog")
    .arg(format!("-Wl,-rpath,{}", lib.display()));
    run_compiler(cmd);
    let exe = build("dlclose", Link::Shared);
    assert_ok("dlclose", &run(&exe, &[]));
    assert_ok("dlclose late", &run_with(&exe, &["late"], &[]));
}

#[test]
fn header_is_clean_c99_c11_and_cxx() {
    let modes: [(&str, &[&str]); 4] = [
        ("cc", &["-std=c99"]),
        ("cc", &["-std=c11"]),
        ("c++", &["-std=c++11", "-x", "c++"]),
        ("c++", &["-std=c++17", "-x", "c++"]),
    ];
    for (i, (compiler, flags)) in modes.iter().enumerate() {
        let compiler = if *compiler == "cc" {
            cc()
        } else {
            std::env::var("CXX").unwrap_or_else(|_| "c++".into())
        };
        let exe = work().join(format!("header_only_{i}"));
        let mut cmd = Command::new(compiler);
        // -Wredundant-decls: strict builds use it, and VLOG_INIT must
        // take its semicolon without declaring anything twice.
        cmd.args([
            "-Wall",
            "-Wextra",
            "-Wpedantic",
            "-Wredundant-decls",
            "-Werror",
        ])
        .args(*flags)
        .arg("-I")
        .arg(root().join("include"))
        .arg(root().join("c-tests/header_only.c"))
        .args(["-x", "none"])
        .arg(work().join("lib/libvlog.a"))
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&exe);
        run_compiler(cmd);
        assert_ok("header_only", &run(&exe, &[]));
    }
}

/// Below C99 or C++11 the header stops the build with one line that names
/// the minimum, before any error of its own.
#[test]
fn header_names_the_language_it_needs() {
    for (compiler, flags, says) in [
        ("cc", &["-std=c89"][..], "vlog.h needs C99 or later"),
        ("cc", &["-std=gnu89"], "vlog.h needs C99 or later"),
        (
            "c++",
            &["-std=c++03", "-x", "c++"],
            "vlog.h needs C++11 or later",
        ),
    ] {
        let compiler = if compiler == "cc" {
            cc()
        } else {
            std::env::var("CXX").unwrap_or_else(|_| "c++".into())
        };
        let out = Command::new(&compiler)
            .args(flags)
            .arg("-I")
            .arg(root().join("include"))
            .args(["-fsyntax-only", "-Wfatal-errors"])
            .arg(root().join("c-tests/header_only.c"))
            .output()
            .unwrap();
        let err = text(&out.stderr);
        let first = err.lines().find(|l| l.contains("error"));
        assert!(
            !out.status.success() && first.is_some_and(|l| l.contains(says)),
            "{compiler} {flags:?}: {err}"
        );
    }
}

#[test]
fn recording_allocates_nothing() {
    if skipped_under_tool("the tool replaces the allocator this test counts") {
        return;
    }
    check("no_alloc");
}

#[test]
fn deferred_records_read_back_as_printf_text() {
    check("deferred");
}

#[test]
fn call_sites_beyond_the_dictionary_and_across_a_new_ring_read_back() {
    check("sites");
}

#[test]
fn hostile_message_contents_are_escaped_the_same_in_outputs_and_ring() {
    let exe = build("hostile", Link::Static);
    let out = run_with(&exe, &[work().join("hostile.log").to_str().unwrap()], &[]);
    assert_ok("hostile", &out);
}

/// The format check holds however vlog.h is found and whatever the flags:
/// with `-I`, as a system header (`-isystem`, which GCC spares its warnings,
/// like /usr/include) from a copy outside the tree, with and without
/// `-Wall`, in C11, C99 and C++. A string from outside used as the format
/// (a pointer, or a char array filled at run time) does not compile (even
/// without -Werror); the same string logged with "%s", a const char array
/// and `__func__` compile without a word; an argument of the wrong type is one warning
/// with `-Wall` (not two), as the build's flags say.
#[test]
fn a_non_literal_format_without_arguments_does_not_compile() {
    let installed = scratch_dir("format-check-include");
    for header in ["vlog.h", "vlog_gen.h"] {
        std::fs::copy(root().join("include").join(header), installed.join(header)).unwrap();
    }
    let tree = root().join("include");
    let compile =
        |name: &str, lang: &[&str], include: &[&std::ffi::OsStr], flags: &[&str], body: &str| {
            let src = work().join(format!("{name}.c"));
            std::fs::write(
                &src,
                format!(
                "#include <vlog.h>\nVLOG_INIT(\"t\");\n{body}\nint main(void) {{ return 0; }}\n"
            ),
            )
            .unwrap();
            let mut cmd = Command::new(if lang[0] == "c++" {
                "c++".to_string()
            } else {
                cc()
            });
            cmd.args(["-c", "-o", "/dev/null", "-x"])
                .args(lang)
                .args(include)
                .args(flags)
                .arg(&src);
            let out = cmd.output().unwrap();
            (format!("{cmd:?}"), out)
        };
    let mut compiled = 0;
    for (how, dir) in [("-I", &tree), ("-isystem", &tree), ("-isystem", &installed)] {
        let include = [std::ffi::OsStr::new(how), dir.as_os_str()];
        for lang in [
            &["c", "-std=c11"][..],
            &["c", "-std=c99"],
            &["c++", "-std=c++17"],
        ] {
            for flags in [&[][..], &["-Wall", "-Wextra"]] {
                for outside in [
                    "void f(const char *s) { VLOG_INFO(s); }",
                    "void f(void) { char buf[16] = \"%s\"; VLOG_INFO(buf); }",
                ] {
                    let (cmd, bad) = compile("format_outside", lang, &include, flags, outside);
                    let err = text(&bad.stderr);
                    assert!(
                        !bad.status.success()
                            && (err.contains("a format alone must be a string literal")
                                || err.contains("vlog__format_alone_must_be_a_string_literal")),
                        "{cmd} compiled a format from outside ({outside}):\n{err}"
                    );
                }
                let (cmd, good) = compile(
                    "format_literal",
                    lang,
                    &include,
                    flags,
                    "void f(const char *s) { static const char fmt[] = \"a const array\"; \
                     VLOG_INFO(\"%s\", s); VLOG_INFO(\"alone\"); VLOG_INFO(fmt); \
                     VLOG_INFO(__func__); }",
                );
                assert!(
                    good.status.success() && good.stderr.is_empty(),
                    "{cmd}:\n{}",
                    text(&good.stderr)
                );
                let (cmd, wrong) = compile(
                    "format_types",
                    lang,
                    &include,
                    flags,
                    "void f(void) { VLOG_INFO(\"%d\", \"text\"); }",
                );
                let err = text(&wrong.stderr);
                let want = usize::from(!flags.is_empty());
                assert_eq!(
                    err.matches("[-Wformat=]").count(),
                    want,
                    "{cmd}: {want} warning for the wrong type:\n{err}"
                );
                compiled += 4;
            }
        }
    }
    assert_eq!(compiled, 72);
    // A lambda among the arguments: the check is a call never made, not an
    // unevaluated operand, where C++ before 20 refuses lambdas.
    let (cmd, lambda) = compile(
        "format_lambda",
        &["c++", "-std=c++17"],
        &[std::ffi::OsStr::new("-I"), tree.as_os_str()],
        &["-Wall", "-Wextra"],
        "void f(void) { VLOG_INFO(\"%d\", [] { return 1; }()); }",
    );
    assert!(
        lambda.status.success() && lambda.stderr.is_empty(),
        "{cmd}:\n{}",
        text(&lambda.stderr)
    );
}

/// Structured fields through the outputs, the ring, vlog_dump and vlog-dump;
/// the JSON output and vlog-dump --json read back by Python's json module.
#[test]
fn structured_fields_reach_every_reader() {
    let dir = scratch_dir("fields-run");
    let (txt, json, ring) = (
        dir.join("out.log"),
        dir.join("out.json"),
        dir.join("fields.ring"),
    );
    let exe = build("fields", Link::Static);
    let out = run_with(
        &exe,
        &[txt.to_str().unwrap(), json.to_str().unwrap()],
        &[("VLOG_BUFFER_FILE", ring.to_str().unwrap())],
    );
    assert_ok("fields", &out);
    let stderr = text(&out.stderr);
    assert_eq!(
        stderr.matches("is not a valid field name").count(),
        1,
        "{stderr}"
    );
    assert_eq!(
        stderr
            .matches("field 'BODY' (5000 bytes) does not fit")
            .count(),
        1,
        "{stderr}"
    );
    let dumped = dir.join("dump.json");
    std::fs::write(
        &dumped,
        vlog_dump(&["--json", ring.to_str().unwrap()]).stdout,
    )
    .unwrap();
    let check = r#"
import json, sys
for path, printed in ((sys.argv[1], True), (sys.argv[2], False)):
    objs = [json.loads(l) for l in open(path, encoding="utf-8", errors="strict")]
    by_msg = {o["message"]: o.get("fields") for o in objs}
    assert by_msg["started guest1"] == {"VM": "guest1", "VCPUS": 4, "DELTA": -7}, by_msg
    assert by_msg["odd values"] == {"PATH": "/tmp/a b\n\"q\"\x1b[2J\ufffd",
                                    "NULL_VALUE": "(null)"}, by_msg
    assert ("ring only 1" in by_msg) != printed, path
    if not printed:
        assert by_msg["ring only 1"] == {"N": 1}
    large = by_msg["large"]
    assert large["BODY"].endswith(" [truncated: 5000 bytes]"), large
    assert len(large["BODY"].encode()) < 4096, len(large["BODY"])
    assert large["STATUS"] == "ok" and large["REQUEST_ID"] == "r-42", large
print("ok")
"#;
    python_script("fields json check (python3)", check, &[&json, &dumped]);
}

/// errno survives every kind of logging call, the first (which initialises
/// vlog) and one whose output fails included.
#[test]
fn logging_never_changes_errno() {
    let ring = work().join("errno_kept.ring");
    let _ = std::fs::remove_file(&ring);
    let exe = build("errno_kept", Link::Static);
    let out = run(
        &exe,
        &[
            ("VLOG_LEVEL", "debug"),
            ("VLOG_BUFFER_FILE", ring.to_str().unwrap()),
            ("VLOG_OUTPUTS", "4:file:/dev/full"),
        ],
    );
    assert_ok("errno_kept", &out);
    // The failing output is reported once, not per message.
    let stderr = text(&out.stderr);
    assert_eq!(stderr.matches("cannot write to").count(), 1, "{stderr}");
}

#[test]
fn percent_n_is_never_executed() {
    check("percent_n");
}

#[test]
fn a_program_built_for_another_abi_is_told_and_logs_nothing() {
    let exe = build("abi", Link::Static);
    let out = run(&exe, &[]);
    assert_ok("abi", &out);
    assert!(!text(&out.stderr).contains("ABI"), "{}", text(&out.stderr));
    // The header of another release: another ABI number, and a vlog__site
    // with another layout.
    let include = work().join("abi-include");
    std::fs::create_dir_all(&include).unwrap();
    std::fs::copy(root().join("include/vlog.h"), include.join("vlog.h")).unwrap();
    let generated = std::fs::read_to_string(root().join("include/vlog_gen.h")).unwrap();
    let older = generated
        .replace("#define VLOG_ABI_VERSION 4", "#define VLOG_ABI_VERSION 0")
        .replace(
            "uint16_t precision[VLOG__SITE_MAX_ARGS];",
            "uint16_t precision[VLOG__SITE_MAX_ARGS + 4];",
        );
    assert_ne!(older, generated);
    std::fs::write(include.join("vlog_gen.h"), older).unwrap();
    for link in [Link::Static, Link::Shared] {
        let exe = build_as("abi", link, "-older", &include, &[]);
        let out = run_with(&exe, &["mismatched"], &[]);
        assert_ok("abi (older header)", &out);
        let stderr = text(&out.stderr);
        assert_eq!(stderr.matches("vlog: ").count(), 1, "{stderr}");
        assert!(
            stderr.contains("built with vlog.h for ABI 0")
                && stderr.contains("has ABI 4")
                && stderr.contains("rebuild it"),
            "{stderr}"
        );
    }
    // A program built with the last release's header (ABI 3), bound at
    // load time (-z now): it loads, is told, and its macros log nothing.
    for link in [Link::Static, Link::Shared] {
        let exe = build_as(
            "abi_old",
            link,
            "",
            &root().join("c-tests/abi3"),
            &["-Wl,-z,now"],
        );
        let out = run(&exe, &[]);
        assert_ok("abi_old", &out);
        let stderr = text(&out.stderr);
        assert_eq!(stderr.matches("vlog: ").count(), 1, "{stderr}");
        assert!(
            stderr.contains("built with vlog.h for ABI 3") && stderr.contains("rebuild it"),
            "{stderr}"
        );
    }
}

#[test]
fn a_captured_string_is_read_no_further_than_its_precision() {
    let exe = build("precision", Link::Static);
    let ring = scratch_dir("precision.d").join("ring");
    let _ = std::fs::remove_file(&ring);
    let path = ring.to_str().unwrap();
    let quick = if tool() == Tool::Valgrind { "1" } else { "" };
    let env = [("VLOG_BUFFER_FILE", path), ("VLOGTEST_QUICK", quick)];
    let env = if quick.is_empty() {
        &env[..1]
    } else {
        &env[..]
    };
    assert_ok("precision", &run_with(&exe, &[path], env));
}

/// Fields a thread carries: two threads' request ids on their own records
/// only (ring, flight recorder's records, JSON with trace context under
/// OpenTelemetry's names); refusals; fork; thread exit; a filtered call
/// copies nothing.
#[test]
fn thread_fields_ride_on_their_own_threads_records_only() {
    let exe = build("thread_fields", Link::Static);
    let json = scratch_dir("thread-fields").join("out.json");
    assert_ok(
        "thread_fields threads",
        &run_with(&exe, &["threads", json.to_str().unwrap()], &[]),
    );
    // (No writer thread: a forked child's copy of its records would be
    // the child's leaks under valgrind.)
    assert_ok(
        "thread_fields calls",
        &run_with(&exe, &["calls"], &[("VLOG_WRITER", "caller")]),
    );
    if !skipped_under_tool("the tool replaces the allocator the filtered case counts") {
        assert_ok(
            "thread_fields filtered",
            &run_with(&exe, &["filtered"], &[]),
        );
    }
}
