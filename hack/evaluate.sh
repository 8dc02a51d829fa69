#!/usr/bin/env bash
# Reproduces docs/evaluation.md. Every phalanx run uses its defaults; no flag
# beyond the trace and the cluster.
#
#   1. The Philly trace on 64 nodes x 8 GPUs in racks of 8, one queue per vc
#      weighted by its GPU-hours: phalanx, fifo-gang and volcano, with the
#      plot; then, for comparison only, phalanx with the preemption of
#      before its minimum run times and weighed evictions, and phalanx as
#      this page used to evaluate it (no preemption, reservations after 3
#      days), and phalanx with a fixed reservation threshold (the defaults
#      before reservations waited out the backlog).
#   2. Synthetic traces (phalanx gen-trace, 20,000 jobs each, seeds 1 to 3
#      at offered loads 0.6 (light), 1.0 and 1.6, seeds 1 to 10 at 1.3
#      (overloaded)) on the same cluster, with the same three policies, and
#      phalanx with the fixed threshold on overloaded seeds 1 to 3.
#   3. Reserving ahead against reserving only once a gang is due: phalanx
#      with --reserve-ahead 0 on every trace of 1 and 2 (JSON reports in
#      <out>/once-due/, verdicts in <out>/targets-once-due.txt).
#   4. Validation: traces of seeds that were not looked at when the
#      defaults were chosen (overloaded seeds 11 to 16, seeds 4 and 5 of
#      the other loads), the same three policies and the once-due runs;
#      reports in <out>/validation/, verdicts in
#      <out>/targets-validation.txt and
#      <out>/targets-validation-once-due.txt.
#   5. How close the expected start comes ("How close the expected start
#      comes"): phalanx with --forecast-every 1h, exact and noisy
#      (noise=0.5) estimates, on Philly, light seed 1, 1.0 seed 1,
#      overloaded seeds 1 and 5 and 1.6 seed 1; tables in
#      <out>/forecast-*.txt, per-job records in <out>/forecast-*.csv.
#   6. A small cluster ("What this does not show", "One cluster size"):
#      synthetic traces of 5,000 jobs for 64 GPUs (seeds 1 to 3 at light
#      load, 1.0 and overloaded) on 8 nodes x 8 GPUs in one rack, the same
#      three policies; reports in <out>/small/, verdicts in
#      <out>/targets-small.txt. No setting was chosen on them. Their
#      per-job records (<out>/small/*-jobs.csv) split by arrival
#      (hack/arrivals: the first nine tenths of the span of arrivals and
#      the last tenth) in <out>/arrivals-small.txt.
#   7. Five more sets of synthetic traces ("A twelfth pass", "A thirteenth
#      pass"), the three policies on each: set 2, seen when the twelfth
#      pass's rule was chosen (light seeds 6 to 15, 1.0 and 1.6 seeds 6 to
#      10, overloaded seeds 17 to 26), and set 3, held out until it was
#      (light seeds 16 to 25, 1.0 and 1.6 seeds 11 to 15, overloaded seeds 27
#      to 36), and set 4, generated after the rule was kept (light seeds 26
#      to 35, 1.0 and 1.6 seeds 16 to 20, overloaded seeds 37 to 46), and
#      set 5, generated after the thirteenth pass's rule was kept (light
#      seeds 36 to 45, 1.0 and 1.6 seeds 21 to 25, overloaded seeds 47 to
#      56), and set 6, generated after the fourteenth pass's rule was kept
#      (light seeds 46 to 55, 1.0 and 1.6 seeds 26 to 30, overloaded seeds
#      57 to 66); reports in <out>/set2/ to <out>/set6/, verdicts in
#      <out>/targets-set2.txt to <out>/targets-set6.txt.
#   8. The verdicts: hack/targets reads the JSON reports of the runs of the
#      three policies (Philly's and the synthetic ones) and writes their
#      tables, then judges them against the page's targets, into
#      <out>/targets.txt (and the files of 3, 4, 6 and 7), with phalanx's mean
#      JCT over the better baseline's and its p99 wait of 8+ GPU jobs over
#      fifo-gang's, averaged over Philly and the overloaded traces.
#
# The runs of phalanx alone write their tables to <out>/*.txt; the others
# their JSON reports to <out>/*.json. The plot goes to <out>/philly.svg, the
# synthetic traces to <out>/gen-*.csv. Two runs go at once.
#
#   hack/evaluate.sh [out-dir] [trace.csv]     defaults: eval-out, ../shared/traces/philly_jobs.csv
#
# It took 28 minutes on 2 cores (1,698 s; 1,958 s on 2026-11-29, beside other
# runs at first; 11.5 minutes before the once-due and validation runs were
# added); 1,372 s with the small cluster's runs (2026-11-29, a later session,
# on a fresh machine, beside fuzzing and the test suite at first); 1,293 s
# with sets 2 to 4 (2026-11-30, alone); 1,927 s with set 5 (2026-11-30,
# beside other simulations for a third of it); 1,474 s after issue 13's
# fourteenth pass (2026-11-30, beside a few short simulations); 1,824 s with
# set 6 (2026-11-30, at 3bb48bf, beside short runs of hack/evaluate-shapes.sh);
# 1,792 s with the small cluster's per-job records and hack/arrivals
# (2026-11-30, at 77ce8a6, beside a few short simulations), with the same
# verdicts as the run before.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-eval-out}
trace=${2:-$repo/../shared/traces/philly_jobs.csv}
mkdir -p "$out" "$out/once-due" "$out/validation" "$out/validation/once-due" "$out/small" "$out/set2" "$out/set3" "$out/set4" "$out/set5" "$out/set6"
out=$(cd "$out" && pwd)
bin="$out/phalanx"
"${GO:-go}" -C "$repo" build -o "$bin" ./cmd/phalanx

cluster=(--nodes 64 --gpus-per-node 8 --nodes-per-rack 8 --queue-weights gpu-hours)
smallCluster=(--nodes 8 --gpus-per-node 8 --nodes-per-rack 8 --queue-weights gpu-hours)
policies=(--policy phalanx,fifo-gang,volcano)
run() {
  local name=$1
  shift
  local start=$SECONDS
  local c=("${cluster[@]}")
  if [[ $name == small/* ]]; then
    c=("${smallCluster[@]}")
  fi
  "$bin" simulate "${c[@]}" "$@" >"$out/$name.txt" 2>"$out/$name.log"
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
names=()
start philly --trace "$trace" "${policies[@]}" --plot "$out/philly.svg" --output json
reports=(philly)
start once-due/philly --trace "$trace" --policy phalanx --reserve-ahead 0 --output json
onceDue=(once-due/philly)
start philly-before --trace "$trace" --policy phalanx --preempt-min-runtime 0 --reclaim-min-runtime 0 --weigh-loss=false
names+=(philly-before)
start philly-no-preemption-72h --trace "$trace" --policy phalanx --preemption=false --reserve-after 72h
names+=(philly-no-preemption-72h)
start philly-fixed-24h --trace "$trace" --policy phalanx --reserve-after-backlog=false
names+=(philly-fixed-24h)
# generated DIR LOAD SEED: generates the trace of SEED at LOAD into
# $out/DIR/gen-LOAD-SEED.csv and runs the three policies on it.
generated() {
  local name="gen-$2-$3"
  "$bin" gen-trace --seed "$3" --load "$2" --jobs 20000 --gpus 512 --out "$out/$1$name.csv"
  start "$1$name" --trace "$out/$1$name.csv" "${policies[@]}" --output json
}
# synthetic DIR SEEDS SEEDS-OVERLOADED RUNS ONCE-DUE: generates the traces of
# SEEDS (SEEDS-OVERLOADED at load 1.3) into $out/DIR, runs the three
# policies and phalanx once due on each, and adds the runs to the arrays
# named RUNS and ONCE-DUE.
synthetic() {
  local dir=$1 other=$2 overloaded=$3 load seed name
  local -n runs=$4 onceRuns=$5
  for load in light 1.0 overloaded 1.6; do
    local seeds=($other)
    [[ $load == overloaded ]] && seeds=($overloaded)
    for seed in "${seeds[@]}"; do
      name="gen-$load-$seed"
      generated "$dir" "$load" "$seed"
      runs+=("$dir$name")
      start "${dir}once-due/$name" --trace "$out/$dir$name.csv" --policy phalanx --reserve-ahead 0 --output json
      onceRuns+=("${dir}once-due/$name")
      if [[ -z $dir && $load == overloaded && $seed -le 3 ]]; then
        start "$name-fixed-24h" --trace "$out/$name.csv" --policy phalanx --reserve-after-backlog=false
        names+=("$name-fixed-24h")
      fi
    done
  done
}
synthetic "" "1 2 3" "1 2 3 4 5 6 7 8 9 10" reports onceDue
validation=()
vOnceDue=()
synthetic validation/ "4 5" "11 12 13 14 15 16" validation vOnceDue
# more DIR LIGHT LOADED OVERLOADED HEAVY RUNS: generates the traces of the
# seeds LIGHT, LOADED (1.0), OVERLOADED (1.3) and HEAVY (1.6) into $out/DIR,
# runs the three policies on each, and adds the runs to the array RUNS.
more() {
  local dir=$1 load seed
  local -n runs=$6
  local -A seeds=([light]=$2 [1.0]=$3 [overloaded]=$4 [1.6]=$5)
  for load in light 1.0 overloaded 1.6; do
    for seed in ${seeds[$load]}; do
      generated "$dir" "$load" "$seed"
      runs+=("${dir}gen-$load-$seed")
    done
  done
}
set2=()
more set2/ "$(seq -s ' ' 6 15)" "$(seq -s ' ' 6 10)" "$(seq -s ' ' 17 26)" "$(seq -s ' ' 6 10)" set2
set3=()
more set3/ "$(seq -s ' ' 16 25)" "$(seq -s ' ' 11 15)" "$(seq -s ' ' 27 36)" "$(seq -s ' ' 11 15)" set3
set4=()
more set4/ "$(seq -s ' ' 26 35)" "$(seq -s ' ' 16 20)" "$(seq -s ' ' 37 46)" "$(seq -s ' ' 16 20)" set4
set5=()
more set5/ "$(seq -s ' ' 36 45)" "$(seq -s ' ' 21 25)" "$(seq -s ' ' 47 56)" "$(seq -s ' ' 21 25)" set5
set6=()
more set6/ "$(seq -s ' ' 46 55)" "$(seq -s ' ' 26 30)" "$(seq -s ' ' 57 66)" "$(seq -s ' ' 26 30)" set6
small=()
for load in light 1.0 overloaded; do
  for seed in 1 2 3; do
    name="small/gen-$load-$seed"
    "$bin" gen-trace --seed "$seed" --load "$load" --jobs 5000 --gpus 64 --out "$out/$name.csv"
    start "$name" --trace "$out/$name.csv" "${policies[@]}" --output json --jobs-out "$out/$name-jobs.csv"
    small+=("$name")
  done
done
for input in philly "$out/gen-light-1.csv" "$out/gen-1.0-1.csv" "$out/gen-overloaded-1.csv" "$out/gen-overloaded-5.csv" "$out/gen-1.6-1.csv"; do
  name=$(basename "$input" .csv)
  [[ $input == philly ]] && input=$trace
  for estimates in exact noise=0.5; do
    start "forecast-$name-$estimates" --trace "$input" --policy phalanx --forecast-every 1h --estimate-error "$estimates" \
      --jobs-out "$out/forecast-$name-$estimates.csv"
    names+=("forecast-$name-$estimates")
  done
done
for pid in "${pids[@]}"; do
  wait "$pid"
done
# The runs of the three policies and of phalanx once due wrote JSON.
for f in "${reports[@]}" "${onceDue[@]}" "${validation[@]}" "${vOnceDue[@]}" "${small[@]}" "${set2[@]}" "${set3[@]}" "${set4[@]}" "${set5[@]}" "${set6[@]}"; do
  mv "$out/$f.txt" "$out/$f.json"
done
"${GO:-go}" -C "$repo" build -o "$out/targets" ./hack/targets
# judge NAME RATIOS PHALANX BASELINES writes the verdicts to $out/NAME.txt:
# the runs named in the array PHALANX replace phalanx's in those named in
# BASELINES (a report replacing itself adds the ratios, averaged over the
# inputs that match RATIOS).
judge() {
  local -n phalanx=$3 baselines=$4
  local args=() f
  for f in "${phalanx[@]}"; do args+=(-phalanx-from "$out/$f.json"); done
  for f in "${baselines[@]}"; do args+=("$out/$f.json"); done
  "$out/targets" -ratios "$2" "${args[@]}" >"$out/$1.txt"
}
judge targets 'philly|overloaded' reports reports
judge targets-once-due 'philly|overloaded' onceDue reports
judge targets-validation overloaded validation validation
judge targets-validation-once-due overloaded vOnceDue validation
judge targets-small overloaded small small
judge targets-set2 overloaded set2 set2
judge targets-set3 overloaded set3 set3
judge targets-set4 overloaded set4 set4
judge targets-set5 overloaded set5 set5
judge targets-set6 overloaded set6 set6
"${GO:-go}" -C "$repo" build -o "$out/arrivals" ./hack/arrivals
smallJobs=()
for f in "${small[@]}"; do smallJobs+=("$out/$f-jobs.csv"); done
"$out/arrivals" "${smallJobs[@]}" >"$out/arrivals-small.txt"
for f in "${names[@]}"; do
  echo "== $f"
  cat "$out/$f.txt"
done
for f in targets targets-once-due targets-validation targets-validation-once-due targets-small arrivals-small targets-set2 targets-set3 targets-set4 targets-set5 targets-set6; do
  echo "== $f"
  cat "$out/$f.txt"
done
