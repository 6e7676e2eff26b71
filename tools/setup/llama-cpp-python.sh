#!/usr/bin/env bash
# Installs llama-cpp-python's OpenAI-compatible server into $SHOAL_LLAMA_VENV (default
# $SHOAL_HOME/venv-llama), outside the clone. The sidecar's `openai` backend is tested against
# it (sidecar-rs/crates/openai), and the SmolLM2 reference script reads the GGUF with it.
#
# PyPI ships llama-cpp-python as an sdist only, so pip compiles llama.cpp (between 3½ and 38
# minutes measured on two shared cores, depending on the machine).
#
# llama.cpp is built for plain AVX2, not for the CPU it happens to be built on: its native
# build on a Sapphire Rapids VM turns on the AMX matmul kernels, which crashed the server
# (SIGSEGV) on the first prompt of more than one token. pip's wheel cache would reuse a wheel
# built with other flags, so this build skips it.
# Idempotent: a stamp inside the venv holds the sha256 of the requirements file and the build
# flags, and the step is cached while it matches.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "${here}/lib.sh"

requirements="${here}/llama-cpp-python-requirements.txt"
stamp="${SHOAL_LLAMA_VENV}/.shoal-requirements.sha256"
# LLAVA_BUILD=OFF leaves out the multimodal library (libmtmd), which the text-only server the
# tests run never loads (llama_cpp imports it only for image chat formats).
cmake_args="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DLLAVA_BUILD=OFF"
want="$({ cat "${requirements}"; echo "${cmake_args}"; } | sha256sum | cut -d' ' -f1)"

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
CMAKE_ARGS="${cmake_args}" CMAKE_BUILD_PARALLEL_LEVEL="${SHOAL_BUILD_JOBS}" "${SHOAL_LLAMA_PYTHON}" -m pip install \
  --quiet --disable-pip-version-check --no-cache-dir -r "${requirements}"
# The stamp goes only after a successful install, so an interrupted run starts over.
echo "${want}" >"${stamp}"
echo "llama-cpp-python installed in ${SHOAL_LLAMA_VENV}"
