#!/usr/bin/env bash
# Prints N fake KWOK Node manifests (YAML stream) for `kubectl apply -f -`.
#
#   hack/kwok-nodes.sh N [--gpus K] [--cpu C] [--memory M] [--pods P] [--prefix P] [--start I]
#                        [--labels k=v,...]
#
# Defaults: --gpus 0 --cpu 32 --memory 256Gi --pods 110 --prefix kwok-node- --start 0.
# Nodes are named <prefix><i> for i in [start, start+N). They carry the annotation
# kwok.x-k8s.io/node: fake (kwok --manage-all-nodes manages them either way) and NO taint, so
# ordinary pods can land on them without tolerations. nvidia.com/gpu is set in capacity and
# allocatable when --gpus > 0. Status is only a seed: kwok sets conditions/addresses itself.
set -euo pipefail

usage() {
  sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

[[ $# -ge 1 ]] || usage
count=$1
shift
[[ $count =~ ^[0-9]+$ ]] || usage
gpus=0 cpu=32 memory=256Gi pods=110 prefix=kwok-node- start=0 labels=""
while [[ $# -gt 0 ]]; do
  [[ $# -ge 2 ]] || usage
  case $1 in
    --gpus) gpus=$2 ;;
    --cpu) cpu=$2 ;;
    --memory) memory=$2 ;;
    --pods) pods=$2 ;;
    --prefix) prefix=$2 ;;
    --start) start=$2 ;;
    --labels) labels=$2 ;;
    *) usage ;;
  esac
  shift 2
done
[[ $gpus =~ ^[0-9]+$ && $start =~ ^[0-9]+$ && $pods =~ ^[0-9]+$ ]] || usage

# Extra labels as YAML lines (values quoted so "true"/"1" stay strings).
extra_labels=""
if [[ -n $labels ]]; then
  IFS=',' read -r -a pairs <<<"$labels"
  for kv in "${pairs[@]}"; do
    [[ $kv == *=* ]] || { echo "bad label '$kv' (want k=v)" >&2; exit 2; }
    extra_labels+="    ${kv%%=*}: \"${kv#*=}\""$'\n'
  done
fi

gpu_line=""
((gpus > 0)) && gpu_line="      nvidia.com/gpu: \"$gpus\""$'\n'

for ((i = start; i < start + count; i++)); do
  name=$prefix$i
  resources="      cpu: \"$cpu\""$'\n'"      memory: \"$memory\""$'\n'"      pods: \"$pods\""$'\n'"      ephemeral-storage: \"1Ti\""$'\n'"$gpu_line"
  printf -- '---\n'
  printf 'apiVersion: v1\nkind: Node\nmetadata:\n'
  printf '  name: %s\n' "$name"
  printf '  annotations:\n    kwok.x-k8s.io/node: fake\n    node.alpha.kubernetes.io/ttl: "0"\n'
  printf '  labels:\n'
  printf '    type: kwok\n'
  printf '    kubernetes.io/arch: amd64\n    kubernetes.io/os: linux\n'
  printf '    kubernetes.io/hostname: %s\n' "$name"
  printf '%s' "$extra_labels"
  printf 'spec: {}\n'
  printf 'status:\n'
  printf '  allocatable:\n%s' "$resources"
  printf '  capacity:\n%s' "$resources"
  printf '  nodeInfo:\n    architecture: amd64\n    operatingSystem: linux\n    kubeletVersion: fake\n    kubeProxyVersion: fake\n'
done
