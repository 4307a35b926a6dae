//! The environment: libvirt's syntax, every variable, bad values warned
//! about once, and a setuid process that ignores them.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::common::*;

/// The environment program, built once: several tests run it at once.
pub(crate) fn environment_exe() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| build("environment", Link::Static))
}

pub(crate) fn environment(env: &[(&str, &str)]) -> (String, String) {
    let out = run(environment_exe(), env);
    assert_ok("environment", &out);
    (text(&out.stdout), text(&out.stderr))
}

#[test]
fn env_flight_recorder_configuration() {
    let (dump, stderr) = environment(&[("VLOG_FILTERS", "1:qemu"), ("VLOG_OUTPUTS", "3:stderr")]);
    // stderr prints warnings and errors only, the error with the records
    // before it as its context (VLOG_CONTEXT's default)...
    assert!(
        stderr.contains(" : qemu warning\n") && stderr.contains(" : qemu error\n"),
        "{stderr:?}"
    );
    assert!(stderr.contains(" : util warning\n"), "{stderr:?}");
    let context = "debug (context) : qemu.monitor : main:30 : qemu debug\n";
    let info = "info (context) : qemu.monitor : main:31 : qemu info\n";
    let at = |s: &str| stderr.find(s).unwrap_or(usize::MAX);
    assert!(
        at(context) < at(info) && at(info) < at(" : qemu error\n"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("debug : qemu") && !stderr.contains("info : qemu"),
        "{stderr}"
    );
    // ...while the ring keeps qemu's debug messages for a dump.
    assert!(dump.contains(": debug : qemu.monitor : main:"), "{dump}");
    assert!(
        dump.contains(" : qemu debug\n") && dump.contains(" : qemu info\n"),
        "{dump:?}"
    );
    assert!(!dump.contains("util debug"), "{dump:?}");
    assert!(dump.contains("buffer_size=8388608\n"), "{dump:?}");
}

#[test]
fn env_level_sets_default_output_too() {
    let (_, stderr) = environment(&[("VLOG_LEVEL", "info")]);
    assert!(
        stderr.contains(" : qemu info\n") && !stderr.contains("qemu debug"),
        "{stderr}"
    );
    let (_, stderr) = environment(&[("VLOG_LEVEL", "1")]);
    assert!(
        stderr.contains(" : qemu debug\n") && stderr.contains(" : util debug\n"),
        "{stderr:?}"
    );
    let (_, stderr) = environment(&[]);
    assert!(
        !stderr.contains("qemu info") && stderr.contains(" : qemu warning\n"),
        "{stderr:?}"
    );
}

#[test]
fn syslogs_severity_names_configure_as_their_priorities() {
    // notice is info, err (and crit, alert, emerg) error: vlog(7)'s table.
    let (dump, stderr) = environment(&[
        ("VLOG_LEVEL", "notice"),
        ("VLOG_FILTERS", "debug:qemu"),
        ("VLOG_OUTPUTS", "err:stderr"),
    ]);
    assert!(!stderr.contains("ignoring"), "{stderr}");
    assert!(
        stderr.contains("error : qemu.monitor : main:33 : qemu error\n")
            && !stderr.contains("warning : qemu.monitor"),
        "{stderr}"
    );
    assert!(dump.contains(" : qemu debug\n"), "{dump}");
    assert!(
        !dump.contains("util debug") && dump.contains(" : util warning\n"),
        "{dump}"
    );
    // syslog's numbers are not taken for vlog's: 7 is refused, not debug.
    let (_, stderr) = environment(&[("VLOG_LEVEL", "7")]);
    assert!(
        stderr.contains("ignoring VLOG_LEVEL: invalid level '7'"),
        "{stderr}"
    );
}

#[test]
fn env_bad_values_warn_once_and_keep_defaults() {
    let (dump, stderr) = environment(&[
        ("VLOG_LEVEL", "loud"),
        ("VLOG_FILTERS", "1:qemu 9:util"),
        ("VLOG_OUTPUTS", "1:stderr 1:nowhere"),
        ("VLOG_BUFFER_SIZE", "12Q"),
    ]);
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.starts_with("vlog: ")).collect();
    assert_eq!(warnings.len(), 4, "{stderr}");
    for (var, token) in [
        ("VLOG_LEVEL", "'loud'"),
        ("VLOG_FILTERS", "'9'"),
        ("VLOG_OUTPUTS", "'nowhere'"),
        ("VLOG_BUFFER_SIZE", "'12Q'"),
    ] {
        assert!(
            warnings
                .iter()
                .any(|w| w.contains(var) && w.contains(token)),
            "no warning for {var} naming {token}: {stderr}"
        );
    }
    // Defaults: warning level, stderr output, 8M ring.
    assert!(
        stderr.contains(" : qemu warning\n") && !stderr.contains("qemu info"),
        "{stderr:?}"
    );
    assert!(dump.contains("buffer_size=8388608\n"), "{dump:?}");
    assert!(!dump.contains("qemu debug"), "{dump:?}");
    // vlog_init said so: 1, and vlog_last_error() names the first refusal.
    let refused = "refused=ignoring VLOG_LEVEL: invalid level 'loud': use 1-4, or debug, info \
                   (notice), warning (warn), error (err, crit, alert, emerg) (and 3 more, each \
                   said on stderr)\n";
    assert!(dump.contains(refused), "{dump:?}");
}

/// A misspelt variable is not silently ignored: one line at start-up names
/// every `VLOG_*` vlog does not read, each with the nearest name it does,
/// and vlog_init says the environment was not all in force.
#[test]
fn unknown_variables_are_named_once_with_the_nearest() {
    // (valgrind does not pass on a variable whose name has a control byte.)
    let hostile = tool() != Tool::Valgrind;
    let mut env = vec![("VLOG_FILTER", "1:qemu"), ("VLOG_OUTPUT", "1:stderr")];
    if hostile {
        env.push(("VLOG_NO\x1b[31mSUCH", "x"));
    }
    let (dump, stderr) = environment(&env);
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.starts_with("vlog: ")).collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    let named = if hostile {
        "VLOG_FILTER (did you mean VLOG_FILTERS?), VLOG_NO\\x1b[31mSUCH, VLOG_OUTPUT"
    } else {
        "VLOG_FILTER (did you mean VLOG_FILTERS?), VLOG_OUTPUT"
    };
    assert!(
        warnings[0].starts_with(&format!(
            "vlog: ignoring {named} (did you mean VLOG_OUTPUTS?): vlog reads no such variable \
             (it reads VLOG_LEVEL, VLOG_FILTERS,"
        )),
        "{stderr:?}"
    );
    assert!(
        dump.contains("refused=ignoring VLOG_FILTER (did you mean"),
        "{dump:?}"
    );
    // Nothing of them applied: the defaults.
    assert!(dump.contains("debug_on=0,0\n"), "{dump:?}");
}

#[test]
fn vlog_init_says_whether_the_whole_environment_is_in_force() {
    let (dump, stderr) = environment(&[("VLOG_FILTERS", "1:qemu")]);
    assert!(!dump.contains("refused="), "{dump:?} {stderr}");
    // VLOG_ON is exact before the source's first call as after it.
    assert!(dump.contains("debug_on=1,1\n"), "{dump:?}");
    let (dump, _) = environment(&[]);
    assert!(dump.contains("debug_on=0,0\n"), "{dump:?}");
    assert!(dump.contains("util_error_on=1,1\n"), "{dump:?}");
    let (dump, _) = environment(&[("VLOG_FILTERS", "off:util")]);
    assert!(dump.contains("util_error_on=0,0\n"), "{dump:?}");
    // A refused output file is a refusal too; the rest applies.
    let (dump, stderr) = environment(&[
        ("VLOG_FILTERS", "1:qemu"),
        ("VLOG_OUTPUTS", "1:stderr 1:file:/proc"),
    ]);
    assert!(
        dump.contains("refused=ignoring the output"),
        "{dump:?} {stderr}"
    );
    assert!(!dump.contains("and 1 more"), "{dump:?}");
    assert!(dump.contains("debug_on=1,1\n"), "{dump:?}");
    assert!(stderr.contains(" : qemu debug\n"), "{stderr}");
}

#[test]
fn env_buffer_size_and_relative_file_output() {
    let (dump, _) = environment(&[("VLOG_BUFFER_SIZE", "0")]);
    assert!(
        dump.ends_with("\nbuffer_size=0\n") && dump.lines().count() == 3,
        "{dump}"
    );
    let (dump, _) = environment(&[("VLOG_BUFFER_SIZE", "1M")]);
    assert!(dump.contains("buffer_size=1048576\n"), "{dump:?}");

    let log = work().join("env-relative.log");
    let _ = std::fs::remove_file(&log);
    let (_, stderr) = environment(&[("VLOG_OUTPUTS", "2:file:env-relative.log")]);
    assert!(stderr.is_empty(), "{stderr}");
    let file = std::fs::read_to_string(&log).unwrap();
    assert!(
        file.contains(" : qemu warning\n") && !file.contains("qemu info"),
        "{file:?}"
    );
}

/// In a setuid process (AT_SECURE) the environment is ignored entirely: run a
/// copy of the program set-user-ID to nobody, as root.
#[test]
fn env_ignored_when_setuid() {
    if skipped_under_tool("a setuid program does not run under the tool") {
        return;
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        say_skipped("needs root to make a setuid program");
        return;
    }
    let dir = work().join("setuid");
    std::fs::create_dir_all(&dir).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let suid = dir.join("environment-suid");
    std::fs::copy(environment_exe(), &suid).unwrap();
    std::os::unix::fs::chown(&suid, Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(&suid, std::fs::Permissions::from_mode(0o4755)).unwrap();
    let log = dir.join("chosen-by-user.log");
    let _ = std::fs::remove_file(&log);
    let outputs = format!("1:file:{}", log.display());
    let out = run(
        &suid,
        &[
            ("VLOG_LEVEL", "debug"),
            ("VLOG_OUTPUTS", &outputs),
            ("VLOG_BUFFER_SIZE", "1M"),
        ],
    );
    assert_ok("environment (setuid)", &out);
    let stderr = text(&out.stderr);
    assert!(!log.exists(), "a setuid process obeyed VLOG_OUTPUTS");
    assert!(
        stderr.contains(" : qemu warning\n") && !stderr.contains("qemu info"),
        "{stderr}"
    );
    assert!(
        text(&out.stdout).contains("buffer_size=8388608\n"),
        "{:?}",
        text(&out.stdout)
    );
}

#[test]
fn libvirt_syntax_and_atomic_rejection() {
    check("config_syntax");
}

/// Out of memory at setup (RLIMIT_AS just above what the process uses,
/// over a range of margins): vlog degrades with a warning (no ring, fewer
/// outputs) and never aborts the process.
#[test]
fn running_out_of_memory_degrades_vlog_and_never_aborts() {
    if skipped_under_tool("the tool's own memory does not fit an address-space limit") {
        return;
    }
    let dir = scratch_dir("enomem-files");
    let d = dir.to_str().unwrap();
    let exe = build("enomem", Link::Static);
    let out = run_with(
        &exe,
        &[d],
        &[
            ("VLOG_BUFFER_SIZE", "4M"),
            ("VLOG_OUTPUTS", &format!("3:file:{d}/env.log")),
            ("VLOG_LEVEL", "debug"),
            ("VLOG_DUMP", &format!("file:{d}/dump")),
        ],
    );
    assert_ok("enomem", &out);
    let err = text(&out.stderr);
    assert!(err.contains("vlog: memory ran out"), "{err}");
}

/// `VLOG_CONFIG` at start: its settings in force where the environment is
/// silent, each line it cannot take said once with its number, a file it
/// refuses said once and the rest of the environment in force.
#[test]
fn a_configuration_file_is_read_at_start() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch_dir("env-config");
    let conf = dir.join("vlog.conf");
    std::fs::write(&conf, "VLOG_FILTERS=\"1:qemu\"\nVLOG_LEVELS=2\n").unwrap();
    std::fs::set_permissions(&conf, std::fs::Permissions::from_mode(0o600)).unwrap();
    let c = conf.to_str().unwrap();
    let (dump, stderr) = environment(&[("VLOG_CONFIG", c)]);
    assert!(dump.contains("debug_on=1,1\n"), "{dump:?} {stderr}");
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.starts_with("vlog: ")).collect();
    assert_eq!(
        warnings,
        [format!(
            "vlog: ignoring line 2: vlog reads no setting 'VLOG_LEVELS' (did you mean \
             VLOG_LEVEL?) of VLOG_CONFIG '{c}'"
        )],
        "{stderr}"
    );
    // The environment wins.
    let (dump, _) = environment(&[("VLOG_CONFIG", c), ("VLOG_FILTERS", "3:qemu")]);
    assert!(dump.contains("debug_on=0,0\n"), "{dump:?}");
    // A file others may write is refused whole, with its reason.
    std::fs::set_permissions(&conf, std::fs::Permissions::from_mode(0o666)).unwrap();
    let (dump, stderr) = environment(&[("VLOG_CONFIG", c)]);
    assert!(dump.contains("debug_on=0,0\n"), "{dump:?}");
    assert!(
        stderr.contains(&format!(
            "vlog: ignoring VLOG_CONFIG: cannot read '{c}': others may write to it"
        )),
        "{stderr}"
    );
    // A FIFO planted at the path is judged before it is opened: no wait
    // for a writer that never comes, one warning.
    std::fs::remove_file(&conf).unwrap();
    let fifo = std::ffi::CString::new(c).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let (_, stderr) = environment(&[("VLOG_CONFIG", c)]);
    assert!(
        stderr.contains("ignoring VLOG_CONFIG: cannot read")
            && stderr.contains("not a regular file"),
        "{stderr}"
    );
}
