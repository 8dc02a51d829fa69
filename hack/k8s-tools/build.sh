#!/usr/bin/env bash
# Builds etcd, kube-apiserver, kube-scheduler, kubectl and kwok from the Go module proxy, pinned by
# this folder's go.mod/go.sum, in ONE `go build` so the five binaries share their compile work.
# (kubectl: the e2e tests run `kubectl phalanx`, the plugin, through it.)
#
#   hack/k8s-tools/build.sh          # prints the bin directory as the LAST line of stdout
#
# Output: $PHALANX_K8S_CACHE/<key>/bin (default <repo>/.cache/k8s/<key>/bin, git-ignored), where
# <key> is a short hash of go.mod + go.sum + this script + OS/arch. Same key => reuse (instant);
# any version change => new key => rebuild. Cold: ~1 min download + ~9 min compile on 2 cores.
# Progress goes to stderr. Requires Go >= the go.mod `go` line; set GOTOOLCHAIN as you like.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache_root=${PHALANX_K8S_CACHE:-$repo/.cache/k8s}

hash_cmd() { if command -v sha256sum >/dev/null 2>&1; then sha256sum; else shasum -a 256; fi; }
key=$( { cat "$here/go.mod" "$here/go.sum" "$here/build.sh"; uname -s -m; } | hash_cmd | cut -c1-12)
out=$cache_root/$key
bin=$out/bin
bins=(etcd kube-apiserver kube-scheduler kubectl kwok)

complete() {
  local b
  [[ -f "$out/.complete" ]] || return 1
  for b in "${bins[@]}"; do [[ -x "$bin/$b" ]] || return 1; done
}

if complete; then
  echo "$bin"
  exit 0
fi

mkdir -p "$cache_root"
# Serialise concurrent builds of the same key (e.g. two clusters started at once).
if command -v flock >/dev/null 2>&1; then
  exec 9>"$cache_root/$key.lock"
  flock 9
  if complete; then echo "$bin"; exit 0; fi
fi

k8s_version=$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ { print $2; exit }' "$here/go.mod")
if [[ ! "$k8s_version" =~ ^v([0-9]+)\.([0-9]+)\.[0-9]+ ]]; then
  echo "build.sh: cannot find the k8s.io/kubernetes version in $here/go.mod" >&2
  exit 1
fi
major=${BASH_REMATCH[1]} minor=${BASH_REMATCH[2]}
vpkg=k8s.io/component-base/version
# Without these the servers report v0.0.0-master+$Format:%H$ (kubectl and discovery show it).
ldflags="-s -w -X $vpkg.gitVersion=$k8s_version -X $vpkg.gitMajor=$major -X $vpkg.gitMinor=$minor"
ldflags+=" -X $vpkg.gitTreeState=clean -X $vpkg.buildDate=1970-01-01T00:00:00Z"

echo "build.sh: building etcd, kube-apiserver ($k8s_version), kube-scheduler, kubectl, kwok into $bin" >&2
echo "build.sh: a cold build takes ~10 min on 2 cores; warm ~10-20 s" >&2
tmp=$(mktemp -d "$out.tmp.XXXXXX")
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS
# -mod=readonly: go.mod/go.sum are committed tidied; never let the build rewrite them
# (a rewritten go.mod changes every compile cache key under -trimpath).
(
  cd "$here"
  GOWORK=off CGO_ENABLED=0 go build -mod=readonly -buildvcs=false -trimpath -ldflags "$ldflags" -o "$tmp/" \
    go.etcd.io/etcd/server/v3 \
    k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-scheduler \
    k8s.io/kubernetes/cmd/kubectl \
    sigs.k8s.io/kwok/cmd/kwok
)
mv "$tmp/server" "$tmp/etcd"   # the etcd main package is named after its directory
for b in "${bins[@]}"; do
  [[ -x "$tmp/$b" ]] || { echo "build.sh: $b missing after build" >&2; exit 1; }
done
rm -rf "$out"
mkdir -p "$out"
mv "$tmp" "$bin"
trap - EXIT
{
  echo "key=$key"
  echo "k8s=$k8s_version"
  echo "go=$(go env GOVERSION)"
  echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ) in $((SECONDS - start))s"
} > "$out/.complete"
echo "build.sh: done in $((SECONDS - start))s" >&2
for old in "$cache_root"/*/; do
  [[ -d $old && ${old%/} != "$out" ]] || continue
  echo "build.sh: note: stale build $(du -sh "$old" 2>/dev/null | cut -f1) in ${old%/} (delete it if unused)" >&2
done
echo "$bin"
