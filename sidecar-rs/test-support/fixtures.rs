//! Where the reference fixtures (`tools/reference/fixtures`) are, for the tests of every crate
//! in the workspace (each includes this file with `#[path]`, like `minilm.rs`).

use std::path::PathBuf;

/// `tools/reference/fixtures` of the checkout being tested. The package directory is read when
/// the test runs (cargo sets `CARGO_MANIFEST_DIR` for it), not compiled in with `env!`: the
/// target directory is shared between checkouts, and cargo reuses a test binary built in one
/// checkout for another at a different path, whose compiled-in path may no longer exist.
pub fn reference_fixtures() -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("run by cargo test"))
        .join("../../../tools/reference/fixtures")
}
