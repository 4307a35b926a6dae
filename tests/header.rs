//! include/vlog_gen.h is committed so that neither C code nor a build of the
//! library needs a code generator; this test regenerates it with cbindgen
//! and fails when the committed copy no longer matches.
//! `VLOG_REFRESH_HEADER=1 cargo test --test header` writes the new one.

use std::path::Path;

#[test]
fn committed_header_is_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .expect("cbindgen could not generate vlog_gen.h")
        .write(&mut generated);
    let committed_path = dir.join("include/vlog_gen.h");
    if std::env::var_os("VLOG_REFRESH_HEADER").is_some() {
        std::fs::write(&committed_path, &generated).expect("refresh include/vlog_gen.h");
    }
    let committed = std::fs::read(&committed_path).unwrap_or_default();
    assert!(
        generated == committed,
        "include/vlog_gen.h is stale: refresh it with `VLOG_REFRESH_HEADER=1 cargo test --test header` and commit it"
    );
}
