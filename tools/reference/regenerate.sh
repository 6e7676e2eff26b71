#!/usr/bin/env bash
# Regenerates fixtures/all-minilm-l6-v2.json and the tiny task models with their
# fixtures from scratch: model weights, reference venv, then the fixtures themselves.
# Each step is cached, so a rerun takes seconds.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=../setup/env.sh
. "${here}/../setup/env.sh"

bash "${here}/../setup/models.sh"
python="$(bash "${here}/setup-venv.sh")"
"${python}" "${here}/make_minilm_fixture.py" "${here}/fixtures/all-minilm-l6-v2.json"
"${python}" "${here}/make_tiny_models.py" "${here}/fixtures"
