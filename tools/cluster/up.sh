#!/usr/bin/env bash
# Starts the single-machine Shoal cluster in the foreground: nats-server (JetStream), the blob
# offloader, the model-loader, the LoRA adapter registry, one worker with its sidecar, ingress
# (which annotates and queues requests itself) and the web console.
# Installs and builds whatever is missing first (tools/setup/bootstrap.sh), less the Python
# clients, llama-cpp-python, the S3 test server, the Helm chart's checkers and the browser,
# which only the tests use, and the trace backend, which `npm run traces` builds and starts. Ctrl-C stops everything; if any process
# dies, the rest are stopped too and the script exits non-zero.
#
# Traces: every process exports over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set; with
# `npm run traces` running in another terminal, `SHOAL_TRACES=1 npm start` sets it to that
# backend (http://127.0.0.1:4318). OTEL_TRACES_SAMPLER(_ARG) choose the share of requests
# traced (one in a hundred unless set; docs/observability.md).
#
# Settings (environment): SHOAL_PORT (8080), SHOAL_NATS_PORT (4222), SHOAL_HOST (127.0.0.1),
# LOG_LEVEL (info), SHOAL_WORKER_MEMORY_BYTES (4 GiB), and every service's own variables (see
# README "Configuration"). The model-loader's API is on SHOAL_LOADER_PORT (8090), the adapter
# registry's on SHOAL_REGISTRY_PORT (8091), the web console on SHOAL_CONSOLE_PORT (8093); Prometheus metrics of ingress, the worker, the
# model-loader, the registry and the blob offloader on SHOAL_INGRESS_METRICS_PORT (9400),
# SHOAL_WORKER_METRICS_PORT (9401), SHOAL_LOADER_METRICS_PORT (9402),
# SHOAL_REGISTRY_METRICS_PORT (9403) and SHOAL_OFFLOADER_METRICS_PORT (9404). Logs, the
# JetStream store and the sidecar's socket go
# under SHOAL_CLUSTER_DIR ($SHOAL_HOME/cluster).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "${root}"
# SHOAL_SIDECAR_BUILT=1 (set by tools/test.sh, whose setup built it) skips the sidecar's build.
bash tools/setup/bootstrap.sh --skip-python-clients --skip-llama-cpp-python --skip-s3-server \
  --skip-trace-backend --skip-helm --skip-browser ${SHOAL_SIDECAR_BUILT:+--skip-sidecar}
# shellcheck source=../setup/env.sh
. tools/setup/env.sh
npx nx run proto:generate --outputStyle=static >/dev/null

port="${SHOAL_PORT:-8080}"
nats_port="${SHOAL_NATS_PORT:-4222}"
host="${SHOAL_HOST:-127.0.0.1}"
run_dir="${SHOAL_CLUSTER_DIR:-${SHOAL_HOME}/cluster}"
logs="${run_dir}/logs"
mkdir -p "${logs}" "${run_dir}/nats"
export NATS_URL="nats://127.0.0.1:${nats_port}" SHOAL_PORT="${port}" SHOAL_HOST="${host}"
export SHOAL_SIDECAR_SOCKET="${run_dir}/sidecar.sock"
export SHOAL_REGISTRY_PORT="${SHOAL_REGISTRY_PORT:-8091}" SHOAL_REGISTRY_HOST="${SHOAL_REGISTRY_HOST:-${host}}"
# One node: its model-loader decides what the worker holds (docs/model-loader.md). The worker's
# "accelerator" is the CPU, so its memory budget is a share of RAM.
export SHOAL_NODE_ID="${SHOAL_NODE_ID:-local}"
export SHOAL_WORKER_MEMORY_BYTES="${SHOAL_WORKER_MEMORY_BYTES:-4294967296}"
if [[ "${SHOAL_TRACES:-0}" == 1 && -z "${OTEL_EXPORTER_OTLP_ENDPOINT:-}" ]]; then
  export OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:${SHOAL_TRACES_OTLP_PORT:-4318}"
fi

pids=()
# Services stop before nats-server, so they can finish or put back their work and drain.
stop_all() {
  trap - INT TERM EXIT
  local nats="${pids[0]:-}"
  for pid in "${pids[@]:1}"; do kill -TERM "${pid}" 2>/dev/null || true; done
  for pid in "${pids[@]:1}"; do wait "${pid}" 2>/dev/null || true; done
  if [[ -n "${nats}" ]]; then
    kill -TERM "${nats}" 2>/dev/null || true
    wait "${nats}" 2>/dev/null || true
  fi
}
trap 'stop_all; exit 130' INT TERM
trap stop_all EXIT

start() { # name command...
  local name="$1"
  shift
  "$@" >>"${logs}/${name}.log" 2>&1 &
  pids+=("$!")
  echo "[cluster] ${name} started (pid $!, log ${logs}/${name}.log)"
}

wait_for() { # what seconds command...
  local what="$1" seconds="$2"
  shift 2
  for ((i = 0; i < seconds * 10; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    for pid in "${pids[@]}"; do
      if ! kill -0 "${pid}" 2>/dev/null; then
        echo "[cluster] a process exited while waiting for ${what}; logs in ${logs}" >&2
        exit 1
      fi
    done
    sleep 0.1
  done
  echo "[cluster] ${what} not ready after ${seconds}s; logs in ${logs}" >&2
  exit 1
}

# Every process connects to NATS as the user of its kind, allowed only what that kind does;
# new passwords on every start (docs/security.md, "NATS users").
auth_dir="${run_dir}/nats-auth"
node --import tsx tools/cluster/nats-auth.ts config "${auth_dir}"
as_user() { # user command...: becomes the command, as that NATS user (keeps start's pid)
  local user="$1"
  shift
  exec env NATS_USER="${user}" NATS_PASSWORD_FILE="${auth_dir}/passwords/${user}" "$@"
}
# Services run from source through tsx, or from a production build (`npm run build`) when
# SHOAL_DIST names its directory.
service() { # name source-entry: the command that runs it
  if [[ -n "${SHOAL_DIST:-}" ]]; then
    echo node --enable-source-maps "${SHOAL_DIST}/$1/main.mjs"
  else
    echo node --import tsx "$2"
  fi
}
start nats-server "${SHOAL_NATS_SERVER}" -c "${auth_dir}/auth.conf" -js -sd "${run_dir}/nats" \
  -a 127.0.0.1 -p "${nats_port}"
wait_for nats-server 20 bash -c "exec 3<>/dev/tcp/127.0.0.1/${nats_port}"
(as_user bootstrap $(service nats-bootstrap tools/cluster/nats-auth.ts) bootstrap)
start blob-offloader as_user blob-offloader env \
  SHOAL_METRICS_PORT="${SHOAL_OFFLOADER_METRICS_PORT:-9404}" \
  $(service blob-offloader services/blob-offloader/src/main.ts)
start model-loader as_user model-loader env SHOAL_METRICS_PORT="${SHOAL_LOADER_METRICS_PORT:-9402}" \
  $(service model-loader services/model-loader/src/main.ts)
start lora-registry as_user lora-registry env \
  SHOAL_METRICS_PORT="${SHOAL_REGISTRY_METRICS_PORT:-9403}" \
  $(service lora-registry services/lora-registry/src/main.ts)
start worker as_user worker env SHOAL_METRICS_PORT="${SHOAL_WORKER_METRICS_PORT:-9401}" \
  $(service worker services/worker/src/main.ts)
start ingress as_user ingress env SHOAL_METRICS_PORT="${SHOAL_INGRESS_METRICS_PORT:-9400}" \
  $(service ingress services/ingress/src/main.ts)
# The web console reads what the others publish (heartbeats, residency, the work queue,
# ingress's metrics) and the bench results in docs/bench and bench-out/ (docs/console.md).
console_traces=()
if [[ -n "${OTEL_EXPORTER_OTLP_ENDPOINT:-}" ]]; then
  console_traces=(SHOAL_CONSOLE_TRACES_URL="http://127.0.0.1:${SHOAL_TRACES_QUERY_PORT:-16686}")
fi
start console as_user console env SHOAL_CONSOLE_PORT="${SHOAL_CONSOLE_PORT:-8093}" \
  SHOAL_CONSOLE_INGRESS_METRICS="http://127.0.0.1:${SHOAL_INGRESS_METRICS_PORT:-9400}/metrics" \
  SHOAL_CONSOLE_LOADERS="http://127.0.0.1:${SHOAL_LOADER_PORT:-8090}" \
  SHOAL_CONSOLE_BENCH_DIRS="${root}/docs/bench,${root}/bench-out" "${console_traces[@]}" \
  $(service console services/console/src/main.ts)

probe='{"model":"sentence-transformers/all-MiniLM-L6-v2","input":["warm-up"]}'
if [[ "${SHOAL_AUTH:-}" == keys ]]; then
  # Without a key the probe can only see ingress refuse it, and the worker pull.
  wait_for "ingress" 120 bash -c "[[ \$(curl -s -o /dev/null -w '%{http_code}' \
    http://${host}:${port}/v1/models) == 401 ]]"
  wait_for "the worker" 120 grep -q '"msg":"worker pulling"' "${logs}/worker.log"
  echo "[cluster] API keys required: npm run keys -- tenant demo --models '*', then" \
    "npm run keys -- create --tenant demo (docs/security.md)."
else
  wait_for "the first embedding" 120 curl -sf "http://${host}:${port}/v1/embeddings" \
    -H 'content-type: application/json' -d "${probe}"
fi

cat <<MSG
[cluster] Shoal is serving on http://${host}:${port} (REST, Connect, gRPC, gRPC-Web); NATS on ${nats_port}.
[cluster] Try: curl -s ${host}:${port}/v1/embeddings -H 'content-type: application/json' \\
            -d '{"model":"sentence-transformers/all-MiniLM-L6-v2","input":["hello world"]}'
[cluster] LoRA adapters: http://${SHOAL_REGISTRY_HOST}:${SHOAL_REGISTRY_PORT}/v1/adapters (docs/lora-registry.md).
[cluster] Console: http://${host}:${SHOAL_CONSOLE_PORT:-8093} (docs/console.md).
[cluster] Ctrl-C stops the cluster.
MSG
wait -n
echo "[cluster] a process exited; stopping the cluster (logs in ${logs})" >&2
exit 1
