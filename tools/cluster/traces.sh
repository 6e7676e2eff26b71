#!/usr/bin/env bash
# Starts the local trace backend in the foreground: Jaeger v2 with deploy/jaeger/config.yaml,
# receiving OTLP on 127.0.0.1:4318 (HTTP) and :4317 (gRPC), keeping traces in memory, and
# answering its query API on 127.0.0.1:16686 (what `npm run trace-report` reads). Builds Jaeger
# first if it is missing (tools/setup/trace-backend.sh, about 6 minutes once).
#
# Start the cluster exporting to it with `SHOAL_TRACES=1 npm start` in another terminal.
# Settings (environment): SHOAL_TRACES_OTLP_PORT (4318), SHOAL_TRACES_OTLP_GRPC_PORT (4317),
# SHOAL_TRACES_QUERY_PORT (16686), SHOAL_TRACES_QUERY_GRPC_PORT (16685),
# SHOAL_TRACES_HEALTH_PORT (13133), SHOAL_TRACES_METRICS_PORT (8888, Jaeger's own metrics),
# SHOAL_TRACES_MAX (100000 traces kept), SHOAL_TRACES_HOST (127.0.0.1).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "${root}"
bash tools/setup/bootstrap.sh node trace-backend
# shellcheck source=../setup/env.sh
. tools/setup/env.sh
echo "[traces] Jaeger: OTLP on ${SHOAL_TRACES_HOST:-127.0.0.1}:${SHOAL_TRACES_OTLP_PORT:-4318}, query API on http://${SHOAL_TRACES_HOST:-127.0.0.1}:${SHOAL_TRACES_QUERY_PORT:-16686}/api/v3/services"
exec "${SHOAL_JAEGER}" --config deploy/jaeger/config.yaml
