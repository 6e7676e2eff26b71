#!/usr/bin/env bash
# Measures MiniLM on a GPU from a pack made by pack.sh, on a host with an NVIDIA driver and
# CUDA 13's libraries (cuBLAS, cuRAND, the runtime) but no registry and no toolchain. Every
# figure comes from the same tools as on the CPU; results go to <out>, one file per step, as
# each step ends.
#
# Usage: run-gpu.sh <pack-dir> <out-dir> [step ...]
#   smoke     the sidecar starts on the GPU and scores the tiny cross-encoder like transformers
#             (needs only <pack>/runtime) -> smoke.log
#   golden    golden-check.ts: MiniLM in f32, f16 and bf16 against sentence-transformers
#             -> golden.json
#   raw       sidecar-throughput.ts: the sidecar alone, MiniLM in f32 and f16 at 4k, 16k and
#             64k padded tokens a batch -> raw.json
#   autotune  autotune.ts --device on workloads/minilm-gpu.json -> cuda.json (the bundle),
#             autotune/ (every trial)
#   bench     bench.ts --device with that bundle (else bundles/cuda.json, else the untuned
#             defaults): the cluster's knee and the sidecar's raw tokens/s -> bench/
#   Default: all five, in that order.
# Environment: SHOAL_GPU_DEVICE (cuda:0), SHOAL_GPU_INGRESSES (ingress processes feeding the
# GPU, default 1), SHOAL_GPU_RATES and SHOAL_GPU_PARAMS (autotune's --rates and --params),
# SHOAL_GPU_WORK (where binaries unpack; default <pack-dir>/unpacked).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
[[ $# -ge 2 ]] || { sed -n '2,26s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2; exit 2; }
pack="$(realpath "$1")"
out="$(realpath -m "$2")"
shift 2
steps=("$@")
((${#steps[@]})) || steps=(smoke golden raw autotune bench)
device="${SHOAL_GPU_DEVICE:-cuda:0}"
ingresses="${SHOAL_GPU_INGRESSES:-1}"
work="${SHOAL_GPU_WORK:-${pack}/unpacked}"
mkdir -p "${work}/bin" "${work}/home" "${out}"
cd "${root}"

# Binaries and node_modules, once per machine: a second call finds them unpacked.
for binary in node nats-server shoal-sidecar; do
  if [[ ! -x "${work}/bin/${binary}" ]]; then
    xz -dc "${pack}/runtime/${binary}.xz" >"${work}/bin/${binary}.part"
    chmod +x "${work}/bin/${binary}.part"
    mv "${work}/bin/${binary}.part" "${work}/bin/${binary}"
  fi
done
[[ -d node_modules/tsx ]] || tar -xJf "${pack}/runtime/modules.tar.xz"
export PATH="${work}/bin:${PATH}"
export SHOAL_HOME="${work}/home" SHOAL_NATS_SERVER="${work}/bin/nats-server"
export SHOAL_SIDECAR_BIN="${work}/bin/shoal-sidecar" SHOAL_MINILM_DIR="${pack}/model"

# The sidecar links cuBLAS, cuRAND and the CUDA runtime; where the loader does not know them,
# take the first copy on the machine (a CUDA toolkit, or the wheels PyTorch installs).
missing="$(ldd "${SHOAL_SIDECAR_BIN}" | awk '/not found/ { print $1 }')"
for lib in ${missing}; do
  found="$(find /usr/local /opt /usr/lib -name "${lib}" -print -quit 2>/dev/null || true)"
  [[ -n "${found}" ]] || { echo "run-gpu.sh: ${lib} is on neither the loader's path nor the disk" >&2; exit 1; }
  echo "run-gpu.sh: ${found}" >&2
  export LD_LIBRARY_PATH="$(dirname "${found}")${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}"
done

# The default catalog's MiniLM, read from the pack rather than fetched.
export SHOAL_CATALOG="${work}/catalog.json"
node -e '
  const [catalog, model, target] = process.argv.slice(1);
  const doc = JSON.parse(require("fs").readFileSync(catalog, "utf8"));
  const models = doc.models.filter((m) => m.id === "sentence-transformers/all-MiniLM-L6-v2");
  for (const m of models) m.source = { kind: "dir", path: model };
  require("fs").writeFileSync(target, JSON.stringify({ ...doc, models }, null, 2));
' deploy/catalog/default.json "${SHOAL_MINILM_DIR}" "${SHOAL_CATALOG}"

tsx=(node --import tsx)
for step in "${steps[@]}"; do
  echo "[run-gpu] ${step}" >&2
  case "${step}" in
    smoke)
      { if command -v nvidia-smi >/dev/null; then nvidia-smi; fi
        "${tsx[@]}" tools/bench/offline/smoke.ts --device "${device}"; } 2>&1 |
        tee "${out}/smoke.log"
      ;;
    golden)
      "${tsx[@]}" tools/bench/golden-check.ts --device "${device}" --out "${out}/golden.json"
      ;;
    raw)
      "${tsx[@]}" tools/bench/sidecar-throughput.ts --device "${device}" --dtypes f32,f16 \
        --budgets 4096,16384,65536 --seconds 4 --no-generators --out "${out}/raw.json"
      ;;
    autotune)
      "${tsx[@]}" tools/bench/autotune.ts --scenario minilm --device "${device}" \
        --workload tools/bench/workloads/minilm-gpu.json --profile cuda \
        --bundle "${out}/cuda.json" --out "${out}/autotune" --ingresses "${ingresses}" \
        ${SHOAL_GPU_RATES:+--rates "${SHOAL_GPU_RATES}"} ${SHOAL_GPU_PARAMS:+--params "${SHOAL_GPU_PARAMS}"}
      ;;
    bench)
      bundle="${out}/cuda.json"
      [[ -f "${bundle}" ]] || bundle="${root}/bundles/cuda.json"
      [[ -f "${bundle}" ]] || bundle=none
      "${tsx[@]}" tools/bench/bench.ts --scenario minilm --device "${device}" \
        --workload tools/bench/workloads/minilm-gpu.json --bundle "${bundle}" \
        --ingresses "${ingresses}" --raw-budget 16384 --raw-in-flight 2 --out "${out}/bench"
      ;;
    *)
      echo "run-gpu.sh: unknown step ${step}" >&2
      exit 2
      ;;
  esac
done
