//! Records build facts for `memwire._kernel._native.build_info()`: the target triple, the optimisation
//! level, the locked versions of pyo3 and usearch (read from the workspace Cargo.lock) and the
//! features pyo3 is built with (read from the workspace Cargo.toml: `abi3-py311`).

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

/// The `features = [...]` of the workspace's `pyo3 = { ... }` line, comma-separated.
fn pyo3_features(manifest: &str) -> String {
    manifest
        .lines()
        .find(|l| l.trim_start().starts_with("pyo3 ="))
        .and_then(|l| l.split_once("features = [").map(|(_, rest)| rest))
        .and_then(|rest| rest.split_once(']').map(|(list, _)| list))
        .map(|list| list.split(',').map(|f| f.trim().trim_matches('"')).filter(|f| !f.is_empty()))
        .map_or_else(|| "unknown".to_owned(), |fs| fs.collect::<Vec<_>>().join(","))
}

fn main() {
    let manifest = env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let lock_path = Path::new(&manifest).join("../Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock_path.display());
    println!("cargo:rerun-if-changed=build.rs");
    let lock = fs::read_to_string(&lock_path).unwrap_or_default();
    let workspace_path = Path::new(&manifest).join("../Cargo.toml");
    println!("cargo:rerun-if-changed={}", workspace_path.display());
    let workspace = fs::read_to_string(&workspace_path).unwrap_or_default();
    println!("cargo:rustc-env=MEMWIRE_PYO3_FEATURES={}", pyo3_features(&workspace));
    println!("cargo:rustc-env=MEMWIRE_TARGET={}", env::var("TARGET").unwrap_or_default());
    println!("cargo:rustc-env=MEMWIRE_OPT_LEVEL={}", env::var("OPT_LEVEL").unwrap_or_default());
    println!("cargo:rustc-env=MEMWIRE_PYO3_VERSION={}", locked_version(&lock, "pyo3"));
    println!("cargo:rustc-env=MEMWIRE_USEARCH_VERSION={}", locked_version(&lock, "usearch"));
}
