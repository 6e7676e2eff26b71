# shellcheck shell=bash
# Sourced by the setup step scripts (not by npm scripts, which source env.sh alone):
# the shared locations and pins, plus how a step tells bootstrap.sh it had nothing to do.

# shellcheck source-path=SCRIPTDIR source=env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"

# Prints why the step is already satisfied and ends the step successfully. bootstrap.sh
# sets SHOAL_SETUP_STATE to a file so it can label the step "(cached)"; run by hand,
# the file is unset and only the message is printed.
setup_cached() {
  echo "$*"
  if [[ -n "${SHOAL_SETUP_STATE:-}" ]]; then
    echo cached >"${SHOAL_SETUP_STATE}"
  fi
  exit 0
}

# Prints the last word of `BIN --version` (nats-server prints "nats-server: v2.15.3", s3s-fs
# "s3s-fs 0.14.1"), or nothing when BIN is not an executable.
binary_version() {
  if [[ -x "$1" ]]; then
    "$1" --version 2>/dev/null | awk '{print $NF}'
  fi
}

# Ends the step as cached when the binary NAME at BIN already reports VERSION.
cached_if_version() {
  local name="$1" bin="$2" version="$3"
  if [[ "$(binary_version "${bin}")" == "${version}" ]]; then
    setup_cached "${name} ${version} already at ${bin}"
  fi
}

# Fails the step unless the binary NAME just built at BIN reports VERSION.
require_version() {
  local name="$1" bin="$2" version="$3" got
  got="$(binary_version "${bin}")"
  if [[ "${got}" != "${version}" ]]; then
    echo "${name}: built ${bin} but it reports '${got}', expected ${version}" >&2
    exit 1
  fi
  echo "${name} ${version} installed at ${bin}"
}
