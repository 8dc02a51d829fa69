#!/usr/bin/env bash
# Builds the helm CLI from the Go module proxy (`go install helm.sh/helm/v3/cmd/helm@VERSION`, with
# the module versions helm's own go.mod and go.sum pin) into a git-ignored cache, for the chart's
# tests (charts/phalanx; `make chart-test`, test/e2e/helm_test.go).
#
#   hack/helm.sh                # prints the path of the helm binary as the LAST line of stdout
#   hack/helm.sh version        # any other arguments: builds if needed, then runs helm with them
#
# Output: $PHALANX_HELM_CACHE/<version>-<key>/bin/helm (default <repo>/.cache/helm/...), where <key>
# is a short hash of this script and OS/arch. Same version and key => reused at once; another
# HELM_VERSION => another directory. Cold (empty module and build caches): 8 min 55 s on 2 cores
# that other builds kept busy (load ~8; 5 min of user CPU), 420 MB of modules. Progress goes to stderr. Needs Go >= the `go` line of helm's go.mod (1.26).
set -euo pipefail

HELM_VERSION=${HELM_VERSION:-v3.22.0}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
cache_root=${PHALANX_HELM_CACHE:-$repo/.cache/helm}

hash_cmd() { if command -v sha256sum >/dev/null 2>&1; then sha256sum; else shasum -a 256; fi; }
key=$( { cat "${BASH_SOURCE[0]}"; uname -s -m; } | hash_cmd | cut -c1-12)
out=$cache_root/$HELM_VERSION-$key
helm=$out/bin/helm

run() {
  if (($# == 0)); then
    echo "$helm"
  else
    exec "$helm" "$@"
  fi
}

if [[ -f $out/.complete && -x $helm ]]; then
  run "$@"
  exit 0
fi

mkdir -p "$cache_root"
# Serialise concurrent builds of the same version (two test runs started at once).
if command -v flock >/dev/null 2>&1; then
  exec 9>"$out.lock"
  flock 9
  if [[ -f $out/.complete && -x $helm ]]; then
    exec 9>&-
    run "$@"
    exit 0
  fi
fi

major=${HELM_VERSION#v}
major=${major%%.*}
module=helm.sh/helm/v$major
start=$SECONDS
echo "hack/helm.sh: building helm $HELM_VERSION into $out/bin (cold: ~5-9 min on 2 cores; warm: seconds)" >&2
# helm's Makefile stamps its version and the Kubernetes version of its client-go (the default
# of --kube-version and what `helm lint` checks deprecations against): do the same.
tmp=$(mktemp -d "$out.tmp.XXXXXX")
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
# Outside any module (GOWORK=off, run from the temporary directory): `go mod download` and
# `go install pkg@version` use helm's go.mod and go.sum, checked against the checksum database.
gomod=$(cd "$tmp" && GOWORK=off go mod download -json "$module@$HELM_VERSION" |
  sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
client_go=$(awk '$1 == "k8s.io/client-go" && $2 ~ /^v0\./ { print $2; exit }' "$gomod")
if [[ ! $client_go =~ ^v0\.([0-9]+)\. ]]; then
  echo "hack/helm.sh: cannot find the k8s.io/client-go version in $gomod" >&2
  exit 1
fi
k8s_minor=${BASH_REMATCH[1]}
ldflags="-s -w -X $module/internal/version.version=$HELM_VERSION -X $module/internal/version.gitTreeState=clean"
for pkg in pkg/lint/rules pkg/chartutil; do
  ldflags+=" -X $module/$pkg.k8sVersionMajor=1 -X $module/$pkg.k8sVersionMinor=$k8s_minor"
done

(
  cd "$tmp"
  GOWORK=off GOFLAGS=-buildvcs=false GOBIN="$tmp/bin" CGO_ENABLED=0 \
    go install -trimpath -ldflags "$ldflags" "$module/cmd/helm@$HELM_VERSION"
)
[[ -x $tmp/bin/helm ]] || { echo "hack/helm.sh: no helm binary after the build" >&2; exit 1; }
"$tmp/bin/helm" version --short >/dev/null
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
{
  echo "helm=$HELM_VERSION"
  echo "kube-version=1.$k8s_minor"
  echo "go=$(go env GOVERSION)"
  echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ) in $((SECONDS - start))s"
} >"$out/.complete"
echo "hack/helm.sh: done in $((SECONDS - start))s" >&2
run "$@"
