#!/usr/bin/env bash
# Builds the bench's open-loop load generator (tools/openloop, Go) into $SHOAL_BIN. Go's own
# build cache makes a rebuild of an unchanged tree take about a second, so the bench runs this
# before every sweep instead of tracking versions.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "${here}/lib.sh"

if ! command -v go >/dev/null; then
  echo "openloop.sh: 'go' is not on PATH; install Go (https://go.dev/doc/install) and rerun" >&2
  exit 1
fi
mkdir -p "${SHOAL_BIN}"
cd "${here}/../openloop"
CGO_ENABLED=0 go build -p "${SHOAL_BUILD_JOBS}" -o "${SHOAL_BIN}/shoal-openloop" .
