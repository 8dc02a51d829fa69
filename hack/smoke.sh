#!/usr/bin/env bash
# End-to-end smoke test of the local control plane (hack/local-cluster.sh):
#   up (or reuse a running cluster) -> 4 fake KWOK nodes with 1 GPU each -> a bare pod with
#   schedulerName phalanx-test and phalanx.dev/run-for: 3s -> bind it through pods/binding
#   (as a scheduler does) -> expect Running, then Succeeded ~3s later -> down.
# A cluster that was already running is reused and left running (only the test objects are
# deleted); one started here is stopped at the end (PHALANX_SMOKE_KEEP=1 keeps it).
# Needs curl and kubectl (KUBECTL=/path/to/kubectl to override). Honours PHALANX_CLUSTER_DIR
# and the port variables of local-cluster.sh. Timings go to stdout.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cluster=$repo/hack/local-cluster.sh
kubectl=${KUBECTL:-kubectl}
run_for=3s
ns=default
node_prefix=smoke-node-

now_ms() { local t; t=$(date +%s%N); echo $((t / 1000000)); }
t0=$(now_ms)
mark() { local d; d=$(($(now_ms) - t0)); printf '%4d.%02ds  %s\n' $((d / 1000)) $((d % 1000 / 10)) "$*"; }
die() { echo "smoke: FAIL: $*" >&2; exit 1; }

command -v curl >/dev/null || die "curl is required"
command -v "$kubectl" >/dev/null || die "kubectl not found (set KUBECTL)"

started_here=0
if "$cluster" status >/dev/null 2>&1; then
  mark "reusing running cluster"
else
  "$cluster" up >/dev/null
  started_here=1
  mark "cluster up (etcd + kube-apiserver + kwok)"
fi
eval "$("$cluster" env)"
export KUBECONFIG
token=$(<"$PHALANX_TOKEN_FILE")
tls=(-k)
[[ -n ${PHALANX_CA_FILE:-} ]] && tls=(--cacert "$PHALANX_CA_FILE")

pod=smoke-$(date +%s)-$$
cleanup() {
  local rc=$?
  if [[ $started_here == 1 && ${PHALANX_SMOKE_KEEP:-0} != 1 ]]; then
    "$cluster" down >/dev/null 2>&1 || true
  else
    "$kubectl" delete pod "$pod" -n "$ns" --ignore-not-found --wait=false >/dev/null 2>&1 || true
    "$kubectl" delete node -l phalanx.dev/smoke=true --ignore-not-found >/dev/null 2>&1 || true
  fi
  if [[ -n ${watch_pid:-} ]]; then kill "$watch_pid" 2>/dev/null || true; fi
  if [[ -n ${workdir:-} ]]; then rm -rf "$workdir"; fi
  if ((rc == 0)); then echo "smoke: PASS"; else echo "smoke: FAIL (rc=$rc)" >&2; fi
}
trap cleanup EXIT

api() { # api METHOD PATH [BODY]
  local args=(-fsS --max-time 10 "${tls[@]}" -H "Authorization: Bearer $token" -X "$1")
  [[ $# -ge 3 ]] && args+=(-H 'Content-Type: application/json' --data-binary "$3")
  curl "${args[@]}" "$PHALANX_APISERVER_URL$2"
}
phase() { api GET "/api/v1/namespaces/$ns/pods/$pod" | grep -o '"phase": *"[A-Za-z]*"' | grep -o '[A-Za-z]*"$' | tr -d '"' | head -n1; }

# kubectl itself (the gcloud dispatcher on some machines picks a client matching the server)
"$kubectl" version -o yaml 2>/dev/null | grep -E '^\s+gitVersion' | sed 's/^ */  kubectl version: /' || true

"$repo/hack/kwok-nodes.sh" 4 --gpus 1 --prefix "$node_prefix" --labels phalanx.dev/smoke=true \
  | "$kubectl" apply -f - >/dev/null
mark "4 fake nodes created"
"$kubectl" wait --for=condition=Ready node -l phalanx.dev/smoke=true --timeout=60s >/dev/null \
  || die "nodes not Ready"
mark "4 nodes Ready (kwok)"
gpu=$("$kubectl" get node "${node_prefix}0" -o jsonpath='{.status.allocatable.nvidia\.com/gpu}')
[[ $gpu == 1 ]] || die "node allocatable nvidia.com/gpu is '$gpu', want 1"
taints=$("$kubectl" get node "${node_prefix}0" -o jsonpath='{.spec.taints}')
[[ -z $taints ]] || die "node has taints $taints, want none"

api POST "/api/v1/namespaces/$ns/pods" "$(
  cat <<EOF
{"apiVersion":"v1","kind":"Pod",
 "metadata":{"name":"$pod","labels":{"phalanx.dev/smoke":"true"},
             "annotations":{"phalanx.dev/run-for":"$run_for"}},
 "spec":{"schedulerName":"phalanx-test","restartPolicy":"Never",
         "containers":[{"name":"main","image":"registry.invalid/none:latest",
                        "resources":{"limits":{"cpu":"1","memory":"1Gi","nvidia.com/gpu":"1"}}}]}}
EOF
)" >/dev/null
mark "pod $pod created (schedulerName phalanx-test, run-for $run_for)"
sleep 0.5
p=$(phase)
[[ $p == Pending ]] || die "unbound pod phase is '$p', want Pending"

# Watch the pod from before the bind: events are time-stamped as they arrive (more precise
# than polling on a busy machine).
workdir=$(mktemp -d)
mkfifo "$workdir/watch"
curl -sS -N --max-time 60 "${tls[@]}" -H "Authorization: Bearer $token" \
  "$PHALANX_APISERVER_URL/api/v1/namespaces/$ns/pods?watch=1&fieldSelector=metadata.name%3D$pod" \
  >"$workdir/watch" 2>/dev/null &
watch_pid=$!
while IFS= read -r line; do
  [[ $line =~ \"phase\":\"([A-Za-z]+)\" ]] && echo "$(now_ms) ${BASH_REMATCH[1]}"
done <"$workdir/watch" >"$workdir/phases" &
sleep 0.3

t_bind=$(now_ms)
api POST "/api/v1/namespaces/$ns/pods/$pod/binding" \
  "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":\"$pod\"},\"target\":{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"${node_prefix}0\"}}" \
  >/dev/null
mark "bound to ${node_prefix}0 via pods/binding"

first() { awk -v p="$1" '$2 == p { print $1; exit }' "$workdir/phases"; }
t_running="" t_done=""
deadline=$(($(now_ms) + 30000))
while (($(now_ms) < deadline)); do
  if [[ -z $t_running ]]; then
    t_running=$(first Running)
    if [[ -n $t_running ]]; then mark "pod Running ($((t_running - t_bind)) ms after bind)"; fi
  fi
  t_done=$(first Succeeded)
  if [[ -n $t_done ]]; then break; fi
  if [[ -n $(first Failed) ]]; then die "pod Failed"; fi
  sleep 0.05
done
kill "$watch_pid" 2>/dev/null || true
[[ -n $t_done ]] || die "pod did not reach Succeeded within 30s (phase $(phase))"
[[ -n $t_running ]] || die "pod went to Succeeded without being seen Running"
ran=$((t_done - t_running))
mark "pod Succeeded ($ran ms after Running, $((t_done - t_bind)) ms after bind; run-for $run_for)"
# Watch delivery jitters on a loaded machine, hence the loose bounds; the bind->Succeeded
# lower bound is strict (the pod must not finish before run-for has elapsed).
((t_done - t_bind >= 3000)) || die "Succeeded only $((t_done - t_bind)) ms after bind, want >= 3000"
((ran >= 2500 && ran <= 4500)) || die "Running->Succeeded took ${ran} ms, want ~3000"
mark "total"
