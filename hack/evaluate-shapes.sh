#!/usr/bin/env bash
# Reproduces docs/evaluation.md, "Other node shapes": the traces of sets 2
# to 5 of hack/evaluate.sh (120 traces, 512 GPUs each: light, load 1.0,
# overloaded and load 1.6) on the same 512 GPUs cut into other nodes, with
# the three policies and phalanx's defaults:
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
# It took about 35 minutes on 2 cores (2026-11-30: 21 for the light and
# overloaded traces beside hack/evaluate-estimates.sh, 13 for loads 1.0
# and 1.6).
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

# simulate SHAPE TRACE REPORT (run by xargs, two at a time): the three
# policies on TRACE, on the nodes of SHAPE (NODESxGPUS, in racks of 64 GPUs),
# into REPORT.
simulate='
  gpus=${1#*x}
  "$0" simulate --nodes "${1%x*}" --gpus-per-node "$gpus" --nodes-per-rack $((64 / gpus)) \
    --queue-weights gpu-hours --trace "$2" --policy phalanx,fifo-gang,volcano --output json \
    >"$3.tmp" 2>/dev/null && mv "$3.tmp" "$3"'
for shape in 128x4 32x16; do
  traces=()
  reports=()
  for d in set2 set3 set4 set5; do
    mkdir -p "$out/shapes/$shape/$d"
    for f in "$out/$d"/gen-light-*.csv "$out/$d"/gen-1.0-*.csv "$out/$d"/gen-overloaded-*.csv "$out/$d"/gen-1.6-*.csv; do
      traces+=("$f")
      reports+=("$out/shapes/$shape/$d/$(basename "$f" .csv).json")
    done
  done
  for i in "${!reports[@]}"; do
    [[ -s ${reports[i]} ]] || printf '%s\0%s\0%s\0' "$shape" "${traces[i]}" "${reports[i]}"
  done | xargs -0 -r -n 3 -P 2 bash -c "$simulate" "$bin"
  args=()
  for f in "${reports[@]}"; do args+=(-phalanx-from "$f"); done
  "$out/targets" -ratios overloaded "${args[@]}" "${reports[@]}" >"$out/targets-shapes-$shape.txt"
  echo "== targets-shapes-$shape"
  grep -E '^\| gen' "$out/targets-shapes-$shape.txt" | grep -v 'all met' || true
  tail -n 3 "$out/targets-shapes-$shape.txt"
done
