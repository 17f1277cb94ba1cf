//! Generates `include/cothread.h` from `src/ffi` with cbindgen (rewritten only
//! when its text changes, so builds that depend on it stay up to date), gives
//! the shared library its SONAME, and compiles the poco-compatible layer
//! (`c/poco/*.c`, C over the `cot_*` API) into the libraries with the `cc` crate.

use std::path::{Path, PathBuf};
use std::process::Command;

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

    poco(crate_dir);
}

/// The poco-compatible layer: C sources linked whole (nothing in Rust calls
/// them) and exported from the cdylib by `c/poco/exports.map` (rustc's own
/// version script keeps only Rust's symbols).
fn poco(crate_dir: &Path) {
    let dir = crate_dir.join("../c/poco");
    println!("cargo:rerun-if-changed=../c/poco");
    println!("cargo:rerun-if-changed=../include/poco");
    let mut sources: Vec<_> = std::fs::read_dir(&dir)
        .expect("c/poco exists")
        .map(|e| e.expect("c/poco is readable").path())
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        .collect();
    sources.sort();
    let mut build = cc::Build::new();
    build.include(crate_dir.join("../include")).files(&sources).std("c11").warnings(true).extra_warnings(true);
    // Calls inside the layer and into the core bind within the library (no
    // PLT stub, inlining within a file): a poco yield is a handful of such
    // calls, and these two flags take it from 15.4 to 13.1 ns
    // (bench/c/switch.c). Nobody interposes the layer's own functions.
    build.flag("-fno-semantic-interposition").flag("-fno-plt");
    // Under ThreadSanitizer (scripts/tsan-c) the C is instrumented too, so TSan
    // sees the atomics of the _from_isr forms.
    if std::env::var("CARGO_ENCODED_RUSTFLAGS").is_ok_and(|f| f.contains("sanitizer=thread")) {
        build.flag("-fsanitize=thread");
    }
    build.link_lib_modifier("+whole-archive").compile("cothread_poco");
    export(&dir.join("exports.map"));
}

/// Exports the layer from the cdylib with a second version script. GNU ld
/// refuses a second one ("anonymous version tag cannot be combined with
/// other version tags": rustc's is anonymous); lld merges them. rustc links
/// with the toolchain's lld on x86-64 Linux already; on the other targets
/// the cdylib is linked with it too, through the gcc-ld wrapper rustc uses.
fn export(map: &Path) {
    let Some(lld) = toolchain_lld() else {
        println!("cargo:warning=no rust-lld in the Rust toolchain: libcothread.so will not export the poco layer");
        return;
    };
    println!("cargo:rustc-cdylib-link-arg=-B{}", lld.display());
    println!("cargo:rustc-cdylib-link-arg=-fuse-ld=lld");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={}", map.display());
}

/// The directory of the toolchain's `ld.lld` wrapper (for `cc -B`).
fn toolchain_lld() -> Option<PathBuf> {
    let rustc = std::env::var("RUSTC").ok()?;
    let out = Command::new(rustc).args(["--print", "sysroot"]).output().ok()?;
    let sysroot = String::from_utf8(out.stdout).ok()?;
    let host = std::env::var("HOST").ok()?;
    let dir = Path::new(sysroot.trim()).join("lib/rustlib").join(host).join("bin/gcc-ld");
    dir.join("ld.lld").exists().then_some(dir)
}
