//! Where the real SmolLM2-135M-Instruct Q4_1 GGUF is, for the tests of every crate in the
//! workspace (each includes this file with `#[path]`, like `minilm.rs`).

use std::path::PathBuf;

/// `$SHOAL_SMOLLM2_GGUF`, else `$SHOAL_HOME/models/smollm2-135m-instruct/model.gguf`, else the
/// same under `~/.cache/shoal`. Panics (never skips) when the file is absent.
pub fn smollm2_gguf() -> PathBuf {
    let path = std::env::var_os("SHOAL_SMOLLM2_GGUF")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("SHOAL_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| {
                    PathBuf::from(std::env::var_os("HOME").expect("HOME is not set"))
                        .join(".cache/shoal")
                });
            home.join("models/smollm2-135m-instruct/model.gguf")
        });
    assert!(
        path.is_file(),
        "SmolLM2 GGUF not found at {}; run tools/setup/bootstrap.sh (or set SHOAL_SMOLLM2_GGUF)",
        path.display()
    );
    path
}
