#!/usr/bin/env bash
# make tools: build the pinned kustomize and helm that dro runs for kustomize and Helm
# workload sources (reconciler/load/builds.py), from their Go modules, into build/tools/bin/.
#
# The versions are pinned here and in the Dockerfile (keep them equal). `go install
# MODULE@VERSION` checks every module against the Go checksum database. The binaries are reused
# while a stamp beside them matches the versions and the Go version; otherwise they are rebuilt.
# The tests put build/tools/bin first on PATH (tests/conftest.py), so they never skip.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local

KUSTOMIZE_VERSION=v5.7.1
HELM_VERSION=v3.22.0

if ! command -v go >/dev/null 2>&1; then
    echo "tools-build: building kustomize and helm needs Go on PATH (https://go.dev/dl/);" \
        "or put kustomize $KUSTOMIZE_VERSION and helm $HELM_VERSION into build/tools/bin" >&2
    exit 1
fi
bin=$PWD/build/tools/bin
stamp=$bin/.stamp
want="kustomize $KUSTOMIZE_VERSION helm $HELM_VERSION $(go env GOVERSION)"
if [ -x "$bin/kustomize" ] && [ -x "$bin/helm" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]
then
    exit 0
fi
mkdir -p "$bin"
rm -f "$stamp"
echo "tools-build: building kustomize $KUSTOMIZE_VERSION and helm $HELM_VERSION" >&2
start=$SECONDS
export GOBIN=$bin GOFLAGS="-buildvcs=false -trimpath"
go install -ldflags "-s -w" "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
go install -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
    "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
echo "$want" >"$stamp"
echo "tools-build: built in $((SECONDS - start)) s" >&2
