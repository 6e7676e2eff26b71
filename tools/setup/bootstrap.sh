#!/usr/bin/env bash
# Brings a machine from nothing to ready for `npm start` and `npm test`: npm packages,
# nats-server, model weights, sidecar binary. Every step is idempotent and caches
# outside the clone, so a rerun on a ready machine takes about a second.
#
# Usage: bootstrap.sh [--skip-STEP ...] [STEP ...]
#   STEP is one of: node nats-server models python-clients llama-cpp-python s3-server
#   trace-backend helm sidecar (default: all, in that order).
#   --skip-sidecar is the common one: it saves the sidecar's first release build (about 3
#   minutes on two cores) when only TypeScript is being worked on; llama-cpp-python compiles
#   llama.cpp once (tens of minutes on two cores) for the tests of the sidecar's openai backend;
#   trace-backend builds Jaeger once (about 6 minutes) for the tracing tests and `npm run traces`;
#   helm builds helm once (about 5 minutes) and fetches the schemas the chart is checked with.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

all_steps=(node nats-server models python-clients llama-cpp-python s3-server trace-backend helm sidecar)
steps=()
skips=()
for arg in "$@"; do
  case "${arg}" in
    --skip-*) skips+=("${arg#--skip-}") ;;
    -h | --help) sed -n '2,11s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    -*) echo "bootstrap: unknown option ${arg}" >&2; exit 2 ;;
    *) steps+=("${arg}") ;;
  esac
done
((${#steps[@]})) || steps=("${all_steps[@]}")
for step in "${steps[@]}" "${skips[@]}"; do
  if [[ " ${all_steps[*]} " != *" ${step} "* ]]; then
    echo "bootstrap: unknown step '${step}' (steps: ${all_steps[*]})" >&2
    exit 2
  fi
done

state="$(mktemp)"
trap 'rm -f "${state}"' EXIT

for step in "${steps[@]}"; do
  if [[ " ${skips[*]} " == *" ${step} "* ]]; then
    echo "[setup] ${step} skipped"
    continue
  fi
  : >"${state}"
  # Nanoseconds from date rather than $EPOCHREALTIME, whose decimal separator follows
  # the locale and would confuse the arithmetic.
  start="$(date +%s%N)"
  rc=0
  SHOAL_SETUP_STATE="${state}" bash "${here}/${step}.sh" || rc=$?
  tenths=$((($(date +%s%N) - start) / 100000000))
  took="$((tenths / 10)).$((tenths % 10))s"
  if ((rc != 0)); then
    echo "[setup] ${step} FAILED after ${took} (exit ${rc}); see the output above, then rerun: bash ${here}/${step}.sh" >&2
    exit "${rc}"
  fi
  if [[ "$(cat "${state}")" == cached ]]; then
    echo "[setup] ${step} ${took} (cached)"
  else
    echo "[setup] ${step} ${took}"
  fi
done
