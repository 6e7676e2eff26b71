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
