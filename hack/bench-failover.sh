#!/usr/bin/env bash
# Failover benchmark: two `phalanx scheduler` processes elect a leader on one
# Lease; the leader is stopped, a gang is created at once, and the time from
# the signal to the first bind of that gang (by the standby, now leading) is
# printed. The leader is stopped with SIGKILL (the Lease is left to expire:
# about --leader-elect-lease-duration) and with SIGTERM (the leader releases
# the Lease as it exits: about --leader-elect-retry-period), under the
# default lease timing (15s/10s/2s) and a short one (4s/3s/1s), FAILOVER_RUNS
# (3) times each. It prints figures and asserts nothing.
#
#   hack/bench-failover.sh
#
# After each failover the stopped replica is started again as the new
# standby, so every run fails over from a leader that has led for a while to
# a standby that has been retrying for at least two retry periods. The
# standby is cold: it starts its informers once it leads, so the figures
# include its cache sync (10 nodes, a few pods here).
#
# It starts a cluster of its own (work dir .cache/failover-cluster, ports apart
# from the other scripts' clusters) and stops it on exit with the replicas.
# Replica logs: <work dir>/failover/phalanx-<n>.log. Needs kubectl and curl.
set -euo pipefail
cd "$(dirname "$0")/.."
export PHALANX_CLUSTER_DIR=${PHALANX_CLUSTER_DIR:-$PWD/.cache/failover-cluster}
export PHALANX_APISERVER_PORT=${PHALANX_APISERVER_PORT:-16843}
export PHALANX_ETCD_PORT=${PHALANX_ETCD_PORT:-24190}
export PHALANX_ETCD_PEER_PORT=${PHALANX_ETCD_PEER_PORT:-24200}
export PHALANX_KUBE_SCHEDULER=0 PHALANX_KWOK_SERVER=
runs=${FAILOVER_RUNS:-3}
read -r -a ports <<<"${FAILOVER_PORTS:-10293 10294}"
kubectl=${KUBECTL:-kubectl}
ns=failover
lease=phalanx-failover-bench
work=$PHALANX_CLUSTER_DIR/failover

log() { echo "bench-failover: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }
now_ms() { local t; t=$(date +%s%N); echo $((t / 1000000)); }
secs() { local c=$((($1 + 5) / 10)); printf '%d.%02d' $((c / 100)) $((c % 100)); } # ms -> s, rounded
for c in curl "$kubectl"; do command -v "$c" >/dev/null || die "$c is required"; done

pids=("" "") # replica pid by slot
watch_pid=
created_ms=0 bound_ms=0
launched=0
timing=()

stop_all() {
  local s
  [[ -n $watch_pid ]] && kill "$watch_pid" 2>/dev/null || true
  for s in 0 1; do
    if [[ -n ${pids[s]} ]] && kill -0 "${pids[s]}" 2>/dev/null; then
      kill -TERM "${pids[s]}" 2>/dev/null || true
      gone "${pids[s]}"
    fi
    pids[s]=
  done
}
trap 'stop_all; hack/local-cluster.sh down >/dev/null 2>&1 || true' EXIT

# start SLOT: a replica with the current timing on the slot's port.
start() {
  local s=$1
  launched=$((launched + 1))
  "$bin" scheduler --kubeconfig "$KUBECONFIG" --leader-elect=true \
    --leader-elect-namespace "$ns" --leader-elect-name "$lease" \
    --leader-elect-lease-duration "${timing[0]}" --leader-elect-renew-deadline "${timing[1]}" \
    --leader-elect-retry-period "${timing[2]}" --address "127.0.0.1:${ports[s]}" \
    2>"$work/phalanx-$launched.log" &
  pids[s]=$!
  disown "$!" # no "Killed" notice from bash; gone() waits for it instead
}

# gone PID: waits up to 30 s until the process has exited.
gone() {
  local i
  for ((i = 0; i < 600; i++)); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 0.05
  done
  log "process $1 still runs 30s after its signal"
}

# probe SLOT PATH: the replica answers PATH with 200.
probe() { curl -fsS --max-time 1 "http://127.0.0.1:${ports[$1]}$2" >/dev/null 2>&1; }

# await DESCRIPTION TIMEOUT_S CMD...: polls CMD every 50 ms.
await() {
  local what=$1 deadline=$(($(now_ms) + $2 * 1000))
  shift 2
  until "$@"; do
    (($(now_ms) < deadline)) || die "timed out waiting until $what"
    sleep 0.05
  done
}

# gang NAME: a PodGroup and two 1-GPU pods, labelled gang=NAME.
gang() {
  local name=$1 i
  {
    printf 'apiVersion: scheduling.phalanx.dev/v1alpha1\nkind: PodGroup\nmetadata: {name: %s, namespace: %s}\nspec: {minMember: 2}\n' "$name" "$ns"
    for i in 0 1; do
      printf -- '---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: %s-%d\n  namespace: %s\n' "$name" "$i" "$ns"
      printf '  labels: {gang: %s}\n  annotations: {scheduling.k8s.io/group-name: %s}\n' "$name" "$name"
      printf 'spec:\n  schedulerName: phalanx\n  containers:\n  - name: worker\n    image: registry.k8s.io/pause:3.10\n'
      printf '    resources: {limits: {nvidia.com/gpu: "1"}}\n'
    done
  } | "$kubectl" create -f - >/dev/null
}

# failover SIGNAL NAME: stops the leader with SIGNAL, creates gang NAME and
# sets created_ms and bound_ms to the milliseconds from the signal to the
# gang being created and to its first bind. The stopped replica is started
# again as the standby. (Not in a subshell: it keeps track of the replicas.)
failover() {
  local sig=$1 name=$2 leader standby t0 out=$work/watch-$2
  if probe 0 /leaderz; then leader=0; elif probe 1 /leaderz; then leader=1; else die "no replica leads"; fi
  standby=$((1 - leader))
  probe "$standby" /leaderz && die "both replicas lead"
  : >"$out"
  "$kubectl" get pods -n "$ns" -l "gang=$name" --watch -o jsonpath='{.spec.nodeName}{"\n"}' >"$out" 2>/dev/null &
  watch_pid=$!
  sleep 0.5 # the watch is established
  t0=$(now_ms)
  kill "-$sig" "${pids[leader]}"
  gang "$name"
  created_ms=$(($(now_ms) - t0))
  await "gang $name is bound" 120 grep -q . "$out"
  bound_ms=$(($(now_ms) - t0))
  kill "$watch_pid" 2>/dev/null || true
  wait "$watch_pid" 2>/dev/null || true
  watch_pid=
  gone "${pids[leader]}"
  probe "$standby" /leaderz || die "the gang was bound but replica $standby does not lead"
  start "$leader"
  await "the new standby serves /healthz" 60 probe "$leader" /healthz
  sleep "$(awk -v p="${timing[2]}" 'BEGIN { sub(/s$/, "", p); print 2 * p + 0.5 }')" # it has tried the Lease
}

hack/local-cluster.sh down >/dev/null 2>&1 || true
KUBECONFIG=$(hack/local-cluster.sh up | tail -n1)
export KUBECONFIG
"$kubectl" apply -f deploy/crds >/dev/null
"$kubectl" wait --for condition=established --timeout=60s -f deploy/crds >/dev/null
"$kubectl" create namespace "$ns" >/dev/null
hack/kwok-nodes.sh 10 --gpus 8 | "$kubectl" apply -f - >/dev/null
"$kubectl" wait --for condition=Ready --timeout=120s node --all >/dev/null
mkdir -p "$work" "$PHALANX_CLUSTER_DIR/bin"
bin=$PHALANX_CLUSTER_DIR/bin/phalanx
go build -o "$bin" ./cmd/phalanx

results=()
printf '%-12s %-8s %4s %18s %22s\n' "lease timing" signal run "signal->created s" "signal->first bind s"
for t in "15s 10s 2s" "4s 3s 1s"; do
  read -r -a timing <<<"$t"
  stop_all
  "$kubectl" delete lease -n "$ns" "$lease" --ignore-not-found >/dev/null
  start 0
  await "replica 0 leads" 60 probe 0 /leaderz
  start 1
  await "replica 1 serves /healthz" 60 probe 1 /healthz
  sleep "$(awk -v p="${timing[2]}" 'BEGIN { sub(/s$/, "", p); print 2 * p + 0.5 }')"
  warm=warm-${timing[0]}
  gang "$warm"
  await "the first leader binds $warm" 60 bash -c "$kubectl get pods -n $ns -l gang=$warm -o jsonpath='{.items[*].spec.nodeName}' | grep -q ."
  for sig in KILL TERM; do
    for ((r = 1; r <= runs; r++)); do
      name=$(echo "g-${timing[0]}-$sig-$r" | tr 'A-Z' 'a-z')
      failover "$sig" "$name"
      printf '%-12s %-8s %4d %18s %22s\n' "${timing[*]}" "SIG$sig" "$r" "$(secs "$created_ms")" "$(secs "$bound_ms")"
      results+=("${timing[*]}|SIG$sig|$bound_ms")
    done
  done
  # The bench's gangs hold 2 GPUs each; free them for the next timing.
  "$kubectl" delete pods -n "$ns" --all --grace-period=0 >/dev/null
  "$kubectl" delete podgroups.scheduling.phalanx.dev -n "$ns" --all >/dev/null
done

echo
printf '%-12s %-8s %26s\n' "lease timing" signal "signal->first bind s (mean)"
printf '%s\n' "${results[@]}" | awk -F'|' '
  { key = $1 "|" $2; if (!(key in n)) order[++k] = key; n[key]++; sum[key] += $3
    list[key] = list[key] sprintf("%s%.2f", (n[key] > 1 ? " " : ""), $3 / 1000) }
  END { for (i = 1; i <= k; i++) { split(order[i], f, "|")
    printf "%-12s %-8s %6.2f  (runs: %s)\n", f[1], f[2], sum[order[i]] / n[order[i]] / 1000, list[order[i]] } }'
