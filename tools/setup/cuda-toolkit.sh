#!/usr/bin/env bash
# Installs a CUDA 13 toolkit from NVIDIA's PyPI wheels into $SHOAL_HOME/venv-cuda, for
# `cargo build --features cuda` on a machine without a system CUDA install. Not part of
# bootstrap.sh: CPU builds and CI never need it.
#
# The wheels' nvidia/cu13 folder already has a CUDA_HOME's shape (bin/nvcc, include, lib,
# nvvm); what it lacks for linking are the unversioned libfoo.so names, which this adds.
# libcuda.so belongs to the GPU driver, not the toolkit: when the driver is installed it is
# linked against; without one (a build machine, a container image), a link stub is made in
# lib/stubs, as NVIDIA's full toolkit ships one: every driver entry point cuda.h names,
# returning CUDA_ERROR_STUB_LIBRARY, under the driver's soname libcuda.so.1. The binary built
# against it loads the real driver wherever it runs; lib/stubs is never on LD_LIBRARY_PATH.
#
# Prints the environment to export; `eval "$(tools/setup/cuda-toolkit.sh --env)"` applies it.
# Idempotent: a stamp holds the sha256 of the requirements file.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=env.sh
. "${here}/env.sh"

venv="${SHOAL_HOME}/venv-cuda"
requirements="${here}/cuda-requirements.txt"
stamp="${venv}/.shoal-requirements.sha256"
want="$(sha256sum "${requirements}" | cut -d' ' -f1)"

if [[ ! -x "${venv}/bin/python" || ! -f "${stamp}" || "$(cat "${stamp}")" != "${want}" ]]; then
  command -v python3 >/dev/null || { echo "cuda-toolkit.sh: python3 with the venv module is required" >&2; exit 1; }
  python3 -m venv --clear "${venv}" >&2
  "${venv}/bin/python" -m pip install --quiet --disable-pip-version-check -r "${requirements}" >&2
  echo "${want}" >"${stamp}"
fi

cuda_home="$("${venv}/bin/python" -c 'import nvidia, os; print(os.path.join(nvidia.__path__[0], "cu13"))')"
for lib in cudart cublas cublasLt curand nvrtc; do
  versioned="$(find "${cuda_home}/lib" -maxdepth 1 -name "lib${lib}.so.*" | sort | head -n1)"
  [[ -n "${versioned}" ]] || { echo "cuda-toolkit.sh: lib${lib}.so.* missing from ${cuda_home}/lib" >&2; exit 1; }
  ln -sf "$(basename "${versioned}")" "${cuda_home}/lib/lib${lib}.so"
done
driver="$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 .*x86-64/ { print $NF; exit }')"
if [[ -n "${driver}" ]]; then
  ln -sf "${driver}" "${cuda_home}/lib/libcuda.so"
  rm -rf "${cuda_home}/lib/stubs"
elif [[ ! -f "${cuda_home}/lib/stubs/libcuda.so" ]]; then
  echo "cuda-toolkit.sh: no GPU driver (libcuda.so.1) here; linking against a stub in ${cuda_home}/lib/stubs" >&2
  mkdir -p "${cuda_home}/lib/stubs"
  # CUDA_ERROR_STUB_LIBRARY is 34. Names that are macros or comments in cuda.h only add
  # unused symbols; the signatures do not matter to the linker.
  grep -oE '\bcu[A-Z][A-Za-z0-9_]*\b' "${cuda_home}/include/cuda.h" | sort -u |
    sed 's/.*/int &(void) { return 34; }/' >"${cuda_home}/lib/stubs/cuda-stub.c"
  cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "${cuda_home}/lib/stubs/libcuda.so" \
    "${cuda_home}/lib/stubs/cuda-stub.c"
fi

# cudarc is told the toolkit's version: it selects the API it binds.
# candle's kernel build cannot ask a GPU for its compute capability when none is present;
# 90 is the H200 the device tool lends, override it for other cards.
env_lines="export CUDA_HOME='${cuda_home}'
export PATH='${cuda_home}/bin':\"\${PATH}\"
export LD_LIBRARY_PATH='${cuda_home}/lib':\"\${LD_LIBRARY_PATH:-}\"
export CUDARC_CUDA_VERSION=13000
export CUDA_COMPUTE_CAP=\"\${CUDA_COMPUTE_CAP:-90}\""
if [[ "${1:-}" == "--env" ]]; then
  echo "${env_lines}"
else
  echo "CUDA toolkit ready in ${cuda_home}; to build with it:" >&2
  echo "${env_lines}" >&2
fi
