#!/usr/bin/env bash
# Fails when proto/ breaks wire or source compatibility with the last release, the commit
# release.json names: what runs in clusters today, which the next version's processes must
# interoperate with during a rolling upgrade (docs/deploy.md, "Upgrades and wire
# compatibility"). Comparing with a release rather than with main lets a change that is not
# released yet be corrected before one is.
set -euo pipefail
cd "$(dirname "$0")/../.."
commit="$(sed -n 's/^  "commit": "\([0-9a-f]\{40\}\)",\{0,1\}$/\1/p' release.json)"
version="$(sed -n 's/^  "version": "\([^"]*\)",\{0,1\}$/\1/p' release.json)"
if [[ -z "${commit}" ]]; then
  echo "buf breaking: release.json names no commit" >&2
  exit 1
fi
if ! git cat-file -e "${commit}^{commit}" 2>/dev/null; then
  echo "buf breaking: release ${version} (${commit}) is not in this clone; fetch its history" >&2
  exit 1
fi
echo "buf breaking: against release ${version} (${commit:0:12})"
exec npx buf breaking --against ".git#ref=${commit},depth=100000"
