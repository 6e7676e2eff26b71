#!/usr/bin/env bash
# Builds the pinned Jaeger v2 (tools/trace-backend/go.mod, module v1.75.0 = Jaeger 2.12) into
# $SHOAL_BIN: the trace backend `npm run traces` starts beside the cluster and the tracing
# tests export to. Jaeger v2 is an OpenTelemetry Collector distribution with an in-memory
# trace store and a query API; only package registries are reachable here, so it is built
# from the Go module proxy (about 6 minutes on two cores, once; the module's go.sum pins every
# dependency). A Go module build carries no UI assets (upstream embeds them at release time):
# traces are read through the query API, `npm run trace-report`, or Grafana's Jaeger data
# source.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "${here}/lib.sh"

# `jaeger version` prints JSON; the version is stamped into the build below.
jaeger_version() {
  if [[ -x "$1" ]]; then
    "$1" version 2>/dev/null | sed -n 's/.*"gitVersion":"\([^"]*\)".*/\1/p'
  fi
}
if [[ "$(jaeger_version "${SHOAL_JAEGER}")" == "${SHOAL_JAEGER_VERSION}" ]]; then
  setup_cached "jaeger ${SHOAL_JAEGER_VERSION} already at ${SHOAL_JAEGER}"
fi

if ! command -v go >/dev/null; then
  echo "trace-backend.sh: 'go' is not on PATH; install Go (https://go.dev/doc/install) and rerun" >&2
  exit 1
fi
module="$(sed -n 's#^\tgithub.com/jaegertracing/jaeger \(v[^ ]*\).*#\1#p' "${here}/../trace-backend/go.mod")"
if [[ "${module}" != "${SHOAL_JAEGER_VERSION}" ]]; then
  echo "trace-backend.sh: tools/trace-backend/go.mod pins jaeger ${module}, env.sh says ${SHOAL_JAEGER_VERSION}" >&2
  exit 1
fi

target_dir="$(dirname "${SHOAL_JAEGER}")"
mkdir -p "${target_dir}"
scratch="$(mktemp -d "${target_dir}/.jaeger-build.XXXXXX")"
trap 'rm -rf "${scratch}"' EXIT
cd "${here}/../trace-backend"
# -s -w drops the symbol tables (a third of the binary); the version package is what
# `jaeger version` reports.
CGO_ENABLED=0 go build -p "${SHOAL_BUILD_JOBS}" -trimpath \
  -ldflags "-s -w -X github.com/jaegertracing/jaeger/internal/version.latestVersion=${SHOAL_JAEGER_VERSION}" \
  -o "${scratch}/jaeger" github.com/jaegertracing/jaeger/cmd/jaeger
mv -f "${scratch}/jaeger" "${SHOAL_JAEGER}"

got="$(jaeger_version "${SHOAL_JAEGER}")"
if [[ "${got}" != "${SHOAL_JAEGER_VERSION}" ]]; then
  echo "jaeger: built ${SHOAL_JAEGER} but it reports '${got}', expected ${SHOAL_JAEGER_VERSION}" >&2
  exit 1
fi
echo "jaeger ${SHOAL_JAEGER_VERSION} installed at ${SHOAL_JAEGER}"
