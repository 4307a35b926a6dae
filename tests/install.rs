//! `make install` into a DESTDIR, then a C program outside the source tree
//! built with nothing but `pkg-config --cflags --libs vlog`, linked dynamically
//! and statically, and run; the man pages render with `man -l`; `make
//! uninstall` removes every file and every directory it made again, and
//! none that was there before. And fresh CMake and Meson projects that find
//! the installed vlog as their users' projects would.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod support;

use support::{assert_ok, needs_installed, root, text};

fn ok(what: &str, out: Output) -> String {
    assert_ok(what, &out);
    text(&out.stdout)
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() && !path.is_symlink() {
            found.extend(files_under(&path));
        } else {
            found.push(path);
        }
    }
    found
}

#[test]
fn installed_library_builds_with_pkg_config_alone() {
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("install");
    let _ = std::fs::remove_dir_all(&work);
    let destdir = work.join("root");
    std::fs::create_dir_all(&destdir).unwrap();
    let make = |target: &str| {
        let out = Command::new("make")
            .arg("-s")
            .arg(target)
            .arg("PREFIX=/usr")
            .arg(format!("DESTDIR={}", destdir.display()))
            .current_dir(root())
            .output()
            .expect("make");
        ok(&format!("make {target}"), out);
    };
    make("lib");
    // make's habit: install copies what make built, with no cargo on the
    // PATH (root's, under sudo).
    let out = Command::new("make")
        .args(["install", "PREFIX=/usr"])
        .arg(format!("DESTDIR={}", destdir.display()))
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .env_remove("CARGO")
        .current_dir(root())
        .output()
        .expect("make");
    let said = ok("make install without cargo", out);
    assert!(
        !said.contains("cargo build"),
        "make install built again:\n{said}"
    );
    let lib = destdir.join("usr/lib");
    for file in [
        "usr/lib/libvlog.so.0",
        "usr/lib/libvlog.so",
        "usr/lib/libvlog.a",
        "usr/lib/libvlog-syslog.so",
        "usr/lib/pkgconfig/vlog.pc",
        "usr/lib/cmake/vlog/vlogConfig.cmake",
        "usr/lib/cmake/vlog/vlogConfigVersion.cmake",
        "usr/include/vlog.h",
        "usr/include/vlog_gen.h",
        "usr/bin/vlog-dump",
        "usr/bin/vlog-relay",
        "usr/bin/vlog-ctl",
        "usr/share/man/man1/vlog-dump.1",
        "usr/share/man/man1/vlog-relay.1",
        "usr/share/man/man1/vlog-ctl.1",
        "usr/share/man/man3/vlog.3",
        "usr/share/man/man7/vlog.7",
        "usr/share/man/man7/vlog-syslog.7",
    ] {
        assert!(destdir.join(file).exists(), "{file} not installed");
    }
    // The man pages render, without a warning from man or groff.
    for page in [
        "man1/vlog-dump.1",
        "man1/vlog-relay.1",
        "man1/vlog-ctl.1",
        "man3/vlog.3",
        "man7/vlog.7",
        "man7/vlog-syslog.7",
    ] {
        let out = Command::new("man")
            .args(["--warnings", "-l"])
            .arg(destdir.join("usr/share/man").join(page))
            .env("MANWIDTH", "80")
            .env("MANPAGER", "cat")
            .output()
            .expect("man");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let text = ok(&format!("man -l {page}"), out);
        assert!(stderr.is_empty(), "{page}: {stderr}");
        assert!(text.contains("SEE ALSO"), "{page}: {text}");
    }

    // Every function and macro has a page of its name: `man vlog_init`.
    for name in [
        "vlog_init",
        "VLOG_DEBUG",
        "vlog_write_fields",
        "VLOG_ENABLED",
    ] {
        let out = Command::new("man")
            .arg("-M")
            .arg(destdir.join("usr/share/man"))
            .args(["3", name])
            .env("MANWIDTH", "80")
            .env("MANPAGER", "cat")
            .output()
            .expect("man");
        let page = ok(&format!("man 3 {name}"), out);
        assert!(
            page.contains("logging for C daemons") && page.contains(name),
            "{name}: {page}"
        );
    }

    // A program that knows nothing of the source tree.
    let src = work.join("consumer.c");
    std::fs::write(
        &src,
        "#include <vlog.h>\nVLOG_INIT(\"consumer\");\nint main(void)\n{\n    \
         VLOG_WARN(\"installed vlog works: %d\", 42);\n    return vlog_dump(1) == 1 ? 0 : 1;\n}\n",
    )
    .unwrap();
    let pkg_config = |args: &[&str]| {
        let out = Command::new("pkg-config")
            .args(args)
            .arg("vlog")
            .env("PKG_CONFIG_PATH", lib.join("pkgconfig"))
            .env("PKG_CONFIG_SYSROOT_DIR", &destdir)
            .output()
            .expect("pkg-config");
        ok("pkg-config", out)
            .split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    for (name, static_link) in [("dynamic", false), ("static", true)] {
        let exe = work.join(name);
        let mut cc = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()));
        cc.args(["-Wall", "-Wextra", "-Werror"])
            .arg(&src)
            .arg("-o")
            .arg(&exe);
        if static_link {
            cc.arg("-static")
                .args(pkg_config(&["--static", "--cflags", "--libs"]));
        } else {
            cc.args(pkg_config(&["--cflags", "--libs"]));
        }
        ok(&format!("cc ({name})"), cc.output().unwrap());
        let run = Command::new(&exe)
            .env("LD_LIBRARY_PATH", &lib)
            .output()
            .unwrap();
        let dump = ok(&format!("the {name} program"), run);
        assert!(dump.contains(" : installed vlog works: 42\n"), "{dump}");
        let elf = ok(
            "readelf",
            Command::new("readelf")
                .arg("-d")
                .arg(&exe)
                .output()
                .unwrap(),
        );
        assert_eq!(
            elf.contains("Shared library: [libvlog.so.0]"),
            !static_link,
            "{name}: {elf}"
        );
    }
    for program in ["vlog-dump", "vlog-relay", "vlog-ctl"] {
        let help = Command::new(destdir.join("usr/bin").join(program))
            .arg("--help")
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&help.stdout);
        assert!(said.contains(program), "{program} --help: {said}");
    }

    make("uninstall");
    let left: Vec<_> = std::fs::read_dir(&destdir).unwrap().flatten().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    // A directory that was there before install stays; those it made go.
    std::fs::create_dir_all(destdir.join("usr/share/man/man1")).unwrap();
    std::fs::write(destdir.join("usr/share/man/man1/other.1"), "").unwrap();
    make("install");
    make("uninstall");
    let left = files_under(&destdir);
    assert_eq!(
        left,
        [destdir.join("usr/share/man/man1/other.1")],
        "left behind"
    );
    std::fs::remove_file(destdir.join("usr/share/man/man1/other.1")).unwrap();
    let dirs: Vec<_> = std::fs::read_dir(destdir.join("usr/share/man"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(dirs, ["man1"], "only the directory that was there stays");
}

/// Nothing built and no cargo to build it: install says what to do, naming
/// cargo and rustup, and installs nothing.
#[test]
fn install_with_nothing_built_and_no_cargo_says_how() {
    let out = Command::new("make")
        .args([
            "built",
            "BUILT=target/release/no-such-file",
            "CARGO=no-such-cargo",
        ])
        .current_dir(root())
        .output()
        .expect("make");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "make built passed:\n{said}");
    assert!(
        said.contains("not built yet: target/release/no-such-file")
            && said.contains("'no-such-cargo' is not on this PATH")
            && said.contains("rustup"),
        "{said}"
    );
}

/// `make install` into a fresh DESTDIR under `work`; returns the DESTDIR.
fn installed(work: &Path) -> PathBuf {
    let _ = std::fs::remove_dir_all(work);
    let destdir = work.join("root");
    std::fs::create_dir_all(&destdir).unwrap();
    let out = Command::new("make")
        .args(["-s", "install", "PREFIX=/usr"])
        .arg(format!("DESTDIR={}", destdir.display()))
        .current_dir(root())
        .output()
        .expect("make");
    ok("make install", out);
    destdir
}

const CONSUMER: &str = "#include <vlog.h>\nVLOG_INIT(\"consumer\");\nint main(void)\n{\n    \
    VLOG_WARN(\"installed vlog works: %d\", 42);\n    return vlog_dump(1) == 1 ? 0 : 1;\n}\n";

/// Runs a consumer program the build tool made; it must print its line,
/// and be linked with libvlog.so.0 or not as `shared` says.
fn check_consumer(exe: &Path, lib: &Path, shared: bool) {
    let run = Command::new(exe)
        .env("LD_LIBRARY_PATH", lib)
        .output()
        .unwrap();
    let dump = ok(&format!("{}", exe.display()), run);
    assert!(dump.contains(" : installed vlog works: 42\n"), "{dump}");
    let elf = ok(
        "readelf",
        Command::new("readelf").arg("-d").arg(exe).output().unwrap(),
    );
    assert_eq!(
        elf.contains("Shared library: [libvlog.so.0]"),
        shared,
        "{}: {elf}",
        exe.display()
    );
}

/// README.md's block of `lang`, as a reader pastes it into a project
/// whose program is `mydaemon` built from `main.c`.
fn readme_block(lang: &str) -> String {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let start = readme
        .find(&format!("```{lang}\n"))
        .unwrap_or_else(|| panic!("README.md has no {lang} block"))
        + lang.len()
        + 4;
    let len = readme[start..].find("```\n").unwrap();
    readme[start..start + len].to_string()
}

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn a_cmake_project_finds_the_installed_vlog() {
    if !have("cmake") {
        needs_installed("cmake is not installed");
        return;
    }
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("install-cmake");
    let destdir = installed(&work);
    let project = work.join("project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("main.c"), CONSUMER).unwrap();
    // README's lines, for the program and for a second one linked with the
    // other target.
    let snippet = readme_block("cmake");
    let configure = |request: &str| {
        let found = snippet.replace(
            "find_package(vlog 0.1 ",
            &format!("find_package(vlog {request} "),
        );
        let other = snippet
            .lines()
            .filter(|l| l.starts_with("target_link"))
            .map(|l| {
                l.replace("mydaemon", "mydaemon_static")
                    .replace("vlog::vlog)", "vlog::vlog_static)")
            })
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(
            project.join("CMakeLists.txt"),
            format!(
                "cmake_minimum_required(VERSION 3.13)\nproject(consumer C)\n\
                 add_executable(mydaemon main.c)\nadd_executable(mydaemon_static main.c)\n\
                 {found}{other}\n"
            ),
        )
        .unwrap();
        let build = work.join("build");
        let _ = std::fs::remove_dir_all(&build);
        let out = Command::new("cmake")
            .arg("-S")
            .arg(&project)
            .arg("-B")
            .arg(&build)
            .arg(format!(
                "-DCMAKE_PREFIX_PATH={}",
                destdir.join("usr").display()
            ))
            .output()
            .expect("cmake");
        (out, build)
    };
    // Another minor version is not this one: 0.x changes its API between
    // minor versions.
    let (out, _) = configure("0.2");
    assert!(
        !out.status.success() && text(&out.stderr).contains("that is compatible"),
        "find_package(vlog 0.2) accepted 0.1:\n{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let (out, build) = configure("0.1");
    ok("cmake (configure)", out);
    let out = Command::new("cmake")
        .arg("--build")
        .arg(&build)
        .output()
        .expect("cmake --build");
    ok("cmake --build", out);
    let lib = destdir.join("usr/lib");
    check_consumer(&build.join("mydaemon"), &lib, true);
    check_consumer(&build.join("mydaemon_static"), &lib, false);
}

#[test]
fn a_meson_project_finds_the_installed_vlog() {
    if !have("meson") || !have("ninja") {
        needs_installed("meson or ninja is not installed");
        return;
    }
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("install-meson");
    let destdir = installed(&work);
    let project = work.join("project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("main.c"), CONSUMER).unwrap();
    // README's line, and the same program linked statically.
    let snippet = readme_block("meson");
    let statically = snippet
        .replace("'mydaemon'", "'mydaemon_static'")
        .replace("'>=0.1')", "'>=0.1', static: true)");
    std::fs::write(
        project.join("meson.build"),
        format!("project('consumer', 'c')\n{snippet}{statically}"),
    )
    .unwrap();
    let build = work.join("build");
    // Meson finds it as it finds any library: pkg-config, here pointed at
    // the staged root.
    let lib = destdir.join("usr/lib");
    let out = Command::new("meson")
        .arg("setup")
        .arg(&build)
        .arg(&project)
        .env("PKG_CONFIG_PATH", lib.join("pkgconfig"))
        .env("PKG_CONFIG_SYSROOT_DIR", &destdir)
        .output()
        .expect("meson");
    ok("meson setup", out);
    let out = Command::new("ninja")
        .arg("-C")
        .arg(&build)
        .output()
        .expect("ninja");
    ok("ninja", out);
    check_consumer(&build.join("mydaemon"), &lib, true);
    check_consumer(&build.join("mydaemon_static"), &lib, false);
}
