#!/usr/bin/env bash
# Reproduces docs/evaluation.md: the Philly trace on 64 nodes x 8 GPUs in
# racks of 8, one queue per vc weighted by its GPU-hours, under phalanx,
# fifo-gang and volcano, then phalanx reclaiming only from younger gangs,
# without preemption, and without preemption or reservation. Tables go to
# <out>/*.txt, the plot to <out>/philly.svg.
#
#   hack/evaluate.sh [out-dir] [trace.csv]     defaults: eval-out, ../shared/traces/philly_jobs.csv
#
# It takes about 20 minutes on 2 cores.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-eval-out}
trace=${2:-$repo/../shared/traces/philly_jobs.csv}
mkdir -p "$out"
out=$(cd "$out" && pwd)
bin="$out/phalanx"
"${GO:-go}" -C "$repo" build -o "$bin" ./cmd/phalanx

common=(--trace "$trace" --nodes 64 --gpus-per-node 8 --nodes-per-rack 8 --queue-weights gpu-hours)
run() {
  local name=$1
  shift
  echo "evaluate: $name" >&2
  local start=$SECONDS
  "$bin" simulate "${common[@]}" "$@" >"$out/$name.txt"
  echo "evaluate: $name took $((SECONDS - start)) s" >&2
}
run policies --policy phalanx,fifo-gang,volcano --plot "$out/philly.svg"
run phalanx-reclaim-younger --policy phalanx --reclaim-younger-only
run phalanx-no-preemption --policy phalanx --preemption=false
run phalanx-no-preemption-no-reservation --policy phalanx --preemption=false --reserve-after 0
cat "$out"/policies.txt "$out"/phalanx-reclaim-younger.txt "$out"/phalanx-no-preemption.txt "$out"/phalanx-no-preemption-no-reservation.txt
