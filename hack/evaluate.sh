#!/usr/bin/env bash
# Reproduces docs/evaluation.md: the Philly trace on 64 nodes x 8 GPUs in
# racks of 8, one queue per vc weighted by its GPU-hours. First phalanx as
# evaluated (no preemption, reservations after 3 days), fifo-gang and
# volcano, with the plot; then phalanx with its defaults, with other
# reservation thresholds, without each of its ordering and reservation
# mechanisms, reclaiming only from younger gangs, and with noisy run-time
# estimates. Tables go to <out>/*.txt, the plot to <out>/philly.svg. Two
# runs go at once.
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
evaluated=(--preemption=false --reserve-after 72h)
run() {
  local name=$1
  shift
  local start=$SECONDS
  "$bin" simulate "${common[@]}" "$@" >"$out/$name.txt" 2>"$out/$name.log"
  echo "evaluate: $name took $((SECONDS - start)) s" >&2
}
# start runs in the background, two at a time, oldest awaited first.
pids=()
start() {
  run "$@" &
  pids+=($!)
  if ((${#pids[@]} >= 2)); then
    wait "${pids[0]}"
    pids=("${pids[@]:1}")
  fi
}
start policies --policy phalanx,fifo-gang,volcano "${evaluated[@]}" --plot "$out/philly.svg"
start phalanx-defaults --policy phalanx
for after in 1h 24h 48h 96h; do
  start "phalanx-reserve-after-$after" --policy phalanx --preemption=false --reserve-after "$after"
done
start phalanx-arrival-order --policy phalanx "${evaluated[@]}" --shortest-first=false
start phalanx-one-reservation --policy phalanx "${evaluated[@]}" --reservations 1
start phalanx-no-reservation --policy phalanx --preemption=false --reserve-after 0
start phalanx-reclaim-younger --policy phalanx --reserve-after 72h --reclaim-younger-only
start phalanx-estimate-noise --policy phalanx "${evaluated[@]}" --estimate-error noise=0.5
for pid in "${pids[@]}"; do
  wait "$pid"
done
for f in policies phalanx-defaults phalanx-reserve-after-{1h,24h,48h,96h} phalanx-arrival-order \
  phalanx-one-reservation phalanx-no-reservation phalanx-reclaim-younger phalanx-estimate-noise; do
  echo "== $f"
  cat "$out/$f.txt"
done
