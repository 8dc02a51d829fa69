#!/usr/bin/env bash
# The scale benchmark of issue 12 on the local control plane: 5,000 nodes x 8
# GPUs and 150,000 pods (half running, half pending, in gangs of 1, 8 and
# 64). For each client QPS it measures a raw binder (the API server's limit),
# bare informers on pods and nodes (the floor of a restart), Phalanx and
# kube-scheduler (the same pods without gangs): time from process start to
# informers synced, to the first bind and to the last, pods/s, peak RSS, and
# Phalanx's cycle time percentiles. Prints figures; asserts nothing.
#
#   hack/bench-scale.sh [--nodes 5000] [--pods 150000] [--qps 1000,5000]
#                       [--schedulers raw,informers,phalanx,kube-scheduler] [--gangs 1,8,64]
#   hack/bench-scale.sh --nodes 200 --pods 6000      # a quick run, about 3 min
#
# The full default takes about an hour on 2 cores. It starts its own cluster
# (work dir .cache/scale-cluster, ports apart from the others), stops KWOK at
# once (nodes are plain Node objects and nothing must run), and stops the
# cluster at the end. Phalanx is built from the working tree into
# bin/phalanx-scale; the commit is printed, with "+uncommitted" if the tree
# differs from it. Schedulers' logs: .cache/scale-cluster/logs/scale-*.log.
set -euo pipefail
cd "$(dirname "$0")/.."
export PHALANX_CLUSTER_DIR=${PHALANX_CLUSTER_DIR:-$PWD/.cache/scale-cluster}
export PHALANX_APISERVER_PORT=${PHALANX_APISERVER_PORT:-16743}
export PHALANX_ETCD_PORT=${PHALANX_ETCD_PORT:-24190}
export PHALANX_ETCD_PEER_PORT=${PHALANX_ETCD_PEER_PORT:-24200}
# etcd reads ETCD_<FLAG> from its environment: a backend quota of 8 GiB
# instead of 2 for 150,000 pods recreated several times (the API server
# compacts every 5 minutes, but etcd's file does not shrink).
export ETCD_QUOTA_BACKEND_BYTES=${ETCD_QUOTA_BACKEND_BYTES:-8589934592}

commit=$(git rev-parse --short HEAD)
if [[ -n $(git status --porcelain -- cmd core scheduler apis client workload go.mod go.sum) ]]; then
  commit="$commit+uncommitted"
fi
mkdir -p "$PHALANX_CLUSTER_DIR/logs"
go build -o bin/phalanx-scale ./cmd/phalanx
go build -o "$PHALANX_CLUSTER_DIR/scale" ./hack/scale

kubeconfig=$(hack/local-cluster.sh up | tail -n1)
trap 'hack/local-cluster.sh down >/dev/null 2>&1 || true' EXIT
eval "$(hack/local-cluster.sh env)"
pids=$PHALANX_CLUSTER_DIR/pids
kwok=$(<"$pids/kwok.pid")
kill "$kwok" 2>/dev/null || true
for _ in $(seq 50); do kill -0 "$kwok" 2>/dev/null || break; sleep 0.1; done
echo "machine: $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2 " GiB, " $7 " GiB available"}')"
"$PHALANX_CLUSTER_DIR/scale" --kubeconfig "$kubeconfig" --phalanx bin/phalanx-scale \
  --kube-scheduler "$PHALANX_K8S_BIN/kube-scheduler" --log-dir "$PHALANX_CLUSTER_DIR/logs" --commit "$commit" \
  --apiserver-pid "$(<"$pids/kube-apiserver.pid")" --etcd-pid "$(<"$pids/etcd.pid")" "$@"
