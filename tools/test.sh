#!/usr/bin/env bash
# Every test Shoal has, as CI runs it: installs what is missing, then format, lint, types and
# tests of every TypeScript project (against a real nats-server, the real sidecar and real
# weights; the Python clients run inside the ingress suite), then the Rust workspace (fmt,
# clippy, tests in release mode so candle is built once). Ends with one summary line.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
bash tools/setup/bootstrap.sh
# shellcheck source=setup/env.sh
. tools/setup/env.sh

log="$(mktemp)"
trap 'rm -f "${log}"' EXIT

echo "[test] format"
npx prettier --check . --log-level warn
echo "[test] TypeScript: no import circles"
npx madge --circular --no-spinner --extensions ts --ts-config tsconfig.base.json libs services tools
echo "[test] every package declares what it imports"
node --import tsx tools/check/package-dependencies.ts
echo "[test] Rust: no new module circles"
node --import tsx tools/check/rust-module-cycles.ts sidecar-rs
echo "[test] TypeScript: lint, typecheck, test"
npx nx run-many -t lint typecheck test --outputStyle=stream --skipNxCache 2>&1 | tee -a "${log}"
echo "[test] Go (the bench's load generator): gofmt, vet, test"
(
  cd tools/openloop
  unformatted="$(gofmt -l .)"
  if [[ -n "${unformatted}" ]]; then
    echo "gofmt: not formatted: ${unformatted}" >&2
    exit 1
  fi
  go vet ./...
  go test -count=1 -v ./... | grep -E '^(--- |ok|FAIL)'
) 2>&1 | tee -a "${log}"
echo "[test] Rust: fmt, clippy, test"
(
  cd sidecar-rs
  cargo fmt --all --check
  cargo clippy --release --locked --all-targets -j "${SHOAL_BUILD_JOBS}" -- -D warnings
  cargo test --release --locked -j "${SHOAL_BUILD_JOBS}"
) 2>&1 | tee -a "${log}"

# vitest reports "Tests  N passed (N)" per project, cargo "test result: ok. N passed; M failed".
sed 's/\x1b\[[0-9;]*m//g' "${log}" | awk '
  /Tests +[0-9]+ passed/ && !/Test Files/ { for (i = 1; i <= NF; i++) if ($i == "passed") ts += $(i - 1) }
  /test result: / { rs += $4; rf += $6 }
  /^--- PASS/ { gs++ }
  END { printf "[test] TypeScript %d passed; Go %d passed; Rust %d passed, %d failed\n%d passed, %d failed\n", ts, gs, rs, rf, ts + gs + rs, rf }'
