# shellcheck shell=sh
# Shared locations and pinned versions for Shoal's setup scripts and npm scripts.
#
# Sourced, never executed. Written for POSIX sh because npm runs package.json
# scripts with /bin/sh (dash on Debian), and it deliberately sets no shell options
# so sourcing it never changes the caller's error handling.
#
# Every variable is assigned only when unset, so a user or CI can point any of them
# elsewhere (e.g. SHOAL_HOME=$(mktemp -d) for a from-scratch run). Caches live
# outside the clone so a fresh checkout or `git clean` does not throw them away.

: "${SHOAL_HOME:=${HOME}/.cache/shoal}"
: "${SHOAL_BIN:=${SHOAL_HOME}/bin}"
: "${SHOAL_MODELS:=${SHOAL_HOME}/models}"
: "${CARGO_TARGET_DIR:=${SHOAL_HOME}/cargo-target}"
: "${SHOAL_SIDECAR_BIN:=${CARGO_TARGET_DIR}/release/shoal-sidecar}"
: "${SHOAL_NATS_SERVER:=${SHOAL_BIN}/nats-server}"
# The S3-compatible server the blob store's S3 tests run (s3-server.sh).
: "${SHOAL_S3_SERVER:=${SHOAL_BIN}/s3s-fs}"
# The trace backend (Jaeger v2) `npm run traces` starts and the tracing tests export to.
: "${SHOAL_JAEGER:=${SHOAL_BIN}/jaeger}"
: "${SHOAL_MINILM_DIR:=${SHOAL_MODELS}/all-minilm-l6-v2}"
# What checks the Helm chart offline (helm.sh): helm, a virtualenv with kubernetes-validate
# (the Kubernetes JSON schemas), and KEDA's CRDs (its ScaledObject schema).
: "${SHOAL_HELM:=${SHOAL_BIN}/helm}"
: "${SHOAL_K8S_VENV:=${SHOAL_HOME}/venv-k8s}"
: "${SHOAL_KEDA_CRDS:=${SHOAL_HOME}/keda-crds}"
: "${SHOAL_SMOLLM2_GGUF:=${SHOAL_MODELS}/smollm2-135m-instruct/model.gguf}"
# The browser the console's tests drive headless (browser.sh installs Debian's).
: "${SHOAL_CHROMIUM:=/usr/bin/chromium}"
# llama-cpp-python's OpenAI-compatible server, installed by llama-cpp-python.sh; the openai
# backend's tests run it as the remote runtime.
: "${SHOAL_LLAMA_VENV:=${SHOAL_HOME}/venv-llama}"
: "${SHOAL_LLAMA_PYTHON:=${SHOAL_LLAMA_VENV}/bin/python}"
# Parallel compile jobs for cargo and go. Our machines have 2 cores shared with other
# work, so the default stays at 2 rather than "all cores" even on bigger hosts.
: "${SHOAL_BUILD_JOBS:=2}"

# Pinned versions. Debian ships nats-server 2.9, which silently ignores per-message
# TTL and lacks multi-filter consumers and priority groups, so we build our own.
: "${SHOAL_NATS_SERVER_VERSION:=v2.15.3}"
# The newest s3s-fs that builds with the Rust this machine kind has (1.95; 0.17 needs 1.96).
: "${SHOAL_S3_SERVER_VERSION:=0.14.1}"
# Jaeger's Go module version (v1.75.0 is Jaeger 2.12); tools/trace-backend/go.mod pins it too.
: "${SHOAL_JAEGER_VERSION:=v1.75.0}"
: "${SHOAL_HELM_VERSION:=v4.3.2}"
: "${SHOAL_KUBERNETES_VALIDATE_VERSION:=1.37.0}"
: "${SHOAL_KEDA_VERSION:=v2.18.3}"
# Model sources and their pins (package versions, wheel digests) live in the catalog,
# deploy/catalog/default.json, which the worker reads too.

export SHOAL_HOME SHOAL_BIN SHOAL_MODELS CARGO_TARGET_DIR \
  SHOAL_SIDECAR_BIN SHOAL_NATS_SERVER SHOAL_MINILM_DIR SHOAL_SMOLLM2_GGUF SHOAL_BUILD_JOBS SHOAL_NATS_SERVER_VERSION \
  SHOAL_LLAMA_VENV SHOAL_LLAMA_PYTHON SHOAL_S3_SERVER SHOAL_S3_SERVER_VERSION \
  SHOAL_JAEGER SHOAL_JAEGER_VERSION SHOAL_HELM SHOAL_HELM_VERSION SHOAL_K8S_VENV \
  SHOAL_KUBERNETES_VALIDATE_VERSION SHOAL_KEDA_CRDS SHOAL_KEDA_VERSION SHOAL_CHROMIUM
