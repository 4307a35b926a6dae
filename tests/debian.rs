//! The Debian source package (debian/): built from a copy of the tree and
//! installed by README's own snippet (`dpkg-buildpackage -us -uc -b`, `dpkg
//! -i`), checked by lintian (no error), a client built against the
//! installed files alone with pkg-config and with CMake and run, and the
//! packages removed again. Needs root (dpkg -i) and debhelper, lintian and a Rust toolchain
//! the build dependencies accept; `.ci/run` installs them.

use std::path::Path;
use std::process::{Command, Output};

mod support;

use support::{assert_ok, needs_installed, root, say_skipped, text};

const PACKAGES: [&str; 4] = ["libvlog0", "libvlog-dev", "libvlog-syslog", "vlog-tools"];

fn ok(what: &str, out: Output) -> String {
    assert_ok(what, &out);
    text(&out.stdout)
}

fn run(what: &str, cmd: &mut Command) -> String {
    ok(what, cmd.output().unwrap_or_else(|e| panic!("{what}: {e}")))
}

fn installed(package: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f", "${Status}", package])
        .output()
        .is_ok_and(|o| text(&o.stdout).contains("ok installed"))
}

/// Removes the packages when the test ends, passed or not.
struct Installed;

impl Drop for Installed {
    fn drop(&mut self) {
        let out = Command::new("dpkg").arg("--purge").args(PACKAGES).output();
        if let Ok(out) = out {
            if !out.status.success() {
                eprintln!("dpkg --purge: {}", text(&out.stderr));
            }
        }
    }
}

#[test]
fn the_debian_packages_build_install_and_link() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        say_skipped("installing packages needs root");
        return;
    }
    for tool in ["dpkg-buildpackage", "dh", "lintian", "cmake"] {
        if !Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success())
        {
            needs_installed(&format!("{tool} is not installed"));
            return;
        }
    }
    if let Some(p) = PACKAGES.iter().find(|p| installed(p)) {
        say_skipped(&format!(
            "{p} is installed already, and is not this test's to remove"
        ));
        return;
    }
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("debian");
    let _ = std::fs::remove_dir_all(&work);
    let src = work.join("vlog");
    std::fs::create_dir_all(&src).unwrap();
    // The tree as a clone has it (tracked files, and new ones not ignored):
    // no target/, so the package builds from nothing.
    let files = run(
        "git ls-files",
        Command::new("git")
            .args([
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
            ])
            .current_dir(root()),
    );
    for file in files.split('\0').filter(|f| !f.is_empty()) {
        let from = root().join(file);
        if !from.exists() {
            continue; // deleted in the work tree, not yet in the index
        }
        let to = src.join(file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&from, &to).unwrap();
    }
    // README's snippet, as root pastes it (sudo is root's already).
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let snippet = readme
        .split("```sh\n")
        .map(|b| &b[..b.find("```").unwrap_or(b.len())])
        .find(|b| b.contains("dpkg-buildpackage"))
        .expect("README.md's Debian snippet")
        .replace("sudo ", "");
    let _installed = Installed;
    let build = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &snippet])
        .current_dir(&src)
        .output()
        .expect("bash");
    assert!(
        build.status.success(),
        "README's Debian snippet failed:\n{snippet}\n{}\n{}",
        text(&build.stdout),
        text(&build.stderr)
    );
    let changes = work.join("vlog_0.1.0-1_amd64.changes");
    assert!(changes.exists(), "no {changes:?}");

    // lintian: no error (warnings are printed for the reader).
    let lint = Command::new("lintian")
        .args(["--tag-display-limit", "0"])
        .arg(&changes)
        .output()
        .expect("lintian");
    let said = text(&lint.stdout) + &text(&lint.stderr);
    let errors: Vec<&str> = said.lines().filter(|l| l.starts_with("E: ")).collect();
    assert!(errors.is_empty(), "lintian errors:\n{said}");
    eprintln!("lintian:\n{said}");

    for p in PACKAGES {
        assert!(installed(p), "{p} is not installed after README's snippet");
    }
    let multiarch = run(
        "dpkg-architecture",
        Command::new("dpkg-architecture").arg("-qDEB_HOST_MULTIARCH"),
    );
    let libdir = Path::new("/usr/lib").join(multiarch.trim());
    for file in [
        libdir.join("libvlog.so.0"),
        libdir.join("libvlog-syslog.so"),
        libdir.join("cmake/vlog/vlogConfig.cmake"),
        Path::new("/usr/bin/vlog-dump").to_path_buf(),
        Path::new("/usr/share/man/man3/vlog_init.3.gz").to_path_buf(),
    ] {
        assert!(file.exists(), "{file:?} not installed by the packages");
    }

    // A client of the installed files only: pkg-config, then CMake.
    let client = work.join("client");
    std::fs::create_dir_all(&client).unwrap();
    std::fs::write(
        client.join("main.c"),
        "#include <vlog.h>\nVLOG_INIT(\"client\");\nint main(void)\n{\n    \
         VLOG_WARN(\"packaged vlog works: %d\", 7);\n    return vlog_dump(1) == 1 ? 0 : 1;\n}\n",
    )
    .unwrap();
    let flags = run(
        "pkg-config",
        Command::new("pkg-config").args(["--cflags", "--libs", "vlog"]),
    );
    let exe = client.join("with-pkg-config");
    run(
        "cc with pkg-config",
        Command::new("cc")
            .args(["-Wall", "-Wextra", "-Werror"])
            .arg(client.join("main.c"))
            .arg("-o")
            .arg(&exe)
            .args(flags.split_whitespace()),
    );
    std::fs::write(
        client.join("CMakeLists.txt"),
        "cmake_minimum_required(VERSION 3.13)\nproject(client C)\n\
         find_package(vlog 0.1 REQUIRED)\nadd_executable(with-cmake main.c)\n\
         target_link_libraries(with-cmake PRIVATE vlog::vlog)\n",
    )
    .unwrap();
    let cmake_build = client.join("build");
    run(
        "cmake",
        Command::new("cmake")
            .arg("-S")
            .arg(&client)
            .arg("-B")
            .arg(&cmake_build),
    );
    run(
        "cmake --build",
        Command::new("cmake").arg("--build").arg(&cmake_build),
    );
    for exe in [exe, cmake_build.join("with-cmake")] {
        // No LD_LIBRARY_PATH: the system's linker finds libvlog.so.0.
        let dump = run(&format!("{exe:?}"), &mut Command::new(&exe));
        assert!(
            dump.contains(" : packaged vlog works: 7\n"),
            "{exe:?}: {dump}"
        );
        let elf = run("readelf", Command::new("readelf").arg("-d").arg(&exe));
        assert!(
            elf.contains("Shared library: [libvlog.so.0]"),
            "{exe:?}: {elf}"
        );
    }
    let version = run(
        "vlog-dump --version",
        Command::new("/usr/bin/vlog-dump").arg("--version"),
    );
    assert!(version.contains("0.1.0"), "{version}");

    drop(_installed);
    for p in PACKAGES {
        assert!(!installed(p), "{p} is still installed after dpkg --purge");
    }
    assert!(!libdir.join("libvlog.so.0").exists());
}
