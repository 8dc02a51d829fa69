#!/usr/bin/env bash
# Local control plane for tests and demos: etcd + kube-apiserver + kwok (fake nodes/kubelets),
# all built from the Go module proxy by hack/k8s-tools/build.sh. No Docker, no kubelet, no
# kube-controller-manager: pods are admitted without the ServiceAccount admission plugin, and
# TaintNodesByCondition is disabled so new Nodes do not get the node.kubernetes.io/not-ready
# taint that only the (absent) node lifecycle controller would remove.
#
#   hack/local-cluster.sh up       # build if needed, start, print the kubeconfig path (LAST stdout line)
#   hack/local-cluster.sh down     # stop what `up` started (by pid) and delete volatile state; idempotent
#   hack/local-cluster.sh status   # what is running; exit 0 if the cluster is up, 3 otherwise
#   hack/local-cluster.sh env      # print `export KUBECONFIG=...` lines (eval "$(hack/local-cluster.sh env)")
#
# Environment (defaults in brackets); a second cluster needs its own dir and ports:
#   PHALANX_CLUSTER_DIR      work dir [<repo>/.cache/cluster]
#   PHALANX_APISERVER_PORT   kube-apiserver secure port on 127.0.0.1 [16443]
#   PHALANX_ETCD_PORT        etcd client port [23790]
#   PHALANX_ETCD_PEER_PORT   etcd peer port [23800]
#   PHALANX_KWOK_SERVER      kwok's own HTTP server address, e.g. 127.0.0.1:10247 ["" = disabled]
#   PHALANX_KUBE_SCHEDULER   1 = also run the default kube-scheduler (for comparisons) [0]
#   PHALANX_KUBE_SCHEDULER_PORT  its secure (metrics/healthz) port; 0 = no serving [0]
#   PHALANX_K8S_BIN          use binaries from this dir instead of running build.sh
#   PHALANX_APISERVER_FEATURE_GATES  kube-apiserver's --feature-gates, e.g. WatchList=true [""]
# Progress and errors go to stderr.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${PHALANX_CLUSTER_DIR:-$repo/.cache/cluster}
apiserver_port=${PHALANX_APISERVER_PORT:-16443}
etcd_port=${PHALANX_ETCD_PORT:-23790}
etcd_peer_port=${PHALANX_ETCD_PEER_PORT:-23800}
kwok_server=${PHALANX_KWOK_SERVER:-}
with_scheduler=${PHALANX_KUBE_SCHEDULER:-0}
scheduler_port=${PHALANX_KUBE_SCHEDULER_PORT:-0}
stages=$repo/hack/kwok-stages.yaml

piddir=$dir/pids
logdir=$dir/logs
kubeconfig=$dir/kubeconfig
components=(etcd kube-apiserver kwok kube-scheduler)

log() { echo "local-cluster: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# now_ms prints a monotonic-enough wall clock in milliseconds.
now_ms() { local t; t=$(date +%s%N); echo $((t / 1000000)); }
start_ms=$(now_ms)
elapsed() { local t; t=$(now_ms); printf '%d.%02ds' $(((t - start_ms) / 1000)) $((((t - start_ms) % 1000) / 10)); }

# pid_of COMPONENT prints the pid if the recorded process is alive and is that component.
pid_of() {
  local f=$piddir/$1.pid pid args
  [[ -f $f ]] || return 1
  pid=$(<"$f")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  if [[ -r /proc/$pid/cmdline ]]; then
    args=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
  else
    args=$(ps -o args= -p "$pid" 2>/dev/null) || return 1
  fi
  [[ $args == *"/$1 "* || $args == *"/$1" ]] || return 1   # guard against a recycled pid
  echo "$pid"
}

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# start NAME ARGS...: runs the binary in its own session, logs to logs/NAME.log, records the pid.
start() {
  local name=$1
  shift
  local launcher=()
  command -v setsid >/dev/null 2>&1 && launcher=(setsid)
  "${launcher[@]}" "$bin/$name" "$@" >"$logdir/$name.log" 2>&1 </dev/null &
  echo $! >"$piddir/$name.pid"
}

fail_with_log() {
  local name=$1
  shift
  log "$* -- last lines of $logdir/$name.log:"
  tail -n 25 "$logdir/$name.log" >&2 || true
  do_down >/dev/null 2>&1 || true
  exit 1
}

stop() {
  local name=$1 pid i
  if pid=$(pid_of "$name"); then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "$name ($pid) did not stop in 10s, sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    log "stopped $name ($pid)"
  fi
  rm -f "$piddir/$name.pid"
}

do_down() {
  local c
  # reverse dependency order
  for c in kube-scheduler kwok kube-apiserver etcd; do stop "$c"; done
  # volatile state; logs are kept for post-mortems and truncated by the next `up`
  rm -rf "$dir/etcd-data" "$dir/pki" "$dir/kwok" "$dir/secrets" "$piddir" \
    "$kubeconfig" "$dir/env" "$dir/token"
}

running_count() {
  local c n=0
  for c in "${components[@]}"; do pid_of "$c" >/dev/null && n=$((n + 1)); done
  echo "$n"
}

do_status() {
  local c pid up=0 want=3
  [[ -f $dir/env ]] && grep -q '^PHALANX_KUBE_SCHEDULER=1' "$dir/env" && want=4
  for c in "${components[@]}"; do
    if pid=$(pid_of "$c"); then
      echo "$c: running (pid $pid)"
      up=$((up + 1))
    elif [[ $c != kube-scheduler || $want == 4 ]]; then
      echo "$c: not running"
    fi
  done
  if [[ -f $dir/env ]]; then
    local url token
    url=$(sed -n 's/^PHALANX_APISERVER_URL=//p' "$dir/env")
    token=$(<"$dir/token")
    if curl -fsSk --max-time 2 -H "Authorization: Bearer $token" "$url/readyz" >/dev/null 2>&1; then
      echo "apiserver: $url ready"
    else
      echo "apiserver: $url NOT ready"
      up=0
    fi
    echo "kubeconfig: $kubeconfig"
  fi
  ((up >= want))
}

wait_for() { # wait_for NAME TIMEOUT_S CMD...: polls CMD every 0.1 s while NAME's process lives
  local name=$1 timeout=$2 deadline
  shift 2
  deadline=$(($(now_ms) + timeout * 1000))
  until "$@" >/dev/null 2>&1; do
    pid_of "$name" >/dev/null || fail_with_log "$name" "$name exited during startup"
    (($(now_ms) < deadline)) || fail_with_log "$name" "$name not ready after ${timeout}s"
    sleep 0.1
  done
}

do_up() {
  local n want=3
  [[ $with_scheduler == 1 ]] && want=4
  n=$(running_count)
  if ((n == want)) && [[ -f $kubeconfig ]] && do_status >/dev/null; then
    log "already running (PHALANX_CLUSTER_DIR=$dir)"
    echo "$kubeconfig"
    return 0
  fi
  if ((n > 0)); then
    log "partially running ($n components); restarting"
    do_down
  fi

  for c in curl openssl; do command -v "$c" >/dev/null 2>&1 || die "$c is required"; done
  for p in "$apiserver_port" "$etcd_port" "$etcd_peer_port"; do
    port_busy "$p" && die "port $p on 127.0.0.1 is in use (set PHALANX_APISERVER_PORT/PHALANX_ETCD_PORT/PHALANX_ETCD_PEER_PORT)"
  done
  if [[ -n $kwok_server ]]; then
    port_busy "${kwok_server##*:}" && die "kwok server port ${kwok_server##*:} is in use"
  fi

  if [[ -n ${PHALANX_K8S_BIN:-} ]]; then
    bin=$PHALANX_K8S_BIN
  else
    bin=$("$repo/hack/k8s-tools/build.sh" | tail -n1)
  fi
  for c in etcd kube-apiserver kwok; do [[ -x $bin/$c ]] || die "$bin/$c missing"; done
  log "binaries: $bin ($(elapsed))"

  rm -rf "$dir/etcd-data" "$dir/pki" "$dir/kwok" "$dir/secrets" "$piddir"
  mkdir -p "$dir" "$piddir" "$logdir" "$dir/pki" "$dir/secrets" "$dir/kwok"
  chmod 700 "$dir/secrets"

  # --- credentials: a random admin token in system:masters and a service-account key pair.
  local token
  token=$(openssl rand -hex 24)
  (
    umask 077
    echo "$token" >"$dir/token"
    echo "$token,admin,admin-uid,\"system:masters\"" >"$dir/secrets/tokens.csv"
    openssl genrsa -out "$dir/secrets/sa.key" 2048 2>/dev/null
  )

  # --- etcd
  start etcd \
    --name=phalanx-local \
    --data-dir="$dir/etcd-data" \
    --listen-client-urls="http://127.0.0.1:$etcd_port" \
    --advertise-client-urls="http://127.0.0.1:$etcd_port" \
    --listen-peer-urls="http://127.0.0.1:$etcd_peer_port" \
    --initial-advertise-peer-urls="http://127.0.0.1:$etcd_peer_port" \
    --initial-cluster="phalanx-local=http://127.0.0.1:$etcd_peer_port" \
    --unsafe-no-fsync \
    --log-level=warn
  wait_for etcd 30 curl -fsS --max-time 1 "http://127.0.0.1:$etcd_port/health"
  log "etcd ready on 127.0.0.1:$etcd_port ($(elapsed))"

  # --- kube-apiserver
  start kube-apiserver \
    --etcd-servers="http://127.0.0.1:$etcd_port" \
    --bind-address=127.0.0.1 \
    --advertise-address=127.0.0.1 \
    --secure-port="$apiserver_port" \
    --cert-dir="$dir/pki" \
    --token-auth-file="$dir/secrets/tokens.csv" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$dir/secrets/sa.key" \
    --service-account-signing-key-file="$dir/secrets/sa.key" \
    --authorization-mode=RBAC \
    --disable-admission-plugins=ServiceAccount,TaintNodesByCondition \
    --service-cluster-ip-range=10.0.0.0/24 \
    --endpoint-reconciler-type=none \
    --profiling=false \
    ${PHALANX_APISERVER_FEATURE_GATES:+--feature-gates="$PHALANX_APISERVER_FEATURE_GATES"}
  local url=https://127.0.0.1:$apiserver_port
  wait_for kube-apiserver 90 curl -fsSk --max-time 2 -H "Authorization: Bearer $token" "$url/readyz"
  log "kube-apiserver ready at $url ($(elapsed))"

  # --- kubeconfig (the CA is the apiserver's self-signed cert; it covers 127.0.0.1)
  local ca_file=$dir/pki/apiserver.crt
  local ca_line="    certificate-authority: $ca_file"
  if ! curl -fsS --max-time 2 --cacert "$dir/pki/apiserver.crt" -H "Authorization: Bearer $token" \
    "$url/readyz" >/dev/null 2>&1; then
    log "serving cert does not verify against $dir/pki/apiserver.crt; using insecure-skip-tls-verify"
    ca_line="    insecure-skip-tls-verify: true"
    ca_file=""
  fi
  (
    umask 077
    cat >"$kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: phalanx-local
  cluster:
    server: $url
$ca_line
users:
- name: phalanx-admin
  user:
    token: $token
contexts:
- name: phalanx-local
  context:
    cluster: phalanx-local
    user: phalanx-admin
    namespace: default
current-context: phalanx-local
EOF
  )
  cat >"$dir/env" <<EOF
KUBECONFIG=$kubeconfig
PHALANX_APISERVER_URL=$url
PHALANX_K8S_BIN=$bin
PHALANX_ETCD_URL=http://127.0.0.1:$etcd_port
PHALANX_KUBE_SCHEDULER=$with_scheduler
PHALANX_TOKEN_FILE=$dir/token
PHALANX_CA_FILE=$ca_file
EOF

  # --- kwok: fake kubelets for every Node; pod lifecycle from hack/kwok-stages.yaml
  KWOK_WORKDIR=$dir/kwok start kwok \
    --kubeconfig="$kubeconfig" \
    --config="$stages" \
    --manage-all-nodes=true \
    --server-address="$kwok_server" \
    --node-lease-duration-seconds=40 \
    --cidr=10.244.0.1/16
  sleep 0.3
  pid_of kwok >/dev/null || fail_with_log kwok "kwok exited during startup"
  log "kwok started ($(elapsed))"

  if [[ $with_scheduler == 1 ]]; then
    [[ -x $bin/kube-scheduler ]] || die "$bin/kube-scheduler missing"
    start kube-scheduler \
      --kubeconfig="$kubeconfig" \
      --leader-elect=false \
      --bind-address=127.0.0.1 \
      --secure-port="$scheduler_port" \
      --kube-api-qps=500 --kube-api-burst=1000
    sleep 0.3
    pid_of kube-scheduler >/dev/null || fail_with_log kube-scheduler "kube-scheduler exited during startup"
    log "kube-scheduler started ($(elapsed))"
  fi

  log "up in $(elapsed). export KUBECONFIG=$kubeconfig"
  echo "$kubeconfig"
}

case ${1:-} in
  up) do_up ;;
  down)
    do_down
    log "down (PHALANX_CLUSTER_DIR=$dir)"
    ;;
  status)
    if do_status; then exit 0; else
      echo "cluster in $dir is not (fully) running"
      exit 3
    fi
    ;;
  env)
    [[ -f $dir/env ]] || die "no cluster in $dir (run: $0 up)"
    sed 's/^/export /' "$dir/env"
    ;;
  *)
    echo "usage: $0 up|down|status|env" >&2
    exit 2
    ;;
esac
