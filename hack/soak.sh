#!/usr/bin/env bash
# Soak benchmark: the scheduler under a steady churn of gangs for SOAK_MINUTES.
# Prints, once a minute, the scheduler's goroutines and resident memory, its
# status writes (ok, conflicts, other results) and status backlog, and the
# gangs created, finished and waiting; then the whole table. It asserts
# nothing: the figures are for a reader to judge (is anything growing after
# the warm-up?).
#
#   hack/soak.sh                      # 10 minutes
#   SOAK_MINUTES=2 hack/soak.sh       # a quick look
#
# It starts a cluster of its own (work dir .cache/soak-cluster, ports apart
# from the other scripts' clusters) and stops it on exit, with the scheduler.
# It creates SOAK_NODES (200) KWOK nodes x 8 GPUs, builds the phalanx binary
# into the cluster's work dir, runs `phalanx scheduler --leader-elect=false
# --address 127.0.0.1:SOAK_METRICS_PORT` (10291) and hack/soak/ against it
# with SOAK_GANGS (100) gangs alive (see hack/soak/main.go for their shapes).
# The scheduler's log is <work dir>/logs/phalanx.log. Needs kubectl and curl.
set -euo pipefail
cd "$(dirname "$0")/.."
export PHALANX_CLUSTER_DIR=${PHALANX_CLUSTER_DIR:-$PWD/.cache/soak-cluster}
export PHALANX_APISERVER_PORT=${PHALANX_APISERVER_PORT:-16743}
export PHALANX_ETCD_PORT=${PHALANX_ETCD_PORT:-24090}
export PHALANX_ETCD_PEER_PORT=${PHALANX_ETCD_PEER_PORT:-24100}
export PHALANX_KUBE_SCHEDULER=0 PHALANX_KWOK_SERVER=
minutes=${SOAK_MINUTES:-10}
nodes=${SOAK_NODES:-200}
gangs=${SOAK_GANGS:-100}
port=${SOAK_METRICS_PORT:-10291}
kubectl=${KUBECTL:-kubectl}

log() { echo "soak: $*" >&2; }
for c in curl "$kubectl"; do command -v "$c" >/dev/null || { log "$c is required"; exit 1; }; done

sched_pid=
stop() {
  if [[ -n $sched_pid ]] && kill -0 "$sched_pid" 2>/dev/null; then
    kill -TERM "$sched_pid" 2>/dev/null || true
    wait "$sched_pid" 2>/dev/null || true
  fi
  hack/local-cluster.sh down >/dev/null 2>&1 || true
}
trap stop EXIT

hack/local-cluster.sh down >/dev/null 2>&1 || true # a leftover cluster would carry its pods over
KUBECONFIG=$(hack/local-cluster.sh up | tail -n1)
export KUBECONFIG

"$kubectl" apply -f deploy/crds >/dev/null
"$kubectl" wait --for condition=established --timeout=60s -f deploy/crds >/dev/null
hack/kwok-nodes.sh "$nodes" --gpus 8 | "$kubectl" apply -f - >/dev/null
"$kubectl" wait --for condition=Ready --timeout=180s node --all >/dev/null
log "$nodes nodes x 8 GPUs Ready"

bin=$PHALANX_CLUSTER_DIR/bin/phalanx
go build -o "$bin" ./cmd/phalanx
"$bin" scheduler --kubeconfig "$KUBECONFIG" --leader-elect=false --address "127.0.0.1:$port" \
  2>"$PHALANX_CLUSTER_DIR/logs/phalanx.log" &
sched_pid=$!
for ((i = 0; i < 300; i++)); do
  curl -fsS --max-time 1 "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
  kill -0 "$sched_pid" 2>/dev/null || { log "the scheduler exited; see $PHALANX_CLUSTER_DIR/logs/phalanx.log"; exit 1; }
  sleep 0.2
done
log "scheduler ready (pid $sched_pid, log $PHALANX_CLUSTER_DIR/logs/phalanx.log)"

go run ./hack/soak --kubeconfig "$KUBECONFIG" --metrics "http://127.0.0.1:$port/metrics" \
  --minutes "$minutes" --gangs "$gangs"
kill -0 "$sched_pid" 2>/dev/null || { log "the scheduler exited during the soak"; exit 1; }
