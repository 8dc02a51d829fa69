#!/usr/bin/env bash
# Measures pods bound per second on the local control plane: Phalanx (gangs
# of 8) against the upstream kube-scheduler built from the same Kubernetes
# version (the same pods, no gangs), at the same client QPS. Prints a table.
#
#   hack/bench-throughput.sh [--nodes 1000] [--pods 10000] [--gang 8] [--qps 100]
#
# It starts its own cluster (work dir .cache/bench-cluster, ports apart from
# the default cluster's) and stops it at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
export PHALANX_CLUSTER_DIR=${PHALANX_CLUSTER_DIR:-$PWD/.cache/bench-cluster}
export PHALANX_APISERVER_PORT=${PHALANX_APISERVER_PORT:-16643}
export PHALANX_ETCD_PORT=${PHALANX_ETCD_PORT:-23990}
export PHALANX_ETCD_PEER_PORT=${PHALANX_ETCD_PEER_PORT:-24000}
kubeconfig=$(hack/local-cluster.sh up | tail -n1)
trap 'hack/local-cluster.sh down >/dev/null 2>&1 || true' EXIT
eval "$(hack/local-cluster.sh env)"
go build -o bin/phalanx ./cmd/phalanx
go run ./hack/throughput --kubeconfig "$kubeconfig" --phalanx bin/phalanx \
  --kube-scheduler "$PHALANX_K8S_BIN/kube-scheduler" "$@"
