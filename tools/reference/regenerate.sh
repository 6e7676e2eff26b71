#!/usr/bin/env bash
# Regenerates fixtures/all-minilm-l6-v2.json, the tiny task models with their fixtures, the
# float32 SmolLM2 fixture, a tiny PEFT LoRA adapter and the SmolLM2 LoRA adapter with its fixture
# from scratch: model weights, reference venv, then the fixtures themselves. The llama.cpp
# SmolLM2 fixture needs llama-cpp-python (see README.md). Each step is cached, so a rerun takes
# seconds.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=../setup/env.sh
. "${here}/../setup/env.sh"

bash "${here}/../setup/models.sh"
python="$(bash "${here}/setup-venv.sh")"
"${python}" "${here}/make_minilm_fixture.py" "${here}/fixtures/all-minilm-l6-v2.json"
"${python}" "${here}/make_tiny_models.py" "${here}/fixtures"
"${python}" "${here}/make_peft_adapter.py" "${here}/fixtures/tiny/lora"
"${python}" "${here}/make_smollm2_f32_fixture.py" "${SHOAL_SMOLLM2_GGUF}" "${here}/fixtures/smollm2-f32.json"
"${python}" "${here}/make_smollm2_lora.py" "${SHOAL_SMOLLM2_GGUF}" "${here}/fixtures"
