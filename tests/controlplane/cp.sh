#!/usr/bin/env bash
# Test control plane: a real etcd + kube-apiserver on loopback.
#
#   cp.sh up DIR [--owner PID] [--controller-manager]
#                                start both in DIR (private), write DIR/kubeconfig
#                                and DIR/env; with --owner, everything is torn
#                                down when PID exits (crash included); with
#                                --controller-manager, also a kube-controller-manager
#                                running only the garbage collector (ownerReference
#                                cleanup), for suites that need it
#   cp.sh down DIR               stop everything and remove DIR
#   cp.sh stop-apiserver DIR | start-apiserver DIR | restart-apiserver DIR
#   cp.sh start-controller-manager DIR | stop-controller-manager DIR
#   cp.sh etcdctl DIR ARGS...    etcdctl against this etcd (e.g. compaction)
#   cp.sh kubectl DIR ARGS...    kubectl with the admin kubeconfig
#
# Free ports are chosen at start, so several suites can run side by side.
# DIR/env holds: KUBECONFIG, APISERVER, ETCD_ENDPOINT, CP_BIN, CP_TOKEN
# (admin bearer token), CP_CA (CA file for the serving cert).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cmd=${1:?usage: cp.sh up|down|... DIR}; dir=${2:?DIR}
shift 2

bin() { [ -n "${CP_BIN:-}" ] && { echo "$CP_BIN"; return; }
        "$here/build.sh" | tail -1; }
free_port() {
  local p
  for _ in $(seq 200); do
    # below the ephemeral range (32768+), where outgoing connections
    # (apiserver -> etcd among them) would take a port we just chose
    p=$((10000 + RANDOM % 22000))
    [ -z "$(ss -Htln "sport = :$p" 2>/dev/null)" ] && { echo "$p"; return; }
  done
  echo "cp.sh: no free port" >&2; return 1
}
wait_http() { # pid, url, seconds, curl args...
  local pid=$1 url=$2 secs=$3; shift 3
  for _ in $(seq $((secs * 10))); do
    curl -fsS -o /dev/null "$@" "$url" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || { echo "cp.sh: $url: server exited" >&2; return 1; }
    sleep 0.1
  done
  echo "cp.sh: $url not ready after ${secs}s" >&2; return 1
}

pki() {
  local d=$dir/pki; mkdir -p "$d"; cd "$d"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 \
    -subj "/CN=galactic-test-ca" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -keyout serving.key -out serving.csr \
    -subj "/CN=kube-apiserver" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\n' > san.ext
  openssl x509 -req -in serving.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
    -out serving.crt -days 2 -extfile san.ext 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -keyout admin.key -out admin.csr \
    -subj "/O=system:masters/CN=galactic-admin" 2>/dev/null
  openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
    -out admin.crt -days 2 2>/dev/null
  openssl genrsa -out sa.key 2048 2>/dev/null
  openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > admin.token
  echo "$(cat admin.token),galactic-admin-token,uid-admin-token,system:masters" > tokens.csv
  cd - >/dev/null
}

start_etcd() {
  . "$dir/env"
  # setsid: a server (re)started from inside a forked check test must not die
  # with that test's process group.
  setsid "$CP_BIN/etcd" --name default --data-dir "$dir/etcd" \
    --listen-client-urls "$ETCD_ENDPOINT" --advertise-client-urls "$ETCD_ENDPOINT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "default=http://127.0.0.1:$ETCD_PEER_PORT" \
    --unsafe-no-fsync --log-level error \
    >>"$dir/etcd.log" 2>&1 &
  echo $! > "$dir/etcd.pid"
  wait_http $! "$ETCD_ENDPOINT/health" 30
}

start_apiserver() {
  . "$dir/env"
  local p=$dir/pki
  setsid "$CP_BIN/kube-apiserver" \
    --etcd-servers "$ETCD_ENDPOINT" --etcd-prefix /registry \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$APISERVER_PORT" \
    --tls-cert-file "$p/serving.crt" --tls-private-key-file "$p/serving.key" \
    --client-ca-file "$p/ca.crt" --token-auth-file "$p/tokens.csv" \
    --authorization-mode RBAC --anonymous-auth=false \
    --service-account-issuer https://kubernetes.default.svc \
    --service-account-key-file "$p/sa.pub" --service-account-signing-key-file "$p/sa.key" \
    --api-audiences https://kubernetes.default.svc \
    --service-cluster-ip-range 10.96.0.0/24 \
    --enable-priority-and-fairness=false --endpoint-reconciler-type=none \
    --allow-privileged=true \
    >>"$dir/apiserver.log" 2>&1 &
  echo $! > "$dir/apiserver.pid"
  wait_http $! "$APISERVER/readyz" 90 --cacert "$p/ca.crt" -H "Authorization: Bearer $CP_TOKEN"
}

# Only the garbage collector: the other controllers need kubelets, cloud
# credentials or signing keys this control plane does not have. No serving
# port (nothing scrapes it), no election (one instance).
start_controller_manager() {
  . "$dir/env"
  setsid "$CP_BIN/kube-controller-manager" --kubeconfig "$KUBECONFIG" \
    --controllers garbagecollector --leader-elect=false --secure-port 0 \
    --use-service-account-credentials=false \
    >>"$dir/controller-manager.log" 2>&1 &
  echo $! > "$dir/controller-manager.pid"
  # ready once its resource monitors synced (it logs "Proceeding to collect garbage")
  for _ in $(seq 600); do
    grep -q "Proceeding to collect garbage" "$dir/controller-manager.log" 2>/dev/null && return 0
    kill -0 "$(cat "$dir/controller-manager.pid")" 2>/dev/null || {
      echo "cp.sh: kube-controller-manager exited" >&2; tail -n 5 "$dir/controller-manager.log" >&2; return 1; }
    sleep 0.1
  done
  echo "cp.sh: kube-controller-manager not ready after 60s" >&2; return 1
}

stop_pidfile() {
  local f=$dir/$1.pid pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$f"
}

write_env_and_kubeconfig() {
  cat > "$dir/env" <<EOV
CP_BIN=$cpbin
APISERVER=https://127.0.0.1:$aport
APISERVER_PORT=$aport
ETCD_ENDPOINT=http://127.0.0.1:$eport
ETCD_PEER_PORT=$pport
KUBECONFIG=$dir/kubeconfig
CP_TOKEN=$(cat "$dir/pki/admin.token")
CP_CA=$dir/pki/ca.crt
CP_DIR=$dir
EOV
  cat > "$dir/kubeconfig" <<EOK
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: https://127.0.0.1:$aport
    certificate-authority: $dir/pki/ca.crt
users:
- name: admin
  user:
    client-certificate: $dir/pki/admin.crt
    client-key: $dir/pki/admin.key
contexts:
- name: test
  context: {cluster: test, user: admin}
current-context: test
EOK
}

case $cmd in
up)
  owner="" kcm=""
  while [ $# -gt 0 ]; do
    case $1 in
    --owner) owner=$2; shift 2 ;;
    --controller-manager) kcm=1; shift ;;
    *) echo "cp.sh: unknown option $1" >&2; exit 2 ;;
    esac
  done
  mkdir -p "$dir"; dir=$(cd "$dir" && pwd)
  cpbin=$(bin)
  pki
  # A port can still be taken between the check and the bind by a parallel
  # suite: retry the whole start on new ports.
  for attempt in 1 2 3; do
    aport=$(free_port); eport=$(free_port); pport=$(free_port)
    write_env_and_kubeconfig
    . "$dir/env"
    if start_etcd && start_apiserver; then started=1; break; fi
    echo "cp.sh: start attempt $attempt failed; logs:" >&2
    for l in "$dir"/etcd.log "$dir"/apiserver.log; do [ -f "$l" ] && tail -n 5 "$l" >&2; done
    stop_pidfile apiserver; stop_pidfile etcd
    rm -rf "$dir/etcd" "$dir"/*.log
  done
  # keep the directory (logs) for the caller; nothing is left running
  if [ -z "${started:-}" ]; then rm -rf "$dir/etcd"; exit 1; fi
  if [ -n "$kcm" ] && ! start_controller_manager; then
    stop_pidfile controller-manager; stop_pidfile apiserver; stop_pidfile etcd; rm -rf "$dir/etcd"; exit 1
  fi
  if [ -n "$owner" ]; then
    # Watchdog: tear down when the owner dies, whatever way it dies.
    setsid bash -c "while kill -0 $owner 2>/dev/null && [ -f '$dir/env' ]; do sleep 1; done
                    '$here/cp.sh' down '$dir' >/dev/null 2>&1" </dev/null >/dev/null 2>&1 &
  fi
  echo "$dir"
  ;;
down)
  [ -d "$dir" ] || exit 0
  stop_pidfile controller-manager; stop_pidfile apiserver; stop_pidfile etcd
  rm -rf "$dir"
  ;;
stop-apiserver) stop_pidfile apiserver ;;
start-apiserver) start_apiserver ;;
restart-apiserver) stop_pidfile apiserver; start_apiserver ;;
start-controller-manager) start_controller_manager ;;
stop-controller-manager) stop_pidfile controller-manager ;;
etcdctl) . "$dir/env"; exec "$CP_BIN/etcdctl" --endpoints "$ETCD_ENDPOINT" "$@" ;;
kubectl) . "$dir/env"; exec "$CP_BIN/kubectl" --kubeconfig "$KUBECONFIG" "$@" ;;
*) echo "cp.sh: unknown command $cmd" >&2; exit 2 ;;
esac
