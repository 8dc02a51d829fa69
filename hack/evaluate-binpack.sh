#!/usr/bin/env bash
# Reproduces docs/evaluation.md, "Against a Volcano that packs": every trace
# of hack/evaluate.sh (Philly, the twenty, the validation set, sets 2 to 6
# and the small cluster), on the same cluster, under volcano-binpack (the
# volcano baseline with members packed, as Volcano's binpack plugin places
# them when it scores GPUs), then phalanx's defaults judged against it in
# volcano's place (hack/targets -volcano-from). Phalanx and fifo-gang are
# not run again: their runs are evaluate.sh's.
#
# Reports go to <out>/binpack/<name>.json, the verdicts to
# <out>/targets-binpack-<group>.txt for the groups twenty (with Philly),
# validation, sets (2 to 5), set6 and small; ratios averaged over Philly and
# the overloaded traces. hack/evaluate.sh must have run into the same
# directory.
#
#   hack/evaluate-binpack.sh [out-dir] [philly-trace]    default: eval-out
#
# A report already there is not made again, so a run that was cut off
# resumes where it stopped.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-eval-out}
trace=${2:-$repo/../shared/traces/philly_jobs.csv}
out=$(cd "$out" && pwd)
for f in philly.json set2 set6 small validation; do
  if [[ ! -e $out/$f ]]; then
    echo "evaluate-binpack: $out/$f is missing: run hack/evaluate.sh $out first" >&2
    exit 1
  fi
done
bin="$out/phalanx"
"${GO:-go}" -C "$repo" build -o "$bin" ./cmd/phalanx
"${GO:-go}" -C "$repo" build -o "$out/targets" ./hack/targets

# The JSON reports of evaluate.sh (the three policies' runs), by group.
declare -A groups
reportsIn() { (cd "$out" && ls $1 | sed 's/\.json$//' | tr '\n' ' '); }
groups[twenty]="philly $(reportsIn 'gen-*.json')"
groups[validation]=$(reportsIn 'validation/gen-*.json')
groups[sets]=$(reportsIn 'set[2345]/gen-*.json')
groups[set6]=$(reportsIn 'set6/gen-*.json')
groups[small]=$(reportsIn 'small/gen-*.json')

# simulate NAME TRACE CLUSTER... (run by xargs, two at a time): volcano-binpack
# on TRACE into binpack/NAME.json.
simulate='
  name=$1 trace=$2
  shift 2
  "$0" simulate "$@" --queue-weights gpu-hours --trace "$trace" --policy volcano-binpack --output json \
    >"$name.tmp" 2>/dev/null && mv "$name.tmp" "$name.json"'
for g in twenty validation sets set6 small; do
  for name in ${groups[$g]}; do
    mkdir -p "$out/binpack/$(dirname "$name")"
    [[ -s $out/binpack/$name.json ]] && continue
    input=$out/$name.csv
    [[ $name == philly ]] && input=$trace
    cluster="--nodes 64 --gpus-per-node 8 --nodes-per-rack 8"
    [[ $name == small/* ]] && cluster="--nodes 8 --gpus-per-node 8 --nodes-per-rack 8"
    printf '%s\0%s\0' "$out/binpack/$name" "$input"
    printf '%s\0' $cluster
  done
done | xargs -0 -r -n 8 -P 2 bash -c "$simulate" "$bin"

for g in twenty validation sets set6 small; do
  args=() reports=()
  for name in ${groups[$g]}; do
    args+=(-volcano-from "$out/binpack/$name.json")
    reports+=("$out/$name.json")
  done
  "$out/targets" -ratios 'philly|overloaded' "${args[@]}" "${reports[@]}" >"$out/targets-binpack-$g.txt"
  echo "== targets-binpack-$g"
  grep -E '^\| ' "$out/targets-binpack-$g.txt" | grep -v -e 'all met' -e '^| input' -e '^|---' || true
  tail -n 3 "$out/targets-binpack-$g.txt"
done
