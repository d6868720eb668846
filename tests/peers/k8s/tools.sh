#!/usr/bin/env bash
# The tools the chart's check needs, built once and kept outside git under
# ${NAMESRV_PEERS_CACHE:-$HOME/.cache/namesrv-peers} (as tests/peers/fetch.sh keeps the Java peers):
#
#   helm-v4.3.2/helm           go install helm.sh/helm/v4/cmd/helm@v4.3.2 (about 7 min on 2 cores, once)
#   k8scheck/<hash>/k8scheck   this directory's strict decoder, rebuilt when its sources change
#
# Prints the two paths, helm first, one per line, and nothing else on stdout. Concurrent callers are serialised
# with flock. Fails (exit 1, message on stderr) when Go or the module proxy is unavailable.
set -euo pipefail

die() {
    echo "tools.sh: error: $*" >&2
    exit 1
}

here=$(cd "$(dirname "$0")" && pwd)
cache=${NAMESRV_PEERS_CACHE:-$HOME/.cache/namesrv-peers}
helm_version=v4.3.2
helm=$cache/helm-$helm_version/helm
hash=$(cat "$here/go.mod" "$here/go.sum" "$here/main.go" | sha256sum | cut -c1-16)
check=$cache/k8scheck/$hash/k8scheck

if [[ ! -x $helm || ! -x $check ]]; then
    mkdir -p "$cache" || die "cannot create $cache"
    exec 9>"$cache/.k8s-tools.lock"
    flock 9
    command -v go >/dev/null || die "go is not on PATH (Go builds helm and the manifest checker)"
    if [[ ! -x $helm ]]; then
        echo "tools.sh: building helm $helm_version (once, several minutes)" >&2
        GOBIN=$(dirname "$helm") go install "helm.sh/helm/v4/cmd/helm@$helm_version" >&2 \
            || die "go install helm.sh/helm/v4/cmd/helm@$helm_version failed"
    fi
    if [[ ! -x $check ]]; then
        mkdir -p "$(dirname "$check")"
        (cd "$here" && go build -o "$check.tmp" .) >&2 || die "cannot build the manifest checker in $here"
        mv "$check.tmp" "$check"
    fi
fi
echo "$helm"
echo "$check"
