//! A panic inside vlog (a bug) never reaches C: the entry returns its error
//! value, and vlog steps down, saying so once per step: first to the ring only
//! (outputs off), then to nothing. Its own process, since the state is global.

use std::ffi::{c_char, c_int, CString};
use std::io::Read;
use std::os::fd::AsRawFd;

use vlog::internal::guarded;

// The C API, as a C program declares it (vlog_gen.h), from the library this
// test links.
extern "C" {
    fn vlog_dump(fd: c_int) -> c_int;
    fn vlog_set_level(level: c_int) -> c_int;
    fn vlog_set_outputs(outputs: *const c_char) -> c_int;
    #[allow(clippy::too_many_arguments)]
    fn vlog_write(
        src: *const std::ffi::c_void,
        prio: c_int,
        file: *const c_char,
        line: c_int,
        func: *const c_char,
        msg: *const c_char,
        len: usize,
        full_len: usize,
    ) -> c_int;
}

fn set_level(level: c_int) -> c_int {
    // SAFETY: a plain call into the library.
    unsafe { vlog_set_level(level) }
}

fn set_outputs(spec: &CString) -> c_int {
    // SAFETY: a NUL-terminated string that outlives the call.
    unsafe { vlog_set_outputs(spec.as_ptr()) }
}

fn write(msg: &str) -> i32 {
    // SAFETY: NULL source (the default), NUL-terminated names, `msg.len()`
    // readable bytes.
    unsafe {
        vlog_write(
            std::ptr::null(),
            4,
            c"panic.rs".as_ptr(),
            1,
            c"test".as_ptr(),
            msg.as_ptr().cast::<c_char>(),
            msg.len(),
            msg.len(),
        )
    }
}

fn ring_text() -> String {
    let mut file = tempfile();
    // SAFETY: a descriptor this test owns.
    let records = unsafe { vlog_dump(file.as_raw_fd()) };
    assert!(records >= 0, "vlog_dump: {records}");
    let mut text = String::new();
    use std::io::Seek;
    file.rewind().unwrap();
    file.read_to_string(&mut text).unwrap();
    text
}

fn tempfile() -> std::fs::File {
    let path = std::env::temp_dir().join(format!("vlog-panic-{}.txt", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    std::fs::remove_file(&path).unwrap();
    file
}

#[test]
fn a_panic_steps_down_to_the_ring_then_to_nothing() {
    let log = std::env::temp_dir().join(format!("vlog-panic-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let spec = CString::new(format!("1:file:{}", log.display())).unwrap();
    assert_eq!(set_level(1), 0);
    assert_eq!(set_outputs(&spec), 0);
    assert_eq!(write("before any panic"), 1);

    assert_eq!(guarded(-1, || -> i32 { panic!("first bug") }), -1);
    assert_eq!(write("after the first"), 1);
    // Outputs are off for good; the ring goes on.
    assert_eq!(set_outputs(&spec), -1);
    assert_eq!(write("still recorded"), 1);
    let printed = std::fs::read_to_string(&log).unwrap();
    assert!(printed.contains("before any panic"), "{printed}");
    assert!(!printed.contains("after the first"), "{printed}");
    let ring = ring_text();
    assert!(
        ring.contains(" : after the first\n") && ring.contains(" : still recorded\n"),
        "{ring:?}"
    );
    assert_eq!(
        ring.matches("going on with the ring only").count(),
        1,
        "{ring}"
    );
    assert!(ring.contains("first bug"), "{ring}");

    assert_eq!(guarded(-1, || -> i32 { panic!("second bug") }), -1);
    assert_eq!(write("after the second"), 0);
    assert_eq!(guarded(-1, || -> i32 { panic!("third bug") }), -1);
    let ring = ring_text();
    assert!(!ring.contains("after the second"), "{ring}");
    assert_eq!(ring.matches("logging is off").count(), 1, "{ring}");
    assert!(!ring.contains("third bug"), "{ring}");
    let _ = std::fs::remove_file(&log);
}
