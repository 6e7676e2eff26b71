#!/usr/bin/env bash
# Creates the Python venv that runs the reference implementation (sentence-transformers
# on torch) for make_minilm_fixture.py. Lives in $SHOAL_HOME/venv-reference, outside
# the clone, because it is several GB (torch's CUDA wheels) and reused across clones.
#
# Idempotent: a stamp inside the venv holds the sha256 of requirements.txt, and the
# install is skipped while it matches. Prints the venv's python on stdout.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=../setup/env.sh
. "${here}/../setup/env.sh"
: "${SHOAL_REFERENCE_VENV:=${SHOAL_HOME}/venv-reference}"

requirements="${here}/requirements.txt"
stamp="${SHOAL_REFERENCE_VENV}/.shoal-requirements.sha256"
want="$(sha256sum "${requirements}" | cut -d' ' -f1)"

if [[ -x "${SHOAL_REFERENCE_VENV}/bin/python" && -f "${stamp}" && "$(cat "${stamp}")" == "${want}" ]]; then
  echo "${SHOAL_REFERENCE_VENV}/bin/python"
  exit 0
fi

command -v python3 >/dev/null || { echo "setup-venv: python3 is required" >&2; exit 1; }
python3 -m venv "${SHOAL_REFERENCE_VENV}"
# The stamp goes only after a successful install, so an interrupted run retries.
rm -f "${stamp}"
"${SHOAL_REFERENCE_VENV}/bin/python" -m pip install --quiet --upgrade pip >&2
"${SHOAL_REFERENCE_VENV}/bin/python" -m pip install --quiet -r "${requirements}" >&2
echo "${want}" >"${stamp}"
echo "${SHOAL_REFERENCE_VENV}/bin/python"
