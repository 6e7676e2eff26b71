#!/usr/bin/env bash
# Installs llama-cpp-python's OpenAI-compatible server into $SHOAL_LLAMA_VENV (default
# $SHOAL_HOME/venv-llama), outside the clone. The sidecar's `openai` backend is tested against
# it (sidecar-rs/crates/openai), and the SmolLM2 reference script reads the GGUF with it.
#
# PyPI ships llama-cpp-python as an sdist only, so pip compiles llama.cpp for this CPU the first
# time (38 minutes measured on two heavily shared cores); pip's wheel cache then makes a fresh
# venv take about two minutes.
# Idempotent: a stamp inside the venv holds the sha256 of the requirements file, and the step
# is cached while it matches.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "${here}/lib.sh"

requirements="${here}/llama-cpp-python-requirements.txt"
stamp="${SHOAL_LLAMA_VENV}/.shoal-requirements.sha256"
want="$(sha256sum "${requirements}" | cut -d' ' -f1)"

if [[ -x "${SHOAL_LLAMA_PYTHON}" && -f "${stamp}" && "$(cat "${stamp}")" == "${want}" ]]; then
  setup_cached "llama-cpp-python already installed in ${SHOAL_LLAMA_VENV}"
fi

command -v python3 >/dev/null || { echo "llama-cpp-python.sh: python3 with the venv module is required" >&2; exit 1; }
# scikit-build-core fetches CMake from PyPI when the system has none; the compiler must be here.
command -v c++ >/dev/null || {
  echo "llama-cpp-python.sh: a C++ compiler is required to build llama.cpp from the sdist (Debian: apt-get install g++)" >&2
  exit 1
}
python3 -m venv --clear "${SHOAL_LLAMA_VENV}"
# The build parallelism follows the machine's shared budget rather than every core; the
# wheels of llama-cpp-python's pure-Python dependencies come from PyPI as binaries.
CMAKE_BUILD_PARALLEL_LEVEL="${SHOAL_BUILD_JOBS}" "${SHOAL_LLAMA_PYTHON}" -m pip install \
  --quiet --disable-pip-version-check -r "${requirements}"
# The stamp goes only after a successful install, so an interrupted run starts over.
echo "${want}" >"${stamp}"
echo "llama-cpp-python installed in ${SHOAL_LLAMA_VENV}"
