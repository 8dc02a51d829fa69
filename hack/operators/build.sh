#!/usr/bin/env bash
# Builds real job operators from the Go module proxy, and gathers their CRDs, for the e2e tests
# (test/e2e/operators_test.go) that run them against the local control plane.
#
#   hack/operators/build.sh          # prints the output directory as the LAST line of stdout
#
# Output: $PHALANX_OPERATORS_CACHE/<key> (default <repo>/.cache/operators/<key>, git-ignored):
#   bin/<name>          training-operator, jobset, lws, kuberay, mpi-operator, kube-controller-manager
#   crds/<name>/*.yaml  training-operator, jobset, lws, kuberay, mpi-operator, scheduler-plugins, volcano
#   webhooks/<name>/manifests.yaml  jobset, lws: their webhook configurations (kustomize base)
#   .complete           versions, go version, build times
# <key> is a short hash of this script (which pins every version), hack/k8s-tools/go.mod+go.sum
# (kube-controller-manager comes from there) and OS/arch. Same key => reuse (instant); any
# change => new key => rebuild. Progress goes to stderr.
#
# How each operator is built: `go mod download -json <module>@<version>` gives its source tree in
# the module cache (read-only), which is copied to a temp dir and built there with its own go.mod
# (GOFLAGS=-mod=mod: the operators pin different Kubernetes versions, so each is ONE `go build` of
# its own, run one after the other, sharing GOCACHE). No CRD is written by hand: they are copied
# from the module trees, or generated from the module's Go types (Volcano, see below).
#
# kube-controller-manager (the real one, k8s.io/kubernetes at the version hack/k8s-tools pins) is
# built too, because JobSet creates batch/v1 Jobs and LeaderWorkerSet creates StatefulSets, and the
# local control plane has no controller-manager: the tests run it with only the job and
# statefulset controllers.
#
# Cold build on 2 cores, empty GOCACHE and output dir, every module already downloaded
# (GOCACHE=/tmp/c PHALANX_OPERATORS_CACHE=/tmp/o hack/operators/build.sh): training-operator 192 s,
# jobset 167 s, lws 164 s, kuberay 150 s, kube-controller-manager 437 s, Volcano CRDs 5 s (with
# bin/controller-gen-v0.19.0 present): 1115 s (18.6 min) in all. With most dependencies still to
# download and another e2e run on the machine: ~28 min. Warm GOCACHE, new key: ~30 s. Cached:
# instant. .complete records the times of the build that made the directory. mpi-operator, added
# later (2026-12-01): 249 s alone with an empty GOCACHE, beside an e2e run; 4 s with a warm one.
# kube-controller-manager's modules shared with hack/k8s-tools are pinned at the versions there, so
# whichever of the two builds comes second takes the packages they share from GOCACHE: right after
# a cold hack/k8s-tools/build.sh (648 s, GOCACHE empty before it), kube-controller-manager took
# 101 s pinned and 557 s unpinned (2026-11-25, modules downloaded).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
k8s_tools=$repo/hack/k8s-tools
cache_root=${PHALANX_OPERATORS_CACHE:-$repo/.cache/operators}

# name | module | version | main package (relative to the module root) | CRD dir in the module |
# webhook configurations in the module ("-": none needed; the tests register these, see
# test/e2e/operators_test.go)
operators=(
  "training-operator|github.com/kubeflow/training-operator|v1.9.2|./cmd/training-operator.v1|manifests/base/crds|-"
  "jobset|sigs.k8s.io/jobset|v0.8.2|.|config/components/crd/bases|config/components/webhook/manifests.yaml"
  "lws|sigs.k8s.io/lws|v0.6.2|./cmd|config/crd/bases|config/webhook/manifests.yaml"
  "kuberay|github.com/ray-project/kuberay/ray-operator|v1.4.2|.|config/crd/bases|-"
  "mpi-operator|github.com/kubeflow/mpi-operator|v0.6.0|./cmd/mpi-operator|manifests/base|-"
)
# CRDs only.
scheduler_plugins="sigs.k8s.io/scheduler-plugins@v0.31.8"          # manifests/coscheduling/crd.yaml
volcano_apis="volcano.sh/apis@v1.12.2"                              # generated, see gen_volcano
controller_gen_version=v0.19.0                                      # as the Makefile's

hash_cmd() { if command -v sha256sum >/dev/null 2>&1; then sha256sum; else shasum -a 256; fi; }
key=$( { cat "$here/build.sh" "$k8s_tools/go.mod" "$k8s_tools/go.sum"; uname -s -m; } | hash_cmd | cut -c1-12)
out=$cache_root/$key
bins=(training-operator jobset lws kuberay mpi-operator kube-controller-manager)
crds=(training-operator jobset lws kuberay mpi-operator scheduler-plugins volcano)

complete() {
  local b
  [[ -f "$out/.complete" ]] || return 1
  for b in "${bins[@]}"; do [[ -x "$out/bin/$b" ]] || return 1; done
  for b in "${crds[@]}"; do compgen -G "$out/crds/$b/*.yaml" >/dev/null || return 1; done
  for b in jobset lws; do [[ -f "$out/webhooks/$b/manifests.yaml" ]] || return 1; done
}

if complete; then
  echo "$out"
  exit 0
fi

mkdir -p "$cache_root"
# Serialise concurrent builds of the same key (two test runs started at once).
if command -v flock >/dev/null 2>&1; then
  exec 9>"$cache_root/$key.lock"
  flock 9
  if complete; then echo "$out"; exit 0; fi
fi

log() { echo "operators/build.sh: $*" >&2; }
tmp=$(mktemp -d "$out.tmp.XXXXXX")
chmod 755 "$tmp"
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/crds" "$tmp/src"
start=$SECONDS
times=()

# moddir MODULE@VERSION: downloads the module (if needed) and prints its dir in the module cache.
moddir() {
  local json dir
  json=$(GOFLAGS= go mod download -json "$1") || { log "go mod download $1 failed"; return 1; }
  dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p' <<<"$json" | head -n1)
  [[ -n $dir && -d $dir ]] || { log "no Dir for $1 in: $json"; return 1; }
  echo "$dir"
}

# copysrc MODULE@VERSION NAME: a writable copy of the module's tree in $tmp/src/NAME.
copysrc() {
  local dir
  dir=$(moddir "$1")
  cp -R "$dir" "$tmp/src/$2"
  chmod -R u+w "$tmp/src/$2"
  echo "$tmp/src/$2"
}

# copycrds SRC_DIR NAME: every CustomResourceDefinition manifest of SRC_DIR into crds/NAME.
copycrds() {
  local f n=0
  mkdir -p "$tmp/crds/$2"
  for f in "$1"/*.yaml; do
    grep -q '^kind: CustomResourceDefinition' "$f" || continue
    cp "$f" "$tmp/crds/$2/"
    n=$((n + 1))
  done
  ((n > 0)) || { log "no CRD in $1"; return 1; }
}

for spec in "${operators[@]}"; do
  IFS='|' read -r name module version pkg crddir webhooks <<<"$spec"
  t0=$SECONDS
  log "$name: $module@$version"
  src=$(copysrc "$module@$version" "$name")
  copycrds "$src/$crddir" "$name"
  if [[ $webhooks != - ]]; then
    mkdir -p "$tmp/webhooks/$name"
    cp "$src/$webhooks" "$tmp/webhooks/$name/manifests.yaml"
  fi
  # -buildvcs=false: the copy is not a repository (and may sit inside this one).
  (
    cd "$src"
    GOWORK=off GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 \
      go build -trimpath -ldflags '-s -w' -o "$tmp/bin/$name" "$pkg"
  ) || { log "$name: build failed"; exit 1; }
  times+=("$name=$((SECONDS - t0))s")
  log "$name: built in $((SECONDS - t0))s"
done

# --- kube-controller-manager: k8s.io/kubernetes at the version hack/k8s-tools pins, in a module
# of its own that requires only k8s.io/kubernetes, with the replace lines of hack/k8s-tools/go.mod
# (the staging modules at v0.<minor>.<patch>). Not in hack/k8s-tools itself: its go.sum lacks
# kube-controller-manager's modules, and etcd's and kwok's requirements there make
# github.com/containerd/containerd/api ambiguous for cadvisor.
t0=$SECONDS
k8s_version=$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ { print $2; exit }' "$k8s_tools/go.mod")
if [[ ! "$k8s_version" =~ ^v([0-9]+)\.([0-9]+)\.[0-9]+ ]]; then
  log "cannot find the k8s.io/kubernetes version in $k8s_tools/go.mod"
  exit 1
fi
vpkg=k8s.io/component-base/version
ldflags="-s -w -X $vpkg.gitVersion=$k8s_version -X $vpkg.gitMajor=${BASH_REMATCH[1]} -X $vpkg.gitMinor=${BASH_REMATCH[2]}"
ldflags+=" -X $vpkg.gitTreeState=clean -X $vpkg.buildDate=1970-01-01T00:00:00Z"
log "kube-controller-manager: k8s.io/kubernetes@$k8s_version"
kcm=$tmp/src/kube-controller-manager
mkdir -p "$kcm"
{
  echo "module phalanx-e2e/kube-controller-manager"
  echo
  grep -E '^(go|godebug) ' "$k8s_tools/go.mod"
  echo
  echo "require k8s.io/kubernetes $k8s_version"
  echo
  sed -n '/^replace (/,/^)/p' "$k8s_tools/go.mod"
} >"$kcm/go.mod"
# Every module it shares with hack/k8s-tools is then pinned at the version selected there. Left to
# its own selection, this module picks older versions of some of them (golang.org/x/sys, grpc,
# protobuf, ...), and every package above those compiles again rather than coming from the GOCACHE
# that kube-apiserver's build filled. The staging modules (k8s.io/api, client-go, ...) are pinned
# too, though both modules replace them with the same version: the version required (v0.0.0 from
# k8s.io/kubernetes, the release in hack/k8s-tools) enters the cache keys of their compiled packages
# (checked with `go list -export`). The modules only kube-controller-manager uses keep theirs.
(
  cd "$kcm"
  GOWORK=off GOFLAGS="-mod=mod -buildvcs=false" go list -deps -f '{{with .Module}}{{.Path}}{{end}}' \
    k8s.io/kubernetes/cmd/kube-controller-manager | sort -u >used.txt
  pins=$(awk '
    FNR == NR { used[$1] = 1; next }
    /^(require|replace) \($/ { block = $1; next }
    block != "" && /^\)/ { block = ""; next }
    block == "require" && NF >= 2 { version[$1] = $2; next }
    $1 == "require" && NF >= 3 { version[$2] = $3 }
    END { for (m in version) if ((m in used) && m != "k8s.io/kubernetes") print "\t" m " " version[m] }
  ' used.txt "$k8s_tools/go.mod" | sort)
  [[ -n $pins ]] || { log "kube-controller-manager: no module shared with $k8s_tools/go.mod"; exit 1; }
  printf '\nrequire (\n%s\n)\n' "$pins" >>go.mod
  GOWORK=off GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" \
    -o "$tmp/bin/kube-controller-manager" k8s.io/kubernetes/cmd/kube-controller-manager
) || { log "kube-controller-manager: build failed"; exit 1; }
times+=("kube-controller-manager=$((SECONDS - t0))s")
log "kube-controller-manager: built in $((SECONDS - t0))s"

# --- scheduler-plugins: the coscheduling PodGroup CRD (scheduling.x-k8s.io/v1alpha1), as is.
dir=$(moddir "$scheduler_plugins")
mkdir -p "$tmp/crds/scheduler-plugins"
cp "$dir/manifests/coscheduling/crd.yaml" "$tmp/crds/scheduler-plugins/scheduling.x-k8s.io_podgroups.yaml"

# --- Volcano: volcano.sh/volcano (which ships the installer's CRD YAML) is not served by the
# module proxy; volcano.sh/apis is. Its PodGroup and Queue CRDs (scheduling.volcano.sh/v1beta1)
# are generated from its Go types with controller-gen, in a copy of the module (its own go.mod).
#
# What controller-gen v0.19.0 makes of those types, checked below: Queue has
# +kubebuilder:subresource:status, so its CRD has `subresources: {status: {}}`; PodGroup has no
# subresource marker, and its CRD has `subresources: {}`, the same as the real installer's: no
# status subresource, so a PodGroup's status is written with a plain update of the object. No
# edit is made. Both schemas are structural (no x-kubernetes-preserve-unknown-fields at the top:
# unknown fields are pruned), neither requires any field; PodGroup's spec.queue defaults to
# "default", spec.networkTopology.mode to "hard".
gen_volcano() {
  local src cg
  src=$(copysrc "$volcano_apis" volcano-apis)
  cg=$repo/bin/controller-gen-$controller_gen_version
  if [[ ! -x $cg ]]; then
    log "controller-gen $controller_gen_version: building (as the Makefile does) into $tmp/tools"
    GOFLAGS= GOBIN="$tmp/tools" go install "sigs.k8s.io/controller-tools/cmd/controller-gen@$controller_gen_version"
    cg=$tmp/tools/controller-gen
  fi
  mkdir -p "$tmp/crds/volcano"
  (
    cd "$src"
    GOWORK=off GOFLAGS="-mod=mod -buildvcs=false" "$cg" crd:crdVersions=v1 \
      paths=./pkg/apis/scheduling/v1beta1 output:crd:dir="$tmp/crds/volcano"
  )
  local pg=$tmp/crds/volcano/scheduling.volcano.sh_podgroups.yaml q=$tmp/crds/volcano/scheduling.volcano.sh_queues.yaml
  [[ -f $pg && -f $q ]] || { log "controller-gen made: $(ls "$tmp/crds/volcano")"; return 1; }
  # The real shape: PodGroup without a status subresource, Queue with one.
  grep -q '^    subresources: {}$' "$pg" ||
    { log "volcano: PodGroup CRD is not 'subresources: {}': $(grep -A2 'subresources' "$pg")"; return 1; }
  grep -A1 '^    subresources:$' "$q" | grep -q '^      status: {}$' ||
    { log "volcano: Queue CRD has no status subresource"; return 1; }
}
t0=$SECONDS
gen_volcano
times+=("volcano-crds=$((SECONDS - t0))s")

for b in "${bins[@]}"; do
  [[ -x "$tmp/bin/$b" ]] || { log "$b missing after build"; exit 1; }
done
rm -rf "$tmp/src" "$tmp/tools"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
{
  echo "key=$key"
  for spec in "${operators[@]}"; do
    IFS='|' read -r name module version _ _ _ <<<"$spec"
    echo "$name=$module@$version"
  done
  echo "kube-controller-manager=k8s.io/kubernetes@$k8s_version"
  echo "scheduler-plugins=$scheduler_plugins"
  echo "volcano=$volcano_apis (controller-gen $controller_gen_version)"
  echo "go=$(go env GOVERSION)"
  echo "times=${times[*]}"
  echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ) in $((SECONDS - start))s"
} >"$out/.complete"
log "done in $((SECONDS - start))s (${times[*]})"
for old in "$cache_root"/*/; do
  [[ -d $old && ${old%/} != "$out" ]] || continue
  log "note: stale build $(du -sh "$old" 2>/dev/null | cut -f1) in ${old%/} (delete it if unused)"
done
echo "$out"
