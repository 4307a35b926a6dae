//! The relay: a child's output recorded line by line, every form and every
//! hostile line, filters before parsing, the tail, a signal handler feeding
//! the relay its thread feeds, and a child flooding a pipe while the relay's
//! source is off; a relay reading a pipe on vlog's own thread.

use crate::common::*;

#[test]
fn a_childs_lines_are_relayed_in_every_form_and_never_stop_it() {
    let dir = scratch_dir("relay-output");
    let json = dir.join("relay.json");
    // The flood is 100 MB; under a tool, which runs the reader some fifty
    // times slower, 8 MB (said, so a run under a tool is not taken for
    // the whole test).
    let megabytes = if tool() == Tool::None {
        "100"
    } else {
        eprintln!(
            "relay: under {:?}, the child writes 8 MB instead of 100",
            tool()
        );
        "8"
    };
    let exe = build("relay", Link::Static);
    assert_ok(
        "relay",
        &run_with(&exe, &[json.to_str().unwrap(), megabytes], &[]),
    );
}

#[test]
fn a_relay_reads_a_childs_pipe_on_its_own_thread() {
    check("relay_watch");
}
