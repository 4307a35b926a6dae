//! Generates the C declarations with cbindgen and gives the shared library its
//! soname.

use std::env;
use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("vlog_gen.h");
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-env-changed=VLOG_REFRESH_HEADER");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libvlog.so.0");

    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    cbindgen::Builder::new()
        .with_crate(&dir)
        .with_config(config)
        .generate()
        .expect("cbindgen could not generate vlog_gen.h")
        .write_to_file(&out);
    // The committed copy is what C code includes; a test compares the two.
    if env::var_os("VLOG_REFRESH_HEADER").is_some() {
        std::fs::copy(&out, dir.join("include/vlog_gen.h")).expect("refresh include/vlog_gen.h");
    }
    // (Outside VLOG_*: cargo passes it to the tests' environment, and vlog
    // names every VLOG_* it does not read.)
    println!(
        "cargo:rustc-env=VLOGBUILD_GENERATED_HEADER={}",
        out.display()
    );
}
