#!/usr/bin/env bash
# Packs what the MiniLM GPU figures need (run-gpu.sh) for a host that has an NVIDIA driver and
# CUDA 13's libraries but no package registry and no toolchain, such as a lent GPU machine:
#
#   <dir>/runtime/node.xz, nats-server.xz, shoal-sidecar.xz   the binaries, built here
#   <dir>/runtime/modules.tar.xz   the run-time node_modules (runtime-modules.ts) and the
#                                  generated proto code, both ignored by git
#   <dir>/model/                   all-MiniLM-L6-v2 with its weights stored as f16, half the
#                                  bytes (the sidecar computes in whatever dtype it is told)
#
# The two halves can travel separately: each is well under 64 MiB.
#
# Usage: pack.sh <dir>
#   SHOAL_SIDECAR_CUDA_BIN: the sidecar built with `--features cuda` (default: the build
#   sidecar-rs/README.md describes, in $SHOAL_HOME/cargo-target-cuda).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
# shellcheck source=../../setup/env.sh
. "${root}/tools/setup/env.sh"
[[ $# -eq 1 ]] || { sed -n '2,16s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2; exit 2; }
dir="$1"
sidecar="${SHOAL_SIDECAR_CUDA_BIN:-${SHOAL_HOME}/cargo-target-cuda/release/shoal-sidecar}"

[[ -x "${sidecar}" ]] || { echo "pack.sh: no CUDA sidecar at ${sidecar}; see sidecar-rs/README.md" >&2; exit 1; }
if ! grep -qa 'libcublas\.so' "${sidecar}"; then
  echo "pack.sh: ${sidecar} was not built with --features cuda" >&2
  exit 1
fi
[[ -d "${root}/libs/proto/src/gen" ]] || (cd "${root}" && npx nx run proto:generate --outputStyle=static >&2)

rm -rf "${dir}/runtime" "${dir}/model"
mkdir -p "${dir}/runtime" "${dir}/model"
# The release profile keeps debug info (for backtraces); stripped, the sidecar is 7× smaller.
strip -o "${dir}/runtime/shoal-sidecar" "${sidecar}"
for binary in "$(command -v node)" "${SHOAL_NATS_SERVER}" "${dir}/runtime/shoal-sidecar"; do
  echo "pack.sh: $(basename "${binary}")" >&2
  xz -T"${SHOAL_BUILD_JOBS}" -6 -c "${binary}" >"${dir}/runtime/$(basename "${binary}").xz"
done
rm "${dir}/runtime/shoal-sidecar"
echo "pack.sh: node_modules" >&2
(cd "${root}" && node --import tsx tools/bench/offline/runtime-modules.ts) >"${dir}/runtime/modules.txt"
echo libs/proto/src/gen >>"${dir}/runtime/modules.txt"
tar -C "${root}" -cf - -T "${dir}/runtime/modules.txt" | xz -T"${SHOAL_BUILD_JOBS}" -6 >"${dir}/runtime/modules.tar.xz"

echo "pack.sh: MiniLM in f16" >&2
find "${SHOAL_MINILM_DIR}" -mindepth 1 -maxdepth 1 ! -name model.safetensors ! -name '.shoal-*' \
  -exec cp -r {} "${dir}/model/" \;
(cd "${root}" && node --import tsx tools/bench/offline/half-weights.ts \
  "${SHOAL_MINILM_DIR}/model.safetensors" "$(realpath "${dir}")/model/model.safetensors")
du -sh "${dir}/runtime" "${dir}/model" >&2
