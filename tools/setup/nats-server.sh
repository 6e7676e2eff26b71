#!/usr/bin/env bash
# Installs the pinned nats-server into $SHOAL_BIN. Debian's package is 2.9, too old for
# what Shoal relies on (per-message TTL, multi-filter consumers, priority groups), and
# only package registries are reachable, so it is built from the Go module proxy.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "${here}/lib.sh"

cached_if_version nats-server "${SHOAL_NATS_SERVER}" "${SHOAL_NATS_SERVER_VERSION}"

if ! command -v go >/dev/null; then
  echo "nats-server.sh: 'go' is not on PATH; install Go (https://go.dev/doc/install, or Debian's golang-go if recent enough for nats-server ${SHOAL_NATS_SERVER_VERSION}) and rerun" >&2
  exit 1
fi

# Build into a scratch GOBIN beside the target and rename into place: go install copies
# (not renames) across filesystems, so building straight into $SHOAL_BIN could leave a
# half-written binary if interrupted, and the rename also lets SHOAL_NATS_SERVER use
# any file name. CGO_ENABLED=0 gives the static binary upstream releases ship and needs
# no C toolchain.
target_dir="$(dirname "${SHOAL_NATS_SERVER}")"
mkdir -p "${target_dir}"
gobin="$(mktemp -d "${target_dir}/.nats-server-build.XXXXXX")"
trap 'rm -rf "${gobin}"' EXIT
GOBIN="${gobin}" CGO_ENABLED=0 go install -p "${SHOAL_BUILD_JOBS}" \
  "github.com/nats-io/nats-server/v2@${SHOAL_NATS_SERVER_VERSION}"
mv -f "${gobin}/nats-server" "${SHOAL_NATS_SERVER}"

require_version nats-server "${SHOAL_NATS_SERVER}" "${SHOAL_NATS_SERVER_VERSION}"
