#!/usr/bin/env bash
# make e2e-build: build the real control plane the e2e tests start, from pinned Go modules.
#
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok are built from the
# go.mod and go.sum files under e2e/ (written by scripts/e2e_pin.py, which holds the versions)
# into build/e2e/bin/. Each module's binaries are reused while a stamp beside them matches the
# hash of that module's go.mod and go.sum, the link flags and the Go version; otherwise they are
# rebuilt. -mod=readonly: a build never re-resolves a version, it uses the committed go.sum.
# kwok plays its nodes' kubelets by the "fast" stages its own module ships (the ones kwokctl
# uses): they are copied from the pinned module into build/e2e/kwok.yaml, its --config.
#
# `scripts/e2e-build.sh --check` only checks that a Go new enough for every e2e/*/go.mod is on
# PATH (.ci/run does, before its first step): without one, this fails with one line saying so.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local

# The newest `go` directive of the pinned modules: GOTOOLCHAIN=local never fetches a newer Go.
go_needed=$(awk '$1 == "go" {print $2}' e2e/*/go.mod | sort -V | tail -n 1)
if ! command -v go >/dev/null 2>&1; then
    echo "e2e-build: Go $go_needed or newer is needed to build the e2e control plane," \
        "and there is no go on PATH (install it from https://go.dev/dl/)" >&2
    exit 1
fi
go_version=$(go env GOVERSION)
go_have=${go_version#go}
if [ "$(printf '%s\n%s\n' "$go_needed" "${go_have%% *}" | sort -V | head -n 1)" != "$go_needed" ]
then
    echo "e2e-build: Go $go_needed or newer is needed to build the e2e control plane," \
        "and $(command -v go) is $go_version (install a newer one from https://go.dev/dl/)" >&2
    exit 1
fi
if [ "${1:-}" = --check ]; then
    exit 0
fi

bin=build/e2e/bin
mkdir -p "$bin"
export GOFLAGS="-mod=readonly -buildvcs=false -trimpath"

# build MODULE BINARY... -- PACKAGE... [-- LDFLAGS]
build() {
    local module=$1; shift
    local binaries=() packages=() ldflags="-s -w"
    while [ "$1" != -- ]; do binaries+=("$1"); shift; done; shift
    while [ $# -gt 0 ] && [ "$1" != -- ]; do packages+=("$1"); shift; done
    if [ $# -gt 0 ]; then ldflags="$ldflags $2"; fi
    local stamp="$bin/.$module.stamp" want
    want=$(cat "e2e/$module/go.mod" "e2e/$module/go.sum" <(echo "$go_version $ldflags") \
        | sha256sum | cut -d' ' -f1)
    local missing=0
    for b in "${binaries[@]}"; do [ -x "$bin/$b" ] || missing=1; done
    if [ "$missing" = 0 ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
        echo "e2e-build: $module is up to date (${binaries[*]})"
        return
    fi
    echo "e2e-build: building ${binaries[*]} from e2e/$module ($go_version)"
    local start=$SECONDS out=$PWD/$bin/
    # One package: name its binary (etcd's main package is its module root, named v3).
    if [ "${#packages[@]}" = 1 ]; then out=$out${binaries[0]}; fi
    rm -f "$stamp"
    (cd "e2e/$module" && go build -ldflags "$ldflags" -o "$out" "${packages[@]}")
    echo "$want" >"$stamp"
    echo "e2e-build: $module built in $((SECONDS - start)) s"
}

kube_version=$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit}' e2e/kubernetes/go.mod)
major_minor=${kube_version#v}
pkg=k8s.io/component-base/version
kube_ldflags="-X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=${major_minor%%.*}"
kube_ldflags="$kube_ldflags -X $pkg.gitMinor=$(echo "$major_minor" | cut -d. -f2)"
kube_ldflags="$kube_ldflags -X $pkg.gitTreeState=clean"

build etcd etcd -- go.etcd.io/etcd/server/v3
build kwok kwok -- sigs.k8s.io/kwok/cmd/kwok
build kubernetes kube-apiserver kube-controller-manager kube-scheduler -- \
    k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler -- "$kube_ldflags"

kwok_dir=$(cd e2e/kwok && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
stages=(node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease
    pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete)
for stage in "${stages[@]}"; do
    echo "---"
    cat "$kwok_dir/kustomize/stage/$stage.yaml"
done >build/e2e/kwok.yaml.tmp
mv build/e2e/kwok.yaml.tmp build/e2e/kwok.yaml
