#!/usr/bin/env bash
# Reproduces the tables of docs/evaluation.md, "Wrong estimates": phalanx
# with its defaults on the traces of hack/evaluate.sh (Philly and the 19
# synthetic ones), with run-time estimates made wrong in each way below,
# first taken as declared (--correct-estimates=false), then with the
# defaults (corrected by each queue's record, summed with its work factor):
#
#   exact, x2, x0.5, x0.1, noise=0.5, noise=1; teams: the trace's largest
#   queue pads its estimates twice over, the second halves them, the third
#   gives a tenth of the run time, the others are exact; and two habits
#   that change halfway through the trace's submissions (whole days), in
#   every queue: habits-x2-x0.5 pads estimates twice over, then halves
#   them; habits-x0.5-x2 the other way round.
#
# Each setting is judged against the baselines of hack/evaluate.sh, which
# must have run into the same directory (its traces and JSON reports are
# read): hack/targets -phalanx-from writes <out>/estimates/<E>-<mode>.txt,
# ending with the verdicts, the mean JCT over the better baseline's and the
# big jobs' p99 wait over fifo-gang's averaged over Philly and the
# overloaded seeds, and the gangs preempted. This script prints those last
# lines of each.
#
#   hack/evaluate-estimates.sh [out-dir] [trace.csv]   defaults: eval-out, ../shared/traces/philly_jobs.csv
#
# A report is written whole or not at all, and a report already there is not
# made again, so a run that was cut off resumes where it stopped (remove
# <out>/estimates to start afresh after changing phalanx).
#
# It took 28 minutes on 2 cores (1,669 s), after hack/evaluate.sh's 622 s, before the
# two habits rows, which took about 11 minutes more (run on their own, beside
# other runs); about 95 minutes whole on 2026-11-30, beside
# hack/evaluate-shapes.sh and the test suite; later that day 31 minutes,
# alone, for all but its 40 x2 reports.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-eval-out}
trace=${2:-$repo/../shared/traces/philly_jobs.csv}
out=$(cd "$out" && pwd)
bin="$out/phalanx"
for f in "$bin" "$out/philly.json"; do
  if [[ ! -e $f ]]; then
    echo "evaluate-estimates: $f is missing: run hack/evaluate.sh $out first" >&2
    exit 1
  fi
done
"${GO:-go}" -C "$repo" build -o "$bin" ./cmd/phalanx
mkdir -p "$out/estimates"

inputs=("$trace")
reports=("$out/philly.json")
for f in "$out"/gen-*.json; do
  case $f in *-fixed-24h.json) continue ;; esac
  inputs+=("${f%.json}.csv")
  reports+=("$f")
done

# teams prints the per-queue error of the teams setting for a trace: its
# three largest queues (by jobs; the vc column) x2, x0.5 and x0.1.
teams() {
  tail -n +2 "$1" | cut -d, -f5 | sort | uniq -c | sort -k1,1nr -k2 | head -3 |
    awk '{printf "%s%s:%s", (NR > 1 ? "," : ""), $2, (NR == 1 ? "x2" : NR == 2 ? "x0.5" : "x0.1")}'
}

# halfway through the submissions of trace $1, in whole days
halfway() {
  tail -n +2 "$1" | cut -d, -f2 | sort -n | sed -n '1p;$p' | paste -sd' ' - |
    awk '{printf "%dd", int(($2 - $1) / 2 / 86400)}'
}

cluster=(--nodes 64 --gpus-per-node 8 --nodes-per-rack 8 --queue-weights gpu-hours)
pids=()
start() {
  "$@" &
  pids+=($!)
  if ((${#pids[@]} >= 2)); then
    wait "${pids[0]}"
    pids=("${pids[@]:1}")
  fi
}
for estimates in exact x2 x0.5 x0.1 noise=0.5 noise=1 teams habits-x2-x0.5 habits-x0.5-x2; do
  for mode in declared corrected; do
    flags=()
    [[ $mode == declared ]] && flags=(--correct-estimates=false)
    for input in "${inputs[@]}"; do
      e=$estimates
      [[ $e == teams ]] && e=$(teams "$input")
      [[ $e == habits-x2-x0.5 ]] && e="x2,x0.5@$(halfway "$input")"
      [[ $e == habits-x0.5-x2 ]] && e="x0.5,x2@$(halfway "$input")"
      name=$(basename "$input" .csv)
      report="$out/estimates/$estimates-$mode-$name.json"
      [[ -s $report ]] && continue # done by an earlier run that was cut off
      start sh -c '"$@" > "$0.tmp" && mv "$0.tmp" "$0"' "$report" \
        "$bin" simulate --trace "$input" "${cluster[@]}" --policy phalanx --estimate-error "$e" "${flags[@]}" --output json
    done
  done
done
for pid in "${pids[@]}"; do
  wait "$pid"
done
for estimates in exact x2 x0.5 x0.1 noise=0.5 noise=1 teams habits-x2-x0.5 habits-x0.5-x2; do
  for mode in declared corrected; do
    args=()
    for input in "${inputs[@]}"; do
      args+=(-phalanx-from "$out/estimates/$estimates-$mode-$(basename "$input" .csv).json")
    done
    "${GO:-go}" -C "$repo" run ./hack/targets "${args[@]}" "${reports[@]}" >"$out/estimates/$estimates-$mode.txt"
    echo "== $estimates, $mode"
    tail -n 4 "$out/estimates/$estimates-$mode.txt"
  done
done
