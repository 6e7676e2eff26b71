#!/usr/bin/env bash
# Builds the release sidecar binary into $CARGO_TARGET_DIR (outside the clone, so
# candle's ~15-minute CPU build survives fresh checkouts and is shared between them).
# --locked fails rather than silently re-resolving Cargo.lock. cargo is itself
# incremental, so a rerun with nothing changed takes seconds.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "${here}/../.." && pwd)"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "${here}/lib.sh"

command -v cargo >/dev/null || {
  echo "sidecar.sh: cargo is not on PATH; install Rust with rustup (sidecar-rs/rust-toolchain.toml pins the version)" >&2
  exit 1
}

# cargo leaves an up-to-date binary untouched, so an unchanged mtime means nothing was
# rebuilt; that is cheaper and more reliable than parsing cargo's progress output.
before="$(stat -c '%y %i' "${SHOAL_SIDECAR_BIN}" 2>/dev/null || true)"
cargo build --release --locked -j "${SHOAL_BUILD_JOBS}" --manifest-path "${repo}/sidecar-rs/Cargo.toml"

if [[ ! -x "${SHOAL_SIDECAR_BIN}" ]]; then
  echo "sidecar.sh: cargo succeeded but ${SHOAL_SIDECAR_BIN} does not exist; is the binary still named shoal-sidecar?" >&2
  exit 1
fi
if [[ -n "${before}" && "$(stat -c '%y %i' "${SHOAL_SIDECAR_BIN}")" == "${before}" ]]; then
  setup_cached "sidecar up to date at ${SHOAL_SIDECAR_BIN}"
fi
