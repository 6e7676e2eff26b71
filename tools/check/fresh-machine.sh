#!/usr/bin/env bash
# Runs a README command the way a brand-new machine would: from a fresh clone of HEAD, with
# every cache Shoal's setup fills (its own, npm's, Go's, Cargo's registry, pip's, temp files)
# pointed at one empty directory. Only the toolchains the README asks a user to install (Node,
# Go, Rust, Python, a C++ compiler) are taken from this machine. Prints the wall time at the end;
# this is how the "npm test within 60 minutes on a fresh machine" figure is measured.
#
# Usage: tools/check/fresh-machine.sh [COMMAND...]   (default: npm test)
#   SHOAL_FRESH_DIR=DIR keeps the clone and caches in DIR (default: a new temp dir, removed after).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
command=("$@")
((${#command[@]})) || command=(npm test)

dir="${SHOAL_FRESH_DIR:-}"
if [[ -z "${dir}" ]]; then
  dir="$(mktemp -d)"
  trap 'rm -rf "${dir}"' EXIT
fi
caches="${dir}/caches"
mkdir -p "${caches}/tmp"
git clone --quiet "${root}" "${dir}/shoal"
cd "${dir}/shoal"
echo "[fresh] $(git log --oneline -1) in ${dir}/shoal, caches in ${caches}"

started="${SECONDS}"
rc=0
env \
  SHOAL_HOME="${caches}/shoal" \
  npm_config_cache="${caches}/npm" \
  GOMODCACHE="${caches}/go-mod" \
  GOCACHE="${caches}/go-build" \
  CARGO_HOME="${caches}/cargo" \
  PIP_CACHE_DIR="${caches}/pip" \
  TMPDIR="${caches}/tmp" \
  "${command[@]}" || rc=$?
elapsed=$((SECONDS - started))
echo "[fresh] '${command[*]}' exited ${rc} after $((elapsed / 60)) min $((elapsed % 60)) s"
exit "${rc}"
