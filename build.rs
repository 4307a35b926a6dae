//! Gives the shared library its soname. Nothing is generated here: the C
//! header is committed (include/vlog_gen.h), so a build needs no code
//! generator; tests/header.rs regenerates it and fails when it is stale.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libvlog.so.0");
}
