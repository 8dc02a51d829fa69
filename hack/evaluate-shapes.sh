#!/usr/bin/env bash
# Reproduces docs/evaluation.md, "Other node shapes": the light and
# overloaded traces of sets 2 to 5 of hack/evaluate.sh (80 traces, 512 GPUs
# each) on the same 512 GPUs cut into other nodes, with the three policies
# and phalanx's defaults:
#
#   128 nodes x 4 GPUs in racks of 16, and 32 nodes x 16 GPUs in racks of 4
#   (64 GPUs a rack, as on 64 x 8 in racks of 8).
#
# No setting was chosen on these shapes. Reports go to
# <out>/shapes/<shape>/<set>/gen-*.json, the verdicts to
# <out>/targets-shapes-<shape>.txt (hack/targets, ratios averaged over the
# overloaded traces). hack/evaluate.sh must have run into the same directory
# (its traces are read).
#
#   hack/evaluate-shapes.sh [out-dir]     default: eval-out
#
# A report already there is not made again, so a run that was cut off
# resumes where it stopped (remove <out>/shapes to start afresh after
# changing phalanx).
#
# It took about 21 minutes on 2 cores (2026-11-30, beside
# hack/evaluate-estimates.sh).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-eval-out}
out=$(cd "$out" && pwd)
for d in set2 set3 set4 set5; do
  if [[ ! -d $out/$d ]]; then
    echo "evaluate-shapes: $out/$d is missing: run hack/evaluate.sh $out first" >&2
    exit 1
  fi
done
bin="$out/phalanx"
"${GO:-go}" -C "$repo" build -o "$bin" ./cmd/phalanx
"${GO:-go}" -C "$repo" build -o "$out/targets" ./hack/targets

declare -A shapes=(
  [128x4]="--nodes 128 --gpus-per-node 4 --nodes-per-rack 16"
  [32x16]="--nodes 32 --gpus-per-node 16 --nodes-per-rack 4"
)
# run SHAPE TRACE REPORT runs the three policies on TRACE into REPORT.
run() {
  local c=(${shapes[$1]} --queue-weights gpu-hours)
  [[ -s $3 ]] && return 0
  "$bin" simulate "${c[@]}" --trace "$2" --policy phalanx,fifo-gang,volcano --output json >"$3.tmp" 2>/dev/null
  mv "$3.tmp" "$3"
}
pids=()
start() {
  run "$@" &
  pids+=($!)
  if ((${#pids[@]} >= 2)); then
    wait "${pids[0]}"
    pids=("${pids[@]:1}")
  fi
}
for shape in 128x4 32x16; do
  reports=()
  for d in set2 set3 set4 set5; do
    mkdir -p "$out/shapes/$shape/$d"
    for f in "$out/$d"/gen-light-*.csv "$out/$d"/gen-overloaded-*.csv; do
      report="$out/shapes/$shape/$d/$(basename "$f" .csv).json"
      start "$shape" "$f" "$report"
      reports+=("$report")
    done
  done
  for pid in "${pids[@]}"; do
    wait "$pid"
  done
  pids=()
  args=()
  for f in "${reports[@]}"; do args+=(-phalanx-from "$f"); done
  "$out/targets" -ratios overloaded "${args[@]}" "${reports[@]}" >"$out/targets-shapes-$shape.txt"
  echo "== targets-shapes-$shape"
  grep -E '^\| gen' "$out/targets-shapes-$shape.txt" | grep -v 'all met' || true
  tail -n 3 "$out/targets-shapes-$shape.txt"
done
