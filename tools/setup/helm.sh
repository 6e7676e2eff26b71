#!/usr/bin/env bash
# What checks the Helm chart (deploy/helm/shoal) with no network beyond the registries: helm,
# built from the Go module proxy into $SHOAL_BIN (about 5 minutes on two cores, once); a
# virtualenv with kubernetes-validate, whose package carries the Kubernetes JSON schemas of
# 1.25 to 1.37; and the CRDs of KEDA (the ScaledObject the chart makes), taken from KEDA's Go
# module. Each piece is pinned in env.sh and kept outside the clone.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "${here}/lib.sh"

helm_version() {
  if [[ -x "$1" ]]; then "$1" version --template '{{.Version}}' 2>/dev/null; fi
}
validate_version() {
  if [[ -x "${SHOAL_K8S_VENV}/bin/python" ]]; then
    "${SHOAL_K8S_VENV}/bin/python" -c \
      'import importlib.metadata as m; print(m.version("kubernetes-validate"))' 2>/dev/null
  fi
}
keda_marker="${SHOAL_KEDA_CRDS}/.version"
if [[ "$(helm_version "${SHOAL_HELM}")" == "${SHOAL_HELM_VERSION}" &&
  "$(validate_version)" == "${SHOAL_KUBERNETES_VALIDATE_VERSION}" &&
  "$(cat "${keda_marker}" 2>/dev/null)" == "${SHOAL_KEDA_VERSION}" ]]; then
  setup_cached "helm ${SHOAL_HELM_VERSION}, kubernetes-validate ${SHOAL_KUBERNETES_VALIDATE_VERSION}, KEDA CRDs ${SHOAL_KEDA_VERSION} already in ${SHOAL_HOME}"
fi

if ! command -v go >/dev/null; then
  echo "helm.sh: 'go' is not on PATH; install Go (https://go.dev/doc/install) and rerun" >&2
  exit 1
fi

if [[ "$(helm_version "${SHOAL_HELM}")" != "${SHOAL_HELM_VERSION}" ]]; then
  target_dir="$(dirname "${SHOAL_HELM}")"
  mkdir -p "${target_dir}"
  gobin="$(mktemp -d "${target_dir}/.helm-build.XXXXXX")"
  trap 'rm -rf "${gobin}"' EXIT
  # The version is stamped as helm's release builds stamp it, so `helm version` can say it.
  GOBIN="${gobin}" CGO_ENABLED=0 go install -p "${SHOAL_BUILD_JOBS}" -trimpath \
    -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=${SHOAL_HELM_VERSION}" \
    "helm.sh/helm/v4/cmd/helm@${SHOAL_HELM_VERSION}"
  mv -f "${gobin}/helm" "${SHOAL_HELM}"
  got="$(helm_version "${SHOAL_HELM}")"
  if [[ "${got}" != "${SHOAL_HELM_VERSION}" ]]; then
    echo "helm: built ${SHOAL_HELM} but it reports '${got}', expected ${SHOAL_HELM_VERSION}" >&2
    exit 1
  fi
fi

if [[ "$(validate_version)" != "${SHOAL_KUBERNETES_VALIDATE_VERSION}" ]]; then
  rm -rf "${SHOAL_K8S_VENV}"
  python3 -m venv "${SHOAL_K8S_VENV}"
  "${SHOAL_K8S_VENV}/bin/pip" install --quiet --disable-pip-version-check \
    "kubernetes-validate==${SHOAL_KUBERNETES_VALIDATE_VERSION}"
fi

if [[ "$(cat "${keda_marker}" 2>/dev/null)" != "${SHOAL_KEDA_VERSION}" ]]; then
  module_dir="$(go mod download -json "github.com/kedacore/keda/v2@${SHOAL_KEDA_VERSION}" |
    sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
  rm -rf "${SHOAL_KEDA_CRDS}"
  mkdir -p "${SHOAL_KEDA_CRDS}"
  cp "${module_dir}"/config/crd/bases/*.yaml "${SHOAL_KEDA_CRDS}/"
  echo "${SHOAL_KEDA_VERSION}" >"${keda_marker}"
fi
echo "helm ${SHOAL_HELM_VERSION}, kubernetes-validate ${SHOAL_KUBERNETES_VALIDATE_VERSION}, KEDA CRDs ${SHOAL_KEDA_VERSION} in ${SHOAL_HOME}"
