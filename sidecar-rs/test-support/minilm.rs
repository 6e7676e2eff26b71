//! Where the real all-MiniLM-L6-v2 files are, for the tests of every crate in the workspace
//! (each includes this file with `#[path]`, since test helpers cannot be shared as a crate
//! without publishing test code in the build).

use std::path::PathBuf;

/// `$SHOAL_MINILM_DIR`, else `$SHOAL_HOME/models/all-minilm-l6-v2`, else
/// `~/.cache/shoal/models/all-minilm-l6-v2`. Panics (never skips) when the model is absent.
pub fn minilm_dir() -> PathBuf {
    let dir = std::env::var_os("SHOAL_MINILM_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("SHOAL_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| {
                    PathBuf::from(std::env::var_os("HOME").expect("HOME is not set"))
                        .join(".cache/shoal")
                });
            home.join("models/all-minilm-l6-v2")
        });
    assert!(
        dir.join("model.safetensors").is_file() && dir.join("tokenizer.json").is_file(),
        "all-MiniLM-L6-v2 not found in {}; run tools/setup/bootstrap.sh (or set SHOAL_MINILM_DIR)",
        dir.display()
    );
    dir
}
