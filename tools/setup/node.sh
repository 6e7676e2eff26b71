#!/usr/bin/env bash
# Installs the repo's npm dependencies exactly as locked. `npm ci` deletes and rebuilds
# node_modules, which takes minutes, so it runs only when node_modules is missing or
# package-lock.json or patches/ changed since the last install; a stamp inside node_modules
# holds their hash, so deleting node_modules also forgets the stamp.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "${here}/../.." && pwd)"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "${here}/lib.sh"

command -v node >/dev/null || { echo "node.sh: node is not on PATH; install Node.js 20 or newer" >&2; exit 1; }
command -v npm >/dev/null || { echo "node.sh: npm is not on PATH; install it alongside Node.js" >&2; exit 1; }
node_version="$(node --version)"
node_major="${node_version#v}"
node_major="${node_major%%.*}"
if ! [[ "${node_major}" =~ ^[0-9]+$ ]] || ((node_major < 20)); then
  echo "node.sh: Node.js ${node_version} is too old; Shoal needs 20 or newer" >&2
  exit 1
fi

lock="${repo}/package-lock.json"
if [[ ! -f "${lock}" ]]; then
  echo "node.sh: ${lock} is missing; npm ci installs only from a lockfile" >&2
  exit 1
fi
stamp="${repo}/node_modules/.shoal-package-lock.sha256"
# The patches to dependencies (patches/, applied by the root postinstall) are part of what
# node_modules is built from.
want="$(cat "${lock}" "${repo}"/patches/*.patch | sha256sum | cut -d' ' -f1)"

if [[ -d "${repo}/node_modules" && -f "${stamp}" && "$(cat "${stamp}")" == "${want}" ]]; then
  setup_cached "node_modules up to date with package-lock.json"
fi

# npm's download cache is ~/.npm by default, outside the clone, so reinstalls after a
# lock change mostly hit the cache.
(cd "${repo}" && npm ci --no-audit --no-fund)
echo "${want}" >"${stamp}"
