//! Generates `include/cothread.h` from `src/ffi` with cbindgen (rewritten only
//! when its text changes, so builds that depend on it stay up to date), and
//! gives the shared library its SONAME.

use std::path::Path;

const SONAME: &str = "libcothread.so.0";

fn main() {
    let crate_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let crate_dir = Path::new(&crate_dir);
    // cbindgen reads the whole crate (public constants anywhere would show up).
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    // A hand-edited header is regenerated too (it is rewritten only on change).
    println!("cargo:rerun-if-changed=../include/cothread.h");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{SONAME}");
    }

    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("rust/cbindgen.toml is valid");
    let header = crate_dir.join("../include/cothread.h");
    let bindings = match cbindgen::generate_with_config(crate_dir, config) {
        Ok(b) => b,
        Err(e) => panic!("cbindgen failed: {e}"),
    };
    bindings.write_to_file(&header);
}
