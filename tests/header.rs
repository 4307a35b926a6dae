//! include/vlog_gen.h is committed so C code needs no Rust build to read it;
//! this test fails when it no longer matches what cbindgen generates.

#[test]
fn committed_header_is_current() {
    let generated = std::fs::read_to_string(env!("VLOGBUILD_GENERATED_HEADER")).unwrap();
    let committed_path = concat!(env!("CARGO_MANIFEST_DIR"), "/include/vlog_gen.h");
    let committed = std::fs::read_to_string(committed_path).unwrap_or_default();
    assert!(
        generated == committed,
        "include/vlog_gen.h is stale: refresh it with `VLOG_REFRESH_HEADER=1 cargo build` and commit it"
    );
}
