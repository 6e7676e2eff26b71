#!/usr/bin/env bash
# Fails when proto/ breaks wire or source compatibility with what is on main. Before main has
# any commit there is nothing to compare against, which is the one case this skips.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! git rev-parse --verify --quiet main >/dev/null; then
  echo "buf breaking: no main branch yet; nothing to compare against"
  exit 0
fi
if ! git cat-file -e main:proto 2>/dev/null; then
  echo "buf breaking: main has no proto/ yet; nothing to compare against"
  exit 0
fi
exec npx buf breaking --against '.git#branch=main'
