#!/usr/bin/env bash
# Installs the Python clients the test suite drives against a real cluster (the official
# `openai` SDK, and `grpcio` with stubs generated from proto/ at test time) into
# $SHOAL_CLIENTS_VENV (default $SHOAL_HOME/venv-clients), outside the clone.
#
# Idempotent: a stamp inside the venv holds the sha256 of tools/clients-py/requirements.txt,
# and the step is cached while it matches.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "${here}/../.." && pwd)"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "${here}/lib.sh"
: "${SHOAL_CLIENTS_VENV:=${SHOAL_HOME}/venv-clients}"

requirements="${repo}/tools/clients-py/requirements.txt"
stamp="${SHOAL_CLIENTS_VENV}/.shoal-requirements.sha256"
want="$(sha256sum "${requirements}" | cut -d' ' -f1)"

if [[ -x "${SHOAL_CLIENTS_VENV}/bin/python" && -f "${stamp}" && "$(cat "${stamp}")" == "${want}" ]]; then
  setup_cached "Python clients already installed in ${SHOAL_CLIENTS_VENV}"
fi

command -v python3 >/dev/null || { echo "python-clients.sh: python3 with the venv module is required" >&2; exit 1; }
# --clear starts from an empty venv, so a package dropped from requirements.txt does not
# linger from an earlier install.
python3 -m venv --clear "${SHOAL_CLIENTS_VENV}"
"${SHOAL_CLIENTS_VENV}/bin/python" -m pip install --quiet --disable-pip-version-check \
  --only-binary :all: -r "${requirements}"
# The stamp goes only after a successful install, so an interrupted run starts over.
echo "${want}" >"${stamp}"
echo "Python clients installed in ${SHOAL_CLIENTS_VENV}"
