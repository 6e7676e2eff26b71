#!/usr/bin/env bash
# What `npm run images` needs beyond `npm start`'s setup: mmdebstrap (the base root filesystem,
# from Debian's packages), and podman with runc (the smoke test runs every image), all from
# Debian's archive; then the nats-server and sidecar binaries the images carry.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
missing=()
for tool in mmdebstrap podman runc; do
  command -v "${tool}" >/dev/null || missing+=("${tool}")
done
if ((${#missing[@]})); then
  if [[ "$(id -u)" != 0 ]]; then
    echo "images.sh: missing ${missing[*]}; install them (sudo apt-get install ${missing[*]}) and rerun" >&2
    exit 1
  fi
  echo "[setup] installing ${missing[*]} from Debian"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null ||
    { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; }
fi
bash "${here}/bootstrap.sh" node nats-server sidecar
