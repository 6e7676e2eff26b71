#!/usr/bin/env bash
# Installs the pinned s3s-fs into $SHOAL_BIN: a small S3-compatible server over a directory
# (Apache-2.0, from crates.io), which the tests of the blob offloader's S3 backend talk to.
# Test-only: `npm start` skips it. About 2 minutes of compiling on two cores, once.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "${here}/lib.sh"

cached_if_version s3s-fs "${SHOAL_S3_SERVER}" "${SHOAL_S3_SERVER_VERSION}"

command -v cargo >/dev/null || {
  echo "s3-server.sh: cargo is not on PATH; install Rust with rustup and rerun" >&2
  exit 1
}

# Its own scratch target directory, not the sidecar's: cargo install would otherwise build
# into $CARGO_TARGET_DIR and rebuild the sidecar's shared dependencies with other features.
target_dir="$(dirname "${SHOAL_S3_SERVER}")"
mkdir -p "${target_dir}"
scratch="$(mktemp -d "${target_dir}/.s3s-fs-build.XXXXXX")"
trap 'rm -rf "${scratch}"' EXIT
CARGO_TARGET_DIR="${scratch}/target" cargo install --locked -j "${SHOAL_BUILD_JOBS}" \
  --root "${scratch}" --features binary s3s-fs --version "${SHOAL_S3_SERVER_VERSION}"
mv -f "${scratch}/bin/s3s-fs" "${SHOAL_S3_SERVER}"

require_version s3s-fs "${SHOAL_S3_SERVER}" "${SHOAL_S3_SERVER_VERSION}"
