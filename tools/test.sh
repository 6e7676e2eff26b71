#!/usr/bin/env bash
# Every test Shoal has, as CI runs it: installs what is missing, then format, lint, types and
# tests of every TypeScript project (against a real nats-server, the real sidecar and real
# weights), then the Rust workspace (fmt, clippy, tests in release mode so candle is built once).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
bash tools/setup/bootstrap.sh
# shellcheck source=setup/env.sh
. tools/setup/env.sh

echo "[test] format"
npx prettier --check . --log-level warn
echo "[test] TypeScript: lint, typecheck, test"
npx nx run-many -t lint typecheck test --outputStyle=stream --skipNxCache
echo "[test] Rust: fmt, clippy, test"
cd sidecar-rs
cargo fmt --all --check
cargo clippy --release --locked --all-targets -j "${SHOAL_BUILD_JOBS}" -- -D warnings
cargo test --release --locked -j "${SHOAL_BUILD_JOBS}"
