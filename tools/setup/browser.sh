#!/usr/bin/env bash
# The browser the console's tests drive: Debian's Chromium (puppeteer-core starts it headless;
# nothing is downloaded from the internet at run time). Test-only: `npm start` skips it.
# Installing needs root (apt-get); without root it names the package to install.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "${here}/lib.sh"

if [[ -x "${SHOAL_CHROMIUM}" ]]; then
  setup_cached "$("${SHOAL_CHROMIUM}" --version 2>/dev/null || echo chromium) already at ${SHOAL_CHROMIUM}"
fi
if [[ "$(id -u)" != 0 ]]; then
  echo "browser.sh: Chromium is missing at ${SHOAL_CHROMIUM}; install it (sudo apt-get install chromium) or set SHOAL_CHROMIUM, and rerun" >&2
  exit 1
fi
echo "[setup] installing chromium from Debian"
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium >/dev/null ||
  { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium >/dev/null; }
"${SHOAL_CHROMIUM}" --version
