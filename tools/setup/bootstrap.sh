#!/usr/bin/env bash
# Brings a machine from nothing to ready for `npm start` and `npm test`: npm packages,
# nats-server, model weights, sidecar binary. Every step is idempotent and caches
# outside the clone, so a rerun on a ready machine takes about a second.
#
# Steps run in four lanes side by side (npm and downloads; Go builds; Cargo builds; the C++
# build of llama.cpp): on two cores one build alone leaves a core idle through its serial
# phases (linking, the last big crate, downloads), so overlapping them shortens a first setup.
# Each step's output is held back and printed whole when it ends, so lanes never interleave.
#
# Usage: bootstrap.sh [--skip-STEP ...] [STEP ...]
#   STEP is one of: node nats-server models python-clients llama-cpp-python s3-server
#   trace-backend helm browser sidecar (default: all, in that order).
#   --skip-sidecar is the common one: it saves the sidecar's first release build (about 10
#   minutes on two cores) when only TypeScript is being worked on; llama-cpp-python compiles
#   llama.cpp once (about 6 minutes on two cores) for the tests of the sidecar's openai backend;
#   trace-backend builds Jaeger once (about 6 minutes) for the tracing tests and `npm run traces`;
#   helm builds helm once (about 5 minutes) and fetches the schemas the chart is checked with.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

all_steps=(node nats-server models python-clients llama-cpp-python s3-server trace-backend helm browser sidecar)
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

# The lanes, each run in order. A step that needs another runs after it in the same lane.
lanes=(
  "node models python-clients browser"
  "nats-server trace-backend helm"
  "sidecar s3-server"
  "llama-cpp-python"
)
declare -A needs=([models]=node)

work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT

selected() {
  [[ " ${steps[*]} " == *" $1 "* ]]
}

# Prints a step's held-back output and its line in one piece, whichever lane gets there first.
report() {
  flock 9
  cat "$@"
} 9>>"${work}/print.lock"

run_step() {
  local step="$1" out="${work}/$1.out" start rc=0 tenths took line
  if [[ " ${skips[*]} " == *" ${step} "* ]]; then
    echo "[setup] ${step} skipped" | report
    return 0
  fi
  if [[ -n "${needs[${step}]:-}" && -e "${work}/${needs[${step}]}.failed" ]]; then
    echo "[setup] ${step} not run: ${needs[${step}]} failed" | report
    touch "${work}/${step}.failed"
    return 0
  fi
  # Nanoseconds from date rather than $EPOCHREALTIME, whose decimal separator follows
  # the locale and would confuse the arithmetic.
  start="$(date +%s%N)"
  SHOAL_SETUP_STATE="${work}/${step}.state" bash "${here}/${step}.sh" >"${out}" 2>&1 </dev/null || rc=$?
  tenths=$((($(date +%s%N) - start) / 100000000))
  took="$((tenths / 10)).$((tenths % 10))s"
  if ((rc != 0)); then
    touch "${work}/${step}.failed"
    line="[setup] ${step} FAILED after ${took} (exit ${rc}); see its output above, then rerun: bash ${here}/${step}.sh"
  elif [[ "$(cat "${work}/${step}.state" 2>/dev/null)" == cached ]]; then
    line="[setup] ${step} ${took} (cached)"
  else
    line="[setup] ${step} ${took}"
  fi
  echo "${line}" >>"${out}"
  report "${out}"
}

lane() {
  local step
  for step in "$@"; do
    if selected "${step}"; then
      run_step "${step}"
    fi
  done
}

for steps_of_lane in "${lanes[@]}"; do
  # shellcheck disable=SC2086 # a lane is a space-separated list of step names
  lane ${steps_of_lane} &
done
wait

failures=("${work}"/*.failed)
if [[ -e "${failures[0]}" ]]; then
  exit 1
fi
