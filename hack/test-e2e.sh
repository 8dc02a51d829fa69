#!/usr/bin/env bash
# Runs the e2e suite (test/e2e) against a dedicated local control plane: etcd + kube-apiserver +
# KWOK from hack/local-cluster.sh, in its own work dir and on its own ports, so that a developer's
# cluster (the defaults of local-cluster.sh) is not disturbed. The cluster is always stopped
# afterwards; the exit status is the test's.
#
#   hack/test-e2e.sh [go test flags...]     e.g. hack/test-e2e.sh -run TestSeed
#
# Environment (defaults in brackets):
#   PHALANX_E2E_CLUSTER_DIR   cluster work dir [<repo>/.cache/e2e-cluster]; logs stay in <dir>/logs
#   PHALANX_E2E_APISERVER_PORT, PHALANX_E2E_ETCD_PORT, PHALANX_E2E_ETCD_PEER_PORT [16543, 23890, 23900]
#   GO                        the go command [go]
#   PHALANX_OPERATORS_DIR     the real job operators and their CRDs for test/e2e/operators_test.go
#                             [built by hack/operators/build.sh, cached in .cache/operators]
#   PHALANX_HELM              the helm binary for test/e2e/helm_test.go [built by hack/helm.sh,
#                             cached in .cache/helm]
# It exports PHALANX_KUBECTL, the kubectl built with the cluster's binaries
# (hack/k8s-tools/build.sh), for test/e2e/status_test.go's `kubectl phalanx`.
# On a fresh machine the first run builds the Kubernetes binaries (~10-20 min on 2 cores) and
# the job operators (hack/operators/build.sh, see its header for the time).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

export PHALANX_CLUSTER_DIR=${PHALANX_E2E_CLUSTER_DIR:-$repo/.cache/e2e-cluster}
export PHALANX_APISERVER_PORT=${PHALANX_E2E_APISERVER_PORT:-16543}
export PHALANX_ETCD_PORT=${PHALANX_E2E_ETCD_PORT:-23890}
export PHALANX_ETCD_PEER_PORT=${PHALANX_E2E_ETCD_PEER_PORT:-23900}
export PHALANX_KUBE_SCHEDULER=0
export PHALANX_KWOK_SERVER=
GO=${GO:-go}

# Before the cluster starts: a cold build takes long, and a failed one needs no cluster.
if [[ -z ${PHALANX_OPERATORS_DIR:-} ]]; then
  PHALANX_OPERATORS_DIR=$(hack/operators/build.sh | tail -n1)
fi
export PHALANX_OPERATORS_DIR
echo "test-e2e: operators in $PHALANX_OPERATORS_DIR" >&2
if [[ -z ${PHALANX_HELM:-} ]]; then
  PHALANX_HELM=$(hack/helm.sh)
fi
export PHALANX_HELM

down() { hack/local-cluster.sh down || true; }
trap down EXIT

# A cluster left over in this dir by an interrupted run would carry its
# nodes and pods into this one: start from a clean slate.
hack/local-cluster.sh down >/dev/null 2>&1 || true
KUBECONFIG=$(hack/local-cluster.sh up | tail -n1)
export KUBECONFIG
echo "test-e2e: cluster up, KUBECONFIG=$KUBECONFIG" >&2
PHALANX_KUBECTL=$(sed -n 's/^PHALANX_K8S_BIN=//p' "$PHALANX_CLUSTER_DIR/env")/kubectl
export PHALANX_KUBECTL

status=0
# The whole suite took 1,103 s under -race on 2 cores with three of the mpi-operator tests, and
# 1,238 s with all five and kube-batch 0.5's (a cold CI run, 2026-12-01): past the 20 minutes it
# had; 45 leave room for a slower machine, well within CI's 90.
"$GO" test -race -tags e2e -count=1 -v -timeout 45m ./test/e2e "$@" || status=$?
if ((status != 0)); then
  echo "test-e2e: FAILED (exit $status); control-plane logs in $PHALANX_CLUSTER_DIR/logs" >&2
fi
exit "$status"
