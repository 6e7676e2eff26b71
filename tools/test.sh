#!/usr/bin/env bash
# Every test Shoal has, as CI runs it: installs what is missing, then format, lint, types and
# tests of every TypeScript project (against a real nats-server, the real sidecar and real
# weights; the Python clients run inside the ingress suite), then the Rust workspace (fmt,
# clippy, tests in release mode so candle is built once). Ends with one summary line.
#
# The Rust workspace's clippy and test builds take minutes of both cores, and the TypeScript
# tests leave about a third of the machine idle (they mostly wait on the clusters they start),
# so those builds run beside everything before them at the lowest priority, taking only what
# the TypeScript stages leave; the Rust tests themselves run afterwards, alone.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
bash tools/setup/bootstrap.sh
echo "[test] setup: ${SECONDS} s"
# Setup has just built the sidecar from this tree. The tests that run `npm start` would
# otherwise ask cargo again and wait for its lock, which the Rust builds below hold for
# minutes while they run beside everything (long enough, on a loaded machine, for a cluster's
# start-up deadline to pass).
export SHOAL_SIDECAR_BUILT=1
# shellcheck source=setup/env.sh
. tools/setup/env.sh

log="$(mktemp)"
rust_build_log="$(mktemp)"
rust_builder=""
trap 'if [[ -n "${rust_builder}" ]]; then kill "${rust_builder}" 2>/dev/null || true; fi; rm -f "${log}" "${rust_build_log}"' EXIT

# Every stage runs even when an earlier one failed, so one run shows everything that is wrong;
# the script fails at the end, after its summary, if any stage did.
failed=()
stage() {
  local name="$1" started="${SECONDS}"
  shift
  echo "[test] ${name}"
  if ! "$@"; then
    failed+=("${name}")
  fi
  echo "[test] ${name}: $((SECONDS - started)) s"
}

# Lint and type checks are one single-threaded process each with nothing to wait for, so two
# run at once (one per core); the test files start real clusters whose timing-sensitive checks
# (fair share, failover) keep the machine to one project at a time.
typescript() {
  local rc=0
  npx nx run-many -t lint typecheck --parallel=2 --outputStyle=stream --skipNxCache 2>&1 |
    tee -a "${log}" || rc=1
  npx nx run-many -t test --outputStyle=stream --skipNxCache 2>&1 | tee -a "${log}" || rc=1
  return "${rc}"
}

go_suite() {
  (
    cd tools/openloop
    unformatted="$(gofmt -l .)"
    if [[ -n "${unformatted}" ]]; then
      echo "gofmt: not formatted: ${unformatted}" >&2
      exit 1
    fi
    go vet ./... && go test -count=1 -v ./... | grep -E '^(--- |ok|FAIL)'
  ) 2>&1 | tee -a "${log}"
}

# clippy, then the test binaries, which link against the release build setup made (so the
# sidecar binary the TypeScript tests run is left as it is).
rust_build() {
  cd sidecar-rs
  nice -n 19 cargo clippy --release --locked --all-targets -j "${SHOAL_BUILD_JOBS}" -- -D warnings &&
    nice -n 19 cargo test --release --locked -j "${SHOAL_BUILD_JOBS}" --no-run
}

rust_suite() {
  local built=0
  wait "${rust_builder}" || built=$?
  rust_builder=""
  tee -a "${log}" <"${rust_build_log}"
  ((built == 0)) || return 1
  (
    cd sidecar-rs
    cargo fmt --all --check && cargo test --release --locked -j "${SHOAL_BUILD_JOBS}"
  ) 2>&1 | tee -a "${log}"
}

declared_imports() {
  npx nx run proto:generate --outputStyle=static >/dev/null &&
    node --import tsx tools/check/package-dependencies.ts
}

rust_build >"${rust_build_log}" 2>&1 &
rust_builder=$!
stage "format" npx prettier --check . --log-level warn
stage "TypeScript: no import circles" npx madge --circular --no-spinner --extensions ts \
  --ts-config tsconfig.base.json libs services tools
stage "every package declares what it imports" declared_imports
stage "Rust: no new module circles" node --import tsx tools/check/rust-module-cycles.ts sidecar-rs
stage "TypeScript: lint, typecheck, test" typescript
stage "Go (the bench's load generator): gofmt, vet, test" go_suite
stage "Rust: clippy and test builds (beside the stages above), fmt, test" rust_suite

# vitest reports "Tests  [F failed | ]N passed (T)" per project, Go "--- PASS"/"--- FAIL" per
# test, cargo "test result: ok. N passed; M failed".
sed 's/\x1b\[[0-9;]*m//g' "${log}" | awk '
  /Tests +[0-9]+ (passed|failed)/ && !/Test Files/ {
    for (i = 1; i <= NF; i++) {
      if ($i == "passed") tp += $(i - 1)
      if ($i == "failed") tf += $(i - 1)
    }
  }
  /^--- PASS/ { gp++ }
  /^--- FAIL/ { gf++ }
  /test result: / { rp += $4; rf += $6 }
  END {
    printf "[test] TypeScript %d passed, %d failed; Go %d passed, %d failed; Rust %d passed, %d failed\n", tp, tf, gp, gf, rp, rf
    printf "%d passed, %d failed\n", tp + gp + rp, tf + gf + rf
  }'
if ((${#failed[@]})); then
  # CI keeps only the end of the output: name each failing test here, not just its stage.
  sed 's/\x1b\[[0-9;]*m//g' "${log}" |
    grep -E '(FAIL |×|--- FAIL|\.\.\. FAILED|error TS[0-9]+|^\s*[0-9]+:[0-9]+ +error |^error(\[E[0-9]+\])?: )' |
    sort -u | head -n 60 | sed 's/^/[test] failing: /' >&2 || true
  printf '[test] failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
