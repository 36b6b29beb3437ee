//! Records build facts for `memwire._kernel._native.build_info()`: the target triple, the optimisation
//! level, and the locked versions of pyo3 and usearch (read from the workspace Cargo.lock).

use std::env;
use std::fs;
use std::path::Path;

fn locked_version(lock: &str, name: &str) -> String {
    let needle = format!("name = \"{name}\"\n");
    lock.split("[[package]]")
        .find(|pkg| pkg.contains(&needle))
        .and_then(|pkg| pkg.lines().find_map(|l| l.strip_prefix("version = \"")))
        .map_or_else(|| "unknown".to_owned(), |v| v.trim_end_matches('"').to_owned())
}

fn main() {
    let manifest = env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let lock_path = Path::new(&manifest).join("../Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock_path.display());
    println!("cargo:rerun-if-changed=build.rs");
    let lock = fs::read_to_string(&lock_path).unwrap_or_default();
    println!("cargo:rustc-env=MEMWIRE_TARGET={}", env::var("TARGET").unwrap_or_default());
    println!("cargo:rustc-env=MEMWIRE_OPT_LEVEL={}", env::var("OPT_LEVEL").unwrap_or_default());
    println!("cargo:rustc-env=MEMWIRE_PYO3_VERSION={}", locked_version(&lock, "pyo3"));
    println!("cargo:rustc-env=MEMWIRE_USEARCH_VERSION={}", locked_version(&lock, "usearch"));
}
